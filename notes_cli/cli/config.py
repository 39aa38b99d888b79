"""pdnotes config <client> | show | undo | presets: write, inspect and restore the clients'
configuration. The core lives in notes_cli.clients (imported inside each command, so `pdnotes
--help` stays fast); drawing lives in notes_cli.render.config. A client in a folder of its own
(`clients.registry`) gets its `config <name>` built from the options it declares."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from notes_cli.cli import layer_options
from notes_cli.cli.client_options import build, typer_option, with_homes
from notes_cli.cli.options import Names, one_of
from notes_cli.clients import registry
from notes_cli.clients.plugin import Client, Shared

if TYPE_CHECKING:
    from notes_cli.bridge.client_setup import BridgeOptions
    from notes_cli.bridge.config import BridgeConfig
    from notes_cli.clients.model_limits import LimitsFetcher
    from notes_cli.clients.plan import WritePlan, WriteResult

app = typer.Typer(
    help="Write, show and undo a client's configuration for a gateway: "
    f"{', '.join(registry.titles().values())}.",
    no_args_is_help=True,
)

_CLIENT = Names(registry.names, "unknown --client {value}", fix=f"use {registry.listing()}")
_ANY_CLIENT = Names(
    lambda: ("all", *registry.names()),
    "unknown --client {value}",
    fix=f"use {registry.listing('all')}",
)


def _project_dir(files: str) -> Any:
    """`--project-dir`, its help naming the files of the client (or clients) it applies to."""
    return typer.Option(
        "--project-dir", help=f"Project folder of {files} (default: the current folder)."
    )


# Every client reads its own project files: each command's --project-dir names its client's.
ProjectDir = Annotated[Path | None, _project_dir(layer_options.ALL_PROJECT_FILES)]
AsJson = Annotated[bool, typer.Option("--json", help="Print one JSON document on stdout.")]
DryRun = Annotated[bool, typer.Option("--dry-run", help="Show the diff; write nothing.")]
Preset = Annotated[
    str | None,
    typer.Option("--preset", help="Provider preset: taotoken, mock, openai, deepseek, …"),
]
Bridge = Annotated[
    bool,
    typer.Option(
        "--bridge",
        help="The endpoint serves only chat completions: point the client at `pdnotes bridge "
        "serve` and record this endpoint as the bridge's upstream (see docs/bridge.md).",
    ),
]
BridgePort = Annotated[
    int,
    typer.Option(
        "--bridge-port",
        min=1,  # the client calls this port: 0 (pick a free one) only means something to serve
        max=65535,
        help="With --bridge: the bridge's port.",
    ),
]
BridgeKeyEnv = Annotated[
    str | None,
    typer.Option(
        "--bridge-key-env", help="With --bridge: the bridge's own key (its --api-key-env)."
    ),
]
BridgeFallback = Annotated[
    list[str] | None,
    typer.Option(
        "--bridge-fallback",
        help="With --bridge: another chat endpoint the bridge tries, in order, when the "
        "upstream is down or answers 5xx / 429 (repeatable; replaces the recorded ones).",
    ),
]
BridgeFallbackKeyEnv = Annotated[
    list[str] | None,
    typer.Option(
        "--bridge-fallback-key-env",
        help="NAME of the variable holding a --bridge-fallback's key (the Nth is the Nth's).",
    ),
]


@dataclass(frozen=True)
class _Common:
    """The options every `config <name>` takes: the bridge's, `--dry-run` and `--json`
    (taken out of the command's values)."""

    bridge: bool
    bridge_options: tuple[int, str | None, list[str] | None, list[str] | None]
    dry_run: bool
    as_json: bool

    @classmethod
    def of(cls, values: dict[str, Any]) -> _Common:
        via = (
            values.pop("bridge_port"),
            values.pop("bridge_key_env"),
            values.pop("bridge_fallback"),
            values.pop("bridge_fallback_key_env"),
        )
        return cls(values.pop("bridge"), via, values.pop("dry_run"), values.pop("as_json"))

    def via(self) -> BridgeOptions:
        from notes_cli.bridge.client_setup import BridgeOptions

        return BridgeOptions.of(*self.bridge_options)

    def write(self, path: Path, build_plan: Plan) -> None:
        _write(path, build_plan, self.dry_run, self.as_json)


def _parameter(name: str, annotation: Any, default: Any) -> inspect.Parameter:
    return inspect.Parameter(
        name, inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=annotation, default=default
    )


def _config_command(client: Client, run: Callable[[dict[str, Any], _Common], None]) -> None:
    """`config <name>`: `--preset`, the client's options, the bridge options, `--dry-run`,
    `--json`, its folder and `--project-dir`, every shared one declared here once."""
    parameters = [_parameter("preset", Preset, None)]
    for option in client.options:
        parameters.append(typer_option(option.option() if isinstance(option, Shared) else option))
    parameters += [
        _parameter("bridge", Bridge, False),
        _parameter("bridge_port", BridgePort, 8787),
        _parameter("bridge_key_env", BridgeKeyEnv, None),
        _parameter("bridge_fallback", BridgeFallback, None),
        _parameter("bridge_fallback_key_env", BridgeFallbackKeyEnv, None),
        _parameter("dry_run", DryRun, False),
        _parameter("as_json", AsJson, False),
        typer_option(client.home),
    ]
    if client.project_files:
        project_dir = Annotated[Path | None, _project_dir(client.project_files)]
        parameters.append(_parameter("project_dir", project_dir, None))

    def command(values: dict[str, Any]) -> None:
        run(values, _Common.of(values))

    app.command(client.name)(build(client.name, client.summary, parameters, command))


def _configure(client: Client, values: dict[str, Any], common: _Common) -> None:
    """Plan the client's write (through the bridge when asked, or when the preset needs it)
    and write it (`_Common.write`)."""
    from notes_cli.clients.plugin import ConfigRequest, Where

    where = Where({client.name: values.pop(client.home.name)}, values.pop("project_dir", None))
    raw_window = values.pop("context_window", None)
    path = client.target(ConfigRequest(values, where))  # checks --scope
    window, from_gateway = _context_window(raw_window)
    bridged = common.bridge or client.needs_bridge(values["preset"])
    # the client's own endpoint's /models; through the bridge, the chat upstream's
    anthropic = client.protocol == "anthropic" and not bridged
    request = ConfigRequest(
        values, where, window, _limits_fetcher(from_gateway, anthropic=anthropic)
    )
    if bridged:
        from notes_cli.bridge.client_setup import plan_bridged

        via = common.via()
        build_plan: Plan = lambda: plan_bridged(client, request, via)  # noqa: E731
    else:
        build_plan = lambda: (client.plan(request), None)  # noqa: E731
    common.write(path, build_plan)


for _client in registry.CLIENTS:  # in the order users see them
    _config_command(_client, partial(_configure, _client))


def _limits_fetcher(from_gateway: bool, *, anthropic: bool = False) -> LimitsFetcher | None:
    """Reading the window over HTTP is the gateway's (clients/ does no HTTP); `anthropic`: an
    Anthropic-compatible root (GET /v1/models)."""
    if not from_gateway:
        return None
    from notes_cli.gateway.model_limits import fetch_limits

    return partial(fetch_limits, anthropic=True) if anthropic else fetch_limits


def _context_window(raw: str | None) -> tuple[int | None, bool]:
    """`--context-window`: (tokens, read from the gateway)."""
    if raw is None:
        return None, False
    if raw.strip().lower() == "gateway":
        return None, True
    text = raw.strip().replace("_", "")
    if not text.isdigit() or not 0 < int(text) < 1 << 31:
        from notes_cli.errors import UsageError

        raise UsageError(
            f"--context-window takes a number of tokens or 'gateway', not {raw[:40]!r}",
            fix="e.g. --context-window 131072, or --context-window gateway",
        )
    return int(text), False


Plan = Callable[[], "tuple[WritePlan, BridgeConfig | None]"]


def _write(path: Path, build: Plan, dry_run: bool, as_json: bool) -> None:
    """Plan and write under the file's lock (`clients.plan.write`), with the bridge's record
    when the plan goes through one, then render."""
    from notes_cli.clients.plan import write
    from notes_cli.render import config as render

    if dry_run:
        result = write(path, lambda: build()[0], dry_run=True)
    else:
        result = _write_with_record(path, build)
    if as_json:
        render.write_json(result, dry_run=dry_run)
    else:
        render.write_human(result, dry_run=dry_run)


def _write_with_record(path: Path, build: Plan) -> WriteResult:
    """The client file and the bridge record change together or not at all. The record is
    written first, once the plan is built: a record that cannot be written stops the command
    before the client file is touched. If the client file then cannot be written, the record
    is put back as it was (a client pointed at a bridge with no upstream, or a bridge serving
    an upstream no client was pointed at, is what this prevents)."""
    import contextlib

    from notes_cli import fileio
    from notes_cli.bridge import config as bridge_config
    from notes_cli.clients.plan import write

    undo: list[Callable[[], None]] = []
    with contextlib.ExitStack() as stack:

        def plan_only() -> WritePlan:
            plan, record = build()
            if record is not None:
                stack.enter_context(fileio.locked(bridge_config.record_path()))
                undo.append(bridge_config.save_record_undoably(record))
            return plan

        try:
            return write(path, plan_only)
        except BaseException as exc:
            for restore in undo:
                _restore_record(restore, exc)
            raise


def _restore_record(restore: Callable[[], None], failure: BaseException) -> None:
    from notes_cli.bridge.config import record_path
    from notes_cli.errors import PdnotesError

    try:
        restore()
    except PdnotesError as exc:
        first = str(failure).removesuffix("; nothing was changed")
        raise PdnotesError(
            f"{first}; the bridge record {record_path()}, already rewritten, could not be put "
            f"back ({exc}): it names the new upstream",
            fix="fix the first problem and run the command again",
        ) from failure


@app.command("show")
@with_homes(after="as_json")
def show(
    client: Annotated[
        str, one_of(_ANY_CLIENT, "--client", help=f"{registry.listing('all')}.")
    ] = "all",
    as_json: AsJson = False,
    project_dir: ProjectDir = None,
    profile: layer_options.Profile = None,
    overrides: layer_options.Overrides = None,
    settings: layer_options.Settings = None,
    homes: dict[str, Path | None] | None = None,
) -> None:
    """Show each client's effective setup: values, the layer (file, or -c) each came from, the
    URL it calls."""
    from notes_cli.clients.setups import resolve_setups
    from notes_cli.render import config as render

    setups = resolve_setups(
        client,
        project_dir=project_dir,
        homes=homes,
        flags={"profile": profile, "overrides": tuple(overrides or ()), "settings": settings},
    )
    render.show_json(setups) if as_json else render.show_human(setups)


@app.command("undo")
def undo(
    client: Annotated[
        str | None,
        one_of(
            _CLIENT,
            "--client",
            help=f"{registry.listing()} (default: the one written most recently).",
        ),
    ] = None,
    as_json: AsJson = False,
) -> None:
    """Restore the file as it was before the last `pdnotes config` write, byte for byte."""
    from notes_cli import backups
    from notes_cli.render import config as render

    chosen = client or _most_recent_client()
    result = backups.undo(chosen)
    if result is None:
        render.nothing_to_undo(chosen, backups.backups_dir(chosen), as_json=as_json)
    elif isinstance(result, backups.RolledBack):
        render.rolled_back(result, as_json=as_json)
    else:
        render.undo(result, as_json=as_json)


def _most_recent_client() -> str:
    from notes_cli import backups

    names = registry.names()
    newest = [(b.created, name) for name in names if (b := backups.latest(name))]
    return max(newest)[1] if newest else names[0]


@app.command("presets")
def presets_command(as_json: AsJson = False) -> None:
    """List the provider presets (templates/presets/*.toml)."""
    from notes_cli.clients.presets import all_presets
    from notes_cli.render import config as render

    render.presets(all_presets(), as_json=as_json)
