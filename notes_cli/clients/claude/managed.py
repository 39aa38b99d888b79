"""Claude Code's managed settings: the system-wide file an administrator controls, which Claude
Code reads with the highest precedence (code.claude.com/docs/en/settings, observed on 2.1.197
and 2.1.332): `managed-settings.json`, then `managed-settings.d/*.json` alphabetically (drop-ins
win), in `/etc/claude-code` (Linux), `/Library/Application Support/ClaudeCode` (macOS) or
`C:\\Program Files\\ClaudeCode` (Windows). Claude Code has no variable to move it
(`CLAUDE_CODE_MANAGED_SETTINGS_PATH` has no effect); `$PDNOTES_CLAUDE_MANAGED_DIR` moves it for
pdnotes only, so tests never touch the real system folder."""

from __future__ import annotations

import os
import sys
from pathlib import Path


def managed_dir() -> Path:
    override = os.environ.get("PDNOTES_CLAUDE_MANAGED_DIR")
    if override:
        return Path(override)
    if sys.platform == "darwin":
        return Path("/Library/Application Support/ClaudeCode")
    if sys.platform.startswith("win"):
        return Path(r"C:\Program Files\ClaudeCode")
    return Path("/etc/claude-code")


def managed_files() -> list[Path]:
    """The managed files Claude Code would read, lowest precedence first (existing or not for
    the main file; drop-ins only as they exist)."""
    folder = managed_dir()
    drop_ins = folder / "managed-settings.d"
    extra = sorted(drop_ins.glob("*.json")) if drop_ins.is_dir() else []
    return [folder / "managed-settings.json", *extra]
