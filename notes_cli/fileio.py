"""The one module that reads and writes the clients' config files.

Reads are defensive (size limit, binary detection, a folder in place of a file, permission
errors) and raise `InputError` with a message naming the file. Writes are atomic: a temp file in
the target's own folder, fsync, `os.replace`; the mode bits are kept, and a symlink is written
through to its target so the link itself survives.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path

from notes_cli.errors import ConfigWriteError, InputError

MAX_CONFIG_BYTES = 10 * 1024 * 1024
"""Client config files are a few KB; anything this big is not one."""

_SNIFF_BYTES = 8192


def read_text(path: Path, *, max_bytes: int = MAX_CONFIG_BYTES) -> str | None:
    """Return the UTF-8 text of `path`, or None when it does not exist (a dangling symlink
    counts as absent). Raises `InputError` for a folder, an unreadable, huge or binary file."""
    data = read_bytes(path, max_bytes=max_bytes)
    if data is None:
        return None
    if b"\x00" in data[:_SNIFF_BYTES]:
        raise InputError(
            f"{path} is a binary file, not a text config",
            fix=f"move it aside (mv {path} {path}.broken) and run the command again",
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
        if path.is_dir():
            raise InputError(
                f"{path} is a folder, not a file", fix=f"remove or rename the folder {path}"
            )
        size = path.stat().st_size
        if size > max_bytes:
            raise InputError(
                f"{path} is {size / 1e6:.1f} MB; a client config is a few KB, so pdnotes "
                "will not read or rewrite it",
                fix=f"check that {path} is the right file",
            )
        with path.open("rb") as handle:
            return handle.read(max_bytes + 1)
    except FileNotFoundError:
        return None
    except PermissionError as exc:
        raise InputError(
            f"cannot read {path}: permission denied",
            fix=f"check the file's owner and mode: ls -l {path}",
        ) from exc
    except OSError as exc:
        raise InputError(f"cannot read {path}: {exc.strerror or exc}") from exc


def read_document(path: Path, *, max_bytes: int, what: str = "file") -> bytes:
    """The bytes of a file the user asked pdnotes to read (a saved answer, a source document).
    Raises `InputError` when it is missing, not a regular file (a FIFO would block the read
    forever, a device may never end), unreadable, or over `max_bytes` — read no further."""
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
        raise InputError(f"no such {what}: {path}") from exc
    except OSError as exc:
        raise InputError(f"cannot read {what} {path}: {exc.strerror or exc}") from exc
    if len(data) > max_bytes:  # grew while we read it
        raise InputError(f"{what} {path} is over {max_bytes / 1e6:.0f} MB")
    return data


def write_target(path: Path) -> Path:
    """The file a write to `path` really changes: a symlink's final target."""
    return Path(os.path.realpath(path)) if path.is_symlink() else path


def atomic_write(path: Path, data: bytes | str, *, mode: int | None = None) -> Path:
    """Replace the file at `path` (through a symlink: its target) with `data`, atomically.

    The temp file lives in the target's folder so `os.replace` never crosses a file system.
    Mode bits: `mode` if given, else the existing file's, else 0o666 minus the umask. Missing
    parent folders are created. Returns the path actually written. Raises `ConfigWriteError`
    (nothing changed) when the folder or file cannot be written.
    """
    payload = data.encode("utf-8") if isinstance(data, str) else data
    target = write_target(path)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        final_mode = mode if mode is not None else _existing_mode(target)
        fd, tmp_name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    except OSError as exc:
        raise _write_error(target, exc) from exc
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(payload)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp_name, final_mode)
        os.replace(tmp_name, target)
    except OSError as exc:
        _unlink_quietly(tmp_name)
        raise _write_error(target, exc) from exc
    _fsync_dir(target.parent)
    return target


def remove_file(path: Path) -> None:
    """Delete `path` (through a symlink: its target); absent is fine."""
    target = write_target(path)
    try:
        target.unlink(missing_ok=True)
    except OSError as exc:
        raise _write_error(target, exc) from exc


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
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


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
