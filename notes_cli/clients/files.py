"""Read and parse the clients' files: Codex's config.toml and Claude Code's settings.json
(strict JSON, key order kept). Parse errors carry line and column.

config.toml is parsed twice over: with tomlkit when pdnotes will edit it (so comments and order
round-trip), and with the standard library's tomllib for read-only use (doctor, show), which is
faster to import and is the same TOML 1.0 that Codex's parser accepts.

Hostile input never becomes a traceback: nesting deeper than `MAX_NESTING` (checked on the
parsed result, and a parser's RecursionError caught), integers past the interpreter's digit
limit or TOML's 64 bits, lone surrogates, NaN / Infinity and numbers a double cannot hold
(`1e400`, which a rewrite would turn into the invalid `Infinity`) are each a `ConfigParseError`.
A config.toml the parsers would take unbounded time or memory on (far under the 10 MB read cap:
tomllib is quadratic in a dotted key's parts, tomlkit slow on many shapes) is refused before
parsing, by the linear scan in `toml_bounds`.

settings.json is edited only when no object repeats a key (Claude Code keeps the last copy; a
rewrite would silently drop the others), and number-spelling-preserving: `load_json_for_edit`
wraps every number in a `JsonNumber` that keeps the literal the user wrote (`1.0`, `1e3`,
`10E2`), and `dump_json` writes it back verbatim. Both writers keep CRLF line endings when the
file used them (the BOM is kept by `clients.plan.apply`, which writes the bytes)."""

from __future__ import annotations

import json
import math
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from notes_cli import fileio
from notes_cli.clients import toml_bounds
from notes_cli.errors import ConfigParseError

if TYPE_CHECKING:
    from tomlkit.toml_document import TOMLDocument

_TOMLLIB_WHERE = re.compile(r"\(at line (\d+), column (\d+)\)")

MAX_NESTING = 64
"""Deepest nesting of tables / arrays / objects pdnotes reads. Real client files nest 3 or 4
levels; tomlkit refuses more than 100 itself, and the recursive code reading the documents
(pdnotes' checks, tomlkit's writer) must stay far from Python's recursion limit."""

_SURROGATE = re.compile("[\ud800-\udfff]")
_TOML_INT = (-(2**63), 2**63 - 1)


def parse_toml(text: str, path: Path) -> TOMLDocument:
    """Parse Codex's config.toml for editing; `ConfigParseError` with line and column."""
    import tomlkit
    from tomlkit.exceptions import ParseError

    parse_toml_data(text, path)  # the strict parser first, so config and doctor report alike
    try:
        return tomlkit.parse(text)
    except RecursionError as exc:
        raise _too_deep(path, "TOML") from exc
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
    return parse_json(text, path)


def parse_json_for_edit(text: str, path: Path) -> dict[str, Any]:
    """Parse settings text for an edit: numbers kept as spelled, a repeated key refused."""
    return parse_json(text, path, keep_numbers=True)


@dataclass(frozen=True)
class JsonNumber:
    """A JSON number as the user spelled it; `dump_json` writes `literal` back unchanged."""

    literal: str

    @property
    def value(self) -> int | float:
        return float(self.literal) if any(c in self.literal for c in ".eE") else int(self.literal)


def parse_json(
    text: str, path: Path, *, keep_numbers: bool = False, unique_keys: bool | None = None
) -> dict[str, Any]:
    """The object in `text`, strictly read. `keep_numbers`: numbers as spelled (`JsonNumber`);
    `unique_keys` (default: as `keep_numbers`): a key repeated in one object is refused."""
    unique_keys = keep_numbers if unique_keys is None else unique_keys

    def number(literal: str) -> Any:
        digits = len(literal.lstrip("-"))
        if digits > 400 or not math.isfinite(float(literal)):  # 400: past any double
            raise _BadNumber(literal)
        if keep_numbers:
            return JsonNumber(literal)
        return float(literal) if any(c in literal for c in ".eE") else int(literal)

    def constant(name: str) -> Any:
        raise _BadNumber(name)

    def unique(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        data = dict(pairs)
        if len(data) < len(pairs):  # a rewrite would keep only the last: refuse to edit
            seen: set[str] = set()
            for key, _ in pairs:
                if key in seen:
                    raise _DuplicateKey(key)
                seen.add(key)
        return data

    try:
        data = (
            json.loads(
                text,
                parse_int=number,
                parse_float=number,
                parse_constant=constant,
                object_pairs_hook=unique if unique_keys else None,
            )
            if text.strip()
            else {}
        )
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
    except _BadNumber as exc:
        line, column = _where(text, exc.literal)
        raise ConfigParseError(
            f"{path}:{line}:{column}: {_shorten(exc.literal)} is not a JSON number Claude Code "
            "can keep (NaN, Infinity and numbers beyond a double's range are not JSON, or "
            "turn into Infinity); the file was not changed",
            path=str(path),
            line=line,
            column=column,
            fix=f"write a finite number at line {line}, column {column} of {path}",
        ) from exc
    except _DuplicateKey as exc:
        line, column = _duplicate_at(text, exc.key)
        where = f"{path}:{line}:{column}" if line else str(path)
        raise ConfigParseError(
            f"{where}: the key {json.dumps(exc.key, ensure_ascii=False)} appears twice in one "
            "object; Claude Code uses only the last one, and a rewrite would drop the other, "
            "so pdnotes will not edit the file; the file was not changed",
            path=str(path),
            line=line,
            column=column,
            fix=f"merge the two {json.dumps(exc.key, ensure_ascii=False)} entries into one "
            f"(keep what you need from both) in {path}, and run the command again",
        ) from exc
    except RecursionError as exc:
        raise _too_deep(path, "JSON") from exc
    if not isinstance(data, dict):
        raise ConfigParseError(
            f"{path}: the top level is a JSON {json_type_name(data)}, not an object",
            path=str(path),
            line=1,
            column=1,
            fix=f'make {path} a JSON object: {{"env": {{…}}}}',
        )
    _check_tree(data, path, "JSON")
    return data


class _BadNumber(Exception):
    def __init__(self, literal: str) -> None:
        super().__init__(literal)
        self.literal = literal


class _DuplicateKey(Exception):
    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key


_JSON_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*+"\s*+(:)?|[{}]')


def _duplicate_at(text: str, key: str) -> tuple[int | None, int | None]:
    """Line and column of the first repeat of `key` within one object (only run when the
    parse found one): a walk over strings and braces keeping each open object's sightings."""
    open_objects: list[bool] = []  # per open object: `key` seen in it yet
    for match in _JSON_TOKEN.finditer(text):
        token = match.group()
        if token == "{":
            open_objects.append(False)
        elif token == "}":
            if open_objects:
                open_objects.pop()
        elif match.group(1) and open_objects and _is_key(token, key):
            if open_objects[-1]:
                start = match.start()
                line = text.count("\n", 0, start) + 1
                return line, start - (text.rfind("\n", 0, start) + 1) + 1
            open_objects[-1] = True
    return None, None


def _is_key(token: str, key: str) -> bool:
    raw = token[: token.rindex(":")].rstrip()
    if "\\" not in raw:
        return raw[1:-1] == key
    try:
        return bool(json.loads(raw) == key)
    except ValueError:
        return False


def _where(text: str, needle: str) -> tuple[int | None, int | None]:
    index = text.find(needle)
    if index < 0:
        return None, None
    line = text.count("\n", 0, index) + 1
    return line, index - (text.rfind("\n", 0, index) + 1) + 1


def _shorten(literal: str) -> str:
    return literal if len(literal) <= 24 else f"a {len(literal)}-character number"


def _too_deep(path: Path, language: str) -> ConfigParseError:
    return ConfigParseError(
        f"{path}: the {language} nests too deeply for pdnotes to read (more than "
        f"{MAX_NESTING} levels); the file was not changed",
        path=str(path),
        fix=f"a client file nests a few levels; check that {path} is the right file",
    )


def _check_tree(data: Any, path: Path, language: str) -> None:
    """Refuse what parsed but pdnotes must not hand on: nesting past MAX_NESTING, lone
    surrogates (not Unicode: writing them back would fail), TOML integers past 64 bits.
    Iterative, so a deep document cannot exhaust the stack here."""
    stack: list[tuple[Any, int, str]] = [(data, 0, "")]
    while stack:
        value, depth, where = stack.pop()
        if isinstance(value, dict):
            if depth >= MAX_NESTING:
                raise _too_deep(path, language)
            for key, item in value.items():
                key_path = f"{where}.{key}" if where else str(key)
                if _SURROGATE.search(str(key)):
                    raise _surrogate(path, key_path)
                stack.append((item, depth + 1, key_path))
        elif isinstance(value, list):
            if depth >= MAX_NESTING:
                raise _too_deep(path, language)
            stack.extend((item, depth + 1, f"{where}[{i}]") for i, item in enumerate(value))
        elif isinstance(value, str):
            if _SURROGATE.search(value):
                raise _surrogate(path, where)
        elif _toml_int_out_of_range(value, language):
            raise ConfigParseError(
                f"{path}: the integer at {where} does not fit in 64 bits, which TOML "
                "requires (the clients' TOML parsers refuse it); the file was not changed",
                path=str(path),
                fix=f"write a smaller integer for {where}",
            )


def _toml_int_out_of_range(value: Any, language: str) -> bool:
    if language != "TOML" or not isinstance(value, int) or isinstance(value, bool):
        return False
    return not _TOML_INT[0] <= value <= _TOML_INT[1]


def _surrogate(path: Path, where: str) -> ConfigParseError:
    return ConfigParseError(
        f"{path}: the text at {where or 'the top level'} holds a lone surrogate (\\ud800-"
        "\\udfff), which is not Unicode text; the file was not changed",
        path=str(path),
        fix=f"remove the \\uD8xx / \\uDCxx escape from {where or path}",
    )


def parse_toml_data(text: str, path: Path) -> dict[str, Any]:
    """Parse config.toml read-only into plain dicts; same errors as `parse_toml`. A file the
    parsers would take unbounded time or memory on is refused first (`toml_bounds`)."""
    toml_bounds.check(text, path)
    try:
        data = tomllib.loads(text)
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
    except RecursionError as exc:
        raise _too_deep(path, "TOML") from exc
    except ValueError as exc:  # int(): more digits than sys.get_int_max_str_digits()
        raise ConfigParseError(
            f"{path}: an integer has thousands of digits; TOML integers are 64-bit "
            "(the clients' TOML parsers refuse it); the file was not changed",
            path=str(path),
            fix=f"write a smaller integer in {path}",
        ) from exc
    _check_tree(data, path, "TOML")
    return data


def read_toml_data(path: Path) -> tuple[str | None, dict[str, Any] | None]:
    """(text, data) of a Codex config for read-only use; (None, None) when absent."""
    text = fileio.read_text(path)
    return (text, parse_toml_data(text, path)) if text is not None else (None, None)


def load_toml(path: Path) -> tuple[str | None, TOMLDocument | None]:
    """(text, document) of a Codex config, (None, None) when the file does not exist."""
    text = fileio.read_text(path)
    return (text, parse_toml(text, path)) if text is not None else (None, None)


def load_json(path: Path) -> tuple[str | None, dict[str, Any] | None]:
    """(text, data) of a settings file for read-only use; (None, None) when absent."""
    text = fileio.read_text(path)
    return (text, parse_json_object(text, path)) if text is not None else (None, None)


def load_json_for_edit(path: Path) -> tuple[str | None, dict[str, Any] | None]:
    """Like `load_json`, but every number is a `JsonNumber` keeping its spelling, for a
    rewrite with `dump_json` that leaves the numbers pdnotes does not own as they were."""
    text = fileio.read_text(path)
    if text is None:
        return None, None
    return text, parse_json(text, path, keep_numbers=True)


def dump_toml(doc: TOMLDocument, like: str | None) -> str:
    """Serialise an edited config.toml; lines tomlkit adds get the file's CRLF endings."""
    import tomlkit

    return match_newlines(tomlkit.dumps(doc), like)


def match_newlines(text: str, like: str | None) -> str:
    """`text` with CRLF line endings when `like` (the file it replaces) uses only CRLF."""
    if like is None or "\r\n" not in like or re.search("(?<!\r)\n", like):
        return text
    return re.sub("(?<!\r)\n", "\r\n", text)


def json_indent(text: str | None) -> int | str:
    """The indentation a JSON file uses (2 when it has none yet), so a rewrite keeps it."""
    for line in (text or "").splitlines()[1:]:
        stripped = line.lstrip(" \t")
        if stripped and len(stripped) < len(line):
            lead = line[: len(line) - len(stripped)]
            return "\t" if lead.startswith("\t") else len(lead)
    return 2


class OutputTooLarge(Exception):
    """What `dump_json` would write is past `fileio.MAX_CONFIG_BYTES`, so pdnotes could not
    read it back; raised as soon as the output passes it, so a compact file that indents to
    hundreds of MB (deep nesting multiplies the padding) never sits in memory."""


def dump_json(data: dict[str, Any], like: str | None) -> str:
    """Serialise `data` with the indentation, line endings and final newline of the text it
    replaces, writing `JsonNumber`s as spelled. The layout is json.dumps(indent=…) exactly;
    written by hand because json's encoder cannot emit a number literal verbatim. Raises
    `OutputTooLarge` past `fileio.MAX_CONFIG_BYTES` characters."""
    unit = json_indent(like)
    pad = unit if isinstance(unit, str) else " " * unit
    body = _encode(data, pad, 0, [fileio.MAX_CONFIG_BYTES])
    newline = "\n" if like is None or like.endswith("\n") else ""
    return match_newlines(body + newline, like)


def _encode(value: Any, pad: str, level: int, left: list[int]) -> str:
    """`value` as indented JSON; `left[0]` is the characters still allowed (all levels)."""
    if isinstance(value, (dict, list)):
        if not value:
            return "{}" if isinstance(value, dict) else "[]"
        inner = "\n" + pad * (level + 1)
        _spend(left, (len(inner) + 1) * len(value) + len(pad) * level + 2)
        if isinstance(value, dict):
            items = (
                f"{_leaf(str(k), left)}: {_encode(v, pad, level + 1, left)}"
                for k, v in value.items()
            )
            brackets = "{}"
        else:
            items = (_encode(v, pad, level + 1, left) for v in value)
            brackets = "[]"
        return brackets[0] + inner + ("," + inner).join(items) + "\n" + pad * level + brackets[1]
    return _leaf(value, left)


def _leaf(value: Any, left: list[int]) -> str:
    if isinstance(value, JsonNumber):
        text = value.literal
    else:
        text = json.dumps(value, ensure_ascii=False, allow_nan=False)
    _spend(left, len(text))
    return text


def _spend(left: list[int], size: int) -> None:
    left[0] -= size
    if left[0] < 0:
        raise OutputTooLarge


def json_type_name(value: object) -> str:
    """The JSON name of a parsed value's type (for messages: "array", not "list")."""
    names = {list: "array", dict: "object", str: "string", bool: "boolean", int: "number",
             float: "number", type(None): "null"}  # fmt: skip
    return names.get(type(value), type(value).__name__)


_LINE_END = re.compile(r"\r\n|\r|\n")


def lines_of(text: str) -> list[str]:
    """`text`'s lines as the clients' parsers count them: TOML, JSON and dotenv end a line at
    LF or CRLF (and a lone CR), never at `splitlines`' \\v, \\f, U+0085 or U+2028, which a
    comment or string may hold: a finding would point at the wrong line."""
    return _LINE_END.split(text)


def line_of(text: str, needle: str, *, after: int = 0) -> int | None:
    """1-based number of the first line at or after line `after` containing `needle`."""
    for number, line in enumerate(lines_of(text), start=1):
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
    for number, line in enumerate(lines_of(text), start=1):
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
    for number, line in enumerate(lines_of(text), start=1):
        if compiled.search(line):
            return number
    return None


def _header_pattern(table: str) -> str:
    parts = table.split(".")
    return r"\s*\.\s*".join(r'(?:"' + re.escape(p) + r'"|' + re.escape(p) + ")" for p in parts)


def same_toml_value(a: Any, b: Any) -> bool:
    """Equal as TOML values (a rewrite read back against what was meant): same types (so `true`
    is not `1`), NaN equal to NaN."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same_toml_value(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(same_toml_value(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, float) and math.isnan(a):
        return math.isnan(b)
    return bool(a == b)
