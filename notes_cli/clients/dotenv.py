r""".env files as Gemini CLI reads them (the `dotenv` package's parse): read, and edit one
variable at a time keeping every other line, comment and blank line as it was.

dotenv's rules that matter here: `KEY=value` or `export KEY=value`, one a line; a value may be
quoted ('…', "…" or `…`); `#` starts a comment outside quotes; a later line for the same key
wins over an earlier one. Lines end at LF, CRLF or CR only (dotenv turns `\r\n?` into `\n`
first): `str.splitlines` also breaks at `\v`, `\f`, `\x1c`-`\x1e`, U+0085 and U+2028/2029,
which dotenv keeps inside the value (`A=1\x0bB=2` sets A to `1\x0bB=2`, not B). Whitespace is
JavaScript's `\s` / `trim()` (no `\x1c`-`\x1f` or U+0085, which Python's would strip).
"""

from __future__ import annotations

import re

_JS_SPACE = " \t\n\v\f\r\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"
"""JavaScript's `\\s` and what its `String.prototype.trim` removes."""
_S = f"[{_JS_SPACE}]"
_LINE = re.compile(
    rf"^{_S}*(?:export{_S}+)?(?P<key>[\w.-]+){_S}*={_S}*(?P<value>'(?:[^'\\]|\\.)*'|"
    r'"(?:[^"\\]|\\.)*"|`(?:[^`\\]|\\.)*`|[^#\r\n]*)',
    re.ASCII,  # `\w` is [A-Za-z0-9_], as in JavaScript
)
_LINE_END = re.compile(r"\r\n|\r|\n")
_TRIM = _JS_SPACE.replace("\u2000-\u200a", "".join(map(chr, range(0x2000, 0x200B))))


def lines(text: str, keepends: bool = False) -> list[str]:
    """`text`'s lines as dotenv sees them: ended by LF, CRLF or CR, nothing else."""
    pieces = _LINE_END.split(text) if not keepends else _split_keeping(text)
    if not keepends and pieces and pieces[-1] == "":
        pieces.pop()  # (a last line end starts no line, as with `splitlines`)
    return pieces


def _split_keeping(text: str) -> list[str]:
    out: list[str] = []
    start = 0
    for end in _LINE_END.finditer(text):
        out.append(text[start : end.end()])
        start = end.end()
    if start < len(text):
        out.append(text[start:])
    return out


def parse(text: str) -> dict[str, str]:
    """The variables `text` sets, the last line for a key winning (as dotenv does)."""
    found: dict[str, str] = {}
    for line in lines(text):
        match = _LINE.match(line)
        if match:
            found[match["key"]] = _unquote(match["value"])
    return found


def line_of(text: str, key: str) -> int | None:
    """The 1-based line that sets `key` last, for findings that point into the file."""
    last = None
    for number, line in enumerate(lines(text), 1):
        match = _LINE.match(line)
        if match and match["key"] == key:
            last = number
    return last


def _unquote(raw: str) -> str:
    raw = raw.strip(_TRIM)
    if len(raw) >= 2 and raw[0] == raw[-1] and raw[0] in "'\"`":
        inner = raw[1:-1]
        return inner.replace("\\n", "\n") if raw[0] == '"' else inner
    return raw


def set_value(text: str, key: str, value: str | None) -> str:
    """`text` with `key` set to `value` (None removes it): every line setting the key is
    rewritten in place (or dropped); a key not there yet is appended. Other lines are kept."""
    newline = "\r\n" if "\r\n" in text else "\n"
    kept = lines(text, keepends=True)
    out: list[str] = []
    placed = False
    for line in kept:
        match = _LINE.match(line)
        if not match or match["key"] != key:
            out.append(line)
            continue
        if value is None or placed:
            continue
        ending = line[len(line.rstrip("\r\n")) :]
        out.append(f"{key}={_quote(value)}{ending}")
        placed = True
    if value is not None and not placed:
        if out and not out[-1].endswith("\n"):
            out[-1] += newline
        out.append(f"{key}={_quote(value)}{newline}")
    return "".join(out)


def _quote(value: str) -> str:
    """A value dotenv reads back unchanged: bare when it can be, else single-quoted."""
    if re.fullmatch(r"[\w./:@%+,=?&~-]*", value):
        return value
    return "'" + value.replace("'", "") + "'"
