"""Pi (npm `@mariozechner/pi-coding-agent`, command `pi`), everything pdnotes knows of it: its
files under the agent folder (`config`), its static checks (`checks`), its recorded request
(`shapes/`), its headless turn (`headless`) and the `Client` the registry lists (`client`)."""

from notes_cli.clients.pi.client import CLIENT

__all__ = ["CLIENT"]
