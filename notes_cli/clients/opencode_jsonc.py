"""JSONC (JSON with `//` and `/* */` comments and trailing commas), as OpenCode reads its
opencode.json / opencode.jsonc: parse to data, and edit one value in place.

`set_value` changes the text only where the value sits (or inserts one member into its object),
so comments, key order, number spellings, unknown keys and the file's indentation all stay as
the user wrote them: the textual edit Microsoft's jsonc-parser (`modify`) makes in editors and
in OpenCode itself. Hand-written: no maintained Python library edits JSONC in place keeping
comments (json5 and commentjson drop them on a rewrite).

A file pdnotes could not understand is never edited: a syntax error, an object that repeats a
key (OpenCode keeps the last copy; an edit of the first would be silently ignored), nesting past
`files.MAX_NESTING`, non-finite numbers and lone surrogates are each a `ConfigParseError` with
line and column. The scanner is linear and iterative over the text (no regex backtracking)."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from notes_cli.clients import files
from notes_cli.errors import ConfigParseError


@dataclass
class Node:
    """A parsed value with its span in the text (`end` exclusive)."""

    start: int
    end: int
    value: Any = None
    members: list[Member] = field(default_factory=list)  # objects only
    kind: str = "scalar"  # scalar | object | array


@dataclass
class Member:
    key: str
    key_start: int
    value: Node


class _Error(Exception):
    def __init__(self, at: int, reason: str) -> None:
        super().__init__(reason)
        self.at = at
        self.reason = reason


class _Scanner:
    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0

    def skip(self) -> None:
        """Whitespace and comments."""
        text, n = self.text, len(self.text)
        while self.pos < n:
            char = text[self.pos]
            if char in " \t\r\n\ufeff":
                self.pos += 1
            elif text.startswith("//", self.pos):
                end = text.find("\n", self.pos)
                self.pos = n if end < 0 else end + 1
            elif text.startswith("/*", self.pos):
                end = text.find("*/", self.pos + 2)
                if end < 0:
                    raise _Error(self.pos, "a /* comment is never closed")
                self.pos = end + 2
            else:
                return

    def skip_inline(self) -> None:
        """Spaces, tabs and block comments that close on the current line (not newlines)."""
        text = self.text
        while self.pos < len(text):
            if text[self.pos] in " \t":
                self.pos += 1
                continue
            if text.startswith("/*", self.pos):
                close = text.find("*/", self.pos + 2)
                if close >= 0 and "\n" not in text[self.pos : close]:
                    self.pos = close + 2
                    continue
            return

    def value(self, depth: int) -> Node:
        if depth > files.MAX_NESTING:
            raise _Error(self.pos, "too_deep")
        self.skip()
        if self.pos >= len(self.text):
            raise _Error(self.pos, "the text ends where a value should be")
        char = self.text[self.pos]
        if char == "{":
            return self.container(depth, "object")
        if char == "[":
            return self.container(depth, "array")
        if char == '"':
            start = self.pos
            return Node(start, self.string_end(), self.decode(start))
        return self.literal()

    def container(self, depth: int, kind: str) -> Node:
        node = Node(self.pos, self.pos, kind=kind)
        close = "}" if kind == "object" else "]"
        self.pos += 1
        items: list[Any] = []
        seen: set[str] = set()
        while True:
            self.skip()
            if self.pos >= len(self.text):
                raise _Error(self.pos, f"the text ends inside an {kind} (a missing {close})")
            if self.text[self.pos] == close:
                self.pos += 1
                break
            if kind == "object":
                if self.text[self.pos] != '"':
                    raise _Error(self.pos, "expected a quoted key")
                key_start = self.pos
                self.string_end()
                key = self.decode(key_start)
                if key in seen:
                    raise _Error(key_start, f"duplicate:{key}")
                seen.add(key)
                self.skip()
                if self.text[self.pos : self.pos + 1] != ":":
                    raise _Error(self.pos, "expected a ':' after the key")
                self.pos += 1
                child = self.value(depth + 1)
                node.members.append(Member(key, key_start, child))
            else:
                child = self.value(depth + 1)
                items.append(child.value)
            self.skip()
            if self.text[self.pos : self.pos + 1] == ",":
                self.pos += 1  # a trailing comma is allowed (OpenCode's parser allows it)
            elif self.text[self.pos : self.pos + 1] != close:
                raise _Error(self.pos, f"expected ',' or '{close}'")
        node.end = self.pos
        node.value = {m.key: m.value.value for m in node.members} if kind == "object" else items
        return node

    def string_end(self) -> int:
        text, pos = self.text, self.pos + 1
        while True:
            end = text.find('"', pos)
            newline = text.find("\n", pos, end if end >= 0 else len(text))
            if end < 0 or newline >= 0:
                raise _Error(self.pos, "a string is never closed on its line")
            backslashes = 0
            while text[end - 1 - backslashes] == "\\":
                backslashes += 1
            if backslashes % 2 == 0:
                self.pos = end + 1
                return self.pos
            pos = end + 1

    def decode(self, start: int) -> str:
        try:
            value = json.loads(self.text[start : self.pos])
        except ValueError as exc:
            raise _Error(start, "an invalid escape in a string") from exc
        if any("\ud800" <= c <= "\udfff" for c in value):
            raise _Error(start, "a lone surrogate (\\ud800-\\udfff) is not Unicode text")
        return str(value)

    def literal(self) -> Node:
        start, text = self.pos, self.text
        while self.pos < len(text) and (text[self.pos].isalnum() or text[self.pos] in "+-."):
            self.pos += 1
        word = text[start : self.pos]
        constants = {"true": True, "false": False, "null": None}
        if word in constants:
            return Node(start, self.pos, constants[word])
        try:
            number = json.loads(word) if word else None
        except ValueError:
            number = None
        if not isinstance(number, (int, float)) or isinstance(number, bool):
            raise _Error(start, f"{word[:24] or text[start : start + 1]!r} is not a JSON value")
        if len(word) > 400 or not math.isfinite(float(number)):
            raise _Error(start, f"{word[:24]} is not a number OpenCode can keep")
        return Node(start, self.pos, number)


def parse_tree(text: str, path: Path) -> Node:
    """The document's tree; `ConfigParseError` (line, column) when OpenCode could not read
    it or pdnotes must not edit it. An empty file is an empty object."""
    scanner = _Scanner(text)
    try:
        scanner.skip()
        if scanner.pos >= len(text):
            return Node(0, 0, {}, kind="empty")
        root = scanner.value(0)
        scanner.skip()
        if scanner.pos < len(text):
            raise _Error(scanner.pos, "more text after the top-level value")
    except _Error as exc:
        raise _parse_error(text, path, exc) from None
    if root.kind != "object":
        raise ConfigParseError(
            f"{path}: the top level is a JSON {files.json_type_name(root.value)}, not an object",
            path=str(path),
            line=1,
            column=1,
            fix=f'make {path} a JSON object: {{"provider": {{…}}}}',
        )
    return root


def parse(text: str, path: Path) -> dict[str, Any]:
    """The document as plain data (`ConfigParseError` as `parse_tree`)."""
    value = parse_tree(text, path).value
    return dict(value) if isinstance(value, dict) else {}


def load(path: Path) -> tuple[str | None, dict[str, Any] | None]:
    """(text, data) of a JSONC file; (None, None) when it does not exist."""
    from notes_cli import fileio

    text = fileio.read_text(path)
    return (text, parse(text, path)) if text is not None else (None, None)


def _parse_error(text: str, path: Path, exc: _Error) -> ConfigParseError:
    line = text.count("\n", 0, exc.at) + 1
    column = exc.at - (text.rfind("\n", 0, exc.at) + 1) + 1
    where = f"{path}:{line}:{column}"
    if exc.reason == "too_deep":
        return ConfigParseError(
            f"{path}: the JSON nests too deeply for pdnotes to read (more than "
            f"{files.MAX_NESTING} levels); the file was not changed",
            path=str(path),
            fix=f"a client file nests a few levels; check that {path} is the right file",
        )
    if exc.reason.startswith("duplicate:"):
        key = json.dumps(exc.reason.removeprefix("duplicate:"), ensure_ascii=False)
        return ConfigParseError(
            f"{where}: the key {key} appears twice in one object; OpenCode uses only the last "
            "one, so pdnotes will not edit the file; the file was not changed",
            path=str(path),
            line=line,
            column=column,
            fix=f"merge the two {key} entries into one in {path}, and run the command again",
        )
    return ConfigParseError(
        f"{where}: invalid JSONC ({exc.reason}); the file was not changed",
        path=str(path),
        line=line,
        column=column,
        fix=f"fix line {line}, column {column} of {path} (comments and trailing commas are "
        "fine; quotes, colons and brackets must match)",
    )


# --------------------------------------------------------------------------- editing


def set_value(text: str, keys: tuple[str, ...], value: Any, path: Path) -> str:
    """`text` with the value at `keys` (object members from the top) set to `value`, every
    other byte kept. Objects on the way that are missing are created; a member on the way that
    is not an object is replaced (the caller decides whether that is allowed)."""
    root = parse_tree(text, path)
    unit = files.json_indent(text)
    pad = unit if isinstance(unit, str) else " " * unit
    if root.kind == "empty":
        return _dump({_nest(keys, value)[0]: _nest(keys, value)[1]}, pad, "") + "\n"
    node = root
    for depth, key in enumerate(keys):
        member = next((m for m in node.members if m.key == key), None)
        if member is None:
            name, rest = _nest(keys[depth:], value)
            return _insert(text, node, name, rest, pad)
        if depth == len(keys) - 1 or member.value.kind != "object":
            rest_value = value if depth == len(keys) - 1 else _nest(keys[depth + 1 :], value)
            if isinstance(rest_value, tuple):
                rest_value = {rest_value[0]: rest_value[1]}
            indent = _line_indent(text, member.key_start)
            new = _dump(rest_value, pad, indent)
            return text[: member.value.start] + new + text[member.value.end :]
        node = member.value
    return text


def _nest(keys: tuple[str, ...], value: Any) -> tuple[str, Any]:
    """("a", {"b": {"c": value}}) for keys (a, b, c)."""
    nested = value
    for key in reversed(keys[1:]):
        nested = {key: nested}
    return keys[0], nested


def _insert(text: str, obj: Node, key: str, value: Any, pad: str) -> str:
    """Add `"key": value` as the last member of `obj`."""
    if obj.members:
        last = obj.members[-1]
        indent = _line_indent(text, last.key_start)
        member = f"{json.dumps(key, ensure_ascii=False)}: {_dump(value, pad, indent)}"
        after = last.value.end
        scanner = _Scanner(text)
        scanner.pos = after
        scanner.skip_inline()
        if text[scanner.pos : scanner.pos + 1] == ",":  # a trailing comma already there
            at = _end_of_line_comment(text, scanner.pos + 1)
            return text[:at] + "\n" + indent + member + text[at:]
        at = _end_of_line_comment(text, after)
        return text[:after] + "," + text[after:at] + "\n" + indent + member + text[at:]
    outer = _line_indent(text, obj.start)
    inner = outer + pad
    member = f"{json.dumps(key, ensure_ascii=False)}: {_dump(value, pad, inner)}"
    body = text[obj.start + 1 : obj.end - 1]
    if body.strip():  # only comments inside: keep them, add the member after them
        closing = obj.end - 1
        head = text[:closing].rstrip(" \t")
        if not head.endswith("\n"):
            head += "\n"
        return head + inner + member + "\n" + outer + text[closing:]
    return text[: obj.start + 1] + "\n" + inner + member + "\n" + outer + text[obj.end - 1 :]


def _end_of_line_comment(text: str, pos: int) -> int:
    """Where to put a new line after `pos`: past a `// comment` (or spaces) ending the line,
    so the comment stays with the member it annotates; `pos` itself otherwise."""
    scanner = _Scanner(text)
    scanner.pos = pos
    scanner.skip_inline()
    if text.startswith("//", scanner.pos):
        end = text.find("\n", scanner.pos)
        end = len(text) if end < 0 else end
        return end - 1 if end > 0 and text[end - 1] == "\r" else end
    if scanner.pos >= len(text) or text[scanner.pos] in "\r\n":
        return pos if scanner.pos == pos else scanner.pos
    return pos


def _line_indent(text: str, pos: int) -> str:
    start = text.rfind("\n", 0, pos) + 1
    line = text[start:pos]
    return line[: len(line) - len(line.lstrip(" \t"))]


def _dump(value: Any, pad: str, indent: str) -> str:
    """`value` as indented JSON whose inner lines start at `indent`."""
    dumped = json.dumps(value, ensure_ascii=False, indent=pad, allow_nan=False)
    return dumped.replace("\n", "\n" + indent)
