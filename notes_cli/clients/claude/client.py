"""Claude Code as a `clients.plugin.Client`: what `config claude`, doctor, smoke and the bridge
ask of it. Light at import (the CLI builds `config claude` from it); the work is imported inside
each method."""

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
    from notes_cli.clients.endpoint import Endpoint
    from notes_cli.clients.endpoint import Protocol as Wire
    from notes_cli.clients.plan import WritePlan
    from notes_cli.clients.resolve import ClientSetup
    from notes_cli.doctor.findings import Finding
    from notes_cli.doctor.resolved import Resolved


class ClaudeCode:
    name: str = "claude"
    title: str = "Claude Code"
    protocol: Wire = "anthropic"
    summary: str = (
        "Merge the gateway into a Claude Code settings.json (env block), keeping everything else."
    )
    options: tuple[Option | Shared, ...] = (
        Shared("base_url", "Anthropic-compatible root; Claude Code appends /v1/messages."),
        Shared("model", "Model id for all Claude aliases."),
        Option(
            "token_env",
            "--token-env",
            "Write an apiKeyHelper that reads the key from this variable.",
        ),
        Option(
            "write_token_from_env",
            "--write-token-from-env",
            "Write the token held in this variable into the file (made 0600). Use with care.",
        ),
        Shared(
            "context_window",
            "Write CLAUDE_CODE_MAX_CONTEXT_TOKENS (Claude Code's window for a model it does not "
            "know): tokens, or 'gateway' to read the gateway's GET /v1/models.",
        ),
        Option("scope", "--scope", "user, project or local settings file.", default="user"),
    )
    home: Option = Option(
        "claude_home",
        "--claude-home",
        "Claude Code user folder (default: $CLAUDE_CONFIG_DIR or ~/.claude).",
        kind=Path,
    )
    home_help: str = "Claude Code user folder."
    doctor_options: tuple[Option, ...] = (
        Option(
            "run_helpers",
            "--run-helpers",
            "Also run a project-scope apiKeyHelper (5 s limit; its output is never shown).",
            kind=bool,
            default=False,
        ),
    )
    project_files: str = (
        ".claude/settings.json (--scope project) or .claude/settings.local.json (local)"
    )
    key_option: str = "token_env"
    bridge_url: BridgeUrl = "anthropic"
    listed_unset: bool = True
    output_cap_variant: str | None = "claude"
    smoke_key_env: str | None = "ANTHROPIC_AUTH_TOKEN"
    file_lines: tuple[str, str] | None = None
    env_names: tuple[str, str] | None = ("ANTHROPIC_BASE_URL", "ANTHROPIC_MODEL")
    session_logs: SessionLogs | None = SessionLogs(
        Option(
            "claude_dir",
            "--claude-dir",
            "Claude Code's folder (default $CLAUDE_CONFIG_DIR or ~/.claude), its projects/, "
            "or any folder of its session .jsonl files.",
            kind=Path,
        ),
        lambda: _home(),
        lambda folder: _session_calls(folder),
    )

    # -- config claude

    def target(self, request: ConfigRequest) -> Path:
        from notes_cli.clients.claude.config import settings_path

        where = request.where
        return settings_path(  # checks --scope
            request["scope"] or "user",
            claude_home=where.home(self.name),
            project_dir=where.project_dir,
        )

    def plan(self, request: ConfigRequest) -> WritePlan:
        from notes_cli.clients.claude.config import ClaudeOptions, plan_claude

        options = ClaudeOptions(
            request["preset"],
            request["base_url"],
            request["model"],
            request["token_env"],
            request["write_token_from_env"],
            request["scope"] or "user",
            request.context_window,
            request.fetch_limits,
        )
        where = request.where
        return plan_claude(
            options, claude_home=where.home(self.name), project_dir=where.project_dir
        )

    def needs_bridge(self, preset: str | None) -> bool:
        """A preset whose endpoint serves no Messages API."""
        from notes_cli.clients.presets import chat_only

        return chat_only(preset)

    def via_bridge(self, request: ConfigRequest, target: BridgeTarget) -> ConfigRequest:
        """Through the bridge's Anthropic root, with the bridge's own key variable (the token
        helper reads it) and the upstream's window."""
        from dataclasses import replace

        bridged = request.but(
            preset=target.preset,
            base_url=target.base_url,
            model=target.model,
            token_env=target.key_env,
        )
        return replace(
            bridged, context_window=target.context_window, fetch_limits=target.fetch_limits
        )

    # -- config show, doctor, smoke

    def setup(self, where: Where, env: Mapping[str, str], *, named: bool) -> ClientSetup | None:
        """Always listed: `--client all` says when Claude Code is not set up."""
        from notes_cli.clients.claude.setup import claude_setup

        return claude_setup(
            where.home(self.name), where.project_dir, env, where.flags.get("settings")
        )

    def doctor(self, where: Where, env: Mapping[str, str]) -> tuple[Resolved[Any], list[Finding]]:
        """Every settings layer (`--settings FILE` among them), the credential as Claude Code
        will send it (`--run-helpers` also runs a project-scope apiKeyHelper)."""
        from notes_cli.clients.claude.checks import check_claude
        from notes_cli.clients.claude.resolved import resolve_claude

        home = where.home(self.name)
        resolved = resolve_claude(home, where.project_dir, env, where.flags.get("settings"))
        run_helpers = bool(where.flags.get("run_helpers"))
        return resolved, check_claude(resolved.layers, home, env, run_helpers=run_helpers)

    def missing_file(self, where: Where) -> Path:
        from notes_cli.clients.claude.home import claude_settings_path

        return claude_settings_path("user", claude_home_dir=where.home(self.name))

    def installed_version(self) -> Version | None:
        """`claude --version`, or `$PDNOTES_CLAUDE_BIN`'s."""
        from notes_cli.doctor.version import installed_version

        return installed_version("claude", "PDNOTES_CLAUDE_BIN")

    def shapes_dir(self) -> Path:
        return Path(__file__).parent / "shapes"

    def smoke_endpoint(self, setup: ClientSetup) -> Endpoint:
        """Claude Code stops before sending anything without a credential; so does smoke."""
        from notes_cli.errors import UsageError

        endpoint = setup.endpoint
        if endpoint is None:
            raise UsageError(
                "claude is not configured",
                fix="run `pdnotes config claude --preset NAME`, or pass --base-url URL --model ID",
            )
        if not endpoint.key and endpoint.auth_style == "none":
            raise UsageError(
                "no ANTHROPIC_AUTH_TOKEN, ANTHROPIC_API_KEY or apiKeyHelper: Claude Code would "
                "say 'Not logged in' and send nothing",
                fix="export ANTHROPIC_AUTH_TOKEN=<key>, or: pdnotes config claude --token-env NAME",
            )
        return endpoint

    def smoke_budget(self, setup: ClientSetup) -> int | None:
        return None  # smoke's own default stands in (see cli/smoke.py)


def _home() -> Path:
    from notes_cli.clients.claude.home import claude_home

    return claude_home()


def _session_calls(folder: Path) -> Iterator[Any]:
    from notes_cli.clients.claude.logs import session_calls

    return session_calls(folder)


CLIENT = ClaudeCode()
