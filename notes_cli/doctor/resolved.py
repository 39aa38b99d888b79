"""Each client read once for doctor: its layers (what the static checks look at), the files the
summary lists and the endpoint the summary shows and the live probe calls, all from one reading
of the files (`notes_cli.clients.resolve` builds the endpoint from the same layers)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Generic, TypeVar

from notes_cli import fileio, paths
from notes_cli.errors import InputError

if TYPE_CHECKING:
    from notes_cli.clients.codex.layers import MergedCodex
    from notes_cli.clients.codex.view import CodexView
    from notes_cli.clients.endpoint import Endpoint
    from notes_cli.doctor.claude_checks import ClaudeFile
    from notes_cli.doctor.findings import Finding
    from notes_cli.doctor.stream_limits import StreamLimits

L = TypeVar("L")


@dataclass(frozen=True)
class Resolved(Generic[L]):
    """One client's setup as doctor sees it. `configured`: whether it gets a summary (and, when
    missing, a `config-missing` finding says so); `endpoint`: None when the client is not set up
    or a file does not parse (that file already has its finding)."""

    client: str
    layers: L
    files: tuple[str, ...]
    endpoint: Endpoint | None
    configured: bool
    limits: StreamLimits | None = None
    """The client's idle timeout and retries, for the live turn (`doctor.stream_limits`)."""
    window: ConfiguredWindow | None = None
    """The context window the client is told the model has, checked against the gateway's
    /models by the live probe (`context-window-too-large`)."""


@dataclass(frozen=True)
class ConfiguredWindow:
    tokens: int
    setting: str  # e.g. "CLAUDE_CODE_MAX_CONTEXT_TOKENS (env of ~/.claude/settings.json)"
    tool: str  # the `pdnotes config <tool>` that writes it


def resolve_codex(
    codex_home: Path | None, env: Mapping[str, str], view: CodexView
) -> tuple[Resolved[MergedCodex | None], Finding | None]:
    """Codex's merged layers and endpoint; the finding when config.toml cannot be read."""
    from notes_cli.clients.codex.layers import codex_layers
    from notes_cli.clients.codex.setup import codex_setup_of
    from notes_cli.doctor.registry import make
    from notes_cli.errors import ConfigParseError

    path = paths.codex_config_path(codex_home)
    try:
        merged = codex_layers(
            codex_home, cwd=view.cwd, profile=view.profile, overrides=view.overrides
        )
    except ConfigParseError as exc:
        message = f"{exc.message}; Codex will not start"
        file = exc.path or str(path)
        problem = make("toml-syntax", "codex", message, file=file, line=exc.line, column=exc.column)
        return Resolved("codex", None, (file,), None, True), problem
    except InputError as exc:
        file = str(getattr(exc, "path", None) or path)
        detail = exc.fix or fileio.aside_fix(Path(file), "fix or remove the file")
        problem = make("file-unreadable", "codex", exc.message, file=file, detail=detail)
        return Resolved("codex", None, (str(path),), None, True), problem
    if not any(layer.kind in ("user", "profile") for layer in merged.layers):
        # No config.toml and no selected profile file (`-p NAME`, which Codex runs on alone):
        # config-missing says so (project or -c layers alone do not make a Codex setup pdnotes
        # can check).
        return Resolved("codex", None, (), None, False), None
    from notes_cli.clients.codex.limits import stream_limits

    setup = codex_setup_of(merged, env, path)
    files = tuple(str(p) for p in setup.files)
    provider_id = str(merged.doc.get("model_provider") or "openai")
    providers = merged.doc.get("model_providers")
    provider = providers.get(provider_id) if isinstance(providers, dict) else None
    limits = stream_limits(provider_id, provider if isinstance(provider, dict) else {})
    return Resolved("codex", merged, files, setup.endpoint, True, limits), None


def resolve_claude(
    claude_home: Path | None,
    project_dir: Path | None,
    env: Mapping[str, str],
    settings_file: Path | None,
) -> Resolved[tuple[ClaudeFile, ...]]:
    """Claude Code's settings files and endpoint. Claude Code ignores a file that does not
    parse; pdnotes shows no endpoint then (the file's finding comes first)."""
    from notes_cli.clients.resolve import claude_setup_of, merge_claude_layers
    from notes_cli.doctor.claude_checks import read_claude_files
    from notes_cli.doctor.stream_limits import claude_limits

    read = read_claude_files(claude_home, project_dir, settings_file)
    endpoint = None
    loaded = [(f.path, f.data) for f in read if f.data is not None]
    if not any(f.problem for f in read):
        endpoint = claude_setup_of(loaded, env).endpoint
    configured = bool(read) or any(k.startswith("ANTHROPIC_") for k in env)
    merged = merge_claude_layers(loaded, env).env
    merged_env = {name: value for name, (value, _) in merged.items()}
    files = tuple(str(f.path) for f in read)
    limits = claude_limits(merged_env)
    return Resolved("claude", read, files, endpoint, configured, limits, _claude_window(merged))


def _claude_window(merged: Mapping[str, tuple[str, str]]) -> ConfiguredWindow | None:
    """CLAUDE_CODE_MAX_CONTEXT_TOKENS, when a whole number (claude-env-invalid says otherwise)."""
    from notes_cli.clients.claude_settings import WINDOW_VARIABLE

    value, source = merged.get(WINDOW_VARIABLE, ("", ""))
    text = value.strip()
    if not text.isdigit() or int(text) < 1:
        return None
    where = "the environment" if source == "environment" else f"the env block of {source}"
    return ConfiguredWindow(int(text), f"{WINDOW_VARIABLE} in {where}", "claude")
