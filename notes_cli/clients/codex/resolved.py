"""Codex read once for doctor: its merged layers (what the static checks look at), the files the
summary lists, the endpoint and its stream limits, from one reading of the files."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from notes_cli import fileio
from notes_cli.clients.codex.home import codex_config_path
from notes_cli.doctor.resolved import ConfiguredWindow, Resolved
from notes_cli.errors import InputError

if TYPE_CHECKING:
    from notes_cli.clients.codex.layers import MergedCodex
    from notes_cli.clients.codex.view import CodexView
    from notes_cli.doctor.findings import Finding


def resolve_codex(
    codex_home: Path | None, env: Mapping[str, str], view: CodexView
) -> tuple[Resolved[MergedCodex | None], Finding | None]:
    """Codex's merged layers and endpoint; the finding when config.toml cannot be read."""
    from notes_cli.clients.codex.layers import codex_layers
    from notes_cli.clients.codex.setup import codex_setup_of
    from notes_cli.doctor.registry import make
    from notes_cli.errors import ConfigParseError

    path = codex_config_path(codex_home)
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
    window = _window(merged)
    return Resolved("codex", merged, files, setup.endpoint, True, limits, window), None


def _window(merged: MergedCodex) -> ConfiguredWindow | None:
    """model_context_window (what `config codex --context-window` writes), for doctor's live
    check against the gateway's /models."""
    tokens = merged.doc.get("model_context_window")
    layer = merged.layer_of("model_context_window")
    if not isinstance(tokens, int) or isinstance(tokens, bool) or tokens < 1 or layer is None:
        return None
    return ConfiguredWindow(tokens, f"model_context_window in {layer.where}", "codex")
