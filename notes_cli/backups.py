"""Timestamped backups of client files under `$PDNOTES_HOME/backups/<client>/`.

Every write by `pdnotes config` first saves the file's current bytes here (or the fact that it
did not exist), keeping the newest `KEEP` per client. `undo` restores the newest one byte for
byte and consumes it, so repeated undos walk back through history; the state an undo replaced
is itself saved under `backups/<client>/undone/`, so nothing is ever lost.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

from notes_cli import fileio, paths
from notes_cli.errors import ConfigWriteError

KEEP = 10


@dataclass(frozen=True)
class Backup:
    """One saved state of `original` (the path the user's client reads)."""

    client: str
    original: Path
    existed: bool
    mode: int | None
    data_path: Path
    meta_path: Path

    @property
    def created(self) -> str:
        return self.meta_path.stem


@dataclass(frozen=True)
class UndoResult:
    client: str
    path: Path
    action: Literal["restored", "removed"]
    backup: Backup
    saved_current: Backup


def backups_dir(client: str, *, undone: bool = False) -> Path:
    base = paths.pdnotes_home() / "backups" / client
    return base / "undone" if undone else base


def save(client: str, original: Path, *, undone: bool = False) -> Backup:
    """Save the current bytes of `original` (or its absence) and prune to the newest KEEP."""
    folder = backups_dir(client, undone=undone)
    original = original.absolute()  # undo may run from another folder
    data = fileio.read_bytes(original)
    stamp = _unique_stamp(folder)
    data_path, meta_path = folder / f"{stamp}.bak", folder / f"{stamp}.json"
    meta = {
        "original": str(original),
        "existed": data is not None,
        "mode": fileio.file_mode(original),
    }
    try:
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)  # may hold copies of tokens
        if data is not None:
            fileio.atomic_write(data_path, data, mode=0o600)
        fileio.atomic_write(meta_path, json.dumps(meta, indent=2) + "\n", mode=0o600)
    except ConfigWriteError as exc:
        raise ConfigWriteError(
            f"cannot save a backup in {folder}, so nothing was changed ({exc.message})",
            fix="make $PDNOTES_HOME writable or point it elsewhere: export PDNOTES_HOME=…",
        ) from exc
    _prune(folder)
    return _load(client, meta_path)


def list_backups(client: str, *, undone: bool = False) -> list[Backup]:
    """Backups of `client`, oldest first."""
    folder = backups_dir(client, undone=undone)
    if not folder.is_dir():
        return []
    return [_load(client, meta) for meta in sorted(folder.glob("*.json"))]


def latest(client: str) -> Backup | None:
    items = list_backups(client)
    return items[-1] if items else None


def undo(client: str) -> UndoResult | None:
    """Restore the newest backup of `client` byte for byte (or remove a file the write
    created). None when there is nothing to undo: not a problem, so not an error (exit 0)."""
    backup = latest(client)
    if backup is None:
        return None
    saved_current = save(client, backup.original, undone=True)
    if backup.existed:
        data = fileio.read_bytes(backup.data_path) or b""
        fileio.atomic_write(backup.original, data, mode=backup.mode)
        action: Literal["restored", "removed"] = "restored"
    else:
        fileio.remove_file(backup.original)
        action = "removed"
    backup.data_path.unlink(missing_ok=True)
    backup.meta_path.unlink(missing_ok=True)
    return UndoResult(client, backup.original, action, backup, saved_current)


def _load(client: str, meta_path: Path) -> Backup:
    meta = json.loads(meta_path.read_text(encoding="utf-8"))
    return Backup(
        client=client,
        original=Path(meta["original"]),
        existed=bool(meta["existed"]),
        mode=meta.get("mode"),
        data_path=meta_path.with_suffix(".bak"),
        meta_path=meta_path,
    )


def _unique_stamp(folder: Path) -> str:
    """A sortable name: UTC time to the microsecond plus a counter for same-instant saves."""
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S%fZ")
    n = 0
    while (folder / f"{stamp}-{n:02d}.json").exists():
        n += 1
    return f"{stamp}-{n:02d}"


def _prune(folder: Path) -> None:
    metas = sorted(folder.glob("*.json"))
    for meta in metas[:-KEEP]:
        meta.with_suffix(".bak").unlink(missing_ok=True)
        meta.unlink(missing_ok=True)
