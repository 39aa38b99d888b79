"""What each client will actually call, and where every value came from.

`clients.setups` asks each client for its setup (`resolve_setups`, `resolve_endpoints`); this
module holds the setup's shape and the clients' rules not yet in a folder of their own, which
follow the clients' own rules: Codex
merges its layers (`layers.py`) and joins `base_url + "/responses"`; Claude Code merges process
env < user < project < local < `--settings` < managed settings (`env` in settings wins over the
shell) and appends `/v1/messages`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from notes_cli.clients.endpoint import Endpoint

OPENAI_DEFAULT_BASE_URL = "https://api.openai.com/v1"


@dataclass(frozen=True)
class Value:
    """One effective setting: `value` is already masked when it is a secret."""

    name: str
    value: str
    source: str


@dataclass(frozen=True)
class ClientSetup:
    """One client's effective configuration: its files, values with their sources, and the
    endpoint it will call (None when the client is not configured or cannot run)."""

    client: str
    files: tuple[Path, ...]
    values: tuple[Value, ...]
    endpoint: Endpoint | None
    problem: str | None = None


def str_map(value: object) -> dict[str, str]:
    return {str(k): str(v) for k, v in value.items()} if isinstance(value, dict) else {}


def opt_str(value: object) -> str | None:
    return value if isinstance(value, str) and value else None
