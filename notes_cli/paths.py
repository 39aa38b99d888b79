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
