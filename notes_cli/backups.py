"""Timestamped backups of client files under `$PDNOTES_HOME/backups/<client>/`.

Every write by `pdnotes config` first saves the file's current bytes here (or the fact that it
did not exist), keeping the newest `KEEP` per client. `undo` restores the newest one byte for
byte and consumes it, so repeated undos walk back through history; the state an undo replaced
is itself saved under `backups/<client>/undone/`, so nothing is ever lost.

A backup is saved *pending* (its meta names the digest of the state the write is about to
produce) and committed once the write succeeded; a write that fails discards its backup, so
`undo` never "restores" a state that was never replaced. A pending backup left by a killed
process is sorted out by `recover` on the next run, under the file's lock: committed if the
file holds the intended state (the replace happened), discarded otherwise. Pending backups are
invisible to `list_backups`, `latest` and `undo`.

One write may change several files of a client as one step (`config codex` writes config.toml
and the model catalog it names, `config gemini` settings.json and the .env beside it): the
backup then saves every file under one stamp (`others` in its meta, each with its own pending
digest), `undo` restores them all, and a write or an undo that fails or is killed between two
files is rolled back to the saved state, by the writer itself or by `recover` on the next run,
so no half of a step stays applied.

Writes into a backups folder hold that folder's lock (`fileio.locked(folder)`) as well as the
file's: the backups of several files of one client share the folder. Holding it, a save removes
the temp files a killed save left there (copies of the file, a token included).

A backup that is there but cannot be read or understood (a folder or meta file without read
permission, a meta that is not pdnotes JSON, a meta whose .bak is gone) is an error naming it,
for `undo` and for writes alike: skipping it would have `undo` restore an older state.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

from notes_cli import fileio, paths
from notes_cli.errors import ConfigWriteError, InputError

KEEP = 10


@dataclass(frozen=True)
class SavedFile:
    """One more file saved with a backup (a write that changes several files as one step)."""

    original: Path
    existed: bool
    mode: int | None
    data_path: Path
    pending: str | None = None


@dataclass(frozen=True)
class Backup:
    """One saved state of `original` (the path the user's client reads)."""

    client: str
    original: Path
    existed: bool
    mode: int | None
    data_path: Path
    meta_path: Path
    pending: str | None = None
    """Digest of the state a write in progress will produce (see `state_digest`)."""
    consumes: str | None = None
    """For an undone/ entry: the backup the undo restores and then deletes."""
    others: tuple[SavedFile, ...] = ()
    """The other files of the same step, restored together with `original`."""

    @property
    def created(self) -> str:
        return self.meta_path.stem


@dataclass(frozen=True)
class RolledBack:
    """What `undo` did instead when it found a step killed between two files: the files it
    put back to their state before that step (which is then undone: nothing older is)."""

    client: str
    paths: tuple[Path, ...]


@dataclass(frozen=True)
class UndoResult:
    client: str
    path: Path
    action: Literal["restored", "removed"]
    backup: Backup
    saved_current: Backup
    others: tuple[tuple[Path, Literal["restored", "removed"]], ...] = ()


def backups_dir(client: str, *, undone: bool = False) -> Path:
    base = paths.pdnotes_home() / "backups" / client
    return base / "undone" if undone else base


def state_digest(data: bytes | None) -> str:
    """Names a file state: the SHA-256 of its bytes, or "absent"."""
    return "absent" if data is None else hashlib.sha256(data).hexdigest()


def save(
    client: str,
    original: Path,
    *,
    undone: bool = False,
    pending: str | None = None,
    consumes: str | None = None,
    others: tuple[tuple[Path, str | None], ...] = (),
) -> Backup:
    """Save the current bytes of `original` (or its absence) and prune to the newest KEEP.
    With `pending` (the digest of the state about to be written), the backup stays invisible
    until `commit`. `others`: (path, pending digest) of the further files the same step
    writes, saved in the same backup. Call it holding `fileio.locked` of every file."""
    folder = backups_dir(client, undone=undone)
    original = original.absolute()  # undo may run from another folder
    data = fileio.read_bytes(original)
    meta: dict[str, object] = {
        "original": str(original),
        "existed": data is not None,
        "mode": fileio.file_mode(original),
    }
    if pending is not None:
        meta["pending"] = pending
    if consumes is not None:
        meta["consumes"] = consumes
    extra = [(path.absolute(), fileio.read_bytes(path.absolute()), due) for path, due in others]
    written: list[Path] = []
    try:
        with _folder_locked(folder):
            folder.mkdir(mode=0o700, parents=True, exist_ok=True)  # may hold copies of tokens
            stamp = _unique_stamp(folder)
            data_path, meta_path = folder / f"{stamp}.bak", folder / f"{stamp}.json"
            if data is not None:
                written.append(fileio.atomic_write(data_path, data, mode=0o600))
            saved_others: list[dict[str, object]] = []
            for number, (path, other, due) in enumerate(extra, start=1):
                entry: dict[str, object] = {
                    "original": str(path),
                    "existed": other is not None,
                    "mode": fileio.file_mode(path),
                    "data": f"{stamp}.{number}.bak",
                }
                if due is not None:
                    entry["pending"] = due
                if other is not None:
                    written.append(
                        fileio.atomic_write(folder / str(entry["data"]), other, mode=0o600)
                    )
                saved_others.append(entry)
            if saved_others:
                meta["others"] = saved_others
            fileio.atomic_write(meta_path, json.dumps(meta, indent=2) + "\n", mode=0o600)
            _prune(folder)
    except (ConfigWriteError, OSError) as exc:
        for copy in written:  # copies no meta points at
            with contextlib.suppress(OSError):
                copy.unlink(missing_ok=True)
        raise ConfigWriteError(
            f"cannot save a backup in {folder}, so nothing was changed "
            f"({_save_reason(exc, folder)})",
            fix=f"make {folder} a writable folder, or point $PDNOTES_HOME elsewhere: "
            "export PDNOTES_HOME=…",
        ) from exc
    return _load(client, meta_path)


@contextlib.contextmanager
def _folder_locked(folder: Path) -> Iterator[None]:
    """Hold the lock every write into a backups folder holds (the backups of several files of
    one client share the folder, under different file locks), and, holding it, remove the
    temp files a killed pdnotes left there: no other pdnotes is writing into the folder now,
    so each is stale — and a backup's holds a copy of the file, token included."""
    with fileio.locked(folder):
        fileio.remove_stale_temps_in(folder)
        yield


def _save_reason(exc: ConfigWriteError | OSError, folder: Path) -> str:
    if isinstance(exc, ConfigWriteError):
        return exc.message
    if isinstance(exc, FileExistsError) and exc.filename:  # mkdir met a file
        return f"{exc.filename} is a file, not a folder"
    if isinstance(exc, NotADirectoryError):
        return "a folder on the way to it is a file"
    reason = exc.strerror or str(exc)
    if exc.filename and Path(exc.filename) != folder:
        return f"{exc.filename}: {reason}"
    return reason


def commit(backup: Backup) -> None:
    """Make a pending backup visible: the write it precedes has happened."""
    with _folder_locked(backup.meta_path.parent):
        raw = fileio.read_bytes(backup.meta_path, max_bytes=_MAX_META_BYTES)
        if raw is None:
            raise FileNotFoundError(errno.ENOENT, "no such backup", str(backup.meta_path))
        meta = json.loads(raw)
        meta.pop("pending", None)
        meta.pop("consumes", None)
        for entry in meta.get("others", ()):
            entry.pop("pending", None)
        fileio.atomic_write(backup.meta_path, json.dumps(meta, indent=2) + "\n", mode=0o600)


def discard(backup: Backup) -> None:
    """Drop a backup whose write did not happen."""
    backup.data_path.unlink(missing_ok=True)
    for other in backup.others:
        other.data_path.unlink(missing_ok=True)
    backup.meta_path.unlink(missing_ok=True)


def saved_states(backup: Backup) -> list[tuple[Path, bytes | None, int | None]]:
    """(file, its saved bytes or None when it did not exist, mode) of every file of `backup`,
    `original` first. A saved file whose data is gone raises `ConfigWriteError`: restoring
    b"" in its place would lose it."""
    files = [(backup.original, backup.existed, backup.mode, backup.data_path)]
    files += [(o.original, o.existed, o.mode, o.data_path) for o in backup.others]
    states: list[tuple[Path, bytes | None, int | None]] = []
    for original, existed, mode, data_path in files:
        data = fileio.read_bytes(data_path) if existed else None
        if existed and data is None:  # deleted by hand or by a cleaner: never restore b""
            raise ConfigWriteError(
                f"the {backup.client} backup is incomplete: {backup.meta_path} is there but its "
                f"data file {data_path} is missing, so {original} cannot be restored; "
                "nothing was changed",
                fix=fileio.aside_fix(
                    backup.meta_path,
                    "to undo to the backup before it, remove the incomplete one: "
                    f"rm {backup.meta_path}",
                    setting="PDNOTES_HOME",
                ),
            )
        states.append((original, data, mode))
    return states


def put_back(path: Path, data: bytes | None, mode: int | None) -> None:
    """Give `path` the saved state `data` (None: the file did not exist), atomically."""
    if data is None:
        fileio.remove_file(path)
    else:
        fileio.atomic_write(path, data, mode=mode)


def _pending_of(backup: Backup) -> list[tuple[Path, str | None]]:
    return [(backup.original, backup.pending)] + [(o.original, o.pending) for o in backup.others]


def _roll_back(backup: Backup) -> list[Path]:
    """A step that stopped between two files: put back the files it had already written (those
    holding their pending state) from the backup, so none of the step stays applied. Returns
    the files put back."""
    states = {path: (data, mode) for path, data, mode in saved_states(backup)}
    put: list[Path] = []
    for path, due in _pending_of(backup):
        if due is not None and state_digest(fileio.read_bytes(path)) == due:
            data, mode = states[path]
            if state_digest(data) != due:
                put_back(path, data, mode)
                put.append(path)
    return put


@dataclass
class Recovered:
    """The files `recover` put back: those a write killed between two files had written, and
    those an undo killed between two files had restored. False when none: nothing changed."""

    writes: list[Path] = field(default_factory=list)
    undos: list[Path] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.writes or self.undos)

    def __iadd__(self, other: Recovered) -> Recovered:
        self.writes += other.writes
        self.undos += other.undos
        return self


def recover(client: str, original: Path) -> Recovered:
    """Settle the pending backups of `original` a killed pdnotes left (hold its lock). Returns
    what a step killed between two files had written and was put back (false when nothing
    was: the files did not change)."""
    original = original.absolute()
    current: str | None = None
    rolled_back = Recovered()
    for undone in (False, True):
        for backup in _all_backups(client, undone=undone):
            if backup.pending is None or backup.original != original:
                continue
            if backup.others:
                if not _step_applied(backup):
                    put = _roll_back(backup)
                    (rolled_back.undos if undone else rolled_back.writes).extend(put)
                    discard(backup)
                    continue
            else:
                if current is None:
                    current = state_digest(fileio.read_bytes(original))
                if backup.pending != current:
                    discard(backup)
                    continue
            if backup.consumes:  # the undo restored it but died before deleting it
                consumed = backups_dir(client) / f"{backup.consumes}.json"
                if consumed.exists():
                    with contextlib.suppress(FileNotFoundError):  # pruned meanwhile
                        discard(_load(client, consumed))
            commit(backup)
    return rolled_back


def _step_applied(backup: Backup) -> bool:
    """Every file of a several-file step holds the state the step meant to write (the
    caller holds the lock of `original`; the other files' locks are taken here)."""
    with contextlib.ExitStack() as stack:
        for other in backup.others:
            stack.enter_context(fileio.locked(other.original))
        return all(
            due is None or state_digest(fileio.read_bytes(path)) == due
            for path, due in _pending_of(backup)
        )


def list_backups(client: str, *, undone: bool = False) -> list[Backup]:
    """Committed backups of `client`, oldest first."""
    return [b for b in _all_backups(client, undone=undone) if b.pending is None]


def _all_backups(client: str, *, undone: bool) -> list[Backup]:
    """Every backup in the folder, oldest first. One that is there but cannot be read raises
    `InputError` naming it: skipping it would have `undo` restore an older state."""
    folder = backups_dir(client, undone=undone)
    try:
        names = sorted(name for name in os.listdir(folder) if name.endswith(".json"))
    except (FileNotFoundError, NotADirectoryError):
        return []  # none saved yet (a file in the folder's place is reported by `save`)
    except OSError as exc:
        raise InputError(
            f"cannot read the {client} backups in {folder}: {_reason(exc)}; pdnotes will not "
            "skip backups it cannot see, so nothing was changed",
            fix=f"check the folder's owner and mode: ls -ld {folder}",
        ) from exc
    found = []
    for name in names:
        try:
            found.append(_load(client, folder / name))
        except FileNotFoundError:
            continue  # pruned or discarded by another pdnotes since the listing
    return found


def latest(client: str) -> Backup | None:
    items = list_backups(client)
    return items[-1] if items else None


def undo(client: str) -> UndoResult | RolledBack | None:
    """Restore the newest backup of `client` byte for byte (or remove a file the write
    created), holding the file's lock. A step killed between two files is the last write: it
    is rolled back, and that is the undo (`RolledBack` names the files put back; the write
    before it stays). None when there is nothing to undo: not a problem, so not an error
    (exit 0)."""
    rolled_back = settle(client)
    for _attempt in range(5):
        if rolled_back.writes:  # (an undo killed half way is rolled back, then done again)
            return RolledBack(client, tuple(dict.fromkeys(rolled_back.writes)))
        backup = latest(client)
        if backup is None:
            break
        with fileio.locked(backup.original):
            rolled_back = recover(client, backup.original)
            if not rolled_back.writes and latest(client) == backup:
                return _undo_locked(client, backup)
        # another pdnotes changed the history meanwhile: look again
    return None


def settle(client: str) -> Recovered:
    """Settle every pending backup of `client` a killed pdnotes left (each under its file's
    lock): a step killed between two files is rolled back before anything reads the files.
    Returns the files put back."""
    rolled_back = Recovered()
    for undone in (False, True):
        for backup in _all_backups(client, undone=undone):
            if backup.pending is not None:
                with fileio.locked(backup.original):
                    rolled_back += recover(client, backup.original)
    return rolled_back


def _undo_locked(client: str, backup: Backup) -> UndoResult:
    states = saved_states(backup)
    with contextlib.ExitStack() as stack:
        for other in backup.others:  # the step's other files, always after `original`
            stack.enter_context(fileio.locked(other.original))
        saved_current = save(
            client,
            backup.original,
            undone=True,
            pending=state_digest(states[0][1]),
            consumes=backup.created,
            others=tuple((path, state_digest(data)) for path, data, _ in states[1:]),
        )
        actions: list[Literal["restored", "removed"]] = []
        try:
            for path, data, mode in states:
                put_back(path, data, mode)
                actions.append("restored" if data is not None else "removed")
        except BaseException:
            with contextlib.suppress(Exception):  # the first failure is the one to report
                _roll_back(saved_current)
            discard(saved_current)
            raise
        discard(backup)
        commit(saved_current)
    others = tuple(
        (path, action) for (path, _, _), action in zip(states[1:], actions[1:], strict=True)
    )
    return UndoResult(
        client,
        backup.original,
        actions[0],
        backup,
        _load(client, saved_current.meta_path),
        others,
    )


_MAX_META_BYTES = 64 * 1024


def _load(client: str, meta_path: Path) -> Backup:
    """The backup `meta_path` describes. Raises `InputError` naming it when it cannot be read
    or is not a pdnotes backup, `FileNotFoundError` when it is gone."""
    aside = fileio.aside_fix(
        meta_path,
        "to skip it, so undo goes to the backup before it, move it aside: "
        f"mv {meta_path} {meta_path}.broken",
        setting="PDNOTES_HOME",
    )
    try:
        raw = fileio.read_bytes(meta_path, max_bytes=_MAX_META_BYTES)
    except InputError as exc:
        raise InputError(
            f"{exc.message} (a {client} backup); pdnotes will not skip it, so nothing was changed",
            fix=f"check its owner and mode (ls -l {meta_path}); {aside}",
        ) from exc
    if raw is None:
        raise FileNotFoundError(errno.ENOENT, "no such backup", str(meta_path))
    try:
        meta = json.loads(raw.decode("utf-8"))
        return Backup(
            client=client,
            original=Path(meta["original"]),
            existed=bool(meta["existed"]),
            mode=meta.get("mode"),
            data_path=meta_path.with_suffix(".bak"),
            meta_path=meta_path,
            pending=meta.get("pending"),
            consumes=meta.get("consumes"),
            others=tuple(
                SavedFile(
                    original=Path(entry["original"]),
                    existed=bool(entry["existed"]),
                    mode=entry.get("mode"),
                    data_path=meta_path.parent / Path(str(entry["data"])).name,
                    pending=entry.get("pending"),
                )
                for entry in meta.get("others", ())
            ),
        )
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise InputError(
            f"{meta_path} is not a {client} backup pdnotes can read ({type(exc).__name__}: "
            f"{exc}); pdnotes will not skip it, so nothing was changed",
            fix=aside,
        ) from exc


def _reason(exc: OSError) -> str:
    return "permission denied" if isinstance(exc, PermissionError) else exc.strerror or str(exc)


def _unique_stamp(folder: Path) -> str:
    """A sortable name: UTC time to the microsecond plus a counter for same-instant saves and
    the pid (two processes saving backups of different files at the same instant)."""
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S%fZ")
    n = 0
    while (folder / f"{stamp}-{n:02d}-{os.getpid()}.json").exists():
        n += 1
    return f"{stamp}-{n:02d}-{os.getpid()}"


def _prune(folder: Path) -> None:
    metas = sorted(folder.glob("*.json"))  # pending ones count too: they are the newest
    for meta in metas[:-KEEP]:
        meta.with_suffix(".bak").unlink(missing_ok=True)
        for other in folder.glob(f"{meta.stem}.*.bak"):  # a several-file step's others
            other.unlink(missing_ok=True)
        meta.unlink(missing_ok=True)
