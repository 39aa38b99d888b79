"""Gemini CLI as a `clients.plugin.Client`: what `config gemini`, doctor, smoke and the bridge
ask of it. Light at import (the CLI builds `config gemini` from it); the work is imported
inside each method."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

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


class GeminiCli:
    name: str = "gemini"
    title: str = "Gemini CLI"
    protocol: Wire = "gemini"
    summary: str = (
        "Merge the gateway into Gemini CLI's settings.json and .gemini/.env, keeping everything\n"
        "    else (comments included)."
    )
    options: tuple[Option | Shared, ...] = (
        Shared(
            "base_url",
            "Gemini-API root; Gemini CLI appends /v1beta/models/<model>:… (cleaned if pasted).",
        ),
        Shared("model"),
        Shared(
            "key_env",
            "NAME of the variable holding the key (never the key); Gemini CLI reads "
            "GEMINI_API_KEY.",
        ),
        Option(
            "write_key_from_env",
            "--write-key-from-env",
            "Write the key held in this variable into .gemini/.env (made 0600). Use with care.",
        ),
        Option("scope", "--scope", "user (~/.gemini) or project (./.gemini).", default="user"),
        Option(
            "no_phone_home",
            "--no-phone-home",
            "Also turn off Gemini CLI's usage statistics, telemetry and update checks (its only "
            "connections besides the model).",
            kind=bool,
            default=False,
        ),
    )
    home: Option = Option(
        "gemini_home",
        "--gemini-home",
        "Gemini CLI user folder (default: $GEMINI_CLI_HOME/.gemini or ~/.gemini).",
        kind=Path,
    )
    home_help: str = "Gemini CLI user folder (~/.gemini)."
    doctor_options: tuple[Option, ...] = ()
    project_files: str = ".gemini/settings.json (--scope project)"
    key_option: str = "key_env"
    bridge_url: BridgeUrl = "root"  # the bridge's Gemini route: …/v1beta/models/<model>:…
    listed_unset: bool = False  # `--client all` lists Gemini CLI once it is set up
    output_cap_variant: str | None = None
    smoke_key_env: str | None = "GEMINI_API_KEY"
    file_lines: tuple[str, str] | None = None
    env_names: tuple[str, str] | None = None
    session_logs: SessionLogs | None = None

    # -- config gemini

    def target(self, request: ConfigRequest) -> Path:
        from notes_cli.clients.gemini.config import settings_path

        where = request.where
        return settings_path(
            request["scope"], gemini_home=where.home(self.name), project_dir=where.project_dir
        )

    def plan(self, request: ConfigRequest) -> WritePlan:
        from notes_cli.clients.gemini.config import GeminiOptions, plan_gemini

        options = GeminiOptions(
            request["preset"],
            request["base_url"],
            request["model"],
            request["key_env"],
            request["write_key_from_env"],
            "project" if request["scope"] == "project" else "user",
            bool(request["no_phone_home"]),
        )
        where = request.where
        return plan_gemini(
            options, gemini_home=where.home(self.name), project_dir=where.project_dir
        )

    def needs_bridge(self, preset: str | None) -> bool:
        """A chat-only preset, or one with an OpenAI-compatible root but no Gemini-API one."""
        if not preset:
            return False
        from notes_cli.clients.presets import load_preset

        loaded = load_preset(preset)
        return loaded.chat_only or (loaded.gemini is None and loaded.openai is not None)

    def via_bridge(self, request: ConfigRequest, target: BridgeTarget) -> ConfigRequest:
        """Gemini CLI on the bridge's Gemini route in front of a chat-completions upstream;
        the bridge's own key (if any) is what Gemini CLI sends, else the bridge preset's
        placeholder."""
        return request.but(
            preset=target.preset if target.key_env is None else None,
            base_url=target.base_url,
            model=target.model,
            key_env=target.key_env,
        )

    # -- config show, doctor, smoke

    def setup(self, where: Where, env: Mapping[str, str], *, named: bool) -> ClientSetup | None:
        """The effective setup; in `--client all` only once set up (most users have none)."""
        from notes_cli.clients.gemini.layers import gemini_layers, setup_of

        one = setup_of(gemini_layers(where.home(self.name), where.project_dir, env))
        if named or one.files or one.endpoint is not None:
            return one
        return None

    def doctor(self, where: Where, env: Mapping[str, str]) -> tuple[Resolved[Any], list[Finding]]:
        """The layers (settings files, the .env it loads, folder trust) and endpoint, then
        the static checks once it is set up."""
        from notes_cli.clients.gemini.checks import check_gemini
        from notes_cli.clients.gemini.config import BASE_URL_VAR
        from notes_cli.clients.gemini.layers import gemini_layers, setup_of
        from notes_cli.doctor.resolved import Resolved

        layers = gemini_layers(where.home(self.name), where.project_dir, env)
        setup = setup_of(layers)
        files = tuple(str(p) for p in setup.files)
        configured = layers.configured or BASE_URL_VAR in env
        one = Resolved(self.name, layers, files, setup.endpoint, configured)
        return one, check_gemini(layers, env) if configured else []

    def missing_file(self, where: Where) -> Path:
        from notes_cli.clients.gemini.config import settings_file

        return settings_file("user", gemini_home=where.home(self.name))

    def installed_version(self) -> Version | None:
        """`gemini --version` (or `$PDNOTES_GEMINI_BIN`), like Codex's."""
        from notes_cli.doctor.version import installed_version

        return installed_version("gemini", "PDNOTES_GEMINI_BIN")

    def shapes_dir(self) -> Path:
        return Path(__file__).parent / "shapes"

    def smoke_endpoint(self, setup: ClientSetup) -> Endpoint:
        from notes_cli.errors import UsageError

        if setup.endpoint is None:
            raise UsageError(
                "gemini is not configured",
                fix="run `pdnotes config gemini --preset NAME`, or pass --base-url URL --model ID",
            )
        if not setup.endpoint.key:
            _without_key()
        return setup.endpoint

    def smoke_budget(self, setup: ClientSetup) -> int | None:
        return None  # Gemini CLI's settings state no output budget smoke should send


def _without_key() -> NoReturn:
    """Gemini CLI would stop before sending anything: say why, the untrusted folder first when
    it hides the .env that holds the key (as after `pdnotes config gemini` in a new folder)."""
    from notes_cli.clients.gemini.config import KEY_VAR
    from notes_cli.clients.gemini.layers import gemini_layers
    from notes_cli.errors import UsageError

    layers = gemini_layers()
    hidden = layers.hidden_by_trust(KEY_VAR)
    if hidden is not None:
        raise UsageError(
            f"{layers.cwd} is not trusted by Gemini CLI ({layers.trust_source}), so it skips "
            f"{hidden}, which sets {KEY_VAR}: Gemini CLI would stop before sending anything",
            fix="export GEMINI_CLI_TRUST_WORKSPACE=true (scripts), or trust this folder once in "
            "interactive `gemini`",
        )
    raise UsageError(
        f"{KEY_VAR} is unset (in the environment and the .env Gemini CLI loads): "
        "Gemini CLI would stop before sending anything",
        fix=f"export {KEY_VAR}=<key>, or: pdnotes doctor --client gemini",
    )


CLIENT = GeminiCli()
