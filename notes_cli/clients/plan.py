"""A planned change to one client file, and applying it safely.

`pdnotes config codex|claude` first builds a `WritePlan` (old text, new text, what was cleaned,
the URL the client will call); `--dry-run` shows its diff, a real run `apply`s it: check the file
did not change meanwhile, save a backup, write atomically.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from notes_cli import backups, fileio
from notes_cli.errors import ConfigWriteError
from notes_cli.secrets import looks_like_secret, mask


@dataclass(frozen=True)
class WritePlan:
    client: str
    path: Path
    old_text: str | None
    new_text: str
    request_url: str
    export_line: str | None = None
    notes: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()
    mode: int | None = None
    """Mode bits to force (0o600 when the file will hold a token); None keeps the file's."""
    redact: tuple[str, ...] = field(default=(), repr=False)
    """Secrets the new text holds; `diff` shows them masked."""

    @property
    def changed(self) -> bool:
        return self.old_text != self.new_text

    def diff(self) -> str:
        """Unified diff of the change (`/dev/null` as the old side for a new file)."""
        import difflib

        old = (self.old_text or "").splitlines(keepends=True)
        new = self.new_text.splitlines(keepends=True)
        lines = difflib.unified_diff(
            old,
            new,
            fromfile=str(self.path) if self.old_text is not None else "/dev/null",
            tofile=str(self.path),
        )
        text = "".join(line if line.endswith("\n") else line + "\n" for line in lines)
        for secret in self.redact:
            text = text.replace(secret, mask(secret))
        return text


@dataclass(frozen=True)
class WriteResult:
    plan: WritePlan
    written: Path | None
    backup: Path | None
    warnings: tuple[str, ...] = field(default=())


def apply(plan: WritePlan) -> WriteResult:
    """Back up and atomically write `plan`; a no-op when nothing changes. Raises
    `ConfigWriteError` if the file changed since it was read (nothing is written then)."""
    if not plan.changed and plan.mode is None:
        return WriteResult(plan, None, None, plan.warnings)
    current = fileio.read_text(plan.path)
    if current != plan.old_text:
        raise ConfigWriteError(
            f"{plan.path} changed while pdnotes was preparing the edit; nothing was written",
            fix="run the command again",
        )
    backup = backups.save(plan.client, plan.path)
    written = fileio.atomic_write(plan.path, plan.new_text, mode=plan.mode)
    saved = backup.data_path if backup.existed else backup.meta_path
    return WriteResult(plan, written, saved, plan.warnings)


def secret_values(*documents: object) -> tuple[str, ...]:
    """Every string value in `documents` shaped like a credential, so a diff can mask the
    secrets already sitting in a file (context lines) as well as new ones."""
    found: set[str] = set()

    def walk(value: object) -> None:
        if isinstance(value, str):
            if looks_like_secret(value):
                found.add(value)
        elif isinstance(value, dict):
            for item in value.values():
                walk(item)
        elif isinstance(value, list):
            for item in value:
                walk(item)

    for document in documents:
        walk(document)
    return tuple(sorted(found, key=len, reverse=True))
