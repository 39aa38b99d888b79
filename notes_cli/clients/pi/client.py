"""Pi as a `clients.plugin.Client`: what `config pi`, doctor, smoke and the bridge ask of it.
Light at import (the CLI builds `config pi` from it); the work is imported inside each
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
    usable_endpoint,
)

if TYPE_CHECKING:
    from notes_cli.clients.endpoint import Endpoint
    from notes_cli.clients.endpoint import Protocol as Wire
    from notes_cli.clients.plan import WritePlan
    from notes_cli.clients.resolve import ClientSetup
    from notes_cli.doctor.findings import Finding
    from notes_cli.doctor.resolved import Resolved


class Pi:
    name: str = "pi"
    title: str = "Pi"
    protocol: Wire = "chat"
    summary: str = (
        "Merge the gateway into Pi's models.json (a provider entry) and settings.json\n"
        "    (defaultProvider, defaultModel), comments and every other key kept."
    )
    options: tuple[Option | Shared, ...] = (
        Shared(
            "base_url", "OpenAI-compatible root; Pi appends /chat/completions (cleaned if pasted)."
        ),
        Shared("model"),
        Option(
            "provider",
            "--provider",
            "Provider id: the providers.<id> entry of models.json (default: gateway).",
        ),
        Shared(
            "key_env",
            'NAME of the variable holding the key, written as "apiKey": "NAME" (never the key).',
        ),
        Shared(
            "context_window",
            "Write the model's contextWindow: tokens, or 'gateway' to read its /models.",
        ),
        Option(
            "max_tokens",
            "--max-tokens",
            "The model's maxTokens, asked for every turn (default: an eighth of the window, at "
            "most 32000).",
            kind=int,
            min=1,
            max=(1 << 31) - 1,
        ),
    )
    home: Option = Option(
        "pi_dir",
        "--pi-dir",
        "Pi's agent folder (default: $PI_CODING_AGENT_DIR or ~/.pi/agent).",
        kind=Path,
    )
    home_help: str = "Pi's agent folder ($PI_CODING_AGENT_DIR)."
    doctor_options: tuple[Option, ...] = ()
    project_files: str = ".pi/settings.json (its defaultProvider / defaultModel win)"
    key_option: str = "key_env"
    bridge_url: BridgeUrl = "v1"  # …/v1: Pi appends /chat/completions
    listed_unset: bool = False  # in `--client all` only once set up: most people have no Pi
    output_cap_variant: str | None = "pi"
    smoke_key_env: str | None = None
    file_lines: tuple[str, str] | None = None
    env_names: tuple[str, str] | None = None
    session_logs: SessionLogs | None = None

    # -- config pi

    def target(self, request: ConfigRequest) -> Path:
        from notes_cli.clients.pi.config import models_path

        return models_path(request.where.home(self.name))

    def plan(self, request: ConfigRequest) -> WritePlan:
        from notes_cli.clients.pi.config import PROTOCOL_API, PiOptions, plan_pi

        options = PiOptions(
            request["preset"],
            request["base_url"],
            request["model"],
            request["provider"],
            request["key_env"],
            request.context_window,
            request["max_tokens"],
            request.fetch_limits,
            PROTOCOL_API[self.protocol],
        )
        return plan_pi(options, home=request.where.home(self.name))

    def needs_bridge(self, preset: str | None) -> bool:
        return False  # Pi speaks chat itself: a chat-only preset needs no bridge

    def via_bridge(self, request: ConfigRequest, target: BridgeTarget) -> ConfigRequest:
        """Through the bridge's chat pass-through, with the upstream's window. Without a bridge
        key Pi gets the bridge preset's placeholder (it insists on an apiKey)."""
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
        """Asked for by name, a file Pi cannot read is the command's error; among all the
        clients it is Pi's problem only (the other clients' setups still count)."""
        from notes_cli.clients.pi import config
        from notes_cli.clients.resolve import ClientSetup, Value
        from notes_cli.errors import ConfigParseError

        home = where.home(self.name)
        try:
            files = config.read_files(home, where.project_dir)
        except ConfigParseError as exc:
            if named:
                raise
            return ClientSetup(self.name, (Path(exc.path),), (), None, problem=exc.message)
        if not files:
            if not named:
                return None
            path = config.models_path(home)
            return ClientSetup(self.name, (), (), None, problem=f"{path} does not exist")
        resolved = config.resolve(files, env)
        values = tuple(Value(*value) for value in resolved.values)
        used = tuple(f.path for f in files)
        return ClientSetup(self.name, used, values, resolved.endpoint, problem=resolved.problem)

    def doctor(self, where: Where, env: Mapping[str, str]) -> tuple[Resolved[Any], list[Finding]]:
        """The files and endpoint (none when a file does not read: that file has its finding),
        then the static checks."""
        from notes_cli.clients.pi import config
        from notes_cli.clients.pi.checks import check_pi, read
        from notes_cli.doctor.resolved import ConfiguredWindow, Resolved

        reading = read(where.home(self.name), where.project_dir)
        files = tuple(str(f.path) for f in reading.files) + tuple(
            f.file for f in reading.problems if f.file
        )
        endpoint, window = None, None
        if not reading.problems and reading.files:
            resolved = config.resolve(reading.files, env)
            endpoint = resolved.endpoint
            if endpoint is not None and resolved.window is not None:
                window = ConfiguredWindow(resolved.window, resolved.window_source, self.name)
        one = Resolved(self.name, reading.files, files, endpoint, bool(files), window=window)
        if reading.problems:
            return one, reading.problems
        return one, check_pi(reading.files, env)

    def missing_file(self, where: Where) -> Path:
        from notes_cli.clients.pi.config import models_path

        return models_path(where.home(self.name))

    def installed_version(self) -> Version | None:
        """None: one recording (the newest is sent whatever is installed). `pi --version` says
        its version on stderr, which `doctor.version.installed_version` does not read."""
        return None

    def shapes_dir(self) -> Path:
        return Path(__file__).parent / "shapes"

    def smoke_endpoint(self, setup: ClientSetup) -> Endpoint:
        unset = (
            '"apiKey": "{name}" in Pi\'s models.json names an unset variable: Pi would send the '
            "text {name} as the key"
        )
        return usable_endpoint(self, setup, unset)

    def smoke_budget(self, setup: ClientSetup) -> int | None:
        """The model's maxTokens (Pi's max_completion_tokens every turn; 16384 unset)."""
        stated = next((v.value for v in setup.values if v.name == "maxTokens"), None)
        return int(stated) if stated is not None and stated.isdigit() else None


CLIENT = Pi()
