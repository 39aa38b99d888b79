"""Where Claude Code's files live: its user folder (`--claude-home`, else $CLAUDE_CONFIG_DIR,
else ~/.claude, as Claude Code resolves it) and the settings file of each scope."""

from __future__ import annotations

import os
from pathlib import Path


def claude_home(override: Path | None = None) -> Path:
    """Claude Code's user folder: --claude-home, else $CLAUDE_CONFIG_DIR, else ~/.claude."""
    if override is not None:
        return override.expanduser()
    env = os.environ.get("CLAUDE_CONFIG_DIR")
    return Path(env).expanduser() if env else Path.home() / ".claude"


def claude_settings_path(
    scope: str = "user", *, claude_home_dir: Path | None = None, project_dir: Path | None = None
) -> Path:
    """Claude Code settings for a scope: user, project (.claude/settings.json) or local."""
    if scope == "user":
        return claude_home(claude_home_dir) / "settings.json"
    project = (project_dir or Path.cwd()).expanduser()
    name = "settings.json" if scope == "project" else "settings.local.json"
    return project / ".claude" / name
