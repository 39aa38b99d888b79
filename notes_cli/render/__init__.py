r"""The only package that writes to the terminal: rich drawing, plain lines, and the JSON writer.

Core modules return typed results and never print; CLI modules hand those results to a function
here. Submodules hold the drawing for one command group each (render.doctor, render.config, …).
Colour is off under NO_COLOR or when the stream is not a terminal (rich's own rules), and the
width is pinned when not a terminal so output is stable for scripts and golden tests.

Nothing a gateway, a model, a web page, a file or the environment sends reaches the terminal
raw. `visible` shows every control character (C0 but `\n` and `\t`, DEL, C1; so ESC and `\r`
too: `\r` returns to the line's start and overwrites what was shown) as `\xNN`, and every
bidi control as `\uNNNN`, so no text can move the cursor, clear the screen, set the title
(OSC 0), write the clipboard (OSC 52) or reorder what is shown (U+202E). It
runs where text becomes output, not at each call site:
- the consoles (`out()`, `err()`) are `render._console.SafeConsole`: every string is made
  visible before rich parses its markup (`render_str`, which rich calls for print, table cells,
  rules), and every text segment once more just before it is written (`_render_buffer`), which
  catches renderables built from untrusted text without a string (a `Text`). Rich's own colour
  codes are made from styles after that and are untouched; its cursor moves are control
  segments, also untouched;
- the plain writers here (`line` when stdout is not a terminal, `text`) call it themselves;
- `emit_json` keeps the exact text: JSON escapes C0, and DEL, C1 and bidi controls are
  written as `\uXXXX`.
Nothing outside this package writes to stdout or stderr (tests/test_render_visible.py checks).

Imports the cores for their result types and the bottom layer. Must not import cli/; the cores
do not import render/, but for bridge.server's log handler (render.log), listed in
tests/test_architecture.py.
"""

from __future__ import annotations

import json
import math
import os
import re
import sys
from functools import cache
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rich.console import Console


def _make_console(stderr: bool) -> Console:
    from notes_cli.render._console import SafeConsole

    stream = sys.stderr if stderr else sys.stdout
    is_tty = stream.isatty()
    return SafeConsole(
        file=stream,
        stderr=stderr,
        no_color=bool(os.environ.get("NO_COLOR")) or not is_tty,
        width=None if is_tty else 100,
        highlight=False,
        soft_wrap=not is_tty,
    )


@cache
def _consoles(stdout_id: int, stderr_id: int) -> tuple[Console, Console]:
    return _make_console(False), _make_console(True)


def out() -> Console:
    """Console for the command's human output (stdout)."""
    return _consoles(id(sys.stdout), id(sys.stderr))[0]


def err() -> Console:
    """Console for progress, warnings and errors (stderr)."""
    return _consoles(id(sys.stdout), id(sys.stderr))[1]


# Every control character but line feed and tab: C0, DEL and C1 (ESC is C0, CSI is C1 too).
_CONTROLS = [*range(0x00, 0x20), *range(0x7F, 0xA0)]
# The bidirectional controls: embeddings and overrides (U+202A-U+202E), isolates
# (U+2066-U+2069), the marks (U+200E, U+200F, U+061C). A terminal that reorders text by them
# shows `sk-…` or a command in another order than the bytes say (the "Trojan Source" trick).
BIDI_CONTROLS = (0x061C, 0x200E, 0x200F, *range(0x202A, 0x202F), *range(0x2066, 0x206A))
_VISIBLE = {
    **{c: f"\\x{c:02x}" for c in _CONTROLS if chr(c) not in "\n\t"},
    **{c: f"\\u{c:04x}" for c in BIDI_CONTROLS},
}
# JSON already escapes C0; DEL, C1 and the bidi controls it writes raw, and a terminal acts
# on them (`\\u202e` in JSON is the same string to every parser).
_JSON_RAW = {c: f"\\u{c:04x}" for c in [*range(0x7F, 0xA0), *BIDI_CONTROLS]}


def visible(text: str) -> str:
    """`text` with each control character but `\\n` and `\\t` shown as `\\xNN` (ESC as
    `\\x1b`) and each bidi control as `\\uNNNN` (U+202E as `\\u202e`), so it can neither act
    on the terminal nor reorder what it shows. Linear time; no-op on clean text."""
    return text.translate(_VISIBLE)


# rich's markup tag and escape rules (rich.markup), so plain output can skip importing rich.
_TAG = re.compile(r"(?<!\\)\[[a-z#/@][^\[]*?\]")
_ESCAPABLE = re.compile(r"(\\*)(\[[a-z#/@][^\[]*?])")


def escape(text: str) -> str:
    """Escape `text` for rich markup (same result as rich.markup.escape, without the import)."""
    escaped = _ESCAPABLE.sub(lambda m: f"{m[1]}{m[1]}\\{m[2]}", text)
    if escaped.endswith("\\") and not escaped.endswith("\\\\"):
        escaped += "\\"
    return escaped


def line(markup: str) -> None:
    """Print one line of rich markup on stdout. When stdout is not a terminal rich would draw
    no styles at all, so the tags are stripped here and rich is not even imported: commands
    that scripts call often (doctor) start faster."""
    if sys.stdout.isatty():
        out().print(markup)
        return
    sys.stdout.write(visible(_TAG.sub("", markup).replace("\\[", "[")) + "\n")


def text(content: str) -> None:
    """Write plain text (no markup, no styling) to stdout as it is, but made `visible`."""
    sys.stdout.write(visible(content))
    sys.stdout.flush()


def emit_json(document: dict[str, Any]) -> None:
    """Write exactly one JSON document to stdout. `schema` must name kind and version. Strict
    JSON: a number that is not finite (NaN, ±inf, which json.dumps would write as `NaN` and
    `Infinity`, and strict parsers reject) is written as null."""
    if "schema" not in document:
        raise ValueError("a --json document needs a 'schema' field")
    encoded = json.dumps(
        finite_or_null(document), ensure_ascii=False, indent=2, default=str, allow_nan=False
    )
    sys.stdout.write(encoded.translate(_JSON_RAW) + "\n")
    sys.stdout.flush()


def finite_or_null(value: Any) -> Any:
    """`value` with every non-finite float inside dicts, lists and tuples replaced by None."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: finite_or_null(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [finite_or_null(v) for v in value]
    return value


def error(message: str, fix: str | None = None) -> None:
    """Show an expected error (no traceback) on stderr."""
    from rich.markup import escape

    console = err()
    console.print(f"[bold red]error:[/] {escape(message)}")
    if fix:
        console.print(f"[bold]fix:[/] {escape(fix)}")


def note(message: str) -> None:
    """A progress or info line on stderr."""
    from rich.markup import escape

    err().print(f"[dim]{escape(message)}[/]")


def warn(message: str) -> None:
    from rich.markup import escape

    err().print(f"[yellow]warning:[/] {escape(message)}")
