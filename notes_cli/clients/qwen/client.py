"""Qwen Code as a `clients.plugin.Client`: what `config qwen`, doctor, smoke and the bridge ask
of it. Light at import (the CLI builds `config qwen` from it); the work is imported inside each
method."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from notes_cli.clients.plugin import (
    BridgeTarget,
    BridgeUrl,
    ConfigRequest,
    Option,
    SessionLogs,
    Shared,
    Version,
    Where,
)

if TYPE_CHECKING:
    from notes_cli.clients.endpoint import Endpoint
    from notes_cli.clients.endpoint import Protocol as Wire
    from notes_cli.clients.plan import WritePlan
    from notes_cli.clients.resolve import ClientSetup
    from notes_cli.doctor.findings import Finding
    from notes_cli.doctor.resolved import ConfiguredWindow, Resolved


class QwenCode:
    name: str = "qwen"
    title: str = "Qwen Code"
    protocol: Wire = "chat"
    summary: str = (
        "Merge the gateway into Qwen Code's settings.json (a modelProviders entry), keeping\n"
        "    comments and everything else."
    )
    options: tuple[Option | Shared, ...] = (
        Shared(
            "base_url",
            "OpenAI-compatible root (usually ends in /v1); Qwen Code appends /chat/completions.",
        ),
        Shared("model"),
        Shared(
            "key_env",
            "NAME of the variable holding the key (the provider's envKey; never the key).",
        ),
        Shared(
            "context_window",
            "Write the model's generationConfig.contextWindowSize: tokens, or 'gateway' to "
            "read its /models.",
        ),
        Option(
            "scope",
            "--scope",
            "user ($QWEN_HOME) or project (.qwen/) settings file.",
            default="user",
        ),
    )
    home: Option = Option(
        "qwen_home",
        "--qwen-home",
        "Qwen Code user folder (default: $QWEN_HOME or ~/.qwen).",
        kind=Path,
    )
    home_help: str = "Qwen Code user folder ($QWEN_HOME)."
    doctor_options: tuple[Option, ...] = ()
    project_files: str = ".qwen/settings.json (--scope project)"
    key_option: str = "key_env"
    bridge_url: BridgeUrl = "v1"  # …/v1: Qwen Code appends /chat/completions
    listed_unset: bool = False  # `--client all` lists Qwen Code once it has a file
    output_cap_variant: str | None = "qwen"
    smoke_key_env: str | None = "OPENAI_API_KEY"
    file_lines: tuple[str, str] | None = None
    env_names: tuple[str, str] | None = None
    session_logs: SessionLogs | None = None

    # -- config qwen

    def target(self, request: ConfigRequest) -> Path:
        from notes_cli.clients.qwen.config import settings_path

        where = request.where
        return settings_path(
            request["scope"], qwen_home=where.home(self.name), project_dir=where.project_dir
        )

    def plan(self, request: ConfigRequest) -> WritePlan:
        from notes_cli.clients.qwen.config import QwenOptions, plan_qwen

        options = QwenOptions(
            request["preset"],
            request["base_url"],
            request["model"],
            request["key_env"],
            "project" if request["scope"] == "project" else "user",
            request.context_window,
            request.fetch_limits,
        )
        where = request.where
        return plan_qwen(options, qwen_home=where.home(self.name), project_dir=where.project_dir)

    def needs_bridge(self, preset: str | None) -> bool:
        return False  # Qwen Code speaks chat itself: a chat-only preset needs no bridge

    def via_bridge(self, request: ConfigRequest, target: BridgeTarget) -> ConfigRequest:
        """The bridge passes Qwen Code's requests through (`bridge.passthrough`), adding the
        fallbacks and keeping the upstream's key off the client. Without a bridge key Qwen Code
        gets the bridge preset's placeholder (it insists on one)."""
        from dataclasses import replace

        bridged = request.but(
            preset=target.preset if target.key_env is None else None,
            base_url=target.base_url,
            model=target.model,
            key_env=target.key_env,
        )  # the window the upstream states
        return replace(
            bridged, context_window=target.context_window, fetch_limits=target.fetch_limits
        )

    # -- config show, doctor, smoke

    def setup(self, where: Where, env: Mapping[str, str], *, named: bool) -> ClientSetup | None:
        """The effective setup from the settings layers, `.env` files and environment; a file
        that does not parse raises its `ConfigParseError` (Qwen Code stops on it)."""
        from notes_cli.clients.qwen import config
        from notes_cli.clients.resolve import ClientSetup, Value

        home = where.home(self.name)
        layers = config.read_files(home, where.project_dir)
        for layer in layers:
            if layer.problem is not None:
                raise layer.problem
        if not layers:
            if not named:
                return None
            path = config.settings_file("user", qwen_home_dir=home)
            return ClientSetup(self.name, (), (), None, problem=f"{path} does not exist")
        cwd = where.project_dir or Path.cwd()
        resolved = config.resolve(layers, env, cwd=cwd, qwen_home=home)
        values = tuple(Value(*row) for row in config.shown_values(resolved))
        files_used = tuple(layer.path for layer in layers)
        if resolved.auth_type != "openai":
            problem = (
                f"security.auth.selectedType is {resolved.auth_type!r}, not 'openai': Qwen Code "
                "does not call an OpenAI-compatible endpoint"
            )
            return ClientSetup(self.name, files_used, values, None, problem=problem)
        return ClientSetup(self.name, files_used, values, resolved.endpoint())

    def doctor(self, where: Where, env: Mapping[str, str]) -> tuple[Resolved[Any], list[Finding]]:
        """The settings layers and endpoint (none when a file does not parse: Qwen Code stops
        then, and the file has its finding; none when selectedType is not openai), then the
        static checks on what they resolve to."""
        from notes_cli.clients.qwen import config
        from notes_cli.clients.qwen.checks import check_qwen, file_problems
        from notes_cli.doctor.resolved import Resolved

        home = where.home(self.name)
        layers = config.read_files(home, where.project_dir)
        files = tuple(str(layer.path) for layer in layers)
        problems = file_problems(layers)
        if not layers or any(layer.problem for layer in layers):
            return Resolved(self.name, layers, files, None, bool(layers)), problems
        cwd = where.project_dir or Path.cwd()
        resolved = config.resolve(layers, env, cwd=cwd, qwen_home=home)
        endpoint = resolved.endpoint() if resolved.auth_type == "openai" else None
        window = _window(resolved.provider, resolved.provider_source) if endpoint else None
        one = Resolved(self.name, layers, files, endpoint, True, window=window)
        return one, problems + check_qwen(layers, resolved)

    def missing_file(self, where: Where) -> Path:
        from notes_cli.clients.qwen.config import settings_file

        return settings_file("user", qwen_home_dir=where.home(self.name))

    def installed_version(self) -> Version | None:
        return None  # one recording; the newest is sent whatever is installed

    def shapes_dir(self) -> Path:
        return Path(__file__).parent / "shapes"

    def smoke_endpoint(self, setup: ClientSetup) -> Endpoint:
        from notes_cli.errors import UsageError

        if setup.endpoint is None:
            raise UsageError(
                "qwen is not configured",
                fix="run `pdnotes config qwen --preset NAME`, or pass --base-url URL --model ID",
            )
        endpoint = setup.endpoint
        if not endpoint.key:  # Qwen Code stops before sending anything without a key
            name = endpoint.key_env or "OPENAI_API_KEY"
            raise UsageError(
                f"${name} is unset or empty: Qwen Code would stop with 'Missing API key for "
                f"OpenAI-compatible auth. Set the '{name}' environment variable.' and send "
                "nothing",
                fix=f"export {name}=<your key>, then re-run",
            )
        return endpoint

    def smoke_budget(self, setup: ClientSetup) -> int | None:
        return None  # Qwen Code's settings state no output budget smoke should send


CLIENT = QwenCode()


def _window(provider: dict[str, Any] | None, where: str) -> ConfiguredWindow | None:
    """The model entry's generationConfig.contextWindowSize (what `config qwen
    --context-window` writes), for doctor's live check against the gateway's /models."""
    from notes_cli.doctor.resolved import ConfiguredWindow

    generation = provider.get("generationConfig") if provider else None
    size = generation.get("contextWindowSize") if isinstance(generation, dict) else None
    if not isinstance(size, int) or isinstance(size, bool) or size < 1:
        return None
    return ConfiguredWindow(size, f"generationConfig.contextWindowSize of {where}", "qwen")
