"""One step of `pdnotes demo` (`Step`: what was run, whether it did what it should, the data to
show), the steps' titles, the engine preset every step serves from, and `failed_step`: a step
that raised, as a sentence. Its own module so the step modules (`run`, `bridge_step`) share it
without importing each other."""

from __future__ import annotations

import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from notes_cli.errors import PdnotesError

ENGINE_PRESET = "h800-h20-rdma"
CLIENT = "codex"
"""The client the demo configures, checks and drives (the article's), through its `Client`
(`clients.registry`) as `pdnotes config`, `doctor` and `smoke` do."""
ALSO = "claude"
"""The article's other client, configured on the engine's Anthropic root and checked beside
`CLIENT` (through its `Client` too)."""

TITLES = {
    "engine": "Start the bundled mock PD engine",
    "config": "Write the Codex and Claude Code configuration",
    "doctor": "Check both clients: files, environment and live probes",
    "mistakes": "Reproduce the article's common errors and catch each one",
    "smoke": "Smoke-test the endpoint the way Codex calls it",
    "notes": "Have the model write the PD comparison note, check it, export it",
    "bridge": "Codex on a chat-only endpoint, through the bridge",
    "experiment": "The PD experiment: a long prompt arrives while short requests decode",
    "next": "Where the files are, and what to run for a real gateway",
}

_BUG_FIX = (
    "this is a bug in pdnotes, not in your setup: report it with the output of "
    "`pdnotes demo --json` and `python3 -m pip list`"
)


@dataclass
class Step:
    key: str
    title: str
    ok: bool
    commands: list[str]
    data: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "title": self.title,
            "ok": self.ok,
            "commands": self.commands,
            **self.data,
        }


def failed_step(key: str, exc: Exception) -> Step:
    """The step `key` that raised `exc`: what it saw (the error and where pdnotes raised or met
    it) and the fix (the error's own, else: it is a pdnotes bug)."""
    where = _own_frame(exc)
    saw = f"{type(exc).__name__}: {exc}" if not isinstance(exc, PdnotesError) else str(exc)
    fix = exc.fix if isinstance(exc, PdnotesError) and exc.fix else _BUG_FIX
    error = {"saw": saw, "where": where, "fix": fix}
    return Step(key, TITLES[key], False, [], {"error": error})


def _own_frame(exc: Exception) -> str | None:
    """`notes_cli/…/module.py:LINE` of the deepest frame of pdnotes' own code in the traceback."""
    package = Path(__file__).resolve().parent.parent
    own = None
    for frame in traceback.extract_tb(exc.__traceback__):
        path = Path(frame.filename).resolve()
        if path.is_relative_to(package):
            own = f"{path.relative_to(package.parent).as_posix()}:{frame.lineno}"
    return own
