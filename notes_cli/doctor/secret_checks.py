"""`key-in-file`: every literal secret sitting in a client file, wherever the client reads one.

Each client finds its own (with `key_in_file`, in its folder). A file git tracks makes each of
these an error: committing it publishes the key. Messages name where the secret sits, never the
secret.
"""

from __future__ import annotations

from pathlib import Path

from notes_cli.clients.git import tracked_by_git
from notes_cli.doctor.findings import Finding, FindingClient
from notes_cli.doctor.registry import make
from notes_cli.secrets import (
    is_credential_name,
    looks_like_env_name,
    looks_like_secret,
    looks_like_token,
)


def is_variable_name(value: str) -> bool:
    """An `env_http_headers` value that names a variable (not a pasted token)."""
    return looks_like_env_name(value) and not looks_like_token(value)


def key_in_file(
    client: FindingClient, path: Path, what: str, line: int | None, how: str
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


def is_query_secret(name: str, value: str) -> bool:
    if not value:
        return False
    return is_credential_name(name) or looks_like_secret(value) or looks_like_token(value)


def str_map(value: object) -> dict[str, str]:
    return {str(k): str(v) for k, v in value.items()} if isinstance(value, dict) else {}
