"""The model catalog `config codex --model-catalog` writes so Codex knows a gateway's model.

Codex reads a model's metadata (context window, reasoning levels, instructions) from its catalog;
for a model the bundled catalog lacks it warns `Model metadata for X not found`, assumes a
272000-token window and leaves the model out of its picker. `model_catalog_json = "<file>"`
names a JSON file `{"models": [entry, …]}` that *replaces* the bundled catalog, and Codex refuses
the whole file when an entry lacks a required field or its instructions. The entry pdnotes
writes is Codex's own fallback metadata (`templates/clients/codex/catalog/<version>.json`,
recorded from the binary by scripts/codex_data.py) with the window and the reasoning levels
filled in, so Codex sends what it sent before, minus the warning, with the right window.

The file is pdnotes' own (`pdnotes-models.json` in `$CODEX_HOME`) unless config.toml already
names one; either way the other entries in it are kept and only this model's entry is replaced.
A file that is not such a catalog is never overwritten.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from notes_cli import fileio
from notes_cli.clients.plan import FileEdit
from notes_cli.errors import ConfigWriteError, InputError
from notes_cli.resources import template_path

CATALOG_NAME = "pdnotes-models.json"
Version = tuple[int, int, int]


@dataclass(frozen=True)
class CatalogData:
    """One release's `templates/clients/codex/catalog/<version>.json`."""

    version: str
    entry: dict[str, Any]
    instructions: str
    reasoning_levels: tuple[str, ...]
    default_reasoning_level: str
    fallback_window: int  # the fallback metadata's window, for a model whose window is unknown


def catalog_data(version: Version | None) -> CatalogData:
    """The data of the newest release not newer than `version` (the oldest when it predates
    them all, the newest when unknown), like doctor's schema data."""
    folder = template_path("clients", "codex", "catalog")
    known = sorted(_parse(p.stem) for p in folder.glob("*.json"))
    if not known:
        raise FileNotFoundError("templates/clients/codex/catalog has no data file")
    older = [v for v in known if version is not None and v <= version]
    chosen = older[-1] if older else (known[0] if version is not None else known[-1])
    return _load(".".join(map(str, chosen)))


def _parse(stem: str) -> Version:
    major, minor, patch = (int(part) for part in stem.split("."))
    return major, minor, patch


@lru_cache(maxsize=4)
def _load(version: str) -> CatalogData:
    data = json.loads(template_path("clients", "codex", "catalog", f"{version}.json").read_text())
    return CatalogData(
        version=data["version"],
        entry=data["entry"],
        instructions=data["base_instructions"],
        reasoning_levels=tuple(data["reasoning_levels"]),
        default_reasoning_level=data["default_reasoning_level"],
        fallback_window=data["fallback_context_window"],
    )


def model_entry(
    data: CatalogData, model: str, window: int | None, reasoning: bool | None
) -> dict[str, Any]:
    """The catalog entry for `model`: Codex's fallback metadata, with the window (context and
    maximum, so `model_context_window` is not capped below it; the fallback's when unknown)
    and, when known, whether the model reasons (levels offered, default effort; a model that
    does not is asked for no reasoning summary)."""
    entry: dict[str, Any] = {"slug": model, "display_name": model, **data.entry}
    entry["supported_reasoning_levels"] = []
    if reasoning:
        entry["supported_reasoning_levels"] = [
            {"effort": level, "description": f"{level} reasoning effort"}
            for level in data.reasoning_levels
        ]
        entry["default_reasoning_level"] = data.default_reasoning_level
    elif reasoning is False:
        entry["default_reasoning_summary"] = "none"
    entry["context_window"] = entry["max_context_window"] = window or data.fallback_window
    entry["base_instructions"] = data.instructions
    return entry


def catalog_path(configured: object, codex_home: Path) -> Path:
    """The catalog file to write: the one config.toml names, else pdnotes' own."""
    if isinstance(configured, str) and configured:
        path = Path(configured).expanduser()
        return path if path.is_absolute() else codex_home / path
    return codex_home / CATALOG_NAME


def plan_catalog(path: Path, entry: dict[str, Any]) -> FileEdit:
    """The edit putting `entry` into the catalog at `path` (a new file, or the file's other
    entries kept and one with the same slug replaced)."""
    raw = fileio.read_bytes(path)
    old_text = None if raw is None else fileio.decode_text(path, raw)
    models: list[Any] = []
    document: dict[str, Any] = {}
    if old_text is not None:
        document = _read_catalog(path, old_text)
        models = list(document["models"])
    slug = entry["slug"]
    place = next((i for i, m in enumerate(models) if m.get("slug") == slug), None)
    if place is None:
        models.append(entry)
    else:
        models[place] = entry
    new_text = json.dumps({**document, "models": models}, indent=2, ensure_ascii=False) + "\n"
    return FileEdit(path, old_text, new_text)


def _read_catalog(path: Path, text: str) -> dict[str, Any]:
    """A catalog file already there, or `ConfigWriteError`: pdnotes does not overwrite a file
    it cannot read as a catalog."""
    problem = None
    try:
        document = json.loads(text)
    except ValueError as exc:
        problem = f"it is not JSON ({exc})"
    else:
        if not isinstance(document, dict) or not isinstance(document.get("models"), list):
            problem = 'it is not a model catalog ({"models": [...]})'
        elif not all(isinstance(m, dict) for m in document["models"]):
            problem = "an entry of its models list is not an object"
        else:
            return document
    raise ConfigWriteError(
        f"cannot add the model to the catalog {path}: {problem}; nothing was written",
        fix=fileio.aside_fix(
            path,
            f"fix or move {path} aside and run the command again",
            setting="--model-catalog (or model_catalog_json in config.toml)",
        ),
    )


def read_slugs(path: Path) -> tuple[set[str] | None, str | None]:
    """(the slugs the catalog at `path` lists, None) or (None, why Codex cannot read it), for
    doctor."""
    try:
        raw = fileio.read_bytes(path)
        if raw is None:
            return None, f"{path} does not exist"
        document = _read_catalog(path, fileio.decode_text(path, raw))
    except InputError as exc:  # a FIFO, a folder, binary, too large, not UTF-8: fileio words it
        return None, exc.message
    except ConfigWriteError as exc:
        return None, exc.message.split(": ", 1)[1].removesuffix("; nothing was written")
    if not document["models"]:
        return None, "it lists no model (Codex needs at least one)"
    required = ("slug", "display_name", "supported_reasoning_levels", *catalog_data(None).entry)
    for number, entry in enumerate(document["models"], start=1):
        lacking = [name for name in required if name not in entry]
        messages = entry.get("model_messages")
        template = messages.get("instructions_template") if isinstance(messages, dict) else None
        if not entry.get("base_instructions") and not template and "base_instructions" not in entry:
            lacking.append("base_instructions")
        if lacking:
            name = entry.get("slug", f"number {number}")
            return None, f"its entry {name} lacks {', '.join(lacking)}"
    return {str(m.get("slug")) for m in document["models"]}, None
