"""How the user runs Codex, which decides the layers it reads: the folder it starts in
(`--project-dir`, default the current one), `-p NAME` and `-c key=value`. Kept apart from
`layers` so the CLI can build one without importing the TOML readers."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class CodexView:
    cwd: Path | None = None
    profile: str | None = None
    overrides: tuple[str, ...] = ()
