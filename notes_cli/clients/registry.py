"""The clients pdnotes connects, one line each (issue 38). Adding a client is its folder under
clients/, one line here, and docs (docs/architecture.md, "How to add a client").

Claude Code still lives spread over the house (`NOT_MOVED`); it moves into a folder of its
own, and its name moves here from there.
"""

from __future__ import annotations

from notes_cli.clients.codex import CLIENT as _CODEX
from notes_cli.clients.gemini import CLIENT as _GEMINI
from notes_cli.clients.opencode import CLIENT as _OPENCODE
from notes_cli.clients.plugin import Client
from notes_cli.clients.qwen import CLIENT as _QWEN

CLIENTS: tuple[Client, ...] = (
    _CODEX,
    _GEMINI,
    _QWEN,
    _OPENCODE,
)

NOT_MOVED = {"claude": "Claude Code"}
"""Clients not yet in a folder of their own (name: title), listed after the first client in a
folder (Codex) and before the others (their order in every listing users see)."""


def names() -> tuple[str, ...]:
    """Every client's command name, in the order users see them."""
    return tuple(titles())


def titles() -> dict[str, str]:
    """Every client's name as users know it ("OpenCode"), by command name."""
    moved = {client.name: client.title for client in CLIENTS}
    first = dict(list(moved.items())[:1])
    return {**first, **NOT_MOVED, **moved}


def get(name: str) -> Client | None:
    """The client in a folder of its own named `name` (None for the others)."""
    return next((client for client in CLIENTS if client.name == name), None)


def listing(last: str | None = None) -> str:
    """'codex, claude, … or opencode', or with `last` ("all") '…, opencode or all'."""
    every = [*names(), *([last] if last else [])]
    return ", ".join(every[:-1]) + " or " + every[-1]
