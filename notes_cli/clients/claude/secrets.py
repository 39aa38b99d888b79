"""`key-in-file` in a Claude Code settings file beyond the token variables (those are checked
in `checks`): an `apiKeyHelper` that echoes a literal, `ANTHROPIC_CUSTOM_HEADERS` carrying a
credential, and a key in `ANTHROPIC_BASE_URL`. Messages name where the secret sits, never the
secret."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from notes_cli.clients.files import line_of
from notes_cli.clients.urls import url_credential
from notes_cli.doctor.findings import Finding
from notes_cli.doctor.secret_checks import key_in_file
from notes_cli.secrets import command_secrets, header_lines, position_secrets

HOW = "pdnotes config claude --token-env NAME (an apiKeyHelper that reads $NAME)"
_ECHO_PROGRAMS = ("echo", "printf")


def secrets_in(path: Path, text: str, data: Mapping[str, Any]) -> list[Finding]:
    """Literal secrets in one Claude Code settings file beyond the token variables."""
    found: list[Finding] = []
    helper = data.get("apiKeyHelper")
    if isinstance(helper, str) and _helper_echoes_literal(helper):
        line = line_of(text, '"apiKeyHelper"')
        found.append(
            key_in_file(
                "claude",
                path,
                "apiKeyHelper prints a literal key instead of reading one",
                line,
                HOW,
            )
        )
    env = data.get("env")
    if not isinstance(env, dict):
        return found
    custom = env.get("ANTHROPIC_CUSTOM_HEADERS")
    if isinstance(custom, str) and position_secrets(headers=header_lines(custom)):
        line = line_of(text, '"ANTHROPIC_CUSTOM_HEADERS"')
        found.append(
            key_in_file(
                "claude", path, "ANTHROPIC_CUSTOM_HEADERS sends a literal credential", line, HOW
            )
        )
    base_url = env.get("ANTHROPIC_BASE_URL")
    if isinstance(base_url, str) and (what := url_credential(base_url)):
        line = line_of(text, '"ANTHROPIC_BASE_URL"')
        found.append(
            key_in_file("claude", path, f"ANTHROPIC_BASE_URL carries a key in {what}", line, HOW)
        )
    return found


def _helper_echoes_literal(helper: str) -> bool:
    """`echo sk-…` / `printf '%s' tt-…`: a helper whose output is a literal, not a lookup."""
    words = helper.split()
    if not words or words[0].rsplit("/", 1)[-1] not in _ECHO_PROGRAMS:
        return False
    return any(w != "%s" and "$" not in w for w in command_secrets(helper))
