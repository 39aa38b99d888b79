"""The `pdnotes` command: assembles one Typer module per command group and maps errors to exit
codes in exactly one place (`main`). Command modules import their core lazily, inside the
command function, so `pdnotes --help` loads nothing heavy."""

from __future__ import annotations

import sys

import typer

from notes_cli import __version__

app = typer.Typer(
    name="pdnotes",
    help=(
        "Connect Codex / Claude Code to an OpenAI- or Anthropic-compatible gateway, turn PD "
        "(Prefill/Decode) disaggregation reading into a validated comparison note, and watch a "
        "bundled mock PD engine serve it."
    ),
    no_args_is_help=True,
    add_completion=True,
    pretty_exceptions_enable=False,
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"pdnotes {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(
        False, "--version", help="Print the version and exit.", callback=_version, is_eager=True
    ),
) -> None:
    """pdnotes: gateway connect, PD study notes, mock PD engine."""


def _register() -> None:
    from notes_cli.cli import bench, bridge, config, demo, doctor, engine, notes, smoke

    app.add_typer(config.app, name="config")
    app.command("doctor")(doctor.doctor)
    app.command("smoke")(smoke.smoke)
    app.add_typer(notes.app, name="notes")
    app.add_typer(engine.app, name="engine")
    app.add_typer(bridge.app, name="bridge")
    app.command("bench")(bench.bench)
    app.command("demo")(demo.demo)


_register()


def main(argv: list[str] | None = None) -> None:
    """Entry point: run the app; expected errors become a message and an exit code, never a
    traceback. Under --json the error is also the one JSON document on stdout. Typer's own
    standalone mode handles usage errors (exit 2), Exit and Ctrl-C."""
    from notes_cli.errors import PdnotesError

    args = sys.argv[1:] if argv is None else argv
    try:
        app(args=args, prog_name="pdnotes")
    except PdnotesError as exc:
        _report_error(exc.message, exc.fix, exc.exit_code, "--json" in args)
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        sys.exit(130)


def _report_error(message: str, fix: str | None, code: int, as_json: bool) -> None:
    from notes_cli import render

    if as_json:
        render.emit_json(
            {
                "schema": "pdnotes.error/1",
                "ok": False,
                "error": message,
                "fix": fix,
                "exit_code": code,
            }
        )
    render.error(message, fix)
