"""Factory Droid (npm `droid`), everything pdnotes knows of it: its files and what they resolve
to (`config`), its static checks (`checks`), its recorded request (`shapes/`), its headless turn
(`headless`) and the `Client` the registry lists (`client`)."""

from notes_cli.clients.droid.client import CLIENT

__all__ = ["CLIENT"]
