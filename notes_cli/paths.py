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


def codex_home(override: Path | None = None) -> Path:
    """Codex's folder: --codex-home, else $CODEX_HOME, else ~/.codex (as Codex resolves it)."""
    if override is not None:
        return override.expanduser()
    env = os.environ.get("CODEX_HOME")
    return Path(env).expanduser() if env else Path.home() / ".codex"


def claude_home(override: Path | None = None) -> Path:
    """Claude Code's user folder: --claude-home, else $CLAUDE_CONFIG_DIR, else ~/.claude."""
    if override is not None:
        return override.expanduser()
    env = os.environ.get("CLAUDE_CONFIG_DIR")
    return Path(env).expanduser() if env else Path.home() / ".claude"


def codex_config_path(override: Path | None = None) -> Path:
    return codex_home(override) / "config.toml"


def claude_settings_path(
    scope: str = "user", *, claude_home_dir: Path | None = None, project_dir: Path | None = None
) -> Path:
    """Claude Code settings for a scope: user, project (.claude/settings.json) or local."""
    if scope == "user":
        return claude_home(claude_home_dir) / "settings.json"
    project = (project_dir or Path.cwd()).expanduser()
    name = "settings.json" if scope == "project" else "settings.local.json"
    return project / ".claude" / name


def gemini_dir(override: Path | None = None) -> Path:
    """Gemini CLI's user folder: --gemini-home, else $GEMINI_CLI_HOME/.gemini, else ~/.gemini
    (Gemini CLI puts `.gemini` inside GEMINI_CLI_HOME, as it does inside the home folder)."""
    if override is not None:
        return override.expanduser()
    env = os.environ.get("GEMINI_CLI_HOME")
    return (Path(env).expanduser() if env else Path.home()) / ".gemini"


def gemini_settings_path(
    scope: str = "user", *, gemini_home: Path | None = None, project_dir: Path | None = None
) -> Path:
    """Gemini CLI settings for a scope: user (~/.gemini/settings.json) or project
    (<project>/.gemini/settings.json)."""
    if scope == "user":
        return gemini_dir(gemini_home) / "settings.json"
    return (project_dir or Path.cwd()).expanduser() / ".gemini" / "settings.json"


def qwen_home(override: Path | None = None) -> Path:
    """Qwen Code's user folder: --qwen-home, else $QWEN_HOME, else ~/.qwen (as Qwen resolves it)."""
    if override is not None:
        return override.expanduser()
    env = os.environ.get("QWEN_HOME")
    return Path(env).expanduser() if env else Path.home() / ".qwen"


def qwen_settings_path(
    scope: str = "user", *, qwen_home_dir: Path | None = None, project_dir: Path | None = None
) -> Path:
    """Qwen Code settings for a scope: user ($QWEN_HOME/settings.json) or project
    (<project>/.qwen/settings.json)."""
    if scope == "user":
        return qwen_home(qwen_home_dir) / "settings.json"
    return (project_dir or Path.cwd()).expanduser() / ".qwen" / "settings.json"


def qwen_system_paths() -> tuple[Path, Path]:
    """(system defaults, system settings): the lowest and the highest of Qwen Code's layers,
    each with the variable Qwen Code itself reads to move it."""
    import sys

    if sys.platform == "darwin":
        folder = Path("/Library/Application Support/QwenCode")
    elif sys.platform.startswith("win"):
        folder = Path("C:/ProgramData/qwen-code")
    else:
        folder = Path("/etc/qwen-code")
    defaults = os.environ.get("QWEN_CODE_SYSTEM_DEFAULTS_PATH")
    system = os.environ.get("QWEN_CODE_SYSTEM_SETTINGS_PATH")
    return (
        Path(defaults) if defaults else folder / "system-defaults.json",
        Path(system) if system else folder / "settings.json",
    )
