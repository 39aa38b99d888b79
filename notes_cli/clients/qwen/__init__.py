"""Qwen Code (npm `@qwen-code/qwen-code`), everything pdnotes knows of it: its settings layers,
`.env` files and write plan (`config`), its static checks (`checks`), its recorded request
(`shapes/`) and the `Client` the registry lists (`client`)."""

from notes_cli.clients.qwen.client import CLIENT

__all__ = ["CLIENT"]
