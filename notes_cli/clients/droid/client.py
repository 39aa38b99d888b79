"""Factory Droid as a `clients.plugin.Client`: what `config droid`, doctor, smoke and the bridge
ask of it. Light at import (the CLI builds `config droid` from it); the work is imported inside
each method."""

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


class Droid:
    name: str = "droid"
    title: str = "Factory Droid"
    protocol: Wire = "chat"
    summary: str = (
        "Merge the gateway into Factory Droid's settings.json: a customModels entry and the\n"
        "    top-level model, comments and every other entry kept."
    )
    options: tuple[Option | Shared, ...] = (
        Shared(
            "base_url",
            "OpenAI-compatible root (Droid appends /chat/completions or /responses), or with "
            "--api messages the Anthropic root (it appends /v1/messages).",
        ),
        Shared("model"),
        Shared("key_env", 'NAME of the variable holding the key, written as "apiKey": "${NAME}".'),
        Option(
            "api",
            "--api",
            "The API Droid calls: chat (provider generic-chat-completion-api, the default), "
            "responses (openai) or messages (anthropic).",
            metavar="API",
        ),
        Shared(
            "context_window",
            "Write the entry's maxContextLimit: tokens, or 'gateway' to read its /models.",
        ),
        Shared(
            "output_limit",
            "The entry's maxOutputTokens (default: an eighth of the window, at most 32000).",
        ),
        Option(
            "display_name",
            "--display-name",
            "The entry's displayName, which pdnotes finds it by again (default: pdnotes).",
        ),
    )
    home: Option = Option(
        "factory_dir",
        "--factory-dir",
        "Factory Droid's folder (default: ~/.factory).",
        kind=Path,
    )
    home_help: str = "Factory Droid's folder (~/.factory)."
    doctor_options: tuple[Option, ...] = ()
    project_files: str = ""
    key_option: str = "key_env"
    bridge_url: BridgeUrl = "v1"
    listed_unset: bool = False  # in `--client all` only once set up: most people have no Droid
    output_cap_variant: str | None = None
    smoke_key_env: str | None = None
    file_lines: tuple[str, str] | None = None
    env_names: tuple[str, str] | None = None
    session_logs: SessionLogs | None = None

    # -- config droid

    def target(self, request: ConfigRequest) -> Path:
        from notes_cli.clients.droid.config import settings_file

        return settings_file(request.where.home(self.name))

    def plan(self, request: ConfigRequest) -> WritePlan:
        from notes_cli.clients.droid.config import DroidOptions, plan_droid

        options = DroidOptions(
            request["preset"],
            request["base_url"],
            request["model"],
            request["key_env"],
            request["api"],
            request["display_name"],
            request.context_window,
            request["output_limit"],
            request.fetch_limits,
        )
        return plan_droid(options, home=request.where.home(self.name))

    def needs_bridge(self, preset: str | None) -> bool:
        return False  # Droid speaks chat itself (--api chat, the default)

    def via_bridge(self, request: ConfigRequest, target: BridgeTarget) -> ConfigRequest:
        """Through the bridge's chat pass-through, with the upstream's model limits."""
        from dataclasses import replace

        bridged = request.but(
            preset=target.preset,
            base_url=target.base_url,
            model=target.model,
            key_env=target.key_env,
            api="chat",
        )
        return replace(
            bridged, context_window=target.context_window, fetch_limits=target.fetch_limits
        )

    # -- config show, doctor, smoke

    def setup(self, where: Where, env: Mapping[str, str], *, named: bool) -> ClientSetup | None:
        """Asked for by name, a file Droid cannot read is the command's error; among all the
        clients it is Droid's problem only."""
        from notes_cli.clients.droid import config
        from notes_cli.clients.resolve import ClientSetup, Value

        home = where.home(self.name)
        layers = config.read_layers(home)
        for layer in layers:
            if layer.problem is not None:
                if named:
                    raise layer.problem
                problem = layer.problem.message
                return ClientSetup(self.name, (layer.path,), (), None, problem=problem)
        if not layers:
            if not named:
                return None
            path = config.settings_file(home)
            return ClientSetup(self.name, (), (), None, problem=f"{path} does not exist")
        resolved = config.resolve(layers, env)
        values = tuple(Value(*row) for row in resolved.values)
        files = tuple(layer.path for layer in layers)
        return ClientSetup(self.name, files, values, resolved.endpoint, problem=resolved.problem)

    def doctor(self, where: Where, env: Mapping[str, str]) -> tuple[Resolved[Any], list[Finding]]:
        """The files and endpoint (none when settings.json cannot be read: Droid then ignores
        it, and the file has its finding), then the static checks."""
        from notes_cli.clients.droid import config
        from notes_cli.clients.droid.checks import check_droid, file_problems
        from notes_cli.doctor.resolved import ConfiguredWindow, Resolved

        layers = config.read_layers(where.home(self.name))
        files = tuple(layer.where for layer in layers)
        problems = file_problems(layers)
        if not layers:
            return Resolved(self.name, layers, files, None, False), problems
        resolved = config.resolve(layers, env)
        entry = resolved.entry
        window = None
        if resolved.endpoint is not None and entry is not None and entry.max_context:
            where_set = f"maxContextLimit of the {entry.display_name} entry in {entry.layer.where}"
            window = ConfiguredWindow(entry.max_context, where_set, self.name)
        one = Resolved(self.name, layers, files, resolved.endpoint, True, window=window)
        return one, problems + check_droid(layers, env)

    def missing_file(self, where: Where) -> Path:
        from notes_cli.clients.droid.config import settings_file

        return settings_file(where.home(self.name))

    def installed_version(self) -> Version | None:
        """`droid --version`, or `$PDNOTES_DROID_BIN`'s."""
        from notes_cli.doctor.version import installed_version

        return installed_version("droid", "PDNOTES_DROID_BIN")

    def shapes_dir(self) -> Path:
        return Path(__file__).parent / "shapes"

    def smoke_endpoint(self, setup: ClientSetup) -> Endpoint:
        unset = (
            "${{{name}}} in Droid's settings names an unset variable: Droid would send an empty key"
        )
        return usable_endpoint(self, setup, unset)

    def smoke_budget(self, setup: ClientSetup) -> int | None:
        """The entry's maxOutputTokens (Droid asks each turn for that many)."""
        stated = next((v.value for v in setup.values if v.name == "maxOutputTokens"), None)
        return int(stated) if stated is not None and stated.isdigit() else None


CLIENT = Droid()
