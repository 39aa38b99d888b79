""".env files as Gemini CLI reads them (the `dotenv` package's parse): read, and edit one
variable at a time keeping every other line, comment and blank line as it was.

dotenv's rules that matter here: `KEY=value` or `export KEY=value`, one a line; a value may be
quoted ('…', "…" or `…`); `#` starts a comment outside quotes; a later line for the same key
wins over an earlier one.
"""

from __future__ import annotations

import re

_LINE = re.compile(
    r"^\s*(?:export\s+)?(?P<key>[\w.-]+)\s*=\s*(?P<value>'(?:[^'\\]|\\.)*'|"
    r'"(?:[^"\\]|\\.)*"|`(?:[^`\\]|\\.)*`|[^#\r\n]*)'
)


def parse(text: str) -> dict[str, str]:
    """The variables `text` sets, the last line for a key winning (as dotenv does)."""
    found: dict[str, str] = {}
    for line in text.splitlines():
        match = _LINE.match(line)
        if match:
            found[match["key"]] = _unquote(match["value"])
    return found


def line_of(text: str, key: str) -> int | None:
    """The 1-based line that sets `key` last, for findings that point into the file."""
    last = None
    for number, line in enumerate(text.splitlines(), 1):
        match = _LINE.match(line)
        if match and match["key"] == key:
            last = number
    return last


def _unquote(raw: str) -> str:
    raw = raw.strip()
    if len(raw) >= 2 and raw[0] == raw[-1] and raw[0] in "'\"`":
        inner = raw[1:-1]
        return inner.replace("\\n", "\n") if raw[0] == '"' else inner
    return raw


def set_value(text: str, key: str, value: str | None) -> str:
    """`text` with `key` set to `value` (None removes it): every line setting the key is
    rewritten in place (or dropped); a key not there yet is appended. Other lines are kept."""
    newline = "\r\n" if "\r\n" in text else "\n"
    lines = text.splitlines(keepends=True)
    out: list[str] = []
    placed = False
    for line in lines:
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
