"""Typer options made from what each client declares (`clients.plugin`): the `config <name>`
commands, and each client's folder option on the commands that read every client (`doctor`,
`config show`). A command's signature is built here once, so no option is written per client."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Annotated, Any

import typer

from notes_cli.clients.plugin import Client, Option


def typer_option(option: Option, help: str | None = None) -> inspect.Parameter:
    """`option` as a keyword parameter Typer reads: `Annotated[type, typer.Option(...)]`."""
    kind: Any = option.kind
    if option.default is None:
        kind = kind | None
    extra: dict[str, Any] = {}
    if option.metavar:
        extra["metavar"] = option.metavar
    if option.min is not None:
        extra["min"] = option.min
    if option.max is not None:
        extra["max"] = option.max
    info = typer.Option(option.flag, help=help or option.help, **extra)
    return inspect.Parameter(
        option.name,
        inspect.Parameter.POSITIONAL_OR_KEYWORD,
        annotation=Annotated[kind, info],
        default=option.default,
    )


def build(
    name: str,
    doc: str,
    parameters: Sequence[inspect.Parameter],
    run: Callable[[dict[str, Any]], None],
) -> Callable[..., None]:
    """A command whose options are `parameters` (in order) that calls `run(values by name)`."""

    def command(**values: Any) -> None:
        run(values)

    command.__name__ = name
    command.__doc__ = doc
    command.__annotations__ = {}  # Typer reads the signature below (get_type_hints: nothing)
    command.__signature__ = inspect.Signature(list(parameters))  # type: ignore[attr-defined]
    return command


def with_homes(
    after: str, *, short: bool = False, options_after: str | None = None
) -> Callable[[Callable[..., None]], Any]:
    """Insert each registered client's folder option (`--codex-home`, …) after the parameter
    `after` of the decorated command, which receives them as `homes` (by client name).
    `short`: the folder options' shorter help (doctor).
    `options_after`: also insert each client's `doctor_options` after that parameter, received
    as `flags` (by option name)."""

    def wrap(original: Callable[..., None]) -> Callable[..., None]:
        from notes_cli.clients import registry

        params = [
            p for p in inspect.signature(original, eval_str=True).parameters.values()
            if p.name not in ("homes", "flags")
        ]  # fmt: skip
        homes = {client.name: client.home.name for client in registry.CLIENTS}

        def home(client: Client) -> inspect.Parameter:
            return typer_option(client.home, client.home_help if short else None)

        at = next(i for i, p in enumerate(params) if p.name == after) + 1
        params = params[:at] + [home(c) for c in registry.CLIENTS] + params[at:]
        own = [o for c in registry.CLIENTS for o in c.doctor_options] if options_after else []
        if own:
            at = next(i for i, p in enumerate(params) if p.name == options_after) + 1
            params = params[:at] + [typer_option(o) for o in own] + params[at:]

        def run(values: dict[str, Any]) -> None:
            chosen: dict[str, Path | None] = {
                client: values.pop(param) for client, param in homes.items()
            }
            flags = {option.name: values.pop(option.name) for option in own}
            original(**values, homes=chosen, **({"flags": flags} if options_after else {}))

        return build(original.__name__, original.__doc__ or "", params, run)

    return wrap


def with_log_folders(after: str) -> Callable[[Callable[..., None]], Any]:
    """Insert the session-log folder option of each client that has logs (`--claude-dir`,
    `--codex-dir`: `Client.session_logs`, by name) after the parameter `after` of the decorated
    command, which receives them as `log_folders` (by client name)."""

    def wrap(original: Callable[..., None]) -> Callable[..., None]:
        from notes_cli.clients import registry

        params = [
            p for p in inspect.signature(original, eval_str=True).parameters.values()
            if p.name != "log_folders"
        ]  # fmt: skip
        logged = {
            c.name: c.session_logs.option for c in registry.with_session_logs() if c.session_logs
        }
        at = next(i for i, p in enumerate(params) if p.name == after) + 1
        added = [typer_option(option) for option in logged.values()]

        def run(values: dict[str, Any]) -> None:
            folders = {client: values.pop(option.name) for client, option in logged.items()}
            original(**values, log_folders=folders)

        return build(
            original.__name__, original.__doc__ or "", params[:at] + added + params[at:], run
        )

    return wrap
