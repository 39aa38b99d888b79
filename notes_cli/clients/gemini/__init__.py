"""Gemini CLI (npm `@google/gemini-cli`), everything pdnotes knows of it: its settings layers,
the `.env` it loads and the write plan (`config`), how the layers and folder trust assemble
(`layers`), its static checks (`checks`), its recorded request (`shapes/`) and the `Client`
the registry lists (`client`). The Gemini wire protocol it speaks is not here: it is
`wire/gemini.py`, which the bridge and the engine serve too."""

from notes_cli.clients.gemini.client import CLIENT

__all__ = ["CLIENT"]
