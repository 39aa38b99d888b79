"""The clients pdnotes connects, one line each (issue 38). Adding a client is its folder under
clients/, one line here, and docs (docs/architecture.md, "How to add a client")."""

from __future__ import annotations

from notes_cli.clients.claude import CLIENT as _CLAUDE
from notes_cli.clients.codex import CLIENT as _CODEX
from notes_cli.clients.copilot import CLIENT as _COPILOT
from notes_cli.clients.droid import CLIENT as _DROID
from notes_cli.clients.gemini import CLIENT as _GEMINI
from notes_cli.clients.kimi import CLIENT as _KIMI
from notes_cli.clients.opencode import CLIENT as _OPENCODE
from notes_cli.clients.pi import CLIENT as _PI
from notes_cli.clients.plugin import Client
from notes_cli.clients.qwen import CLIENT as _QWEN

CLIENTS: tuple[Client, ...] = (
    _CODEX,
    _CLAUDE,
    _GEMINI,
    _QWEN,
    _OPENCODE,
    _PI,
    _DROID,
    _COPILOT,
    _KIMI,
)
"""In the order every listing users see shows them."""


def names() -> tuple[str, ...]:
    """Every client's command name, in the order users see them."""
    return tuple(client.name for client in CLIENTS)


def titles() -> dict[str, str]:
    """Every client's name as users know it ("OpenCode"), by command name."""
    return {client.name: client.title for client in CLIENTS}


def get(name: str) -> Client | None:
    """The client named `name` (None when pdnotes knows none)."""
    return next((client for client in CLIENTS if client.name == name), None)


def with_session_logs() -> list[Client]:
    """The clients whose session logs `trace import` reads, by name (its `--client` default
    order and its folder options' order)."""
    return sorted((c for c in CLIENTS if c.session_logs is not None), key=lambda c: c.name)


def listing(last: str | None = None) -> str:
    """'codex, claude, … or opencode', or with `last` ("all") '…, opencode or all'."""
    every = [*names(), *([last] if last else [])]
    return ", ".join(every[:-1]) + " or " + every[-1]
