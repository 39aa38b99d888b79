"""Where things live. One function per location, each with the env override the clients (and
our tests) use."""

from __future__ import annotations

import os
from pathlib import Path


def pdnotes_home() -> Path:
    """pdnotes' own state (backups, user kits, caches): $PDNOTES_HOME or the user data dir."""
    env = os.environ.get("PDNOTES_HOME")
    if env:
        return Path(env).expanduser()
    from platformdirs import user_data_dir

    return Path(user_data_dir("pdnotes", appauthor=False))


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
