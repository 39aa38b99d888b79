"""Each client read once for doctor: its layers (what the static checks look at), the files the
summary lists and the endpoint the summary shows and the live probe calls, all from one reading
of the files (`notes_cli.clients.resolve` builds the endpoint from the same layers)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Generic, TypeVar

if TYPE_CHECKING:
    from notes_cli.clients.claude.checks import ClaudeFile
    from notes_cli.clients.endpoint import Endpoint
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
    version: tuple[int, int, int] | None = None
    """The client's release doctor judged it by, when it said one (picks the probe's recorded
    request shape; None: the installed one's)."""


@dataclass(frozen=True)
class ConfiguredWindow:
    tokens: int
    setting: str  # e.g. "CLAUDE_CODE_MAX_CONTEXT_TOKENS (env of ~/.claude/settings.json)"
    tool: str  # the `pdnotes config <tool>` that writes it


def resolve_claude(
    claude_home: Path | None,
    project_dir: Path | None,
    env: Mapping[str, str],
    settings_file: Path | None,
) -> Resolved[tuple[ClaudeFile, ...]]:
    """Claude Code's settings files and endpoint. Claude Code ignores a file that does not
    parse; pdnotes shows no endpoint then (the file's finding comes first)."""
    from notes_cli.clients.claude.checks import read_claude_files
    from notes_cli.clients.claude.setup import claude_setup_of, merge_claude_layers
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
    from notes_cli.clients.claude.config import WINDOW_VARIABLE

    value, source = merged.get(WINDOW_VARIABLE, ("", ""))
    text = value.strip()
    if not text.isdigit() or int(text) < 1:
        return None
    where = "the environment" if source == "environment" else f"the env block of {source}"
    return ConfiguredWindow(int(text), f"{WINDOW_VARIABLE} in {where}", "claude")
