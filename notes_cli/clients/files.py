"""Read and parse the clients' files: Codex's config.toml and Claude Code's settings.json
(strict JSON, key order kept). Parse errors carry line and column.

config.toml is parsed twice over: with tomlkit when pdnotes will edit it (so comments and order
round-trip), and with the standard library's tomllib for read-only use (doctor, show), which is
faster to import and is the same TOML 1.0 that Codex's parser accepts."""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path
from typing import TYPE_CHECKING, Any

from notes_cli import fileio
from notes_cli.errors import ConfigParseError

if TYPE_CHECKING:
    from tomlkit.toml_document import TOMLDocument

_TOMLLIB_WHERE = re.compile(r"\(at line (\d+), column (\d+)\)")


def parse_toml(text: str, path: Path) -> TOMLDocument:
    """Parse Codex's config.toml for editing; `ConfigParseError` with line and column."""
    import tomlkit
    from tomlkit.exceptions import ParseError

    parse_toml_data(text, path)  # the strict parser first, so config and doctor report alike
    try:
        return tomlkit.parse(text)
    except ParseError as exc:
        reason = str(exc).split(" at line ")[0]
        raise ConfigParseError(
            f"{path}:{exc.line}:{exc.col}: {reason}; the file was not changed",
            path=str(path),
            line=exc.line,
            column=exc.col,
            fix=f"fix the TOML syntax at line {exc.line}, column {exc.col} of {path}",
        ) from exc


def parse_json_object(text: str, path: Path) -> dict[str, Any]:
    """Parse a Claude settings file (strict JSON, as Claude Code reads it); must be an object."""
    try:
        data = json.loads(text) if text.strip() else {}
    except json.JSONDecodeError as exc:
        raise ConfigParseError(
            f"{path}:{exc.lineno}:{exc.colno}: invalid JSON ({exc.msg}); the file was not changed",
            path=str(path),
            line=exc.lineno,
            column=exc.colno,
            fix=(
                f"fix line {exc.lineno}, column {exc.colno} of {path}: settings.json must be "
                "strict JSON (no comments, no trailing commas)"
            ),
        ) from exc
    if not isinstance(data, dict):
        raise ConfigParseError(
            f"{path}: the top level is a JSON {json_type_name(data)}, not an object",
            path=str(path),
            line=1,
            column=1,
            fix=f'make {path} a JSON object: {{"env": {{…}}}}',
        )
    return data


def parse_toml_data(text: str, path: Path) -> dict[str, Any]:
    """Parse config.toml read-only into plain dicts; same errors as `parse_toml`."""
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        where = _TOMLLIB_WHERE.search(str(exc))
        line, column = (int(where[1]), int(where[2])) if where else (None, None)
        reason = _TOMLLIB_WHERE.sub("", str(exc)).strip()
        raise ConfigParseError(
            f"{path}:{line}:{column}: {reason}; the file was not changed",
            path=str(path),
            line=line,
            column=column,
            fix=f"fix the TOML syntax at line {line}, column {column} of {path}",
        ) from exc


def read_toml_data(path: Path) -> tuple[str | None, dict[str, Any] | None]:
    """(text, data) of a Codex config for read-only use; (None, None) when absent."""
    text = fileio.read_text(path)
    return (text, parse_toml_data(text, path)) if text is not None else (None, None)


def load_toml(path: Path) -> tuple[str | None, TOMLDocument | None]:
    """(text, document) of a Codex config, (None, None) when the file does not exist."""
    text = fileio.read_text(path)
    return (text, parse_toml(text, path)) if text is not None else (None, None)


def load_json(path: Path) -> tuple[str | None, dict[str, Any] | None]:
    text = fileio.read_text(path)
    return (text, parse_json_object(text, path)) if text is not None else (None, None)


def json_indent(text: str | None) -> int | str:
    """The indentation a JSON file uses (2 when it has none yet), so a rewrite keeps it."""
    for line in (text or "").splitlines()[1:]:
        stripped = line.lstrip(" \t")
        if stripped and len(stripped) < len(line):
            lead = line[: len(line) - len(stripped)]
            return "\t" if lead.startswith("\t") else len(lead)
    return 2


def dump_json(data: dict[str, Any], like: str | None) -> str:
    """Serialise `data` with the indentation and final newline of the text it replaces."""
    body = json.dumps(data, indent=json_indent(like), ensure_ascii=False)
    newline = "\n" if like is None or like.endswith("\n") else ""
    return body + newline


def json_type_name(value: object) -> str:
    """The JSON name of a parsed value's type (for messages: "array", not "list")."""
    names = {list: "array", dict: "object", str: "string", bool: "boolean", int: "number",
             float: "number", type(None): "null"}  # fmt: skip
    return names.get(type(value), type(value).__name__)


def line_of(text: str, needle: str, *, after: int = 0) -> int | None:
    """1-based number of the first line at or after line `after` containing `needle`."""
    for number, line in enumerate(text.splitlines(), start=1):
        if number >= after and needle in line:
            return number
    return None


def toml_key_line(text: str, table: str | None, key: str) -> int | None:
    """Line of `key = …` inside `[table]` (top level when `table` is None); best effort."""
    start = 1
    if table is not None:
        header = toml_header_line(text, table)
        if header is None:
            return None
        start = header + 1
    pattern = re.compile(r"^\s*" + re.escape(key) + r"\s*=")
    for number, line in enumerate(text.splitlines(), start=1):
        if number < start:
            continue
        if line.lstrip().startswith("["):
            return None  # the next table starts: the key is not in this one
        if pattern.match(line) or re.match(r'^\s*"' + re.escape(key) + r'"\s*=', line):
            return number
    return None


def toml_header_line(text: str, table: str) -> int | None:
    """Line of the `[table]` header (quoted or bare parts), if present."""
    return line_of_regex(text, r"^\s*\[\s*" + _header_pattern(table) + r"\s*\]")


def line_of_regex(text: str, pattern: str) -> int | None:
    compiled = re.compile(pattern)
    for number, line in enumerate(text.splitlines(), start=1):
        if compiled.search(line):
            return number
    return None


def _header_pattern(table: str) -> str:
    parts = table.split(".")
    return r"\s*\.\s*".join(r'(?:"' + re.escape(p) + r'"|' + re.escape(p) + ")" for p in parts)
