"""`key-in-file`: every literal secret sitting in a client file, wherever the client reads one.

Each client in a folder of its own finds its own (with `key_in_file`). Claude Code: an
`apiKeyHelper` that echoes a literal, `ANTHROPIC_CUSTOM_HEADERS` carrying a credential, and a
key in `ANTHROPIC_BASE_URL` (the token variables: clients/claude/checks.py). A file git
tracks makes each of these an error: committing it publishes the key. Messages name where the
secret sits, never the secret.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from notes_cli.clients.files import line_of
from notes_cli.clients.git import tracked_by_git
from notes_cli.clients.urls import url_credential
from notes_cli.doctor.findings import Finding, FindingClient
from notes_cli.doctor.registry import make
from notes_cli.secrets import (
    command_secrets,
    header_lines,
    is_credential_name,
    looks_like_env_name,
    looks_like_secret,
    looks_like_token,
    position_secrets,
)

_ECHO_PROGRAMS = ("echo", "printf")
CLAUDE_HOW = "pdnotes config claude --token-env NAME (an apiKeyHelper that reads $NAME)"


def claude_secrets(path: Path, text: str, data: Mapping[str, Any]) -> list[Finding]:
    """Literal secrets in one Claude Code settings file beyond the token variables."""
    found: list[Finding] = []
    helper = data.get("apiKeyHelper")
    if isinstance(helper, str) and _helper_echoes_literal(helper):
        line = line_of(text, '"apiKeyHelper"')
        found.append(
            key_in_file(
                "claude", path, "apiKeyHelper prints a literal key instead of reading one", line
            )
        )
    env = data.get("env")
    if not isinstance(env, dict):
        return found
    custom = env.get("ANTHROPIC_CUSTOM_HEADERS")
    if isinstance(custom, str) and position_secrets(headers=header_lines(custom)):
        line = line_of(text, '"ANTHROPIC_CUSTOM_HEADERS"')
        found.append(
            key_in_file("claude", path, "ANTHROPIC_CUSTOM_HEADERS sends a literal credential", line)
        )
    base_url = env.get("ANTHROPIC_BASE_URL")
    if isinstance(base_url, str) and (what := url_credential(base_url)):
        line = line_of(text, '"ANTHROPIC_BASE_URL"')
        found.append(
            key_in_file("claude", path, f"ANTHROPIC_BASE_URL carries a key in {what}", line)
        )
    return found


def is_variable_name(value: str) -> bool:
    """An `env_http_headers` value that names a variable (not a pasted token)."""
    return looks_like_env_name(value) and not looks_like_token(value)


def key_in_file(
    client: FindingClient, path: Path, what: str, line: int | None, how: str = CLAUDE_HOW
) -> Finding:
    """`key-in-file` for `what` in `path`: an error when git tracks the file; `how`: where the
    client reads a key from instead."""
    tracked = tracked_by_git(path)
    where = "a file git tracks" if tracked else path.name
    return make(
        "key-in-file",
        client,
        f"{what} in {where}",
        severity="error" if tracked else None,
        file=str(path),
        line=line,
        how=how,
    )


def _helper_echoes_literal(helper: str) -> bool:
    """`echo sk-…` / `printf '%s' tt-…`: a helper whose output is a literal, not a lookup."""
    words = helper.split()
    if not words or words[0].rsplit("/", 1)[-1] not in _ECHO_PROGRAMS:
        return False
    return any(w != "%s" and "$" not in w for w in command_secrets(helper))


def is_query_secret(name: str, value: str) -> bool:
    if not value:
        return False
    return is_credential_name(name) or looks_like_secret(value) or looks_like_token(value)


def str_map(value: object) -> dict[str, str]:
    return {str(k): str(v) for k, v in value.items()} if isinstance(value, dict) else {}
