"""pdnotes demo: the whole story against the bundled engine, offline, in one command."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer


def demo(
    lang: Annotated[str, typer.Option("--lang", help="Language of the note: zh or en.")] = "en",
    keep: Annotated[
        Path | None,
        typer.Option(
            "--keep", help="Keep the demo's files (configs, backups, notes) in this folder."
        ),
    ] = None,
    speed: Annotated[
        float,
        typer.Option(
            "--speed", min=0.5, max=100.0, help="Engine clock speed-up for the walk-through."
        ),
    ] = 5.0,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print one JSON document on stdout.")
    ] = False,
) -> None:
    """Start the mock PD engine on loopback, configure Codex and Claude Code for it in a
    throw-away folder, run doctor (and catch the article's common errors), smoke, write the
    note, and show the PD experiment. No key, no network. Exit 0 when every step did what it
    should, 1 otherwise."""
    from notes_cli import render
    from notes_cli.demo.run import run_demo
    from notes_cli.errors import UsageError

    if lang not in ("zh", "en"):
        raise UsageError(f"--lang {lang}: use zh or en")
    if as_json:
        report = run_demo(lang=lang, speed=speed, keep=keep)
        render.emit_json(report.to_json())
    else:
        from notes_cli.render import demo as draw

        draw.intro(speed)
        counter = iter(range(1, 100))
        report = run_demo(
            lang=lang, speed=speed, keep=keep, on_step=lambda s: draw.step(next(counter), s)
        )
        draw.summary(report)
    if not report.ok:
        raise typer.Exit(1)
