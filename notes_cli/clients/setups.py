"""What every client will call, and where each value came from: `resolve_endpoints` is the
public entry (smoke, live doctor and notes use it); `resolve_setups` adds the provenance
`pdnotes config show` prints. Each client answers for itself (`Client.setup`)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from notes_cli.clients.endpoint import Endpoint
from notes_cli.clients.plugin import Where
from notes_cli.clients.resolve import ClientSetup


def resolve_endpoints(
    client: str = "all",
    *,
    project_dir: Path | None = None,
    homes: Mapping[str, Path | None] | None = None,
) -> list[Endpoint]:
    """The endpoint(s) each configured client will call. A client with no config (no Codex
    config.toml; no Claude settings file and no ANTHROPIC_* variable) is left out. Raises
    `ConfigParseError` when a file does not parse."""
    setups = resolve_setups(client, project_dir=project_dir, homes=homes)
    return [s.endpoint for s in setups if s.endpoint is not None]


def resolve_setups(
    client: str = "all",
    *,
    project_dir: Path | None = None,
    environ: Mapping[str, str] | None = None,
    homes: Mapping[str, Path | None] | None = None,
    flags: Mapping[str, Any] | None = None,
) -> list[ClientSetup]:
    """Each client's setup (`client`: one name, or "all"), in the order users see them;
    `homes`: the clients' folder options, by client name; `flags`: how they are run
    (`Where.flags`)."""
    from notes_cli.clients import registry

    env = os.environ if environ is None else environ
    result: list[ClientSetup] = []
    where = Where(homes or {}, project_dir, flags or {})
    for plugin in registry.CLIENTS:
        if client not in ("all", plugin.name):
            continue
        setup = plugin.setup(where, env, named=client == plugin.name)
        if setup is not None:
            result.append(setup)
    return result
