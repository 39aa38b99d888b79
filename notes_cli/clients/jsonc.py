"""Read and edit JSON-with-comments settings files (Gemini CLI's settings.json) in place.

Gemini CLI reads its settings with `JSON.parse(stripJsonComments(text))`: `//` and `/* */`
comments are allowed, trailing commas are not. pdnotes reads them the same way (comments
blanked to spaces, so line and column of any error stay right) and edits them by splicing text:
only the value of each key pdnotes owns is replaced, or one member inserted; every comment,
blank line, unknown key and the file's indentation stay byte for byte. A generic writer would
drop the comments, which is the complaint pdnotes exists to avoid.

Hand-written because no maintained Python library edits JSONC keeping comments (json5 and
commentjson parse, but rewrite the whole text)."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from notes_cli.clients import files
from notes_cli.errors import ConfigParseError

_STRING = re.compile(r'"(?:[^"\\\n]|\\.)*"')


def strip_comments(text: str) -> str:
    """`text` with every comment replaced by spaces (newlines kept), strings untouched: the
    same positions, so a parse error's line and column point into the real file."""
    out: list[str] = []
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch == '"':
            match = _STRING.match(text, i)
            end = match.end() if match else n
            out.append(text[i:end])
            i = end
        elif text.startswith("//", i):
            end = text.find("\n", i)
            end = n if end < 0 else end
            out.append(" " * (end - i))
            i = end
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            end = n if end < 0 else end + 2
            out.append(re.sub(r"[^\n]", " ", text[i:end]))
            i = end
        else:
            out.append(ch)
            i += 1
    return "".join(out)


def parse(
    text: str, path: Path, *, client: str = "Gemini CLI", for_edit: bool = False
) -> dict[str, Any]:
    """The settings object, read as `client` reads it (comments allowed); `ConfigParseError`
    with line and column otherwise. `for_edit`: numbers kept as spelled (`files.JsonNumber`)
    and a key repeated in one object refused (the client keeps the last copy; an edit could not
    keep both)."""
    shadow = strip_comments(text)
    try:
        if for_edit:
            return files.parse_json_for_edit(shadow, path)
        return files.parse_json_object(shadow, path)
    except ConfigParseError as exc:
        raise ConfigParseError(
            str(exc).replace("Claude Code", client),
            path=str(path),
            line=exc.line,
            column=exc.column,
            fix=(exc.fix or "").replace(
                "settings.json must be strict JSON (no comments, no trailing commas)",
                f"{client} allows // and /* */ comments but no trailing commas",
            ),
        ) from exc


@dataclass
class _Object:
    """Where one JSON object sits in the text: its braces and its members' value spans."""

    open: int
    close: int
    members: dict[str, tuple[int, int]] = field(default_factory=dict)
    key_starts: dict[str, int] = field(default_factory=dict)
    children: dict[str, _Object] = field(default_factory=dict)


class _Scanner:
    """A minimal JSON scanner over comment-free text that records object spans; it runs only
    on text `parse` already accepted, so it need not report errors."""

    def __init__(self, text: str) -> None:
        self.text = text

    def skip(self, i: int) -> int:
        while i < len(self.text) and self.text[i] in " \t\r\n":
            i += 1
        return i

    def value(self, i: int) -> tuple[int, _Object | None]:
        i = self.skip(i)
        ch = self.text[i]
        if ch == "{":
            return self.obj(i)
        if ch == "[":
            i = self.skip(i + 1)
            if self.text[i] == "]":
                return i + 1, None
            while True:
                i, _ = self.value(i)
                i = self.skip(i)
                if self.text[i] == "]":
                    return i + 1, None
                i += 1  # the comma
        if ch == '"':
            match = _STRING.match(self.text, i)
            assert match is not None
            return match.end(), None
        match = re.compile(r"[^\s,\]\}]+").match(self.text, i)
        assert match is not None
        return match.end(), None

    def obj(self, i: int) -> tuple[int, _Object]:
        node = _Object(open=i, close=-1)
        i = self.skip(i + 1)
        while self.text[i] != "}":
            match = _STRING.match(self.text, i)
            assert match is not None
            key = json.loads(match.group())
            node.key_starts[key] = i
            i = self.skip(match.end()) + 1  # the colon
            start = self.skip(i)
            i, child = self.value(start)
            node.members[key] = (start, i)
            if child is not None:
                node.children[key] = child
            i = self.skip(i)
            if self.text[i] == ",":
                i = self.skip(i + 1)
        node.close = i
        return i + 1, node


def set_values(text: str, updates: dict[tuple[str, ...], Any]) -> str:
    """`text` (a settings file `parse` accepts, or "" for a new one) with each dotted path in
    `updates` set to its value; nothing else changes. A missing object on the way is created.
    The caller has checked that every object on each path is an object (`parse` result)."""
    original = text
    if not strip_comments(text).strip():  # new, empty or only comments: keep them, add {}
        text += ("" if not text or text.endswith("\n") else "\n") + "{}\n"
    for path, value in updates.items():
        text = _set_one(text, path, value)
    return files.match_newlines(text, original or None)


def _set_one(text: str, path: tuple[str, ...], value: Any) -> str:
    shadow = strip_comments(text)
    start = _Scanner(shadow).skip(0)
    _, node = _Scanner(shadow).obj(start)
    depth = 0
    for depth, key in enumerate(path):
        if key not in node.members:
            rest = path[depth + 1 :]
            nested: Any = value
            for inner in reversed(rest):
                nested = {inner: nested}
            return _insert(text, shadow, node, key, nested, depth)
        if depth == len(path) - 1:
            begin, end = node.members[key]
            literal = _dump(value, _indent_unit(text), _line_indent(text, begin))
            return text[:begin] + literal + text[end:]
        node = node.children[key]
    raise AssertionError(f"unreachable: {path} at {depth}")


def _insert(text: str, shadow: str, node: _Object, key: str, value: Any, depth: int) -> str:
    """Add `"key": value` as the last member of `node`, indented like its siblings."""
    unit = _indent_unit(text)
    newline = "\r\n" if "\r\n" in text else "\n"
    if node.members:
        last_key = max(node.members, key=lambda k: node.members[k][1])
        member_indent = _line_indent(text, node.key_starts[last_key])
        literal = _dump(value, unit, member_indent)
        member = f"{json.dumps(key, ensure_ascii=False)}: {literal}"
        end = node.members[last_key][1]
        line_end = _end_of_line(text, shadow, end)
        if line_end is not None:  # a comment may follow the value on its line: keep it there
            return (
                text[:end]
                + ","
                + text[end:line_end]
                + newline
                + member_indent
                + member
                + (text[line_end:])
            )
        return text[:end] + ", " + member + text[end:]
    outer = _line_indent(text, node.open)
    member_indent = outer + unit
    literal = _dump(value, unit, member_indent)
    member = f"{json.dumps(key, ensure_ascii=False)}: {literal}"
    inside = text[node.open + 1 : node.close]
    if inside.strip():  # only comments inside: keep them, then the member
        body = inside.rstrip(" \t") + ("" if inside.rstrip(" \t").endswith("\n") else newline)
        return (
            text[: node.open + 1]
            + body
            + member_indent
            + member
            + newline
            + outer
            + text[node.close :]
        )
    return (
        text[: node.open + 1]
        + newline
        + member_indent
        + member
        + newline
        + outer
        + text[node.close :]
    )


def _end_of_line(text: str, shadow: str, pos: int) -> int | None:
    """Where the line holding `pos` ends (before its newline), when nothing but spaces and
    comments follow `pos` on it; None when more JSON follows on that line."""
    end = text.find("\n", pos)
    end = len(text) if end < 0 else end
    if text[end - 1 : end] == "\r":
        end -= 1
    return end if not shadow[pos:end].strip() else None


def _line_indent(text: str, pos: int) -> str:
    line_start = text.rfind("\n", 0, pos) + 1
    line = text[line_start:pos]
    return line[: len(line) - len(line.lstrip(" \t"))]


def _indent_unit(text: str) -> str:
    unit = files.json_indent(text)
    return unit if isinstance(unit, str) else " " * unit


def _dump(value: Any, unit: str, indent: str) -> str:
    """`value` as JSON, nested lines indented under a member that starts at `indent`."""
    dumped = json.dumps(value, ensure_ascii=False, indent=unit or None)
    return dumped.replace("\n", "\n" + indent)
