"""Typer options made from what each client declares (`clients.plugin`): the `config <name>`
commands, and each client's folder option on the commands that read every client (`doctor`,
`config show`). A command's signature is built here once, so no option is written per client."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Annotated, Any

import typer

from notes_cli.clients.plugin import Option


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


def with_homes(after: str, *, short: bool = False) -> Callable[[Callable[..., None]], Any]:
    """Insert each registered client's folder option (`--opencode-dir`, …) after the parameter
    `after` of the decorated command, which receives them as `homes` (by client name).
    `short`: the folder options' shorter help (doctor)."""

    def wrap(original: Callable[..., None]) -> Callable[..., None]:
        from notes_cli.clients import registry

        params = [
            p for p in inspect.signature(original, eval_str=True).parameters.values()
            if p.name != "homes"
        ]  # fmt: skip
        at = next(i for i, p in enumerate(params) if p.name == after) + 1
        homes = {client.name: client.home.name for client in registry.CLIENTS}
        added = [typer_option(c.home, c.home_help if short else None) for c in registry.CLIENTS]

        def run(values: dict[str, Any]) -> None:
            chosen: dict[str, Path | None] = {
                client: values.pop(param) for client, param in homes.items()
            }
            original(**values, homes=chosen)

        return build(
            original.__name__, original.__doc__ or "", params[:at] + added + params[at:], run
        )

    return wrap
