"""The baseline for cold-start timing: a bare Typer app with pdnotes' command names and no work.

`python benchmarks/cold_start/bare_app.py --help` / `... doctor --offline` measure what Python +
Typer alone cost, so run.py can report pdnotes' overhead as a ratio."""

from __future__ import annotations

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
for name in ("doctor", "smoke", "bench", "demo"):
    app.command(name)(_noop(name))

if __name__ == "__main__":
    app()
