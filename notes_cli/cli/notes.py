"""pdnotes notes …: list kits, generate a note through the configured model, check an answer."""

from __future__ import annotations

from pathlib import Path

import typer

app = typer.Typer(
    help="Turn PD-disaggregation reading into a validated stage / bottleneck / optimisation / "
    "component table: list kits, generate a note with the model, check a saved answer.",
    no_args_is_help=True,
)

_JSON = typer.Option(False, "--json", help="Print one JSON document on stdout.")
_KIT = typer.Option("pd-disagg", "--kit", help="Note kit to use (see `pdnotes notes kits`).")


@app.command("kits")
def kits(as_json: bool = _JSON) -> None:
    """List the note kits: bundled ones and yours under $PDNOTES_HOME/kits."""
    from notes_cli import render
    from notes_cli.notes.kits import list_kits
    from notes_cli.notes.report import kits_json

    found = list_kits()
    if as_json:
        render.emit_json(kits_json(found))
        return
    from notes_cli.render import notes as draw

    draw.kits(found)


@app.command("check")
def check(
    file: Path = typer.Argument(
        ..., help="A saved answer: .md, .txt, .html, .json or .csv (- reads stdin)."
    ),
    kit: str = _KIT,
    as_json: bool = _JSON,
) -> None:
    """Extract the table from a saved answer and score it against the kit's rubric.

    Exit 0 when it passes, 1 when it fails (missing table, columns, rows or concepts; a refusal
    or a truncated answer), 2 when the file cannot be read.
    """
    import sys

    from notes_cli import render
    from notes_cli.notes.check import check_text, read_answer
    from notes_cli.notes.kits import load_kit
    from notes_cli.notes.report import check_json

    chosen = load_kit(kit)
    if str(file) == "-":
        text, source_format, source = sys.stdin.read(), "text", "(stdin)"
    else:
        text, source_format = read_answer(file)
        source = str(file)
    result = check_text(text, chosen, source_format=source_format)  # type: ignore[arg-type]
    if as_json:
        render.emit_json(check_json(result, source))
    else:
        from notes_cli.render import notes as draw

        draw.check_report(result, source)
    if not result.passed:
        _exit_failed()


def _exit_failed() -> None:
    """Exit 1: the command ran and found a problem. (SystemExit rather than typer.Exit, whose
    code click drops when the root app runs with standalone_mode=False.)"""
    raise SystemExit(1)
