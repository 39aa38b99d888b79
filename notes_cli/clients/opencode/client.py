"""OpenCode as a `clients.plugin.Client`: what `config opencode`, doctor, smoke and the bridge
ask of it. Light at import (the CLI builds `config opencode` from it); the work is imported
inside each method."""

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
    from notes_cli.doctor.resolved import ConfiguredWindow, Resolved


class OpenCode:
    name: str = "opencode"
    title: str = "OpenCode"
    protocol: Wire = "chat"
    summary: str = (
        "Merge the gateway into OpenCode's opencode.json(c): a provider entry and `model`,\n"
        "    comments and every other key kept."
    )
    options: tuple[Option | Shared, ...] = (
        Shared(
            "base_url",
            "OpenAI-compatible root; OpenCode appends /chat/completions (cleaned if pasted).",
        ),
        Shared("model"),
        Option(
            "provider", "--provider", "Provider id: the provider.<id> entry (default: gateway)."
        ),
        Shared(
            "key_env", 'NAME of the variable holding the key, written as "apiKey": "{env:NAME}".'
        ),
        Shared(
            "context_window",
            "Write the model's limit.context: tokens, or 'gateway' to read its /models.",
        ),
        Shared(
            "output_limit",
            "The model's limit.output (default: an eighth of the window, at most 32000).",
        ),
        Option(
            "scope",
            "--scope",
            "global (~/.config/opencode) or project (./opencode.json).",
            default="global",
        ),
    )
    home: Option = Option(
        "opencode_dir",
        "--opencode-dir",
        "OpenCode's global folder (default: $XDG_CONFIG_HOME/opencode or ~/.config/opencode).",
        kind=Path,
    )
    home_help: str = "OpenCode's global config folder."
    doctor_options: tuple[Option, ...] = ()
    project_files: str = "opencode.json or opencode.jsonc (--scope project)"
    key_option: str = "key_env"
    bridge_url: BridgeUrl = "v1"
    listed_unset: bool = False  # in `--client all` only once set up: most people have no OpenCode
    output_cap_variant: str | None = "opencode"
    smoke_key_env: str | None = None
    file_lines: tuple[str, str] | None = None
    env_names: tuple[str, str] | None = None
    session_logs: SessionLogs | None = None

    # -- config opencode

    def target(self, request: ConfigRequest) -> Path:
        from notes_cli.clients.opencode.config import config_path

        where = request.where
        return config_path(
            request["scope"], config_dir=where.home(self.name), project_dir=where.project_dir
        )

    def plan(self, request: ConfigRequest) -> WritePlan:
        from notes_cli.clients.opencode.config import OpenCodeOptions, plan_opencode

        options = OpenCodeOptions(
            request["preset"],
            request["base_url"],
            request["model"],
            request["provider"],
            request["key_env"],
            "project" if request["scope"] == "project" else "global",
            request.context_window,
            request["output_limit"],
            request.fetch_limits,
        )
        where = request.where
        return plan_opencode(
            options, config_dir=where.home(self.name), project_dir=where.project_dir
        )

    def needs_bridge(self, preset: str | None) -> bool:
        return False  # OpenCode speaks chat itself: a chat-only preset needs no bridge

    def via_bridge(self, request: ConfigRequest, target: BridgeTarget) -> ConfigRequest:
        """Through the bridge's chat pass-through, with the upstream's model limits."""
        from dataclasses import replace

        bridged = request.but(
            preset=target.preset,
            base_url=target.base_url,
            model=target.model,
            key_env=target.key_env,
        )
        return replace(
            bridged, context_window=target.context_window, fetch_limits=target.fetch_limits
        )

    # -- config show, doctor, smoke

    def setup(self, where: Where, env: Mapping[str, str], *, named: bool) -> ClientSetup | None:
        """Asked for by name, a file OpenCode cannot read is the command's error; among all the
        clients it is OpenCode's problem only (the other clients' setups still count)."""
        from notes_cli.clients.opencode import config as oc
        from notes_cli.clients.resolve import ClientSetup
        from notes_cli.errors import ConfigParseError

        try:
            layers = oc.read_layers(where.home(self.name), where.project_dir, env)
        except ConfigParseError as exc:
            if named:
                raise
            return ClientSetup(self.name, (Path(exc.path),), (), None, problem=exc.message)
        setup = setup_of(layers, env)
        return setup if named or setup.files else None

    def doctor(self, where: Where, env: Mapping[str, str]) -> tuple[Resolved[Any], list[Finding]]:
        """The layers and endpoint; a finding for each layer OpenCode could not read (no
        endpoint then: OpenCode refuses to start), then the static checks."""
        from notes_cli.clients.opencode.checks import check_opencode, read
        from notes_cli.doctor.resolved import Resolved

        reading = read(where.home(self.name), where.project_dir, env)
        files = tuple(layer.where for layer in reading.layers) + tuple(
            f.file for f in reading.problems if f.file
        )
        endpoint, window = None, None
        if not reading.problems and reading.layers:
            setup = setup_of(reading.layers, env)
            endpoint, window = setup.endpoint, _window(setup)
        resolved = Resolved(self.name, reading.layers, files, endpoint, bool(files), window=window)
        return resolved, reading.problems + check_opencode(reading.layers, env)

    def missing_file(self, where: Where) -> Path:
        from notes_cli.clients.opencode.config import config_path

        return config_path("global", config_dir=where.home(self.name))

    def installed_version(self) -> Version | None:
        """`opencode --version`, or `$PDNOTES_OPENCODE_BIN`'s."""
        from notes_cli.doctor.version import installed_version

        return installed_version("opencode", "PDNOTES_OPENCODE_BIN")

    def shapes_dir(self) -> Path:
        return Path(__file__).parent / "shapes"

    def smoke_endpoint(self, setup: ClientSetup) -> Endpoint:
        unset = (
            "{{env:{name}}} in OpenCode's config names an unset variable: OpenCode would send "
            "an empty key"
        )
        return usable_endpoint(self, setup, unset)

    def smoke_budget(self, setup: ClientSetup) -> int | None:
        """The model's `limit.output` (a turn of smoke is then OpenCode's turn)."""
        stated = next((v.value for v in setup.values if v.name == "limit.output"), None)
        return int(stated) if stated is not None and stated.isdigit() else None


def setup_of(layers: list[Any], env: Mapping[str, str]) -> ClientSetup:
    """OpenCode's effective setup from layers already read."""
    from notes_cli.clients.opencode import config as oc
    from notes_cli.clients.resolve import ClientSetup, Value

    used = tuple(layer.path for layer in layers if layer.path is not None)
    if not layers:
        path = oc.config_path("global")
        return ClientSetup("opencode", (), (), None, problem=f"{path} does not exist")
    resolved = oc.resolve(layers, env, oc.auth_keys())
    values = tuple(Value(*value) for value in resolved.values)
    return ClientSetup("opencode", used, values, resolved.endpoint, problem=resolved.problem)


def _window(setup: ClientSetup) -> ConfiguredWindow | None:
    """The model's limit.context (what `config opencode --context-window` writes), for
    doctor's live check against the gateway's /models."""
    from notes_cli.doctor.resolved import ConfiguredWindow

    stated = next((v for v in setup.values if v.name == "limit.context"), None)
    if stated is None:
        return None
    return ConfiguredWindow(int(stated.value), f"limit.context of {stated.source}", "opencode")


CLIENT = OpenCode()
