"""GitHub Copilot CLI (npm `@github/copilot`), everything pdnotes knows of it: the env file it
writes for Copilot's custom provider and how it is read back (`config`), its static checks
(`checks`), how it runs one turn headless (`headless`), its recorded request (`shapes/`) and
the `Client` the registry lists (`client`)."""

from notes_cli.clients.copilot.client import CLIENT

__all__ = ["CLIENT"]
