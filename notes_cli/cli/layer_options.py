"""The options that pick a client's config layers the way the client's own flags do, shared by
`doctor` and `config show`: Codex's `-p NAME` and `-c key=value`, Claude Code's `--settings`."""

from __future__ import annotations

import typer

PROFILE = typer.Option(
    None, "--profile", "-p", help="Codex as `codex -p NAME` runs it (NAME.config.toml)."
)
OVERRIDES = typer.Option(
    None, "-c", "--config", help="A Codex `-c key=value` override (repeatable)."
)
SETTINGS = typer.Option(None, "--settings", help="A Claude Code `--settings FILE` layer.")
