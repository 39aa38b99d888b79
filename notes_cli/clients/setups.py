"""What every client will call, and where each value came from: `resolve_endpoints` is the
public entry (smoke, live doctor and notes use it); `resolve_setups` adds the provenance
`pdnotes config show` prints. The clients in a folder of their own answer for themselves
(`Client.setup`); the others are read by `clients.resolve`."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from notes_cli.clients.codex.setup import codex_setup
from notes_cli.clients.codex.view import CodexView
from notes_cli.clients.endpoint import Endpoint
from notes_cli.clients.plugin import Where
from notes_cli.clients.resolve import ClientSetup, claude_setup


def resolve_endpoints(
    client: str = "all",
    *,
    codex_home: Path | None = None,
    claude_home: Path | None = None,
    project_dir: Path | None = None,
) -> list[Endpoint]:
    """The endpoint(s) each configured client will call. A client with no config (no Codex
    config.toml; no Claude settings file and no ANTHROPIC_* variable) is left out. Raises
    `ConfigParseError` when a file does not parse."""
    setups = resolve_setups(
        client,
        codex_home=codex_home,
        claude_home=claude_home,
        project_dir=project_dir,
    )
    return [s.endpoint for s in setups if s.endpoint is not None]


def resolve_setups(
    client: str = "all",
    *,
    codex_home: Path | None = None,
    claude_home: Path | None = None,
    project_dir: Path | None = None,
    environ: Mapping[str, str] | None = None,
    codex_view: CodexView | None = None,
    claude_settings: Path | None = None,
    homes: Mapping[str, Path | None] | None = None,
) -> list[ClientSetup]:
    """Each client's setup (`client`: one name, or "all"); `homes`: the folder options of the
    clients in folders of their own (`clients.registry`), by client name."""
    from notes_cli.clients import registry

    env = os.environ if environ is None else environ
    result: list[ClientSetup] = []
    if client in ("all", "codex"):
        result.append(codex_setup(codex_home, env, view=codex_view or CodexView(project_dir)))
    if client in ("all", "claude"):
        result.append(claude_setup(claude_home, project_dir, env, claude_settings))
    where = Where(homes or {}, project_dir)
    for plugin in registry.CLIENTS:
        if client in ("all", plugin.name):
            setup = plugin.setup(where, env, named=client == plugin.name)
            if setup is not None:
                result.append(setup)
    return result
