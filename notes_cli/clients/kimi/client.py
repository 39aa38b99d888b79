"""Kimi Code as a `clients.plugin.Client`: what `config kimi`, doctor, smoke and the bridge ask of
it. Light at import (the CLI builds `config kimi` from it); the work is imported inside each
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


class Kimi:
    name: str = "kimi"
    title: str = "Kimi Code"
    protocol: Wire = "chat"
    summary: str = (
        "Merge the gateway into Kimi Code's config.toml: a [providers.<id>] table, a\n"
        '    [models."<id>/<model>"] entry and default_model, comments and every other key kept.'
    )
    options: tuple[Option | Shared, ...] = (
        Shared(
            "base_url",
            "OpenAI-compatible root (Kimi Code appends /chat/completions or /responses), or "
            "with --api messages the Anthropic root (it appends /v1/messages).",
        ),
        Shared("model"),
        Option(
            "provider",
            "--provider",
            "Provider id: the [providers.<id>] table of config.toml (default: pdnotes).",
        ),
        Shared(
            "key_env",
            'NAME of the variable holding the key, written as api_key_env = "NAME" (never the '
            "key).",
        ),
        Option(
            "api",
            "--api",
            "The API Kimi Code calls: chat (type openai, the default), responses "
            "(openai_responses) or messages (anthropic).",
            metavar="API",
        ),
        Shared(
            "context_window",
            "Write the model's max_context_size: tokens, or 'gateway' to read its /models.",
        ),
        Shared(
            "output_limit",
            "The model's max_output_size (default: an eighth of the window, at most 32000).",
        ),
    )
    home: Option = Option(
        "kimi_home",
        "--kimi-home",
        "Kimi Code's folder (default: $KIMI_CODE_HOME or ~/.kimi-code).",
        kind=Path,
    )
    home_help: str = "Kimi Code's folder ($KIMI_CODE_HOME)."
    doctor_options: tuple[Option, ...] = ()
    project_files: str = ""
    key_option: str = "key_env"
    bridge_url: BridgeUrl = "v1"  # …/v1: Kimi Code appends /chat/completions
    listed_unset: bool = False  # in `--client all` only once set up: most people have no Kimi
    output_cap_variant: str | None = "kimi"
    smoke_key_env: str | None = None
    file_lines: tuple[str, str] | None = ('base_url = "{}"', 'model = "{}"')
    env_names: tuple[str, str] | None = None
    session_logs: SessionLogs | None = None

    # -- config kimi

    def target(self, request: ConfigRequest) -> Path:
        from notes_cli.clients.kimi.config import config_path

        return config_path(request.where.home(self.name))

    def plan(self, request: ConfigRequest) -> WritePlan:
        from notes_cli.clients.kimi.config import KimiOptions, plan_kimi

        options = KimiOptions(
            request["preset"],
            request["base_url"],
            request["model"],
            request["provider"],
            request["key_env"],
            request["api"],
            request.context_window,
            request["output_limit"],
            request.fetch_limits,
        )
        return plan_kimi(options, home=request.where.home(self.name))

    def needs_bridge(self, preset: str | None) -> bool:
        return False  # Kimi Code speaks chat itself (--api chat, the default)

    def via_bridge(self, request: ConfigRequest, target: BridgeTarget) -> ConfigRequest:
        """Through the bridge's chat pass-through, with the upstream's window. Without a bridge
        key Kimi Code gets the bridge preset's placeholder (it refuses a provider without a
        key)."""
        from dataclasses import replace

        bridged = request.but(
            preset=target.preset if target.key_env is None else None,
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
        """Asked for by name, a file Kimi Code cannot read is the command's error; among all
        the clients it is Kimi Code's problem only."""
        from notes_cli.clients.kimi import config
        from notes_cli.clients.resolve import ClientSetup, Value
        from notes_cli.errors import ConfigParseError

        home = where.home(self.name)
        try:
            file = config.read_file(home)
        except ConfigParseError as exc:
            if named:
                raise
            return ClientSetup(self.name, (Path(exc.path),), (), None, problem=exc.message)
        if file is None:
            if not named:
                return None
            path = config.config_path(home)
            return ClientSetup(self.name, (), (), None, problem=f"{path} does not exist")
        resolved = config.resolve(file, env)
        values = tuple(Value(*value) for value in resolved.values)
        return ClientSetup(
            self.name, (file.path,), values, resolved.endpoint, problem=resolved.problem
        )

    def doctor(self, where: Where, env: Mapping[str, str]) -> tuple[Resolved[Any], list[Finding]]:
        """The file and endpoint (none when config.toml does not read: it has its finding),
        then the static checks."""
        from notes_cli.clients.kimi import config
        from notes_cli.clients.kimi.checks import check_kimi, read
        from notes_cli.doctor.resolved import ConfiguredWindow, Resolved

        file, problems = read(where.home(self.name))
        path = str(config.config_path(where.home(self.name)))
        if file is None:
            configured = bool(problems)
            files = (path,) if configured else ()
            return Resolved(self.name, None, files, None, configured), problems
        resolved = config.resolve(file, env)
        window = None
        if resolved.endpoint is not None and resolved.window is not None:
            window = ConfiguredWindow(resolved.window, resolved.window_source, self.name)
        one = Resolved(self.name, file, (path,), resolved.endpoint, True, window=window)
        return one, check_kimi(file, env)

    def missing_file(self, where: Where) -> Path:
        from notes_cli.clients.kimi.config import config_path

        return config_path(where.home(self.name))

    def installed_version(self) -> Version | None:
        """None: one recording (the newest is sent whatever is installed). Under a Node older
        than 22.19, `kimi --version` dies at import with Node's own version in its message,
        which would be read as Kimi Code's."""
        return None

    def shapes_dir(self) -> Path:
        return Path(__file__).parent / "shapes"

    def smoke_endpoint(self, setup: ClientSetup) -> Endpoint:
        unset = (
            'api_key_env = "{name}" in Kimi Code\'s config.toml names an unset variable: Kimi Code '
            "stops before it calls the gateway"
        )
        return usable_endpoint(self, setup, unset)

    def smoke_budget(self, setup: ClientSetup) -> int | None:
        """The model's max_output_size (Kimi Code's max_tokens every turn; without it, the
        whole window)."""
        values = {v.name: v.value for v in setup.values}
        for name in ("max_output_size", "max_context_size"):
            stated = values.get(name)
            if stated is not None and stated.isdigit():
                return int(stated)
        return None


CLIENT = Kimi()
