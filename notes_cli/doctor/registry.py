"""The registry of doctor finding ids: a public contract (docs/architecture.md). The entries are
data (templates/doctor/findings.toml, and a client's own in its folder,
notes_cli/clients/<name>/findings.toml): when each finding fires, an example, its default severity
and its fix template. Checks build findings only through `make`, so every finding, static or
live, has a registered id, a registered severity and a fix filled from the registry.
docs/findings.md is generated from here (`python -m notes_cli.doctor.registry >
docs/findings.md`; a test keeps it in step).
"""

from __future__ import annotations

import re
import string
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, get_args

from notes_cli.doctor.findings import Finding, FindingClient, Severity
from notes_cli.secrets import scrub

RegistryClient = str
"""A client's name (`clients.registry`; tests/test_architecture.py checks every entry names
one), "env", or "any"."""
_CLIENT = re.compile(r"[a-z]+")
DATA = ("doctor", "findings.toml")
"""Where the entries live, under templates/."""


@dataclass(frozen=True)
class Variant:
    """Another fix (and, when given, severity) of one finding, for one situation a check names:
    e.g. the live `model-unknown` that can suggest the closest served id."""

    fix: str
    severity: Severity | None = None


@dataclass(frozen=True)
class Entry:
    id: str
    severity: Severity
    client: RegistryClient
    when: str
    example: str
    fix: str
    """A `str.format` template; the checks pass the fields it names."""
    live: bool = False
    variants: Mapping[str, Variant] = field(default_factory=dict)


_ID = re.compile(r"[a-z0-9]+(-[a-z0-9]+)*")
_ENTRY_KEYS = {"id", "severity", "client", "when", "example", "fix", "live", "variants"}


def load_entries(text: str) -> tuple[Entry, ...]:
    """The entries of a findings file, checked: `ValueError` naming the entry at fault."""
    entries: list[Entry] = []
    for raw in tomllib.loads(text).get("finding", []):
        where = f"finding {raw.get('id', '?')!r}"
        if set(raw) - _ENTRY_KEYS or not _ENTRY_KEYS - {"live", "variants"} <= set(raw):
            raise ValueError(f"{where}: keys {sorted(raw)}, expected {sorted(_ENTRY_KEYS)}")
        if not isinstance(raw["id"], str) or not _ID.fullmatch(raw["id"]):
            raise ValueError(f"{where}: an id is lower-case words joined by hyphens")
        if not isinstance(raw["client"], str) or not _CLIENT.fullmatch(raw["client"]):
            raise ValueError(f"{where}: client {raw['client']!r} is not one of codex, claude, …")
        variants = {
            name: Variant(_template(f"{where} variant {name!r}", v.get("fix")), _severity(where, v))
            for name, v in raw.get("variants", {}).items()
        }
        if not all(name.isidentifier() and name.islower() for name in variants) or any(
            set(v) - {"fix", "severity"} for v in raw.get("variants", {}).values()
        ):
            raise ValueError(f"{where}: a variant is [finding.variants.lower_name] fix, severity")
        entries.append(
            Entry(
                id=raw["id"],
                severity=_severity(where, raw) or "error",
                client=raw["client"],
                when=str(raw["when"]),
                example=str(raw.get("example", "")),
                fix=_template(where, raw["fix"]),
                live=raw.get("live", False) is True,
                variants=variants,
            )
        )
    ids = [e.id for e in entries]
    if len(set(ids)) != len(ids):
        raise ValueError(f"an id is registered twice: {sorted(i for i in ids if ids.count(i) > 1)}")
    return tuple(entries)


def _severity(where: str, raw: Mapping[str, Any]) -> Severity | None:
    value = raw.get("severity")
    if value is not None and value not in get_args(Severity):
        raise ValueError(f"{where}: severity {value!r} is not error, warning or info")
    return value


def _template(where: str, fix: object) -> str:
    """A fix template whose fields are plain names (no index, attribute or conversion)."""
    if not isinstance(fix, str):
        raise ValueError(f"{where}: the fix is not a string")
    try:
        parts = list(string.Formatter().parse(fix))
    except ValueError as exc:
        raise ValueError(f"{where}: the fix is not a valid template: {exc}") from exc
    for _text, name, spec, conversion in parts:
        if name is not None and (not name.isidentifier() or spec or conversion):
            raise ValueError(f"{where}: the fix's field {{{name}}} is not a plain name")
    return fix


def _entries() -> tuple[Entry, ...]:
    """The shared entries, then each client folder's own (`clients/<name>/findings.toml`: its
    `[[finding]]`s, client = the folder's name, and `[[variant]]`s adding a named fix to a
    shared entry, e.g. the client's output cap for `model-did-not-stop`). Read as files, not
    imported: the registry stays below the clients."""
    from dataclasses import replace
    from pathlib import Path

    from notes_cli.resources import template_path

    entries = list(load_entries(template_path(*DATA).read_text(encoding="utf-8")))
    for path in sorted((Path(__file__).parent.parent / "clients").glob("*/findings.toml")):
        text = path.read_text(encoding="utf-8")
        own = load_entries(text)
        if any(entry.client != path.parent.name for entry in own):
            raise ValueError(f"{path}: a client folder registers findings of its own client only")
        entries += own
        for raw in tomllib.loads(text).get("variant", []):
            at = next(i for i, e in enumerate(entries) if e.id == raw["finding"])
            variant = Variant(_template(f"{path} variant", raw["fix"]), _severity(str(path), raw))
            variants = {**entries[at].variants, raw["name"]: variant}
            entries[at] = replace(entries[at], variants=variants)
    ids = [e.id for e in entries]
    if len(set(ids)) != len(ids):
        raise ValueError(f"an id is registered twice: {sorted(i for i in ids if ids.count(i) > 1)}")
    return tuple(entries)


ENTRIES = _entries()
REGISTRY: dict[str, Entry] = {entry.id: entry for entry in ENTRIES}


class _Fields(dict[str, object]):
    def __missing__(self, key: str) -> str:
        return "{" + key + "}"


def make(
    finding_id: str,
    client: FindingClient,
    message: str,
    *,
    severity: Severity | None = None,
    variant: str | None = None,
    file: str | None = None,
    line: int | None = None,
    secrets: Iterable[str] | None = None,
    **fields: object,
) -> Finding:
    """A finding of a registered id, its fix filled from the registry's template (the named
    `variant`'s, when given); its severity the variant's or the entry's unless a check raises
    or lowers it. `secrets` (the values a live probe sent) are masked in message and fix, on
    top of the key-shaped values every finding masks."""
    entry = REGISTRY[finding_id]
    chosen = entry.variants[variant] if variant is not None else Variant(entry.fix)
    fix = chosen.fix.format_map(_Fields(file=file or "the file", line=line, **fields))
    if secrets is not None:
        known = tuple(secrets)
        message, fix = scrub(message, known), scrub(fix, known)
    return Finding(
        id=finding_id,
        severity=severity or chosen.severity or entry.severity,
        client=client,
        message=message,
        fix=fix,
        file=file,
        line=line,
    )


def markdown() -> str:
    """docs/findings.md: every id with its severity, client, when, example and fix."""
    lines = [
        "# Doctor findings",
        "",
        "Generated from `templates/doctor/findings.toml` and the client folders' "
        "`notes_cli/clients/<name>/findings.toml` "
        "(`python -m notes_cli.doctor.registry > docs/findings.md`). Ids are stable; "
        "`pdnotes doctor --json` reports them as `findings[].id`. In fixes, `<name>` stands "
        "for a value taken from your configuration, and `<gateway_fix>` for the fix pdnotes' "
        "gateway client gives with the error it met; a fix after a *name* is the one shown in "
        "that situation (*live*: found by a live probe). Severity is the default; a check may "
        "raise or lower it (noted under *when*).",
        "",
        "| id | severity | client | when | example | fix |",
        "|---|---|---|---|---|---|",
    ]
    for e in ENTRIES:
        kind = f"{e.severity} (live)" if e.live else e.severity
        example = f"`` {e.example} ``" if "`" in e.example else f"`{e.example}`"
        fix = "; ".join([e.fix, *(f"*{name}*: {v.fix}" for name, v in e.variants.items())])
        fix = re.sub(r"{(\w+)}", r"<\1>", fix)
        cells = [f"`{e.id}`", kind, e.client, e.when, example, fix]
        lines.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    from notes_cli import render

    render.text(markdown())
