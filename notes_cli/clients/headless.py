"""How a client runs one turn without a terminal, and what it answered (issue 38).

A client folder may hold a `headless` module (`clients/<name>/headless.py`) with a `HEADLESS`
that meets `Headless`: the command of one non-interactive turn of the real client, run after
`pdnotes config <name>` wrote its files under a throwaway HOME, and how to read the turn from
what the client printed. The interop tests (tests/test_interop_clients.py) and the request-shape
recorder (scripts/client_shapes.py) drive every client that has one, by going over the registry:
a new client's real turns are tested without a test file of its own.

Where the real client comes from is data beside it, `clients/<name>/npm.toml` (the npm package,
its pinned release and its binary), which scripts/test.sh reads through scripts/npm_clients.py
before pdnotes is installed. Neither ships a user anything: they are how the tests reach the
real client.
"""

from __future__ import annotations

import importlib
import importlib.util
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol


@dataclass(frozen=True)
class Command:
    """One turn's command: its arguments (the binary first), the variables it needs beyond
    PATH and LANG (HOME, the switches that keep it off the network), and where it runs."""

    argv: list[str]
    env: dict[str, str]
    cwd: Path


@dataclass(frozen=True)
class ToolCall:
    """A tool call the client ran: the tool's name, the shell command it was given (None for a
    tool that takes none) and what the client says it printed (None when it does not say)."""

    name: str
    command: str | None
    output: str | None


@dataclass(frozen=True)
class Turn:
    """What a turn came to: the model's answer texts in order (a tool turn: those after its
    calls) and the tool calls the client ran."""

    texts: list[str]
    tool_calls: list[ToolCall] = field(default_factory=list)


class Headless(Protocol):
    """One client's non-interactive turn (`clients/<name>/headless.py`, `HEADLESS`)."""

    def command(self, binary: Path, home: Path, prompt: str) -> Command:
        """The turn asking `prompt`, with `home` as HOME and every folder the client writes in
        it; the client's config is what `pdnotes config <name>` wrote there."""
        ...

    def turn(self, stdout: str, stderr: str) -> Turn:
        """The turn the client printed (ValueError when it printed none)."""
        ...


def headless(client: str) -> Headless | None:
    """The client's `HEADLESS`, None when its folder has no headless module."""
    name = f"notes_cli.clients.{client}.headless"
    if importlib.util.find_spec(name) is None:
        return None
    found: Headless = importlib.import_module(name).HEADLESS
    return found
