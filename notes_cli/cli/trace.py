"""pdnotes trace show"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

app = typer.Typer(
    help="Agent-session traces (Mooncake-style JSONL with session and turn fields).",
    no_args_is_help=True,
)

TraceFile = Annotated[
    Path,
    typer.Argument(
        help="A trace: JSONL rows with timestamp (ms), input_length, "
        "output_length, hash_ids, optionally session_id and turn."
    ),
]
AsJson = Annotated[bool, typer.Option("--json", help="Print one pdnotes.trace-summary/1 document.")]


@app.command("show")
def show(trace: TraceFile, as_json: AsJson = False) -> None:
    """Summarise a trace: sessions, turns per session, prompt growth per turn, prefix reuse
    (share of blocks an earlier request already had) and arrival burstiness."""
    from notes_cli import render
    from notes_cli.trace.format import read_rows
    from notes_cli.trace.summary import summarise

    summary = summarise(read_rows(trace))
    if as_json:
        render.emit_json({"trace": str(trace), **summary.to_json()})
        return
    from notes_cli.render.trace import summary_report

    summary_report(trace, summary)
