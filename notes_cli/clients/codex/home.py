"""Where Codex's files live: its folder (`--codex-home`, else $CODEX_HOME, else ~/.codex, as
Codex resolves it) and the config.toml in it."""

from __future__ import annotations

import os
from pathlib import Path


def codex_home(override: Path | None = None) -> Path:
    """Codex's folder: --codex-home, else $CODEX_HOME, else ~/.codex (as Codex resolves it)."""
    if override is not None:
        return override.expanduser()
    env = os.environ.get("CODEX_HOME")
    return Path(env).expanduser() if env else Path.home() / ".codex"


def codex_config_path(override: Path | None = None) -> Path:
    return codex_home(override) / "config.toml"
