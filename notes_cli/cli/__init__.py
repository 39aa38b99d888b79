"""The `pdnotes` command: assembles one Typer module per command group and maps errors to exit
codes in exactly one place (`main`). Command modules import their core lazily, inside the
command function, so `pdnotes --help` loads nothing heavy.

May import every package; nothing but `notes_cli.__main__` imports cli/."""

from __future__ import annotations

import inspect
import sys
from typing import Annotated, Any

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
        from notes_cli import render

        render.text(f"pdnotes {__version__}\n")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option(
            "--version", help="Print the version and exit.", callback=_version, is_eager=True
        ),
    ] = False,
) -> None:
    """pdnotes: gateway connect, PD study notes, mock PD engine."""


def _register() -> None:
    from notes_cli.cli import bench, bridge, config, demo, doctor, engine, notes, smoke, trace

    app.add_typer(config.app, name="config")
    app.command("doctor")(doctor.doctor)
    app.command("smoke")(smoke.smoke)
    app.add_typer(notes.app, name="notes")
    app.add_typer(engine.app, name="engine")
    app.add_typer(bridge.app, name="bridge")
    app.command("bench")(bench.bench)
    app.command("demo")(demo.demo)
    app.add_typer(trace.app, name="trace")


_register()


def _plain_help(group: typer.Typer) -> None:
    """Help as plain Click text, for every group (including ones registered later above).

    Typer's rich help (typer 0.29, with its vendored Click 8.4) printed a type after every
    flag (`--json <bool>`), kept each docstring's line breaks so sentences broke mid-line at 80
    columns, and read `[model_providers.<id>]` in a help string as markup and dropped it. The
    plain formatter rewraps paragraphs to the terminal, shows a metavar only for options that
    take a value, and prints text as written; tests/test_help.py pins what it must look like."""
    group.rich_markup_mode = None
    for info in group.registered_groups:
        if info.typer_instance is not None:
            _plain_help(info.typer_instance)


_plain_help(app)


def command() -> Any:
    """The Click command `main` runs: Typer's, made to read well as plain text (see below)."""
    root = typer.main.get_command(app)
    _readable_help(root)
    return root


def _readable_help(node: Any) -> None:
    """A metavar named after the value (`--source SOURCE`, not Typer's `<list[Path]>`) for every
    option that takes one and every argument, and each sub-command listed by its whole first
    sentence, wrapped, instead of Click's cut at about 45 characters with "..."."""
    for param in node.params:
        takes_value = param.param_type_name == "argument" or not (param.is_flag or param.count)
        if takes_value and param.metavar is None and param.name:
            param.metavar = param.name.upper()
        if param.param_type_name == "argument":  # Typer adds `<path>` after the name
            param.display_type_rich = lambda ctx: None
    for sub in getattr(node, "commands", {}).values():
        if not sub.short_help and sub.help:
            sub.short_help = _first_sentence(sub.help)
        _readable_help(sub)


def _first_sentence(text: str) -> str:
    paragraph = " ".join(inspect.cleandoc(text).split("\n\n", 1)[0].split())
    head, dot, _ = paragraph.partition(". ")
    return head + dot.strip()


def main(argv: list[str] | None = None) -> None:
    """Entry point: run the app; expected errors become a message and an exit code, never a
    traceback. Under --json the error is also the one JSON document on stdout. Typer's own
    standalone mode handles usage errors (exit 2), Exit and Ctrl-C."""
    from notes_cli.errors import PdnotesError

    _reopen_closed_std_streams()
    args = sys.argv[1:] if argv is None else argv
    previous = _exit_on_termination()
    try:
        command()(args=args, prog_name="pdnotes")
    except PdnotesError as exc:
        _report_error(exc.message, exc.fix, exc.exit_code, "--json" in args, exc.details)
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        sys.exit(130)
    finally:
        _restore_handlers(previous)


_TERMINATING = ("SIGTERM", "SIGHUP")


def _exit_on_termination() -> dict[int, Any]:
    """Make SIGTERM and SIGHUP (a supervisor's stop or timeout, a closed terminal) end pdnotes
    as an exception does, with exit code 128 + the signal: every `finally` runs and stops what
    the command started (the planner's worker processes, a Ray runtime). Python's default ends
    the process on the spot and leaves its children running. Servers (engine serve, bridge)
    install their own graceful handlers while they run. Returns the handlers replaced."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        return {}  # only the main thread may set handlers (pdnotes called from a thread)
    replaced = {}
    for name in _TERMINATING:
        number = getattr(signal, name, None)
        if number is not None and signal.getsignal(number) is signal.SIG_DFL:
            replaced[number] = signal.signal(number, _exit_with_signal)
    return replaced


def _exit_with_signal(number: int, frame: object) -> None:
    raise SystemExit(128 + number)


def _restore_handlers(previous: dict[int, Any]) -> None:
    import signal

    for number, handler in previous.items():
        signal.signal(number, handler)


def _reopen_closed_std_streams() -> None:
    """Point a standard stream the caller closed (`pdnotes … >&-`, some cron and daemon
    setups) at /dev/null. Python makes such a stream None, so the first output crashed with a
    traceback (exit 1) after the command had done its work; and the next file pdnotes opened
    would get the free descriptor 0, 1 or 2, where a stray write would land in it."""
    import os

    for fd, name in ((0, "stdin"), (1, "stdout"), (2, "stderr")):
        if getattr(sys, name) is not None:
            continue
        mode = "r" if fd == 0 else "w"
        try:
            os.fstat(fd)
        except OSError:  # closed: put /dev/null on it and use that
            null = os.open(os.devnull, os.O_RDONLY if fd == 0 else os.O_WRONLY)
            if null != fd:
                os.dup2(null, fd)
                os.close(null)
            setattr(sys, name, open(fd, mode, encoding="utf-8", closefd=False))  # noqa: SIM115
        else:  # the descriptor already belongs to some file: leave it alone
            setattr(sys, name, open(os.devnull, mode, encoding="utf-8"))  # noqa: SIM115


def _report_error(
    message: str, fix: str | None, code: int, as_json: bool, details: dict[str, Any] | None = None
) -> None:
    from notes_cli import render

    if as_json:
        render.emit_json(
            {
                "schema": "pdnotes.error/1",
                "ok": False,
                "error": message,
                "fix": fix,
                "exit_code": code,
                **(details or {}),
            }
        )
    render.error(message, fix)
