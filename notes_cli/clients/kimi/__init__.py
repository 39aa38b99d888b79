"""Kimi Code (npm `@moonshot-ai/kimi-code`, command `kimi`), everything pdnotes knows of it: its
config.toml (`config`), its static checks (`checks`), its recorded request (`shapes/`), its
headless turn (`headless`) and the `Client` the registry lists (`client`)."""

from notes_cli.clients.kimi.client import CLIENT

__all__ = ["CLIENT"]
