"""`key-in-file` in Codex's config.toml: `http_headers` values (`Authorization: Bearer …`,
`x-api-key`), `query_params`, an `env_http_headers` entry holding a token where a variable name
belongs, and user-info or a key in `base_url` (`experimental_bearer_token` is checked in
`checks`). Messages name where the secret sits, never the secret."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from notes_cli.clients.files import toml_header_line, toml_key_line
from notes_cli.clients.urls import url_credential
from notes_cli.doctor.findings import Finding
from notes_cli.doctor.secret_checks import is_query_secret, is_variable_name, key_in_file, str_map
from notes_cli.secrets import position_secrets

HOW = (
    'env_key = "NAME" for the bearer token (pdnotes config codex --env-key NAME), '
    'env_http_headers = { "x-api-key" = "NAME" } for another header'
)


def secrets_in(path: Path, text: str, doc: Mapping[str, Any]) -> list[Finding]:
    """Literal secrets in the `[model_providers.*]` tables of one config.toml."""
    providers = doc.get("model_providers")
    if not isinstance(providers, dict):
        return []
    found: list[Finding] = []
    for provider_id, table in providers.items():
        if not isinstance(table, dict):
            continue
        section = f"model_providers.{provider_id}"
        places = [*_places(section, table)]
        for key, what in places:
            line = toml_key_line(text, section, key) or toml_header_line(text, f"{section}.{key}")
            found.append(key_in_file("codex", path, f"[{section}] {what}", line, HOW))
    return found


def _places(section: str, table: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(key, description) for each literal secret of one provider table."""
    places: list[tuple[str, str]] = []
    headers = str_map(table.get("http_headers"))
    for header, value in headers.items():
        if position_secrets(headers={header: value}):
            places.append(("http_headers", f"http_headers sends a literal {header} value"))
    for name, value in str_map(table.get("query_params")).items():
        if is_query_secret(name, value):
            places.append(("query_params", f"query_params carries a literal {name!r} value"))
    for header, variable in str_map(table.get("env_http_headers")).items():
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
