"""Codex as a `clients.plugin.Client`: what `config codex`, doctor, smoke and the bridge ask of
it. Light at import (the CLI builds `config codex` from it); the work is imported inside each
method."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
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
    from notes_cli.clients.codex.view import CodexView
    from notes_cli.clients.endpoint import Endpoint
    from notes_cli.clients.endpoint import Protocol as Wire
    from notes_cli.clients.plan import WritePlan
    from notes_cli.clients.resolve import ClientSetup
    from notes_cli.doctor.findings import Finding
    from notes_cli.doctor.resolved import Resolved


class Codex:
    name: str = "codex"
    title: str = "Codex"
    protocol: Wire = "responses"
    summary: str = (
        "Merge a provider into $CODEX_HOME/config.toml, changing only the keys pdnotes owns."
    )
    options: tuple[Option | Shared, ...] = (
        Shared("base_url", "API root, e.g. https://taotoken.net/api (cleaned if pasted)."),
        Shared("model"),
        Option("provider", "--provider", "Provider id: the [model_providers.<id>] table."),
        Option("env_key", "--env-key", "NAME of the variable holding the key (never the key)."),
        Option("wire_api", "--wire-api", "Only 'responses' is supported.", default="responses"),
        Shared(
            "context_window",
            "Write model_context_window: a number of tokens, or 'gateway' to read it from the "
            "gateway's GET /models (context_length, max_model_len, …).",
        ),
        Option(
            "model_catalog",
            "--model-catalog/--no-model-catalog",
            "Also write the model into a Codex model catalog (model_catalog_json: "
            "$CODEX_HOME/pdnotes-models.json unless config.toml names one) with its window and "
            "reasoning support, so Codex knows it and lists it in its picker (default: as the "
            "preset says; the mock preset does).",
            kind=bool,
        ),
        Option(
            "profile",
            "--profile",
            "Write the profile file $CODEX_HOME/NAME.config.toml (what `codex --profile NAME` "
            "reads over config.toml) instead of config.toml.",
            metavar="NAME",
        ),
    )
    home: Option = Option(
        "codex_home", "--codex-home", "Codex folder (default: $CODEX_HOME or ~/.codex).", kind=Path
    )
    home_help: str = "Codex folder."
    doctor_options: tuple[Option, ...] = (
        Option(
            "codex_version",
            "--codex-version",
            "Judge config.toml by this Codex release's rules (default: `codex --version`).",
        ),
    )
    project_files: str = ""
    key_option: str = "env_key"
    bridge_url: BridgeUrl = "v1"
    listed_unset: bool = True
    output_cap_variant: str | None = "codex"
    smoke_key_env: str | None = None
    file_lines: tuple[str, str] | None = ('base_url = "{}"', 'model = "{}"')
    env_names: tuple[str, str] | None = None
    session_logs: SessionLogs | None = SessionLogs(
        Option(
            "codex_dir",
            "--codex-dir",
            "Codex's folder (default $CODEX_HOME or ~/.codex), its sessions/, or any folder "
            "of rollout-*.jsonl files (e.g. sessions/2026/05 for one month).",
            kind=Path,
        ),
        lambda: _home(),
        lambda folder: _session_calls(folder),
    )

    # -- config codex

    def target(self, request: ConfigRequest) -> Path:
        from notes_cli.clients.codex.config import config_file

        return config_file(request.where.home(self.name), request["profile"])  # checks --profile

    def plan(self, request: ConfigRequest) -> WritePlan:
        from notes_cli.clients.codex.config import plan_codex

        return plan_codex(self._options(request), codex_home=request.where.home(self.name))

    def _options(self, request: ConfigRequest) -> Any:
        from notes_cli.clients.codex.config import CodexOptions

        return CodexOptions(
            request["preset"],
            request["base_url"],
            request["model"],
            request["provider"],
            request["env_key"],
            request["wire_api"] or "responses",
            request.context_window,
            request.fetch_limits,
            model_catalog=request["model_catalog"],
            installed_version=self.installed_version,  # the catalog is that release's metadata
            profile=request["profile"],
        )

    def needs_bridge(self, preset: str | None) -> bool:
        """A preset whose endpoint serves no Responses API."""
        from notes_cli.clients.presets import chat_only

        return chat_only(preset)

    def via_bridge(self, request: ConfigRequest, target: BridgeTarget) -> ConfigRequest:
        """Through the bridge's Responses API, with the upstream's window; the model catalog
        as the upstream preset says for its own model (as `plan_codex` defaults it without the
        bridge)."""
        from dataclasses import replace

        from notes_cli.clients.presets import load_preset

        upstream = request["preset"]
        preset = load_preset(upstream) if upstream else None
        own = preset.openai if preset and target.model == preset.model else None
        catalog = request["model_catalog"]
        if catalog is None and own is not None:
            catalog = own.model_catalog
        bridged = request.but(
            preset=target.preset,
            base_url=target.base_url,
            model=target.model,
            env_key=target.key_env,
            model_catalog=catalog,
        )
        return replace(
            bridged, context_window=target.context_window, fetch_limits=target.fetch_limits
        )

    # -- config show, doctor, smoke

    def setup(self, where: Where, env: Mapping[str, str], *, named: bool) -> ClientSetup | None:
        """Always listed: `--client all` says when Codex is not set up."""
        from notes_cli.clients.codex.setup import codex_setup

        return codex_setup(where.home(self.name), env, view=_view(where))

    def doctor(self, where: Where, env: Mapping[str, str]) -> tuple[Resolved[Any], list[Finding]]:
        """Every layer as Codex merges them (`-p`, `-c`, the project's), judged by the rules of
        the release `--codex-version` names (default: the installed one)."""
        from dataclasses import replace

        from notes_cli.clients.codex.checks import check_codex_layers
        from notes_cli.clients.codex.resolved import resolve_codex

        version = self._judged_version(where.flags.get("codex_version"))
        view = _view(where)
        resolved, problem = resolve_codex(where.home(self.name), env, view)
        findings = [problem] if problem is not None else []
        if resolved.layers is not None:
            findings += check_codex_layers(resolved.layers, env, version, view.profile)
        return replace(resolved, version=version), findings

    def _judged_version(self, given: str | None) -> Version | None:
        from notes_cli.doctor.version import parse_version
        from notes_cli.errors import UsageError

        if given is None:
            return self.installed_version()
        parsed = parse_version(given)
        if parsed is None:
            raise UsageError(
                f"--codex-version {given!r} is not a version", fix="give it as X.Y.Z, e.g. 0.171.0"
            )
        return parsed

    def missing_file(self, where: Where) -> Path:
        from notes_cli.clients.codex.home import codex_config_path

        return codex_config_path(where.home(self.name))

    def installed_version(self) -> Version | None:
        """`codex --version`, or `$PDNOTES_CODEX_BIN`'s."""
        from notes_cli.doctor.version import installed_version

        return installed_version("codex", "PDNOTES_CODEX_BIN")

    def shapes_dir(self) -> Path:
        return Path(__file__).parent / "shapes"

    def smoke_endpoint(self, setup: ClientSetup) -> Endpoint:
        """Codex stops before sending anything when its key variable is unset; so does smoke."""
        from notes_cli.errors import UsageError

        endpoint = setup.endpoint
        if endpoint is None:
            raise UsageError(
                "codex is not configured",
                fix="run `pdnotes config codex --preset NAME`, or pass --base-url URL --model ID",
            )
        if endpoint.key_env and not endpoint.key:
            raise UsageError(
                f"${endpoint.key_env} is unset or empty: Codex would stop with "
                f"'Missing environment variable: `{endpoint.key_env}`' and send nothing",
                fix=f"export {endpoint.key_env}=<your key>, then re-run",
            )
        return endpoint

    def smoke_budget(self, setup: ClientSetup) -> int | None:
        return None  # Codex sends no output budget: smoke's default stands in


def _home() -> Path:
    from notes_cli.clients.codex.home import codex_home

    return codex_home()


def _session_calls(folder: Path) -> Iterator[Any]:
    from notes_cli.clients.codex.logs import session_calls

    return session_calls(folder)


def _view(where: Where) -> CodexView:
    """How Codex is run: in `--project-dir`, with `-p NAME` and `-c key=value`."""
    from notes_cli.clients.codex.view import CodexView

    overrides = where.flags.get("overrides") or ()
    return CodexView(where.project_dir, where.flags.get("profile"), tuple(overrides))


CLIENT = Codex()
