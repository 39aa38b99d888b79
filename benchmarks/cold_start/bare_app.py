"""The baseline for cold-start timing: a bare Typer app with pdnotes' command names and no work.

`python benchmarks/cold_start/bare_app.py --help` / `... doctor --offline` measure what Python +
Typer alone cost (doctor takes the same options as pdnotes'), so run.py can report pdnotes' own
overhead as a ratio."""

from __future__ import annotations

from pathlib import Path

import typer

app = typer.Typer(name="pdnotes", no_args_is_help=True, add_completion=True)
config = typer.Typer(no_args_is_help=True)
notes = typer.Typer(no_args_is_help=True)
engine = typer.Typer(no_args_is_help=True)
app.add_typer(config, name="config")
app.add_typer(notes, name="notes")
app.add_typer(engine, name="engine")


def _noop(name: str) -> None:
    def command(
        client: str = typer.Option("all", "--client"),
        offline: bool = typer.Option(False, "--offline"),
        as_json: bool = typer.Option(False, "--json"),
    ) -> None:
        """(bare)"""

    command.__name__ = name.replace("-", "_")
    return command  # type: ignore[return-value]


for group, names in (
    (config, ("codex", "claude", "show", "undo", "presets")),
    (notes, ("kits", "generate", "check")),
    (engine, ("serve", "simulate")),
):
    for name in names:
        group.command(name)(_noop(name))
for name in ("smoke", "bench", "demo"):
    app.command(name)(_noop(name))


@app.command("doctor")
def doctor(
    client: str = typer.Option("all", "--client", help="codex, claude or all."),
    offline: bool = typer.Option(False, "--offline", help="Static checks only."),
    timeout: float = typer.Option(10.0, "--timeout", help="Seconds per live probe."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON document on stdout."),
    codex_home: Path | None = typer.Option(None, "--codex-home", help="Codex folder."),
    claude_home: Path | None = typer.Option(None, "--claude-home", help="Claude Code folder."),
    project_dir: Path | None = typer.Option(None, "--project-dir", help="Project folder."),
) -> None:
    """The same options as `pdnotes doctor` (Typer's own per-option cost is the baseline's),
    and no work."""


if __name__ == "__main__":
    app()
