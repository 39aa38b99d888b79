"""`key-in-file`: every literal secret sitting in a client file, wherever the client reads one.

Codex: `http_headers` values (`Authorization: Bearer …`, `x-api-key`), `query_params`, an
`env_http_headers` entry holding a token where a variable name belongs, and user-info or a
key in `base_url` (`experimental_bearer_token` is checked in codex_checks). Claude Code: an
`apiKeyHelper` that echoes a literal, `ANTHROPIC_CUSTOM_HEADERS` carrying a credential, and a
key in `ANTHROPIC_BASE_URL` (the token variables are checked in claude_checks). A file git
tracks makes each of these an error: committing it publishes the key. Messages name where the
secret sits, never the secret.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from notes_cli.clients.files import line_of, toml_header_line, toml_key_line
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
CODEX_HOW = (
    'env_key = "NAME" for the bearer token (pdnotes config codex --env-key NAME), '
    'env_http_headers = { "x-api-key" = "NAME" } for another header'
)
CLAUDE_HOW = "pdnotes config claude --token-env NAME (an apiKeyHelper that reads $NAME)"
_HOW = {"codex": CODEX_HOW, "claude": CLAUDE_HOW}


def codex_secrets(path: Path, text: str, doc: Mapping[str, Any]) -> list[Finding]:
    """Literal secrets in the `[model_providers.*]` tables of one config.toml."""
    providers = doc.get("model_providers")
    if not isinstance(providers, dict):
        return []
    found: list[Finding] = []
    for provider_id, table in providers.items():
        if not isinstance(table, dict):
            continue
        section = f"model_providers.{provider_id}"
        places = [*_codex_places(section, table)]
        for key, what in places:
            line = toml_key_line(text, section, key) or toml_header_line(text, f"{section}.{key}")
            found.append(_finding("codex", path, f"[{section}] {what}", line))
    return found


def _codex_places(section: str, table: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(key, description) for each literal secret of one provider table."""
    places: list[tuple[str, str]] = []
    headers = _str_map(table.get("http_headers"))
    for header, value in headers.items():
        if position_secrets(headers={header: value}):
            places.append(("http_headers", f"http_headers sends a literal {header} value"))
    for name, value in _str_map(table.get("query_params")).items():
        if _is_query_secret(name, value):
            places.append(("query_params", f"query_params carries a literal {name!r} value"))
    for header, variable in _str_map(table.get("env_http_headers")).items():
        if not is_variable_name(variable):
            places.append(
                (
                    "env_http_headers",
                    f"env_http_headers maps {header} to what looks like a token, not the "
                    "name of a variable",
                )
            )
    base_url = table.get("base_url")
    if isinstance(base_url, str):
        what = url_credential(base_url)
        if what:
            places.append(("base_url", f"base_url carries a key in {what}"))
    return places


def claude_secrets(path: Path, text: str, data: Mapping[str, Any]) -> list[Finding]:
    """Literal secrets in one Claude Code settings file beyond the token variables."""
    found: list[Finding] = []
    helper = data.get("apiKeyHelper")
    if isinstance(helper, str) and _helper_echoes_literal(helper):
        line = line_of(text, '"apiKeyHelper"')
        found.append(
            _finding(
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
            _finding("claude", path, "ANTHROPIC_CUSTOM_HEADERS sends a literal credential", line)
        )
    base_url = env.get("ANTHROPIC_BASE_URL")
    if isinstance(base_url, str) and (what := url_credential(base_url)):
        line = line_of(text, '"ANTHROPIC_BASE_URL"')
        found.append(_finding("claude", path, f"ANTHROPIC_BASE_URL carries a key in {what}", line))
    return found


def is_variable_name(value: str) -> bool:
    """An `env_http_headers` value that names a variable (not a pasted token)."""
    return looks_like_env_name(value) and not looks_like_token(value)


def _finding(client: FindingClient, path: Path, what: str, line: int | None) -> Finding:
    tracked = tracked_by_git(path)
    where = "a file git tracks" if tracked else path.name
    return make(
        "key-in-file",
        client,
        f"{what} in {where}",
        severity="error" if tracked else None,
        file=str(path),
        line=line,
        how=_HOW[client],
    )


def _helper_echoes_literal(helper: str) -> bool:
    """`echo sk-…` / `printf '%s' tt-…`: a helper whose output is a literal, not a lookup."""
    words = helper.split()
    if not words or words[0].rsplit("/", 1)[-1] not in _ECHO_PROGRAMS:
        return False
    return any(w != "%s" and "$" not in w for w in command_secrets(helper))


def _is_query_secret(name: str, value: str) -> bool:
    if not value:
        return False
    return is_credential_name(name) or looks_like_secret(value) or looks_like_token(value)


def _str_map(value: object) -> dict[str, str]:
    return {str(k): str(v) for k, v in value.items()} if isinstance(value, dict) else {}
