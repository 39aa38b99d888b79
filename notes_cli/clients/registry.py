"""The clients pdnotes connects, one line each (issue 38). Adding a client is its folder under
clients/, one line here, and docs (docs/architecture.md, "How to add a client").

Codex and Claude Code still live spread over the house (`NOT_MOVED`);
they move into folders of their own one at a time, and their names move here from there.
"""

from __future__ import annotations

from notes_cli.clients.gemini import CLIENT as _GEMINI
from notes_cli.clients.opencode import CLIENT as _OPENCODE
from notes_cli.clients.plugin import Client
from notes_cli.clients.qwen import CLIENT as _QWEN

CLIENTS: tuple[Client, ...] = (
    _GEMINI,
    _QWEN,
    _OPENCODE,
)

NOT_MOVED = {"codex": "Codex", "claude": "Claude Code"}
"""Clients not yet in a folder of their own (name: title), listed before the ones that are
(their order in every listing users see)."""


def names() -> tuple[str, ...]:
    """Every client's command name, in the order users see them."""
    return (*NOT_MOVED, *(client.name for client in CLIENTS))


def titles() -> dict[str, str]:
    """Every client's name as users know it ("OpenCode"), by command name."""
    return {**NOT_MOVED, **{client.name: client.title for client in CLIENTS}}


def get(name: str) -> Client | None:
    """The client in a folder of its own named `name` (None for the others)."""
    return next((client for client in CLIENTS if client.name == name), None)


def listing(last: str | None = None) -> str:
    """'codex, claude, … or opencode', or with `last` ("all") '…, opencode or all'."""
    every = [*names(), *([last] if last else [])]
    return ", ".join(every[:-1]) + " or " + every[-1]
