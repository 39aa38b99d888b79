"""Codex (npm `@openai/codex`), everything pdnotes knows of it: its config.toml writer and
model catalog (`config`, `catalog`), its layers as Codex merges them (`layers`, `view`,
`setup`), its static checks and schema (`checks`, `schema`, `secrets`, `credentials`,
`limits`), its recorded request (`shapes/`) and the `Client` the registry lists (`client`)."""

from notes_cli.clients.codex.client import CLIENT

__all__ = ["CLIENT"]
