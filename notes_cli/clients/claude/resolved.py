"""Claude Code read once for doctor: its settings files (what the static checks look at), the
files the summary lists, the endpoint, its stream limits, the window it is told and whether it
sends its experimental `anthropic-beta` values, from one reading of the files."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from notes_cli.doctor.resolved import ConfiguredWindow, Resolved

if TYPE_CHECKING:
    from notes_cli.clients.claude.checks import ClaudeFile

BETAS_OFF = "CLAUDE_CODE_DISABLE_EXPERIMENTAL_BETAS"
"""Set, Claude Code sends no experimental `anthropic-beta` values (the fix
`request-shape-rejected` names, so doctor's probe leaves the header out too)."""


def resolve_claude(
    claude_home: Path | None,
    project_dir: Path | None,
    env: Mapping[str, str],
    settings_file: Path | None,
) -> Resolved[tuple[ClaudeFile, ...]]:
    """Claude Code's settings files and endpoint. Claude Code ignores a file that does not
    parse; pdnotes shows no endpoint then (the file's finding comes first)."""
    from notes_cli.clients.claude.checks import read_claude_files
    from notes_cli.clients.claude.limits import stream_limits
    from notes_cli.clients.claude.setup import claude_setup_of, merge_claude_layers

    read = read_claude_files(claude_home, project_dir, settings_file)
    endpoint = None
    loaded = [(f.path, f.data) for f in read if f.data is not None]
    if not any(f.problem for f in read):
        endpoint = claude_setup_of(loaded, env).endpoint
    configured = bool(read) or any(k.startswith("ANTHROPIC_") for k in env)
    merged = merge_claude_layers(loaded, env).env
    merged_env = {name: value for name, (value, _) in merged.items()}
    files = tuple(str(f.path) for f in read)
    limits = stream_limits(merged_env)
    betas_off = bool(str(merged.get(BETAS_OFF, ("", ""))[0]).strip())
    return Resolved(
        "claude",
        read,
        files,
        endpoint,
        configured,
        limits,
        _window(merged),
        unsent_headers=frozenset({"anthropic-beta"} if betas_off else ()),
    )


def _window(merged: Mapping[str, tuple[str, str]]) -> ConfiguredWindow | None:
    """CLAUDE_CODE_MAX_CONTEXT_TOKENS, when a whole number (claude-env-invalid says otherwise)."""
    from notes_cli.clients.claude.config import WINDOW_VARIABLE

    value, source = merged.get(WINDOW_VARIABLE, ("", ""))
    text = value.strip()
    if not text.isdigit() or int(text) < 1:
        return None
    where = "the environment" if source == "environment" else f"the env block of {source}"
    return ConfiguredWindow(int(text), f"{WINDOW_VARIABLE} in {where}", "claude")
