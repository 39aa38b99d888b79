"""Refuse, before any parser sees it, a config.toml whose parse would take unbounded time or
memory. One linear pass (a regex walk over strings, comments and punctuation) that stops at the
first excess and raises `InputError` (exit 2, the file untouched).

A Codex config.toml is a few KB; the heaviest real ones hold thousands of `[projects."…"]` trust
entries (Codex appends one per trusted folder), a few hundred KB. Yet the 10 MB read cap bounds
neither parser: tomllib is quadratic in the parts of one dotted key (a single 100,000-part key,
200 KB, never finishes), and tomlkit, which pdnotes edits with, spends ~0.05 ms per key, value,
table or line, and far more on some shapes: tables re-opened after other tables, dotted keys
repeating a prefix inside a table (cubic: ten 64-part `a.b.….k = 1` lines under one header,
2.5 KB, took 26 s), deep headers. The limits below are set from measurements of tomlkit 0.15.2
(parse + dump, CPU time on the shared 2-CPU dev box) on files made to sit just under each one:

- `MAX_TOML_BYTES` (2 MB): a long string or comment is cheap to parse but not to hold.
- `MAX_PIECES` (50,000): `=` `,` `.` `[` `{`, strings and line ends outside comments; a dot in
  a `[header]` weighs 2 and more the deeper it is (each part is a table tomlkit builds). Just
  under it: 5,555 `[projects."…"]` entries 2.2 s (5,000 real ones: ~2 s), 25,000 keys or
  50,000 array items 1.6-2.0 s, 50,000 comment lines 2.4 s, 4,800 4-part headers 2.6 s;
  peak RSS under 70 MB.
- `MAX_KEY_PARTS` (16): parts of one key or header; real Codex keys have at most 5.
- `MAX_DOTTED_WEIGHT` (20,000): the sum over dotted keys of parts², what a top-level dotted
  key costs tomlkit (78 keys of 16 parts sharing their prefix: 1.6 s).
- `MAX_REPEAT_COST` (500,000): inside a table, dotted keys sharing a first part cost tomlkit
  about n² × parts³ per group (`env.A = …`, `env.B = …`: 250 such keys 0.5 s; 11 of 16
  parts ~1 s).
- `MAX_REOPENED` (500): headers re-entering a table left earlier (`[a.x]`, `[b]`, `[a.y]`),
  quadratic in tomlkit (1,000 re-openings one level down took 3.3 s, 500 0.9 s); Codex and
  people append a handful.

The scan over-counts at worst (a malformed string), which only matters near the limits."""

from __future__ import annotations

import re
from pathlib import Path

from notes_cli.errors import InputError

MAX_TOML_BYTES = 2 * 1024 * 1024
MAX_PIECES = 50_000
MAX_KEY_PARTS = 16
MAX_DOTTED_WEIGHT = 20_000
MAX_REPEAT_COST = 500_000
MAX_REOPENED = 500

_TOKEN = re.compile(
    r'(?P<string>"""(?:[^"\\]|\\.|"(?!""))*+(?:"""|\Z)'  # multi-line basic
    r"|'''.*?(?:'''|\Z)"  # multi-line literal
    r'|"(?:[^"\\\n]|\\.)*+"?'  # basic (an unterminated one runs to the line end)
    r"|'[^'\n]*+'?)"  # literal
    r"|(?P<comment>#[^\n]*+)"
    r"|(?P<mark>[=,.\[\]{\n])",
    re.S,
)
_BARE = re.compile(r"[ \t\r]*([A-Za-z0-9_-]*)[ \t\r]*")
_ESCAPE = re.compile(r"\\(u[0-9A-Fa-f]{4}|U[0-9A-Fa-f]{8}|.)", re.S)
_SIMPLE_ESCAPES = {"b": "\b", "t": "\t", "n": "\n", "f": "\f", "r": "\r", '"': '"', "\\": "\\"}


def check(text: str, path: Path) -> None:
    """Raise `InputError` when `text` (config.toml at `path`) is past one of the limits."""
    size = len(text.encode("utf-8", "surrogatepass"))
    if size > MAX_TOML_BYTES:
        raise _refuse(path, f"is {size / 1e6:.1f} MB (pdnotes reads up to 2 MB)")
    _Scan(text, path).run()


class _Scan:
    """The walk's state. A key or header is a chain of parts (bare text between tokens, or a
    string) joined by dots; a chain ended by `=` is a key, by `]` after a line-start `[` a
    header. Dots anywhere else (`1.5`, dates) start chains that are never ended so."""

    def __init__(self, text: str, path: Path) -> None:
        self.text, self.path = text, path
        self.pieces = 0
        self.dotted_weight = 0
        self.repeat_cost = 0
        self.reopened = 0
        self.parts: list[str] = []  # the chain so far
        self.open_dot = False  # the chain ends in a dot: a part must follow
        self.line_start = True
        self.header_at: int | None = None  # index of a line-start `[` being read
        self.pending_header: tuple[tuple[str, ...], int] | None = None  # until the line ends
        self.section: tuple[str, ...] = ()
        self.groups: dict[str, tuple[int, int]] = {}  # first part -> (keys, most parts)
        self.previous_header: tuple[str, ...] = ()
        self.seen_tables: set[tuple[str, ...]] = set()

    def run(self) -> None:
        text, end = self.text, 0
        for match in _TOKEN.finditer(text):
            start, kind, token = match.start(), match.lastgroup, match.group()
            gap = _BARE.fullmatch(text, end, start)  # None: something else (`}`, `:`, `+`)
            bare = gap.group(1) if gap else None
            end = match.end()
            if kind == "comment":
                if bare != "":
                    self.pending_header = None
                self._commit_header()
                continue
            if self.pending_header is not None and token != "]":
                if token == "\n" and bare == "":
                    self._commit_header()
                self.pending_header = None  # `[1]` then more: an array, not a header
            at_line_start, self.line_start = self.line_start and bare == "", token == "\n"
            if token != "]":  # tomlkit's cost is in what a bracket opens
                self.pieces += 1
            if kind == "string":
                self._string(token, bare)
            elif token == ".":
                self._dot(bare, start)
            elif token == "=":
                self._end_key(bare, start)
            elif token == "[" and at_line_start:
                self.header_at = start
            elif token == "]" and self.header_at is not None:
                self._end_header(bare, start)
            else:
                self._reset()
                if token != "[":  # `[[` opens an array-of-tables header
                    self.header_at = None
            if self.pieces > MAX_PIECES:
                raise _refuse(
                    self.path, f"has more than {MAX_PIECES:,} keys, values, tables and lines"
                )
        self._commit_header()

    def _string(self, token: str, bare: str | None) -> None:
        if bare != "" or (self.parts and not self.open_dot):
            self._reset()
        self.parts.append(_string_value(token))
        self.open_dot = False

    def _dot(self, bare: str | None, at: int) -> None:
        if bare is None or (bare == "" and (not self.parts or self.open_dot)):
            self._reset()
            return
        if bare:
            if self.parts and not self.open_dot:
                self._reset()
            self.parts.append(bare)
        self.open_dot = True
        if self.header_at is not None:
            self.pieces += 1 + (len(self.parts) - 1) // 8  # a header's parts are tables
        if len(self.parts) >= MAX_KEY_PARTS:
            line = self._line(at)
            raise InputError(
                f"{self.path}:{line}: a key has more than {MAX_KEY_PARTS} dotted parts, which "
                "pdnotes does not read (a real config key has a few); the file was not changed",
                fix=f"shorten the key on line {line} of {self.path}, or check that it is the "
                "right file",
            )

    def _chain(self, bare: str | None) -> tuple[str, ...] | None:
        """The finished chain, when a key or header really ends here."""
        if bare is None:
            return None
        if bare:
            if self.parts and not self.open_dot:
                return None
            self.parts.append(bare)
        elif self.open_dot or not self.parts:
            return None
        return tuple(self.parts)

    def _end_key(self, bare: str | None, at: int) -> None:
        key = self._chain(bare)
        self._reset()
        if key is None or len(key) < 2:
            return
        self.dotted_weight += len(key) ** 2
        if self.dotted_weight > MAX_DOTTED_WEIGHT:
            raise _refuse(
                self.path, f"has too many dotted keys (`a.b.c = …`; line {self._line(at)})"
            )
        if not self.section:
            return  # top-level dotted keys cost tomlkit linearly: the weight above covers them
        count, most = self.groups.get(key[0], (0, 0))
        self.repeat_cost -= count**2 * most**3
        count, most = count + 1, max(most, len(key))
        self.repeat_cost += count**2 * most**3
        self.groups[key[0]] = (count, most)
        if self.repeat_cost > MAX_REPEAT_COST:
            raise _refuse(
                self.path,
                f"has too many dotted keys `{key[0]}.… = …` in one table (line {self._line(at)})",
            )

    def _end_header(self, bare: str | None, at: int) -> None:
        header = self._chain(bare)
        self._reset()
        self.header_at = None
        if header is not None:
            self.pending_header = (header, at)

    def _commit_header(self) -> None:
        """A header really ends its line: count the tables it re-opens, start its section."""
        if self.pending_header is None:
            return
        header, at = self.pending_header
        self.pending_header = None
        previous = self.previous_header
        common = 0
        while common < min(len(header), len(previous)) and header[common] == previous[common]:
            common += 1
        for depth in range(common + 1, len(header) + 1):
            table = header[:depth]
            if table in self.seen_tables:
                self.reopened += 1
            self.seen_tables.add(table)
        if self.reopened > MAX_REOPENED:
            raise _refuse(
                self.path,
                f"re-opens tables after other tables more than {MAX_REOPENED} times "
                f"(line {self._line(at)})",
            )
        self.previous_header = self.section = header
        self.groups = {}

    def _reset(self) -> None:
        self.parts = []
        self.open_dot = False

    def _line(self, at: int) -> int:
        return self.text.count("\n", 0, at) + 1


def _string_value(token: str) -> str:
    """A quoted key part as the key it names (escapes decoded), so spellings group together."""
    if token.startswith("'"):
        return token.strip("'")
    body = token[1:-1] if len(token) > 1 and token.endswith('"') else token[1:]
    if "\\" not in body:
        return body
    return _ESCAPE.sub(lambda m: _unescape(m.group(1)), body)


def _unescape(code: str) -> str:
    if code[0] in "uU" and len(code) > 1:
        value = int(code[1:], 16)
        return chr(value) if value < 0x110000 else code
    return _SIMPLE_ESCAPES.get(code, code)


def _refuse(path: Path, what: str) -> InputError:
    return InputError(
        f"{path} {what}; a client's config.toml is a few KB, so pdnotes will not read or "
        "rewrite it; the file was not changed",
        fix=f"check that {path} is the right file; if it is, trim it (old "
        '[projects."…"] trust entries, say) and run the command again',
    )
