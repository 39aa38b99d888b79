"""The only package that draws with rich, and the JSON writer.

Core modules return typed results and never print; CLI modules hand those results to a function
here. Submodules hold the drawing for one command group each (render.doctor, render.config, …).
Colour is off under NO_COLOR or when the stream is not a terminal (rich's own rules), and the
width is pinned when not a terminal so output is stable for scripts and golden tests.
"""

from __future__ import annotations

import json
import os
import re
import sys
from functools import cache
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rich.console import Console


def _make_console(stderr: bool) -> Console:
    from rich.console import Console

    stream = sys.stderr if stderr else sys.stdout
    is_tty = stream.isatty()
    return Console(
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
    sys.stdout.write(_TAG.sub("", markup).replace("\\[", "[") + "\n")


def emit_json(document: dict[str, Any]) -> None:
    """Write exactly one JSON document to stdout. `schema` must name kind and version."""
    if "schema" not in document:
        raise ValueError("a --json document needs a 'schema' field")
    sys.stdout.write(json.dumps(document, ensure_ascii=False, indent=2, default=str) + "\n")
    sys.stdout.flush()


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
