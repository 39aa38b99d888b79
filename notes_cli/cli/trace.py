"""pdnotes trace show | import"""

from __future__ import annotations

from datetime import date
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


Plot = Annotated[
    Path | None,
    typer.Option(
        "--plot", help="Also draw prompt length by turn, a line per session, to FILE.svg/.html."
    ),
]


@app.command("show")
def show(trace: TraceFile, as_json: AsJson = False, plot: Plot = None) -> None:
    """Summarise a trace: sessions, turns per session, prompt growth per turn, prefix reuse
    (share of blocks an earlier request already had) and arrival burstiness."""
    from notes_cli import render
    from notes_cli.trace.format import read_rows
    from notes_cli.trace.summary import summarise

    if plot is None:
        summary = summarise(read_rows(trace))
    else:
        from notes_cli.fileio import require_output_folder
        from notes_cli.trace.plot import SessionLengths, check_plot_path, write_plot

        check_plot_path(plot)
        require_output_folder(plot, "--plot")
        lengths = SessionLengths()
        summary = summarise(lengths.watch(read_rows(trace)))
        write_plot(lengths.sessions, plot, f"prompt length by turn: {trace.name}")
        render.note(f"wrote {plot}")
    if as_json:
        render.emit_json({"trace": str(trace), **summary.to_json()})
        return
    from notes_cli.render.trace import summary_report

    summary_report(trace, summary)


Out = Annotated[Path, typer.Argument(help="The trace to write (a new FILE.jsonl).")]
Clients = Annotated[
    list[str] | None,
    typer.Option(
        "--client",
        help="Whose logs to read: claude, codex (repeatable; default both, skipping one "
        "whose log folder does not exist).",
    ),
]
ClaudeDir = Annotated[
    Path | None,
    typer.Option(
        "--claude-dir",
        help="Claude Code's folder (default $CLAUDE_CONFIG_DIR or ~/.claude), its projects/, "
        "or any folder of its session .jsonl files.",
    ),
]
CodexDir = Annotated[
    Path | None,
    typer.Option(
        "--codex-dir",
        help="Codex's folder (default $CODEX_HOME or ~/.codex), its sessions/, or any folder "
        "of rollout-*.jsonl files (e.g. sessions/2026/05 for one month).",
    ),
]
Since = Annotated[
    str | None, typer.Option("--since", help="Only model calls on or after this UTC date.")
]
Until = Annotated[
    str | None, typer.Option("--until", help="Only model calls on or before this UTC date.")
]


@app.command("import")
def import_logs(
    out: Out,
    client: Clients = None,
    claude_dir: ClaudeDir = None,
    codex_dir: CodexDir = None,
    since: Since = None,
    until: Until = None,
) -> None:
    """Turn Claude Code's and Codex's own session logs into a trace: token counts, cache reads,
    times and turns per session, never text (reuse as synthetic hash_ids: docs/trace.md)."""
    from notes_cli import paths, render
    from notes_cli.errors import UsageError
    from notes_cli.fileio import atomic_write, require_output_folder
    from notes_cli.trace import agent_logs
    from notes_cli.trace.format import render_rows
    from notes_cli.trace.summary import summarise

    require_output_folder(out, "OUT")
    if out.exists():
        raise UsageError(f"{out} already exists; nothing was changed", fix="name a new file")
    chosen = client or ["claude", "codex"]
    unknown = sorted(set(chosen) - {"claude", "codex"})
    if unknown:
        raise UsageError(f"--client {unknown[0]!r}: choose claude or codex")
    readers = {
        "claude": (claude_dir, paths.claude_home(), agent_logs.claude_calls),
        "codex": (codex_dir, paths.codex_home(), agent_logs.codex_calls),
    }
    calls: list[agent_logs.Call] = []
    for name in chosen:
        given, default, read = readers[name]
        folder = given or default
        if given is None and client is None and not folder.is_dir():
            render.note(f"no {name} logs at {folder}; skipped")
            continue
        calls.extend(read(folder))
    rows = agent_logs.to_rows(calls, since=_date(since, "--since"), until=_date(until, "--until"))
    if not rows:
        raise UsageError("no model calls found in the chosen logs and dates; nothing written")
    atomic_write(out, render_rows(rows), mode=0o600)
    summary = summarise(rows)
    render.note(
        f"wrote {out}: {summary.requests:,} model calls in {summary.sessions:,} sessions, "
        f"prefix reuse {summary.prefix_reuse:.1%}"
    )


def _date(text: str | None, flag: str) -> date | None:
    from notes_cli.errors import UsageError

    if text is None:
        return None
    try:
        return date.fromisoformat(text)
    except ValueError:
        raise UsageError(f"{flag} {text!r} is not a date", fix="e.g. 2026-05-31") from None
