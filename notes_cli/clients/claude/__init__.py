"""Claude Code (npm `@anthropic-ai/claude-code`), everything pdnotes knows of it: its settings
writer (`config`, `managed`, `home`), its layers and setup (`setup`), what doctor reads and finds
(`resolved`, `checks`, `env`, `secrets`, `credentials`, `limits`), its session logs (`logs`),
its recorded requests (`shapes/`) and the `Client` the registry lists (`client`)."""

from notes_cli.clients.claude.client import CLIENT

__all__ = ["CLIENT"]
