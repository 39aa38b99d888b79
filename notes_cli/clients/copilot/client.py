"""GitHub Copilot CLI as a `clients.plugin.Client`: what `config copilot`, doctor, smoke and the
bridge ask of it. Light at import (the CLI builds `config copilot` from it); the work is
imported inside each method."""

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
    from notes_cli.doctor.resolved import Resolved


class Copilot:
    name: str = "copilot"
    title: str = "Copilot CLI"
    protocol: Wire = "chat"
    summary: str = (
        "Write GitHub Copilot CLI's custom provider (COPILOT_PROVIDER_* variables) into\n"
        "    $COPILOT_HOME/pdnotes.env, for the shell to load: set -a; . FILE; set +a."
    )
    options: tuple[Option | Shared, ...] = (
        Shared(
            "base_url",
            "OpenAI-compatible root (usually ends in /v1); Copilot appends /chat/completions.",
        ),
        Shared("model"),
        Shared(
            "key_env",
            "NAME of the variable holding the key, written as "
            "COPILOT_PROVIDER_API_KEY_COMMAND='printenv NAME' (never the key).",
        ),
        Shared(
            "context_window",
            "Tell Copilot the model's window (COPILOT_PROVIDER_MAX_PROMPT_TOKENS + "
            "_MAX_OUTPUT_TOKENS): tokens, or 'gateway' to read its /models.",
        ),
        Shared(
            "output_limit",
            "COPILOT_PROVIDER_MAX_OUTPUT_TOKENS (default: an eighth of the window, at most 32000).",
        ),
        Option(
            "offline",
            "--offline/--no-offline",
            "Write COPILOT_OFFLINE=true: no GitHub login, telemetry or update check.",
            kind=bool,
            default=True,
        ),
    )
    home: Option = Option(
        "copilot_home",
        "--copilot-home",
        "Copilot CLI's folder, where pdnotes.env goes (default: $COPILOT_HOME or ~/.copilot).",
        kind=Path,
    )
    home_help: str = "Copilot CLI's folder ($COPILOT_HOME)."
    doctor_options: tuple[Option, ...] = ()
    project_files: str = ""
    key_option: str = "key_env"
    bridge_url: BridgeUrl = "v1"  # …/v1: Copilot appends /chat/completions
    listed_unset: bool = False  # `--client all` lists it once it has its env file or variables
    output_cap_variant: str | None = None
    smoke_key_env: str | None = None
    file_lines: tuple[str, str] | None = (
        "COPILOT_PROVIDER_BASE_URL={}",
        "COPILOT_MODEL={}",
    )
    env_names: tuple[str, str] | None = None
    session_logs: SessionLogs | None = None

    # -- config copilot

    def target(self, request: ConfigRequest) -> Path:
        from notes_cli.clients.copilot.config import env_file

        return env_file(request.where.home(self.name))

    def plan(self, request: ConfigRequest) -> WritePlan:
        from notes_cli.clients.copilot.config import CopilotOptions, plan_copilot

        options = CopilotOptions(
            request["preset"],
            request["base_url"],
            request["model"],
            request["key_env"],
            request.context_window,
            request["output_limit"],
            request["offline"] is not False,
            request.fetch_limits,
        )
        return plan_copilot(options, home=request.where.home(self.name))

    def needs_bridge(self, preset: str | None) -> bool:
        return False  # Copilot speaks chat completions itself

    def via_bridge(self, request: ConfigRequest, target: BridgeTarget) -> ConfigRequest:
        """Through the bridge's chat pass-through, with the upstream's window; without a
        bridge key, as the bridge preset (no key command: the upstream's key stays off it)."""
        from dataclasses import replace

        bridged = request.but(
            preset=target.preset if target.key_env is None else None,
            base_url=target.base_url,
            model=target.model,
            key_env=target.key_env,
        )
        return replace(
            bridged, context_window=target.context_window, fetch_limits=target.fetch_limits
        )

    # -- config show, doctor, smoke

    def setup(self, where: Where, env: Mapping[str, str], *, named: bool) -> ClientSetup | None:
        """The shell's Copilot variables over the env file's; asked for by name, a file
        pdnotes cannot read is the command's error."""
        from notes_cli.clients.copilot import config
        from notes_cli.clients.resolve import ClientSetup, Value
        from notes_cli.errors import ConfigParseError

        path = config.env_file(self._home(where, env))
        try:
            file = config.read_env_file(path)
        except ConfigParseError as exc:
            if named:
                raise
            return ClientSetup(self.name, (path,), (), None, problem=exc.message)
        settings = config.effective(file, env)
        if not settings and not named:
            return None
        resolved = config.resolve(settings, env)
        values = tuple(Value(*value) for value in resolved.values)
        files = (path,) if file is not None else ()
        problem = resolved.problem
        if file is None and not settings:
            problem = f"{path} does not exist and no COPILOT_PROVIDER_* variable is set"
        return ClientSetup(self.name, files, values, resolved.endpoint, problem=problem)

    def doctor(self, where: Where, env: Mapping[str, str]) -> tuple[Resolved[Any], list[Finding]]:
        """The env file and the shell read once; no endpoint when the file cannot be read (it
        has its finding) or Copilot would not use a custom provider."""
        from notes_cli.clients.copilot import checks, config
        from notes_cli.doctor.resolved import ConfiguredWindow, Resolved

        path = config.env_file(self._home(where, env))
        file, problems = checks.read(path)
        files = (str(path),) if file is not None or problems else ()
        if problems:
            return Resolved(self.name, None, files, None, True), problems
        settings = config.effective(file, env)
        resolved = config.resolve(settings, env)
        window = config.window_of(settings) if resolved.endpoint else None
        configured = bool(settings) or file is not None
        one = Resolved(
            self.name,
            settings,
            files,
            resolved.endpoint,
            configured,
            window=ConfiguredWindow(window[0], window[1], "copilot") if window else None,
        )
        return one, checks.check_copilot(file, settings, env, self._home(where, env))

    def missing_file(self, where: Where) -> Path:
        from notes_cli.clients.copilot.config import env_file

        return env_file(where.home(self.name))

    def installed_version(self) -> Version | None:
        # `copilot --version` unpacks a 235 MB package into ~/.cache/copilot on its first run:
        # doctor does not start it; the newest recording is sent whatever is installed.
        return None

    def shapes_dir(self) -> Path:
        return Path(__file__).parent / "shapes"

    def smoke_endpoint(self, setup: ClientSetup) -> Endpoint:
        from notes_cli.errors import UsageError

        if setup.endpoint is None:
            raise UsageError(
                f"Copilot CLI has no custom provider pdnotes can call: {setup.problem}",
                fix="run `pdnotes config copilot --preset NAME` and load the file it writes, "
                "or pass --base-url URL --model ID",
            )
        endpoint = setup.endpoint
        if endpoint.key_env and not endpoint.key:
            raise UsageError(
                f"${endpoint.key_env} is unset or empty: Copilot's key command prints nothing "
                "and it sends no key",
                fix=f"export {endpoint.key_env}=<your key>, then re-run",
            )
        return endpoint

    def smoke_budget(self, setup: ClientSetup) -> int | None:
        """COPILOT_PROVIDER_MAX_OUTPUT_TOKENS (Copilot's max_tokens each turn) when set."""
        stated = next(
            (v.value for v in setup.values if v.name == "COPILOT_PROVIDER_MAX_OUTPUT_TOKENS"), None
        )
        return int(stated) if stated is not None and stated.isdigit() else None

    def _home(self, where: Where, env: Mapping[str, str]) -> Path:
        from notes_cli.clients.copilot.config import copilot_home

        return copilot_home(where.home(self.name), env)


CLIENT = Copilot()
