"""OpenCode (npm `opencode-ai`), everything pdnotes knows of it: its files and their layers
(`config`), its static checks (`checks`), its recorded request (`shapes/`) and the `Client`
the registry lists (`client`)."""

from notes_cli.clients.opencode.client import CLIENT

__all__ = ["CLIENT"]
