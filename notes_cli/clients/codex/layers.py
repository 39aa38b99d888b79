"""Codex's config layers, merged the way Codex merges them, each value remembering its layer.

Precedence, lowest first (developers.openai.com/codex/config-basic, checked on 0.171.0 with
`codex app-server --print-startup-config`):
1. `/etc/codex/config.toml` (system; `$PDNOTES_CODEX_SYSTEM_CONFIG` overrides the path for tests)
2. `$CODEX_HOME/config.toml` (user)
3. `.codex/config.toml` in each folder from the project root down to the current directory,
   closest last, only when the project is trusted: the root is the nearest folder holding one of
   `project_root_markers` (default `.git`), else the current directory, and it is trusted when
   the user file says `[projects."<root>"] trust_level = "trusted"`
4. `$CODEX_HOME/<NAME>.config.toml` for `-p NAME` (a missing file is silently ignored by Codex)
5. `-c key=value` overrides (dotted key; the value parsed as TOML, else taken as a string)
Tables merge key by key; any other value is replaced by the higher layer.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from notes_cli.clients import files
from notes_cli.clients.codex.home import codex_config_path
from notes_cli.errors import UsageError

SYSTEM_CONFIG = Path("/etc/codex/config.toml")
DEFAULT_ROOT_MARKERS = (".git",)


@dataclass(frozen=True)
class CodexLayer:
    kind: str
    """"system", "user", "project", "profile" or "override"."""
    path: Path | None
    text: str
    doc: Mapping[str, Any]
    label: str = ""
    """How a finding names it: the file path, or `-c key=value`."""

    @property
    def where(self) -> str:
        return self.label or str(self.path)

    def line_of(self, dotted: tuple[str, ...]) -> int | None:
        if self.path is None or not dotted:
            return None
        table = ".".join(dotted[:-1]) or None
        line = files.toml_key_line(self.text, table, dotted[-1])
        return line or files.toml_header_line(self.text, ".".join(dotted))


@dataclass
class MergedCodex:
    layers: list[CodexLayer]
    doc: dict[str, Any] = field(default_factory=dict)
    origin: dict[tuple[str, ...], CodexLayer] = field(default_factory=dict)
    ignored_project_files: list[Path] = field(default_factory=list)
    """Project `.codex/config.toml` files Codex skips because the project is not trusted."""
    missing_profile: Path | None = None

    def layer_of(self, *dotted: str) -> CodexLayer | None:
        """The layer that set `dotted` (or the nearest enclosing table it set)."""
        key = tuple(dotted)
        while key:
            if key in self.origin:
                return self.origin[key]
            key = key[:-1]
        return None

    def at(self, table: str | None, key: str) -> dict[str, Any]:
        """{"file", "line"} of the layer whose value of `table.key` wins."""
        dotted = (*(table.split(".") if table else ()), key)
        layer = self.layer_of(*dotted)
        if layer is None:
            user = next((lay for lay in self.layers if lay.kind == "user"), None)
            return {"file": user.where if user else None, "line": None}
        return {"file": layer.where, "line": layer.line_of(dotted)}


def parse_override(raw: str) -> tuple[tuple[str, ...], Any]:
    """`-c model="m"` -> (("model",), "m"); a value that is not TOML is taken as a string."""
    key, sep, value = raw.partition("=")
    if not sep or not key.strip():
        raise UsageError(f"-c {raw!r} is not key=value", fix='e.g. -c model="gpt-5"')
    try:
        parsed: Any = tomllib.loads(f"v = {value.strip()}")["v"]
    except tomllib.TOMLDecodeError:
        parsed = value.strip()
    return tuple(part.strip() for part in key.strip().split(".")), parsed


def codex_layers(
    codex_home: Path | None,
    *,
    cwd: Path | None = None,
    profile: str | None = None,
    overrides: Iterable[str] = (),
) -> MergedCodex:
    """Read and merge every layer (raises `ConfigParseError` for a file that does not parse)."""
    user_path = codex_config_path(codex_home)
    layers: list[CodexLayer] = []
    system = Path(os.environ.get("PDNOTES_CODEX_SYSTEM_CONFIG") or SYSTEM_CONFIG)
    for kind, path in (("system", system), ("user", user_path)):
        layer = _file_layer(kind, path)
        if layer is not None:
            layers.append(layer)
    user_doc = next((lay.doc for lay in layers if lay.kind == "user"), {})
    here = (cwd or Path.cwd()).resolve()
    project, ignored = _project_files(here, user_doc, user_path)
    for path in project:
        layer = _file_layer("project", path)
        if layer is not None:
            layers.append(layer)
    missing_profile = None
    if profile:
        profile_path = user_path.parent / f"{profile}.config.toml"
        layer = _file_layer("profile", profile_path)
        if layer is None:
            missing_profile = profile_path
        else:
            layers.append(layer)
    for raw in overrides:
        dotted, value = parse_override(raw)
        doc: dict[str, Any] = {}
        _set(doc, dotted, value)
        layers.append(CodexLayer("override", None, "", doc, label=f"-c {raw}"))
    merged = MergedCodex(layers, ignored_project_files=ignored, missing_profile=missing_profile)
    return merge_into(merged)


def merge_into(merged: MergedCodex) -> MergedCodex:
    """Fill `merged.doc` and `merged.origin` from its layers, lowest first."""
    for layer in merged.layers:
        _merge(merged.doc, layer.doc, (), layer, merged.origin)
    return merged


def project_root(here: Path, markers: Iterable[str]) -> Path:
    marker_list = list(markers)
    for folder in (here, *here.parents):
        if any((folder / m).exists() for m in marker_list):
            return folder
    return here


def _project_files(
    here: Path, user_doc: Mapping[str, Any], user_path: Path
) -> tuple[list[Path], list[Path]]:
    markers = user_doc.get("project_root_markers")
    root = project_root(
        here, markers if isinstance(markers, list) and markers else DEFAULT_ROOT_MARKERS
    )
    folders = [here, *here.parents]
    chain = list(reversed(folders[: folders.index(root) + 1]))  # root first, cwd last
    found = [
        f / ".codex" / "config.toml"
        for f in chain
        if (f / ".codex" / "config.toml").is_file()
        and (f / ".codex" / "config.toml").resolve() != user_path.resolve()
    ]
    projects = user_doc.get("projects")
    entry = projects.get(str(root)) if isinstance(projects, dict) else None
    trusted = isinstance(entry, dict) and entry.get("trust_level") == "trusted"
    return (found, []) if trusted else ([], found)


def _file_layer(kind: str, path: Path) -> CodexLayer | None:
    text, doc = files.read_toml_data(path)
    if text is None or doc is None:
        return None
    return CodexLayer(kind, path, text, doc)


def _set(doc: dict[str, Any], dotted: tuple[str, ...], value: Any) -> None:
    for part in dotted[:-1]:
        doc = doc.setdefault(part, {})
    doc[dotted[-1]] = value


def _merge(
    into: dict[str, Any],
    new: Mapping[str, Any],
    prefix: tuple[str, ...],
    layer: CodexLayer,
    origin: dict[tuple[str, ...], CodexLayer],
) -> None:
    for key, value in new.items():
        dotted = (*prefix, str(key))
        if isinstance(value, dict) and isinstance(into.get(key), dict):
            _merge(into[key], value, dotted, layer, origin)
            continue
        into[key] = _copy(value)
        for stale in [k for k in origin if k[: len(dotted)] == dotted]:
            del origin[stale]
        _record(value, dotted, layer, origin)


def _record(
    value: Any,
    dotted: tuple[str, ...],
    layer: CodexLayer,
    origin: dict[tuple[str, ...], CodexLayer],
) -> None:
    origin[dotted] = layer
    if isinstance(value, dict):
        for key, inner in value.items():
            _record(inner, (*dotted, str(key)), layer, origin)


def _copy(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _copy(v) for k, v in value.items()}
    return value
