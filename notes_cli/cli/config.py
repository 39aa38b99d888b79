"""pdnotes config <client> | show | undo | presets: write, inspect and restore the clients'
configuration. The core lives in notes_cli.clients (imported inside each command, so `pdnotes
--help` stays fast); drawing lives in notes_cli.render.config. A client in a folder of its own
(`clients.registry`) gets its `config <name>` built from the options it declares."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, cast

import typer

from notes_cli.cli import layer_options
from notes_cli.cli.client_options import build, typer_option, with_homes
from notes_cli.cli.options import Names, one_of
from notes_cli.clients import registry
from notes_cli.clients.plugin import Client, Option, Shared

if TYPE_CHECKING:
    from notes_cli.bridge.config import BridgeConfig
    from notes_cli.clients.model_limits import LimitsFetcher
    from notes_cli.clients.plan import WritePlan, WriteResult

app = typer.Typer(
    help=f"Write, show and undo the {' / '.join(registry.titles().values())} configuration for "
    "a gateway.",
    no_args_is_help=True,
)

_CLIENT = Names(registry.names, "unknown --client {value}", fix=f"use {registry.listing()}")
_ANY_CLIENT = Names(
    lambda: ("all", *registry.names()),
    "unknown --client {value}",
    fix=f"use {registry.listing('all')}",
)

# Options several `config` commands share.
CodexHome = Annotated[
    Path | None,
    typer.Option("--codex-home", help="Codex folder (default: $CODEX_HOME or ~/.codex)."),
]
ClaudeHome = Annotated[
    Path | None,
    typer.Option(
        "--claude-home",
        help="Claude Code user folder (default: $CLAUDE_CONFIG_DIR or ~/.claude).",
    ),
]


def _project_dir(files: str) -> Any:
    """`--project-dir`, its help naming the files of the client (or clients) it applies to."""
    return typer.Option(
        "--project-dir", help=f"Project folder of {files} (default: the current folder)."
    )


# Every client reads its own project files: each command's --project-dir names its client's.
ClaudeProjectDir = Annotated[
    Path | None,
    _project_dir(".claude/settings.json (--scope project) or .claude/settings.local.json (local)"),
]
GeminiProjectDir = Annotated[Path | None, _project_dir(".gemini/settings.json (--scope project)")]
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


@app.command("codex")
def codex(
    preset: Preset = None,
    base_url: Annotated[
        str | None,
        typer.Option(
            "--base-url", help="API root, e.g. https://taotoken.net/api (cleaned if pasted)."
        ),
    ] = None,
    model: Annotated[
        str | None, typer.Option("--model", help="Model id exactly as the gateway names it.")
    ] = None,
    provider: Annotated[
        str | None,
        typer.Option("--provider", help="Provider id: the [model_providers.<id>] table."),
    ] = None,
    env_key: Annotated[
        str | None,
        typer.Option("--env-key", help="NAME of the variable holding the key (never the key)."),
    ] = None,
    wire_api: Annotated[
        str, typer.Option("--wire-api", help="Only 'responses' is supported.")
    ] = "responses",
    context_window: Annotated[
        str | None,
        typer.Option(
            "--context-window",
            metavar="TOKENS|gateway",
            help="Write model_context_window: a number of tokens, or 'gateway' to read it from "
            "the gateway's GET /models (context_length, max_model_len, …).",
        ),
    ] = None,
    model_catalog: Annotated[
        bool | None,
        typer.Option(
            "--model-catalog/--no-model-catalog",
            help="Also write the model into a Codex model catalog (model_catalog_json: "
            "$CODEX_HOME/pdnotes-models.json unless config.toml names one) with its window and "
            "reasoning support, so Codex knows it and lists it in its picker (default: as the "
            "preset says; the mock preset does).",
        ),
    ] = None,
    bridge: Bridge = False,
    bridge_port: BridgePort = 8787,
    bridge_key_env: BridgeKeyEnv = None,
    bridge_fallback: BridgeFallback = None,
    bridge_fallback_key_env: BridgeFallbackKeyEnv = None,
    dry_run: DryRun = False,
    as_json: AsJson = False,
    codex_home: CodexHome = None,
) -> None:
    """Merge a provider into $CODEX_HOME/config.toml, changing only the keys pdnotes owns."""
    from notes_cli import paths
    from notes_cli.clients.codex_config import CodexOptions, plan_codex

    window, from_gateway = _context_window(context_window)
    options = CodexOptions(
        preset,
        base_url,
        model,
        provider,
        env_key,
        wire_api,
        window,
        _limits_fetcher(from_gateway),
        model_catalog=model_catalog,
        installed_version=_installed_codex,
    )
    path = paths.codex_config_path(codex_home)
    if bridge or _chat_only(preset):
        from notes_cli.bridge.client_setup import BridgeOptions, plan_codex_bridge

        via = BridgeOptions.of(
            bridge_port, bridge_key_env, bridge_fallback, bridge_fallback_key_env
        )
        _write(
            path, lambda: plan_codex_bridge(options, via, codex_home=codex_home), dry_run, as_json
        )
        return
    _write(path, lambda: (plan_codex(options, codex_home=codex_home), None), dry_run, as_json)


@app.command("claude")
def claude(
    preset: Preset = None,
    base_url: Annotated[
        str | None,
        typer.Option(
            "--base-url", help="Anthropic-compatible root; Claude Code appends /v1/messages."
        ),
    ] = None,
    model: Annotated[
        str | None, typer.Option("--model", help="Model id for all Claude aliases.")
    ] = None,
    token_env: Annotated[
        str | None,
        typer.Option(
            "--token-env", help="Write an apiKeyHelper that reads the key from this variable."
        ),
    ] = None,
    write_token_from_env: Annotated[
        str | None,
        typer.Option(
            "--write-token-from-env",
            help="Write the token held in this variable into the file (made 0600). Use with care.",
        ),
    ] = None,
    scope: Annotated[
        str, typer.Option("--scope", help="user, project or local settings file.")
    ] = "user",
    bridge: Bridge = False,
    bridge_port: BridgePort = 8787,
    bridge_key_env: BridgeKeyEnv = None,
    bridge_fallback: BridgeFallback = None,
    bridge_fallback_key_env: BridgeFallbackKeyEnv = None,
    dry_run: DryRun = False,
    as_json: AsJson = False,
    claude_home: ClaudeHome = None,
    project_dir: ClaudeProjectDir = None,
) -> None:
    """Merge the gateway into a Claude Code settings.json (env block), keeping everything else."""
    from notes_cli.clients.claude_settings import ClaudeOptions, Scope, plan_claude, settings_path

    path = settings_path(scope, claude_home=claude_home, project_dir=project_dir)  # checks --scope
    options = ClaudeOptions(
        preset, base_url, model, token_env, write_token_from_env, cast(Scope, scope)
    )
    if bridge or _chat_only(preset):
        from notes_cli.bridge.client_setup import BridgeOptions, plan_claude_bridge

        via = BridgeOptions.of(
            bridge_port, bridge_key_env, bridge_fallback, bridge_fallback_key_env
        )
        build: Plan = lambda: plan_claude_bridge(  # noqa: E731
            options, via, claude_home=claude_home, project_dir=project_dir
        )
    else:
        build = lambda: (  # noqa: E731
            plan_claude(options, claude_home=claude_home, project_dir=project_dir),
            None,
        )
    _write(path, build, dry_run, as_json)


GeminiHome = Annotated[
    Path | None,
    typer.Option(
        "--gemini-home",
        help="Gemini CLI user folder (default: $GEMINI_CLI_HOME/.gemini or ~/.gemini).",
    ),
]


@app.command("gemini")
def gemini(
    preset: Preset = None,
    base_url: Annotated[
        str | None,
        typer.Option(
            "--base-url",
            help="Gemini-API root; Gemini CLI appends /v1beta/models/<model>:… (cleaned if "
            "pasted).",
        ),
    ] = None,
    model: Annotated[
        str | None, typer.Option("--model", help="Model id exactly as the gateway names it.")
    ] = None,
    key_env: Annotated[
        str | None,
        typer.Option(
            "--key-env",
            help="NAME of the variable holding the key (never the key); Gemini CLI reads "
            "GEMINI_API_KEY.",
        ),
    ] = None,
    write_key_from_env: Annotated[
        str | None,
        typer.Option(
            "--write-key-from-env",
            help="Write the key held in this variable into .gemini/.env (made 0600). Use with "
            "care.",
        ),
    ] = None,
    scope: Annotated[
        str, typer.Option("--scope", help="user (~/.gemini) or project (./.gemini).")
    ] = "user",
    no_phone_home: Annotated[
        bool,
        typer.Option(
            "--no-phone-home",
            help="Also turn off Gemini CLI's usage statistics, telemetry and update checks "
            "(its only connections besides the model).",
        ),
    ] = False,
    bridge: Bridge = False,
    bridge_port: BridgePort = 8787,
    bridge_key_env: BridgeKeyEnv = None,
    bridge_fallback: BridgeFallback = None,
    bridge_fallback_key_env: BridgeFallbackKeyEnv = None,
    dry_run: DryRun = False,
    as_json: AsJson = False,
    gemini_home: GeminiHome = None,
    project_dir: GeminiProjectDir = None,
) -> None:
    """Merge the gateway into Gemini CLI's settings.json and .gemini/.env, keeping everything
    else (comments included)."""
    from notes_cli.clients.gemini_config import GeminiOptions, Scope, plan_gemini, settings_path

    path = settings_path(scope, gemini_home=gemini_home, project_dir=project_dir)  # checks it
    options = GeminiOptions(
        preset, base_url, model, key_env, write_key_from_env, cast(Scope, scope), no_phone_home
    )
    if bridge or _chat_only(preset) or _no_gemini_api(preset):
        from notes_cli.bridge.client_setup import BridgeOptions, plan_gemini_bridge

        via = BridgeOptions.of(
            bridge_port, bridge_key_env, bridge_fallback, bridge_fallback_key_env
        )
        build: Plan = lambda: plan_gemini_bridge(  # noqa: E731
            options, via, gemini_home=gemini_home, project_dir=project_dir
        )
    else:
        build = lambda: (  # noqa: E731
            plan_gemini(options, gemini_home=gemini_home, project_dir=project_dir),
            None,
        )
    _write(path, build, dry_run, as_json)


def _no_gemini_api(preset: str | None) -> bool:
    """The preset has an OpenAI-compatible root but no Gemini-API one: bridge it."""
    if not preset:
        return False
    from notes_cli.clients.presets import load_preset

    loaded = load_preset(preset)
    return loaded.gemini is None and loaded.codex is not None


# The options a client declares as `Shared` (`clients.plugin`), each spelt once.
_SHARED = {
    "model": Option("model", "--model", "Model id exactly as the gateway names it."),
    "context_window": Option(
        "context_window",
        "--context-window",
        "Write the model's context window: tokens, or 'gateway' to read the gateway's /models.",
        metavar="TOKENS|gateway",
    ),
}


def _parameter(name: str, annotation: Any, default: Any) -> inspect.Parameter:
    return inspect.Parameter(
        name, inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=annotation, default=default
    )


def _config_command(client: Client) -> None:
    """`config <name>` for a client in a folder of its own: `--preset`, the client's options,
    the bridge options, `--dry-run`, `--json`, its folder and `--project-dir`."""
    parameters = [_parameter("preset", Preset, None)]
    for option in client.options:
        if isinstance(option, Shared):
            parameters.append(typer_option(_SHARED[option.name], option.help))
        else:
            parameters.append(typer_option(option))
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

    def run(values: dict[str, Any]) -> None:
        _configure(client, values)

    app.command(client.name)(build(client.name, client.summary, parameters, run))


for _client in registry.CLIENTS:
    _config_command(_client)


def _configure(client: Client, values: dict[str, Any]) -> None:
    """Plan the client's write (through the bridge when asked, or when the preset needs it)
    and write it (`_write`)."""
    from notes_cli.clients.plugin import ConfigRequest, Where

    dry_run, as_json = values.pop("dry_run"), values.pop("as_json")
    bridge = values.pop("bridge")
    via = (
        values.pop("bridge_port"),
        values.pop("bridge_key_env"),
        values.pop("bridge_fallback"),
        values.pop("bridge_fallback_key_env"),
    )
    where = Where({client.name: values.pop(client.home.name)}, values.pop("project_dir", None))
    raw_window = values.pop("context_window", None)
    path = client.target(ConfigRequest(values, where))  # checks --scope
    window, from_gateway = _context_window(raw_window)
    request = ConfigRequest(values, where, window, _limits_fetcher(from_gateway))
    if bridge or client.needs_bridge(values["preset"]):
        from notes_cli.bridge.client_setup import BridgeOptions, plan_bridged

        options = BridgeOptions.of(*via)
        build_plan: Plan = lambda: plan_bridged(client, request, options)  # noqa: E731
    else:
        build_plan = lambda: (client.plan(request), None)  # noqa: E731
    _write(path, build_plan, dry_run, as_json)


def _limits_fetcher(from_gateway: bool) -> LimitsFetcher | None:
    """Reading the window over HTTP is the gateway's (clients/ does no HTTP)."""
    if not from_gateway:
        return None
    from notes_cli.gateway.model_limits import fetch_limits

    return fetch_limits


def _installed_codex() -> tuple[int, int, int] | None:
    """The installed Codex's version: the catalog entry is that release's fallback metadata."""
    from notes_cli.doctor.version import codex_version

    return codex_version()


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


def _chat_only(preset: str | None) -> bool:
    """The preset says its endpoint has no Responses / Messages API: bridge it."""
    if not preset:
        return False
    from notes_cli.clients.presets import load_preset

    return load_preset(preset).chat_only


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
@with_homes(after="claude_home")
def show(
    client: Annotated[
        str, one_of(_ANY_CLIENT, "--client", help=f"{registry.listing('all')}.")
    ] = "all",
    as_json: AsJson = False,
    codex_home: CodexHome = None,
    claude_home: ClaudeHome = None,
    project_dir: ProjectDir = None,
    profile: layer_options.Profile = None,
    overrides: layer_options.Overrides = None,
    settings: layer_options.Settings = None,
    gemini_home: GeminiHome = None,
    homes: dict[str, Path | None] | None = None,
) -> None:
    """Show each client's effective setup: values, the layer (file, or -c) each came from, the
    URL it calls."""
    from notes_cli.clients.setups import resolve_setups
    from notes_cli.clients.view import CodexView
    from notes_cli.render import config as render

    setups = resolve_setups(
        client,
        codex_home=codex_home,
        claude_home=claude_home,
        project_dir=project_dir,
        codex_view=CodexView(project_dir, profile, tuple(overrides or ())),
        claude_settings=settings,
        gemini_home=gemini_home,
        homes=homes,
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
    return max(newest)[1] if newest else "codex"


@app.command("presets")
def presets_command(as_json: AsJson = False) -> None:
    """List the provider presets (templates/presets/*.toml)."""
    from notes_cli.clients.presets import all_presets
    from notes_cli.render import config as render

    render.presets(all_presets(), as_json=as_json)
