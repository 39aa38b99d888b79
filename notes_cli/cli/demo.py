"""pdnotes demo: the whole story against the bundled engine, offline, in one command."""

from __future__ import annotations

from pathlib import Path

import typer


def demo(
    lang: str = typer.Option("en", "--lang", help="Language of the note: zh or en."),
    keep: Path | None = typer.Option(
        None, "--keep", help="Keep the demo's files (configs, backups, notes) in this folder."
    ),
    speed: float = typer.Option(
        5.0, "--speed", min=0.5, max=100.0, help="Engine clock speed-up for the walk-through."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON document on stdout."),
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
