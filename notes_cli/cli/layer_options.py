"""The options that pick a client's config layers the way the client's own flags do, shared by
`doctor` and `config show` as `Annotated` types (default None: no extra layer): Codex's
`-p NAME` and `-c key=value`, Claude Code's `--settings`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

Profile = Annotated[
    str | None,
    typer.Option("--profile", "-p", help="Codex as `codex -p NAME` runs it (NAME.config.toml)."),
]
Overrides = Annotated[
    list[str] | None,
    typer.Option("-c", "--config", help="A Codex `-c key=value` override (repeatable)."),
]
Settings = Annotated[
    Path | None, typer.Option("--settings", help="A Claude Code `--settings FILE` layer.")
]

# What `--project-dir` applies to in the commands that read every client (doctor, config show).
ALL_PROJECT_FILES = (
    ".codex/config.toml, .claude/ settings, .gemini/settings.json, .qwen/settings.json, "
    "opencode.json and each other client's project files"
)
