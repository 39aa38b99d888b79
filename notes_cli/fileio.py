"""The one module that reads and writes files for pdnotes: the clients' config files, backups,
notes.

Only regular files are read or replaced. A symlink is followed to its final target, the target
is `stat`ed, and anything else — a device (`ln -s /dev/null config.toml`), a FIFO, a socket, a
folder — raises `InputError` naming the path and what it is, before anything is opened for
writing. Reads open with O_NONBLOCK so a FIFO swapped in after the `stat` cannot hang, then
`fstat` the open descriptor. Other read checks: size limit, binary detection, permission errors.

Writes are atomic: a temp file in the target's own folder, fsync, `os.replace`. Mode bits: an
existing file keeps its mode; a new file gets 0o666 minus the umask; a file holding a secret
(backups, a settings file with a literal token) is forced to 0o600 by its caller. A symlink is
written through to its target so the link itself survives.

`locked(path)` serialises pdnotes processes editing the same file (see its docstring).
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import stat
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO, TextIO

from notes_cli.errors import ConfigWriteError, InputError

MAX_CONFIG_BYTES = 10 * 1024 * 1024
"""Client config files are a few KB; anything this big is not one."""

_SNIFF_BYTES = 8192


# The system's own folders: a fix line never tells the user to remove, rename or move aside
# anything in them (a setting that names /dev/null or /etc is the setting's fault).
_SYSTEM_TREES = tuple(
    Path(p)
    for p in ("/etc", "/dev", "/proc", "/sys", "/usr", "/bin", "/sbin", "/lib", "/lib32",
              "/lib64", "/boot", "/run", "/snap", "/private/etc", "/System", "/Library")
)  # fmt: skip


def may_suggest_removing(path: Path) -> bool:
    """Whether a fix line may tell the user to remove, rename or move `path` aside: a regular
    file (symlinks followed) that is neither in the system's folders nor the root or the home
    folder, by its own name or the one its links lead to. A device, a FIFO, a folder never."""
    try:
        info = os.stat(path)
    except (OSError, ValueError):
        return False
    if not stat.S_ISREG(info.st_mode):
        return False
    home = Path.home()
    for name in {Path(os.path.abspath(path)), Path(os.path.realpath(path))}:
        if name in (Path("/"), home) or any(t == name or t in name.parents for t in _SYSTEM_TREES):
            return False
    return True


def aside_fix(path: Path, suggestion: str, *, setting: str | None = None) -> str:
    """The one way a fix line suggests removing, renaming or moving `path` aside: `suggestion`
    when `may_suggest_removing(path)`, else a fix that leaves `path` alone and says to point
    `setting` (the setting, variable or flag that named it) at another file."""
    if may_suggest_removing(path):
        return suggestion
    where = setting or "the setting, variable or flag that names it"
    return f"leave {path} as it is (not a file pdnotes may replace): point {where} at another file"


def read_text(path: Path, *, max_bytes: int = MAX_CONFIG_BYTES) -> str | None:
    """Return the UTF-8 text of `path` without a leading BOM, or None when it does not exist (a
    dangling symlink counts as absent). Raises `InputError` for anything but a regular file,
    and for an unreadable, huge or binary file."""
    data = read_bytes(path, max_bytes=max_bytes)
    return None if data is None else decode_text(path, data)


UTF8_BOM = b"\xef\xbb\xbf"


def decode_text(path: Path, data: bytes) -> str:
    """`data` (read from `path`) as text, BOM removed; `InputError` if binary or not UTF-8."""
    if b"\x00" in data[:_SNIFF_BYTES]:
        raise InputError(
            f"{path} is a binary file, not a text config",
            fix=aside_fix(
                path, f"move it aside (mv {path} {path}.broken) and run the command again"
            ),
        )
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(
            f"{path} is not UTF-8 text (byte {exc.start} cannot be decoded)",
            fix="save the file as UTF-8",
        ) from exc
    return text.removeprefix("\ufeff")


def read_bytes(path: Path, *, max_bytes: int = MAX_CONFIG_BYTES) -> bytes | None:
    """The raw bytes of `path` (None when absent), with the same checks as `read_text`."""
    try:
        require_regular(path, os.stat(path))
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise _read_error(path, exc) from exc
    try:
        info = os.fstat(fd)
        require_regular(path, info)  # swapped for something else between stat and open
        if info.st_size > max_bytes:
            raise InputError(
                f"{path} is {info.st_size / 1e6:.1f} MB; a client config is a few KB, so "
                "pdnotes will not read or rewrite it",
                fix=f"check that {path} is the right file",
            )
        with os.fdopen(fd, "rb", closefd=False) as handle:
            return handle.read(max_bytes + 1)
    except OSError as exc:
        raise _read_error(path, exc) from exc
    finally:
        os.close(fd)


def require_regular(path: Path, info: os.stat_result) -> None:
    """Raise `InputError` unless `info` (of `path`, symlinks followed) is a regular file."""
    if stat.S_ISREG(info.st_mode):
        return
    if stat.S_ISDIR(info.st_mode):
        raise InputError(
            f"{path} is a folder, not a file",
            fix=aside_fix(path, f"remove or rename the folder {path}"),
        )
    what = _KINDS.get(stat.S_IFMT(info.st_mode), "not a regular file")
    via = ""
    if os.path.islink(path):
        via = f" (a symlink to {os.path.realpath(path)})"
    raise InputError(
        f"{path}{via} is {what}, not a regular file; pdnotes reads and replaces only "
        "regular files, so nothing was touched",
        fix=aside_fix(
            path,
            f"to have pdnotes manage it, replace it with a regular file (rm {path}) and run "
            "the command again",
        ),
    )


_KINDS = {
    stat.S_IFCHR: "a character device",
    stat.S_IFBLK: "a block device",
    stat.S_IFIFO: "a FIFO (named pipe)",
    stat.S_IFSOCK: "a socket",
}


def _read_error(path: Path, exc: OSError) -> InputError:
    if isinstance(exc, PermissionError):
        return InputError(
            f"cannot read {path}: permission denied",
            fix=f"check the file's owner and mode: ls -l {path}",
        )
    return InputError(f"cannot read {path}: {exc.strerror or exc}")


def read_document(
    path: Path, *, max_bytes: int, what: str = "file", missing_fix: str | None = None
) -> bytes:
    """The bytes of a file the user asked pdnotes to read (a saved answer, a source document).
    Raises `InputError` when it is missing (with `missing_fix`, else "check the path", as its
    fix), not a regular file (a FIFO would block the read forever, a device may never end),
    unreadable, or over `max_bytes` — read no further."""
    import stat

    try:
        info = path.stat()
        if not stat.S_ISREG(info.st_mode):
            kind = "a folder" if stat.S_ISDIR(info.st_mode) else "not a regular file"
            raise InputError(f"{what} {path} is {kind}", fix="pass a regular file")
        if info.st_size > max_bytes:
            raise InputError(
                f"{what} {path} is {info.st_size / 1e6:.1f} MB; pdnotes reads up to "
                f"{max_bytes / 1e6:.0f} MB",
                fix="pass a smaller file (split the document, or keep the part you need)",
            )
        with path.open("rb") as handle:
            data = handle.read(max_bytes + 1)
    except FileNotFoundError as exc:
        where = "" if path.is_absolute() else f" (relative to {Path.cwd()})"
        raise InputError(
            f"no such {what}: {path}", fix=missing_fix or f"check the path{where}"
        ) from exc
    except OSError as exc:
        raise InputError(f"cannot read {what} {path}: {exc.strerror or exc}") from exc
    if len(data) > max_bytes:  # grew while we read it
        raise InputError(f"{what} {path} is over {max_bytes / 1e6:.0f} MB")
    return data


def text_lines(path: Path, handle: TextIO, max_line_bytes: int) -> Iterator[tuple[int, str]]:
    """(line number, line) for each non-blank line of a JSON Lines file open as UTF-8 text, a
    line at a time, so a file of millions of lines costs one line's memory. A line longer than
    `max_line_bytes`, or text that is not UTF-8, is an InputError naming the file and line. The
    one reader of the JSONL formats pdnotes takes (traces, bench workloads, agents' logs)."""
    number = 0
    while True:
        try:
            line = handle.readline(max_line_bytes + 1)
        except UnicodeDecodeError as exc:
            raise InputError(f"{path}: not UTF-8 text ({exc.reason})") from exc
        if not line:
            return
        number += 1
        if len(line) > max_line_bytes:
            raise InputError(
                f"{path}:{number}: line longer than {_size(max_line_bytes)}",
                fix="one JSON value per line",
            )
        if line.strip():
            yield number, line


def _size(n: int) -> str:
    return f"{n >> 20} MiB" if n >= 1 << 20 else f"{n:,} bytes"


def write_target(path: Path) -> Path:
    """The file a write to `path` really changes: a symlink's final target. Raises `InputError`
    (nothing touched) when pdnotes cannot even look at `path`: a folder above it it may not
    enter, a name too long for the file system."""
    try:
        info = os.lstat(path)
    except OSError as exc:
        if exc.errno in (errno.ENOENT, errno.ENOTDIR, errno.EBADF, errno.ELOOP):
            return path  # absent (or unreachable in a way the read / write itself reports)
        raise _path_error(path, exc) from exc
    return Path(os.path.realpath(path)) if stat.S_ISLNK(info.st_mode) else path


def require_output_folder(path: Path, flag: str) -> None:
    """`InputError` (exit 2) unless the folder `path` is to be written in exists. Checked by
    every command that writes a file the user names (`-o`, `--out`, `--plot`) before it does
    any work: pdnotes does not create folders nobody asked for (a typo in a folder name would
    leave the result somewhere unexpected). `atomic_write` itself still creates the folders
    pdnotes owns, such as ~/.codex."""
    folder = path.expanduser().absolute().parent
    if not folder.is_dir():
        raise InputError(
            f"{flag} {path}: the folder {folder} does not exist",
            fix=f"create it first (mkdir -p {folder}) or name a file in an existing folder",
        )


def _path_error(path: Path, exc: OSError) -> InputError:
    if isinstance(exc, PermissionError):
        return InputError(
            f"cannot reach {path}: permission denied on a folder above it; nothing was changed",
            fix=f"check the folders' owner and mode: ls -ld {path.parent}",
        )
    if exc.errno == errno.ENAMETOOLONG:
        return InputError(
            f"{path} is a name too long for the file system; nothing was changed",
            fix="use a shorter path (each folder or file name up to 255 bytes)",
        )
    return InputError(f"cannot reach {path}: {exc.strerror or exc}; nothing was changed")


def atomic_write(path: Path, data: bytes | str, *, mode: int | None = None) -> Path:
    """Replace the file at `path` (through a symlink: its target) with `data`, atomically.

    This is the one write function of pdnotes: every file it writes goes through here. The temp
    file lives in the target's folder so `os.replace` never crosses a file system. Mode bits:
    `mode` if given (0o600 for files that hold a secret), else the existing file's, else 0o666
    minus the umask. Missing parent folders are created. Returns the path actually written.
    Raises `InputError` (nothing touched) when the target exists but is not a regular file or
    cannot be looked at (see `write_target`), and
    `ConfigWriteError` (nothing changed) when the folder or file cannot be written.
    """
    payload = data.encode("utf-8") if isinstance(data, str) else data
    target = write_target(path)
    _require_regular_or_absent(target)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        final_mode = mode if mode is not None else _existing_mode(target)
        fd, tmp_name = tempfile.mkstemp(
            prefix=f".{target.name}.", suffix=_TEMP_SUFFIX, dir=target.parent
        )
    except OSError as exc:
        raise _write_error(target, exc) from exc
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(payload)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp_name, final_mode)
        _require_regular_or_absent(target)  # checked again just before the replace
        os.replace(tmp_name, target)
    except OSError as exc:
        _unlink_quietly(tmp_name)
        raise _write_error(target, exc) from exc
    except BaseException:
        _unlink_quietly(tmp_name)
        raise
    _fsync_dir(target.parent)
    return target


_TEMP_SUFFIX = ".pdnotes-tmp"


def remove_stale_temps(path: Path) -> list[Path]:
    """Delete the temp files a killed `atomic_write` of `path` left beside its target.

    Call it only while holding `locked(path)`: then no other pdnotes is writing that file, so
    every temp of it is stale (and may hold a copy of a token). Returns what was removed."""
    target = write_target(path)
    return _remove_temps(target.parent, f".{target.name}.")


def remove_stale_temps_in(folder: Path) -> list[Path]:
    """Delete every temp file a killed `atomic_write` left in `folder`: one of pdnotes' own
    folders (a backups folder) whose every writer holds `locked(folder)` while it writes there.

    Call it only while holding `locked(folder)`: then no other pdnotes is writing into the
    folder, so every temp in it is stale (and a backup's may hold a copy of a token). Returns
    what was removed."""
    return _remove_temps(folder, ".")


def _remove_temps(folder: Path, prefix: str) -> list[Path]:
    removed = []
    with contextlib.suppress(OSError):
        for entry in folder.iterdir():
            name = entry.name
            if name.startswith(prefix) and name.endswith(_TEMP_SUFFIX):
                with contextlib.suppress(OSError):
                    if stat.S_ISREG(entry.lstat().st_mode):
                        entry.unlink()
                        removed.append(entry)
    return removed


def remove_file(path: Path) -> None:
    """Delete `path` (through a symlink: its target); absent is fine. Refuses (InputError)
    anything that is not a regular file."""
    target = write_target(path)
    _require_regular_or_absent(target)
    try:
        target.unlink(missing_ok=True)
    except OSError as exc:
        raise _write_error(target, exc) from exc


def _require_regular_or_absent(target: Path) -> None:
    try:
        info = os.stat(target)
    except FileNotFoundError:
        return
    except OSError as exc:
        raise _write_error(target, exc) from exc
    require_regular(target, info)


# -- locking -------------------------------------------------------------------------------------

LOCK_WAIT_SECONDS = 10.0
"""How long a pdnotes waits for another one editing the same file; `$PDNOTES_LOCK_WAIT` (seconds)
overrides it. A write takes milliseconds, so a longer wait means the holder is stuck."""

_held: dict[str, int] = {}  # lock key -> depth, so nested `locked` calls in one process nest


@contextlib.contextmanager
def locked(path: Path, *, wait: float | None = None) -> Iterator[None]:
    """Hold an exclusive lock on the file `path` really changes, across processes.

    The lock is an `fcntl.flock` on `$PDNOTES_HOME/locks/<hash of the target's real path>.lock`
    (pdnotes' own folder, never the clients'), so every pdnotes editing that file — through
    whichever symlink — queues on the same lock, and the kernel drops it when a holder dies.
    Hold it over the whole read → check → back up → replace sequence. Waits up to `wait`
    seconds, then raises `ConfigWriteError` naming the holder's pid (nothing was changed).
    Re-entrant within one process. Stale temp files of the target are removed once locked."""
    import fcntl

    from notes_cli import paths

    target = write_target(path.absolute())
    key = hashlib.sha256(os.fsencode(os.path.realpath(target))).hexdigest()[:24]
    if key in _held:
        _held[key] += 1
        try:
            yield
        finally:
            _held[key] -= 1
        return
    folder = paths.pdnotes_home() / "locks"
    lock_path = folder / f"{key}.lock"
    try:
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd = os.open(lock_path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    except OSError as exc:
        raise ConfigWriteError(
            f"cannot create the lock {lock_path} for {target}: {exc.strerror or exc}; "
            "nothing was changed",
            fix="make $PDNOTES_HOME writable or point it elsewhere: export PDNOTES_HOME=…",
        ) from exc
    try:
        _acquire(fd, target, _lock_wait() if wait is None else wait)
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n{target}\n".encode(), 0)
        _held[key] = 1
        try:
            remove_stale_temps(target)
            yield
        finally:
            del _held[key]
            with contextlib.suppress(OSError):
                os.ftruncate(fd, 0)
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


def _acquire(fd: int, target: Path, wait: float) -> None:
    import fcntl

    deadline = time.monotonic() + wait
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except OSError as exc:
            if exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                raise ConfigWriteError(
                    f"cannot lock {target}: {exc.strerror or exc}; nothing was changed"
                ) from exc
        if time.monotonic() >= deadline:
            holder = _holder(fd)
            raise ConfigWriteError(
                f"another pdnotes is writing {target}{holder}; waited {wait:g} s, "
                "nothing was changed",
                fix="let it finish and run the command again",
            )
        time.sleep(0.02)


def _holder(fd: int) -> str:
    with contextlib.suppress(OSError, ValueError, IndexError):
        return f" (pid {int(os.pread(fd, 64, 0).split()[0])})"
    return ""


def _lock_wait() -> float:
    with contextlib.suppress(ValueError):
        return max(0.0, float(os.environ.get("PDNOTES_LOCK_WAIT", LOCK_WAIT_SECONDS)))
    return LOCK_WAIT_SECONDS


def file_mode(path: Path) -> int | None:
    """Permission bits of `path` (following symlinks), or None when absent."""
    try:
        return path.stat().st_mode & 0o7777
    except OSError:
        return None


def _existing_mode(target: Path) -> int:
    existing = file_mode(target)
    if existing is not None:
        return existing
    return 0o666 & ~current_umask()


def current_umask() -> int:
    """The process umask. Linux shows it in /proc without changing it; elsewhere it is read by
    setting and restoring it (a brief window another thread could observe)."""
    with contextlib.suppress(OSError, ValueError):
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    umask = os.umask(0o077)
    os.umask(umask)
    return umask


def _write_error(target: Path, exc: OSError) -> ConfigWriteError:
    reason = exc.strerror or str(exc)
    return ConfigWriteError(
        f"cannot write {target}: {reason}; nothing was changed",
        fix=f"check that the folder {target.parent} exists and is writable",
    )


def _unlink_quietly(name: str) -> None:
    with contextlib.suppress(OSError):
        os.unlink(name)


def _fsync_dir(folder: Path) -> None:
    """Make the rename durable; some file systems refuse to open a folder, which is fine."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def create_new(path: Path, *, mode: int = 0o600) -> BinaryIO:
    """A new file at `path`, open for writing (unbuffered appends by the caller). Refuses a path
    that exists, whatever it is: a recording never overwrites a file or mixes into one."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND, mode)
    except FileExistsError:
        raise InputError(
            f"{path} already exists; nothing was changed", fix="name a new file to record to"
        ) from None
    except OSError as exc:
        raise _path_error(path, exc) from exc
    return os.fdopen(fd, "ab", buffering=0)
