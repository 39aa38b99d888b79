"""A planned change to one client file, and applying it safely.

`pdnotes config <client>` first builds a `WritePlan` (old text, new text, what was cleaned,
the URL the client will call); `--dry-run` shows its diff, a real run `apply`s it: check the
file did not change meanwhile, save a backup, write atomically — all while holding the file's
lock (`fileio.locked`), so two pdnotes never interleave and no reported write is lost. `write`
holds the lock over the planning read as well, so concurrent runs queue instead of failing; if
a step a killed pdnotes left half written is rolled back then, the plan is made again from the
files as they now are. A plan whose new text is past `fileio.MAX_CONFIG_BYTES` cannot be made
(`check_size`): pdnotes never writes a file it would then refuse to read.

A plan may change further files as the same step (`also`: the model catalog `config codex`
writes beside config.toml, the .env `config gemini` writes beside settings.json). They are
locked after the main file, backed up in the same backup (`backups.save(others=…)`), and
written one by one; if one cannot be written, those already written are put back, so the step
happens whole or not at all, and `undo` restores every file.
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from pathlib import Path

from notes_cli import backups, fileio, secrets
from notes_cli.errors import ConfigWriteError
from notes_cli.secrets import looks_like_env_name, looks_like_secret, mask


@dataclass(frozen=True)
class FileEdit:
    """A further file a plan writes in the same step (whole new text, e.g. JSON pdnotes owns)."""

    path: Path
    old_text: str | None
    new_text: str
    mode: int | None = None

    def __post_init__(self) -> None:
        check_size(self.path, len(self.new_text.encode("utf-8", "surrogatepass")))

    @property
    def changed(self) -> bool:
        return self.old_text != self.new_text


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
    also: tuple[FileEdit, ...] = ()
    """Further files written in the same step (see the module's docstring)."""

    def __post_init__(self) -> None:
        check_size(self.path, len(self.new_text.encode("utf-8", "surrogatepass")))

    @property
    def changed(self) -> bool:
        return self.old_text != self.new_text or any(edit.changed for edit in self.also)

    @property
    def forces_mode(self) -> bool:
        """Some file of the step gets its mode set (0600 for a token) even if its text is kept."""
        return self.mode is not None or any(edit.mode is not None for edit in self.also)

    def diff(self) -> str:
        """Unified diff of the change (`/dev/null` as the old side for a new file), the
        further files' after the main one's."""
        edits = [(self.path, self.old_text, self.new_text)]
        edits += [(e.path, e.old_text, e.new_text) for e in self.also]
        return self._masked("".join(_unified(path, old, new) for path, old, new in edits))

    def diff_of(self, edit: FileEdit) -> str:
        """The diff of one further file of the step, masked as `diff` masks."""
        return self._masked(_unified(edit.path, edit.old_text, edit.new_text))

    def _masked(self, text: str) -> str:
        for secret in self.redact:
            if len(secret) >= 8:
                text = text.replace(secret, mask(secret))
            else:  # a short value only where it stands alone: `"o"` masked, `model` kept
                alone = re.compile(rf"(?<![\w-]){re.escape(secret)}(?![\w-])")
                text = alone.sub(mask(secret), text)
        return text


def _unified(path: Path, old_text: str | None, new_text: str) -> str:
    import difflib

    lines = difflib.unified_diff(
        (old_text or "").splitlines(keepends=True),
        new_text.splitlines(keepends=True),
        fromfile=str(path) if old_text is not None else "/dev/null",
        tofile=str(path),
    )
    return "".join(line if line.endswith("\n") else line + "\n" for line in lines)


@dataclass(frozen=True)
class WriteResult:
    plan: WritePlan
    written: Path | None
    backup: Path | None
    warnings: tuple[str, ...] = field(default=())


def write(path: Path, build: Callable[[], WritePlan], *, dry_run: bool = False) -> WriteResult:
    """Build the plan for `path` and apply it, holding the file's lock from the read the plan
    starts with to the replace (a dry run reads without the lock: it changes nothing)."""
    if dry_run:
        plan = build()
        return WriteResult(plan, None, None, plan.warnings)
    with fileio.locked(path):
        plan = build()
        if backups.recover(plan.client, plan.path):  # a killed step was rolled back just now:
            plan = build()  # plan again from the files as they are after it
        return apply(plan)


def apply(plan: WritePlan) -> WriteResult:
    """Back up and atomically write `plan` under the file's lock; a no-op when nothing changes.
    Raises `ConfigWriteError` if a file changed since it was read (nothing is written then).
    A UTF-8 BOM the file starts with is kept."""
    if not plan.changed and not plan.forces_mode:
        return WriteResult(plan, None, None, plan.warnings)
    with contextlib.ExitStack() as stack:
        stack.enter_context(fileio.locked(plan.path))
        for edit in plan.also:  # always after the main file: two writers lock in one order
            stack.enter_context(fileio.locked(edit.path))
        backups.recover(plan.client, plan.path)
        writes = [_payload(plan.path, plan.old_text, plan.new_text, plan.mode)]
        writes += [_payload(e.path, e.old_text, e.new_text, e.mode) for e in plan.also]
        backup = backups.save(
            plan.client,
            plan.path,
            pending=backups.state_digest(writes[0][1]),
            others=tuple((path, backups.state_digest(data)) for path, data, _ in writes[1:]),
        )
        written: list[Path] = []
        try:
            for path, payload, mode in writes:
                written.append(fileio.atomic_write(path, payload, mode=mode))
        except BaseException:
            if done := len(
                written
            ):  # put back what this step already wrote: all of it or none of it
                with contextlib.suppress(Exception):  # the first failure is the one to report
                    for path, data, mode in backups.saved_states(backup)[:done]:
                        backups.put_back(path, data, mode)
            backups.discard(backup)  # nothing was replaced (or all was put back)
            raise
        backups.commit(backup)
    saved = backup.data_path if backup.existed else backup.meta_path
    return WriteResult(plan, written[0], saved, plan.warnings)


def _payload(
    path: Path, old_text: str | None, new_text: str, mode: int | None
) -> tuple[Path, bytes, int | None]:
    """(path, bytes to write, mode) once `path` is checked to still hold `old_text`."""
    raw = fileio.read_bytes(path)
    current = None if raw is None else fileio.decode_text(path, raw)
    if current != old_text:
        raise ConfigWriteError(
            f"{path} changed while pdnotes was preparing the edit; nothing was written",
            fix="run the command again",
        )
    bom = fileio.UTF8_BOM if raw is not None and raw.startswith(fileio.UTF8_BOM) else b""
    payload = bom + new_text.encode("utf-8")
    check_size(path, len(payload))
    return path, payload, mode


def check_size(path: Path, size: int) -> None:
    """Refuse (`ConfigWriteError`) to write more than `fileio.MAX_CONFIG_BYTES` to `path`:
    pdnotes would then refuse to read its own file (show, the next config, undo)."""
    if size > fileio.MAX_CONFIG_BYTES:
        raise too_large(path, size)


def too_large(path: Path, size: int | None) -> ConfigWriteError:
    """The refusal of `check_size`; `size` None when the writer stopped past the limit."""
    what = f"{size / 1e6:.1f} MB, " if size is not None else ""
    return ConfigWriteError(
        f"the rewritten {path} would be {what}more than the "
        f"{fileio.MAX_CONFIG_BYTES / 1e6:.1f} MB pdnotes reads, so pdnotes could not read it "
        "back; nothing was written",
        fix=f"make {path} smaller (settings.json is written indented, one value a line), or "
        "make the change by hand",
    )


def export_line(name: str) -> str:
    """The `export` of the key's variable the user still needs: its value masked where this
    shell already holds it (the key itself is never shown), else a placeholder."""
    value = os.environ.get(name)
    if value:
        return f"export {name}={mask(value)}   # already set in this shell"
    return f"export {name}=<your API key>"


def secret_values(*documents: object, public: Collection[str] = ()) -> tuple[str, ...]:
    """Every secret in `documents`, judged by where it sits (header and query values, URL
    user-info, credential-named keys, helper-command arguments, `ANTHROPIC_CUSTOM_HEADERS`)
    and, elsewhere, by its shape; so a diff masks the secrets already sitting in a file
    (context lines) as well as new ones. Values in `public` (placeholders) are left shown."""
    found: set[str] = set()

    def walk(value: object, key: str, parent: str) -> None:
        if isinstance(value, dict):
            for name, item in value.items():
                walk(item, str(name), key)
        elif isinstance(value, list):
            for item in value:
                walk(item, key, parent)
        elif isinstance(value, str) and value:
            found.update(_secrets_at(value, key, parent))

    for document in documents:
        walk(document, "", "")
    found -= set(public)
    return tuple(sorted((s for s in found if s), key=len, reverse=True))


def _secrets_at(value: str, key: str, parent: str) -> tuple[str, ...]:
    """The secret parts of `value` found under `key` (inside table/object `parent`)."""
    if parent == "http_headers" or key == "ANTHROPIC_CUSTOM_HEADERS":
        headers = {key: value} if parent == "http_headers" else secrets.header_lines(value)
        return secrets.position_secrets(headers=headers)
    if parent == "query_params":
        return secrets.position_secrets(query_params={key: value})
    if parent == "env_http_headers":
        return () if looks_like_env_name(value) else (value,)
    if key == "apiKeyHelper":
        return secrets.command_secrets(value)
    if "://" in value:
        return secrets.url_secrets(value)
    if (
        secrets.is_credential_name(key)
        and " " not in value
        and not (value.isupper() and looks_like_env_name(value))
    ):
        return (value,)
    return (value,) if looks_like_secret(value) else ()
