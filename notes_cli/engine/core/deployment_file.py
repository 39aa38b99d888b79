"""Deployment files: one deployment, written so it means the same on any machine.

`dump_deployment` writes a deployment row as TOML together with the chip, link and model rows it
uses that pdnotes does not ship (a user's own rows, a planner's), so the file is self-contained.
`resolve_preset` is what `engine serve --preset` and `engine simulate -p` call: a value that looks
like a path (it holds a path separator or ends in `.toml`) is read as a deployment file, anything
else is a preset name. A file's rows replace same-named rows whole (`load_catalog(overlay=...)`),
so a user's local override of, say, `h800` cannot change what a file written elsewhere means.
"""

from __future__ import annotations

import os
import tomllib
from dataclasses import fields
from pathlib import Path
from typing import Any

from notes_cli.engine.core.profiles import (
    GROUP_KEYS,
    Catalog,
    Chip,
    Deployment,
    Link,
    ModelShape,
    NodeGroup,
    RawRows,
    load_catalog,
)
from notes_cli.errors import InputError

MAX_DEPLOYMENT_FILE_BYTES = 1_000_000
"""A deployment file is a few hundred bytes; anything near this size is not one."""

_ROW_CLASSES: dict[str, type] = {
    "chips": Chip,
    "links": Link,
    "models": ModelShape,
    "deployments": Deployment,
}
_GROUPS = ("prefill", "decode", "colocated")
_ALWAYS = ("count", "chip", "tp", "pp")
_LAYOUT_FIX = (
    "a deployment file holds one [deployments.NAME] table and, optionally, the [chips.*], "
    "[links.*] and [models.*] rows it uses; write one with `pdnotes engine plan` or see "
    "docs/engine.md"
)


def dump_deployment(
    deployment: Deployment, catalog: Catalog, *, written_by: str = "pdnotes"
) -> str:
    """`deployment` as a self-contained TOML document: its row, then the chip, link and model rows
    it names that differ from (or are missing in) the shipped catalog. `written_by` names the
    command in the header comment."""
    import tomlkit

    from notes_cli import __version__

    shipped = load_catalog(user=False)
    doc = tomlkit.document()
    for line in (
        f"pdnotes deployment file, written by {written_by} (pdnotes {__version__})",
        "Watch it live:  pdnotes engine serve --preset THIS_FILE",
        "Simulate it:    pdnotes engine simulate -p THIS_FILE",
        "The chip, link and model rows it uses that pdnotes does not ship are included below.",
    ):
        doc.add(tomlkit.comment(line))
    doc.add(tomlkit.nl())
    deployments = tomlkit.table(is_super_table=True)
    deployments.add(deployment.name, _row_table(deployment))
    doc.add("deployments", deployments)
    used = {
        "chips": sorted({g.chip for g in _groups(deployment)}),
        "links": sorted({deployment.link, deployment.fallback_link}),
        "models": [deployment.model],
    }
    for kind, names in used.items():
        rows: dict[str, Any] = getattr(catalog, kind)
        ours = getattr(shipped, kind)
        extra = [n for n in names if n in rows and ours.get(n) != rows[n]]
        if extra:
            table = tomlkit.table(is_super_table=True)
            for name in extra:
                table.add(name, _row_table(rows[name]))
            doc.add(kind, table)
    return tomlkit.dumps(doc)


def _groups(deployment: Deployment) -> list[NodeGroup]:
    return [g for g in (deployment.prefill, deployment.decode, deployment.colocated) if g]


def _row_table(row: Any) -> Any:
    import tomlkit

    table = tomlkit.table()
    # A zero whose default is zero means "absent" (a dense model's experts, a chip without fp8):
    # left out, so a dense row reads as it did before MoE keys existed.
    values = [
        (f.name, getattr(row, f.name))
        for f in fields(row)
        if f.name != "name" and not _absent(f.default, getattr(row, f.name))
    ]
    for key, value in values:  # scalars first, node groups last (as the shipped files read)
        if value is not None and value != "" and not isinstance(value, NodeGroup):
            table.add(key, value)
    for key, value in values:
        if isinstance(value, NodeGroup):
            group = tomlkit.inline_table()
            # ep and dp only where used, so a dense deployment's file reads as before
            group.update(
                {k: getattr(value, k) for k in GROUP_KEYS if k in _ALWAYS or getattr(value, k) != 1}
            )
            table.add(key, group)
    return table


def _absent(default: Any, value: Any) -> bool:
    """A numeric zero left at its zero default (not a bool: false is written)."""
    numbers = (int, float)
    return (
        isinstance(default, numbers)
        and not isinstance(default, bool)
        and default == 0
        and isinstance(value, numbers)
        and not isinstance(value, bool)
        and value == 0
    )


def is_deployment_path(value: str) -> bool:
    """True when a --preset value names a file rather than a preset (no preset name contains
    a path separator or ends in .toml)."""
    return "/" in value or os.sep in value or value.endswith(".toml")


def resolve_preset(value: str, catalog: Catalog | None = None) -> tuple[Deployment, Catalog]:
    """(deployment, catalog to run it with) for a preset name or a deployment file path.
    A name is looked up in `catalog` (default: shipped + user rows; UsageError if unknown);
    a file is read and checked (InputError naming the file and what is wrong)."""
    if not is_deployment_path(value):
        catalog = catalog or load_catalog()
        return catalog.deployment(value), catalog
    path = Path(value).expanduser()
    rows = read_deployment_file(path)
    try:
        with_file = load_catalog(overlay=rows)
    except InputError as exc:
        raise _in_file(path, exc) from exc
    if catalog is not None:  # the caller's catalog, with the file's rows replacing its own
        merged = {}
        for kind in _ROW_CLASSES:
            ours = getattr(with_file, kind)
            merged[kind] = {**getattr(catalog, kind), **{n: ours[n] for n in rows[kind]}}
        with_file = Catalog(**merged)
    (name,) = rows["deployments"]
    return with_file.deployments[name], with_file


def read_deployment_file(path: Path) -> RawRows:
    """The rows of a deployment file, checked for layout and value types; InputError (exit 2)
    naming the file and the problem otherwise. Regular files only, size-capped, strict TOML."""
    from notes_cli.fileio import decode_text, read_document

    if not path.exists():
        raise InputError(
            f"no deployment file at {path}",
            fix="check the path, or pass a preset name (see `pdnotes engine presets`)",
        )
    data = read_document(path, max_bytes=MAX_DEPLOYMENT_FILE_BYTES, what="deployment file")
    try:
        doc = tomllib.loads(decode_text(path, data))
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"deployment file {path} is not valid TOML: {exc}") from exc
    unknown = sorted(set(doc) - set(_ROW_CLASSES))
    if unknown:
        raise InputError(
            f"deployment file {path}: unknown top-level key(s) {', '.join(unknown)}",
            fix=_LAYOUT_FIX,
        )
    rows: RawRows = {kind: {} for kind in _ROW_CLASSES}
    for kind, cls in _ROW_CLASSES.items():
        section = doc.get(kind, {})
        if not isinstance(section, dict):
            raise InputError(f"deployment file {path}: [{kind}] must be a table", fix=_LAYOUT_FIX)
        for name, row in section.items():
            if not isinstance(row, dict):
                raise InputError(f"deployment file {path}: [{kind}.{name}] must be a table")
            problem = _row_problem(cls, row)
            if problem:
                raise InputError(f"deployment file {path}: [{kind}.{name}] {problem}")
            rows[kind][name] = {**row, "_file": str(path)}
    if len(rows["deployments"]) != 1:
        found = ", ".join(sorted(rows["deployments"])) or "none"
        raise InputError(
            f"deployment file {path} must hold exactly one [deployments.NAME] table "
            f"(found: {found})",
            fix=_LAYOUT_FIX,
        )
    return rows


# A field's annotation (a string: profiles uses `from __future__ import annotations`) -> the
# TOML value types it takes. bool is checked first: in Python it is also an int.
_TYPES: dict[str, tuple[type, ...]] = {
    "str": (str,),
    "int": (int,),
    "float": (int, float),
    "bool": (bool,),
    "int | None": (int,),
    "float | None": (int, float),
    "str | None": (str,),
    "bool | None": (bool,),
}


def _row_problem(cls: type, row: dict[str, Any]) -> str | None:
    """What is wrong with one row's values, or None. Unknown and missing keys are reported by
    the catalog loader (it names them); this catches wrong types, which it would not."""
    for f in fields(cls):
        if f.name not in row:
            continue
        value = row[f.name]
        if f.type == "NodeGroup | None":
            problem = _group_problem(value)
            if problem:
                return f"{f.name}: {problem}"
            continue
        allowed = _TYPES.get(str(f.type))
        if allowed is None:
            continue
        is_bool = isinstance(value, bool)
        if (is_bool and bool not in allowed) or not isinstance(value, allowed):
            return f"{f.name} = {value!r} should be {_describe(str(f.type))}"
    return None


def _group_problem(value: Any) -> str | None:
    if not isinstance(value, dict):
        return 'must be a table like { count = 1, chip = "h800", tp = 1, pp = 1 }'
    extra = sorted(set(value) - set(GROUP_KEYS))
    if extra:
        return f"unknown key(s) {', '.join(extra)} (a node group has {', '.join(GROUP_KEYS)})"
    if not isinstance(value.get("chip"), str):
        return 'needs chip = "NAME"'
    for key in (k for k in GROUP_KEYS if k != "chip"):
        if key not in value and key != "count":
            continue
        number = value.get(key)
        if isinstance(number, bool) or not isinstance(number, int) or number < 1:
            return f"{key} must be a whole number of at least 1 (got {number!r})"
    return None


def _describe(annotation: str) -> str:
    words = {
        "str": "a string",
        "int": "a whole number",
        "float": "a number",
        "bool": "true or false",
    }
    return words[annotation.removesuffix(" | None")]


def _in_file(path: Path, exc: InputError) -> InputError:
    message = exc.message if str(path) in exc.message else f"deployment file {path}: {exc.message}"
    return InputError(message, fix=exc.fix or _LAYOUT_FIX)
