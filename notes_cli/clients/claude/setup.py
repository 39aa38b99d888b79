"""Claude Code's effective setup: process env < user < project < local < `--settings` <
managed settings (`env` in settings wins over the shell), each value with the layer that set
it, and the Messages URL it calls (`ANTHROPIC_BASE_URL` + `/v1/messages`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from notes_cli.clients import files
from notes_cli.clients.claude.home import claude_settings_path
from notes_cli.clients.endpoint import AuthStyle, Endpoint
from notes_cli.clients.presets import placeholder_tokens
from notes_cli.clients.resolve import ClientSetup, Value
from notes_cli.secrets import mask, mask_command, mask_url

ANTHROPIC_DEFAULT_BASE_URL = "https://api.anthropic.com"
CLAUDE_SCOPES = ("user", "project", "local")


@dataclass
class ClaudeLayers:
    """Claude Code's merged view: every value remembers the layer it came from."""

    env: dict[str, tuple[str, str]] = field(default_factory=dict)
    top: dict[str, tuple[Any, str]] = field(default_factory=dict)
    files: list[Path] = field(default_factory=list)


def claude_settings_files(
    claude_home: Path | None, project_dir: Path | None, settings_file: Path | None = None
) -> list[tuple[str, Path]]:
    """(scope, path) of the settings files Claude Code reads, lowest precedence first: user,
    project, local, `--settings FILE`, then the managed file(s) (`managed`)."""
    from notes_cli.clients.claude.managed import managed_files

    layers = [
        (
            scope,
            claude_settings_path(scope, claude_home_dir=claude_home, project_dir=project_dir),
        )
        for scope in CLAUDE_SCOPES
    ]
    if settings_file is not None:
        layers.append(("settings", settings_file))
    return layers + [("managed", path) for path in managed_files()]


def load_claude_files(
    claude_home: Path | None, project_dir: Path | None, settings_file: Path | None = None
) -> list[tuple[Path, dict[str, Any]]]:
    """The settings files that exist, parsed, lowest precedence first (`ConfigParseError`
    when one does not parse)."""
    loaded = []
    for _scope, path in claude_settings_files(claude_home, project_dir, settings_file):
        _, data = files.load_json(path)
        if data is not None:
            loaded.append((path, data))
    return loaded


def merge_claude_layers(
    loaded: list[tuple[Path, dict[str, Any]]], env: Mapping[str, str]
) -> ClaudeLayers:
    """Claude Code's merge: process env, then each file's `env` (settings win over the shell);
    top-level keys from the highest file defining them."""
    layers = ClaudeLayers()
    for name, value in env.items():
        layers.env[name] = (value, "environment")
    for path, data in loaded:
        layers.files.append(path)
        settings_env = data.get("env")
        if isinstance(settings_env, dict):
            for name, value in settings_env.items():
                layers.env[name] = (_coerce(value), str(path))
        for key, value in data.items():
            if key != "env":
                layers.top[key] = (value, str(path))
    return layers


def claude_setup(
    claude_home: Path | None,
    project_dir: Path | None,
    env: Mapping[str, str],
    settings_file: Path | None = None,
) -> ClientSetup:
    """Claude Code's effective setup from its settings layers and the environment."""
    return claude_setup_of(load_claude_files(claude_home, project_dir, settings_file), env)


def claude_setup_of(
    loaded: list[tuple[Path, dict[str, Any]]], env: Mapping[str, str]
) -> ClientSetup:
    """Claude Code's effective setup from settings files already read, lowest first."""
    layers = merge_claude_layers(loaded, env)
    configured = layers.files or any(k.startswith("ANTHROPIC_") for k in env)
    if not configured:
        return ClientSetup("claude", (), (), None, problem="no Claude Code settings file")
    values: list[Value] = []
    base_url, base_source = layers.env.get(
        "ANTHROPIC_BASE_URL", (ANTHROPIC_DEFAULT_BASE_URL, "default")
    )
    base_url = base_url or ANTHROPIC_DEFAULT_BASE_URL
    values.append(Value("ANTHROPIC_BASE_URL", mask_url(base_url), base_source))
    model, model_source = claude_model(layers)
    if model:
        values.append(Value("model", model, model_source))
    auth_style, key, key_env, key_values = claude_auth(layers, env)
    values.extend(key_values)
    endpoint = Endpoint(
        client="claude",
        base_url=base_url,
        protocol="anthropic",
        model=model,
        auth_style=auth_style,
        key_env=key_env,
        key=key,
        source=base_source,
        headers=_custom_headers(layers.env.get("ANTHROPIC_CUSTOM_HEADERS", ("", ""))[0]),
    )
    return ClientSetup("claude", tuple(layers.files), tuple(values), endpoint)


def claude_model(layers: ClaudeLayers) -> tuple[str | None, str]:
    value, source = layers.env.get("ANTHROPIC_MODEL", ("", ""))
    if value:
        return value, source
    top, top_source = layers.top.get("model", (None, ""))
    return (top, top_source) if isinstance(top, str) and top else (None, "")


def claude_auth(
    layers: ClaudeLayers, env: Mapping[str, str]
) -> tuple[AuthStyle, str | None, str | None, list[Value]]:
    token, token_src = layers.env.get("ANTHROPIC_AUTH_TOKEN", ("", ""))
    api_key, key_src = layers.env.get("ANTHROPIC_API_KEY", ("", ""))
    helper, helper_src = layers.top.get("apiKeyHelper", (None, ""))
    values: list[Value] = []
    if isinstance(helper, str) and helper:
        var = helper_variable(helper)
        key = env.get(var) if var else None
        values.append(Value("apiKeyHelper", mask_command(helper), helper_src))
        if var:
            values.append(Value("key", mask(key), f"${var} (read by apiKeyHelper)"))
        else:
            values.append(Value("key", "(the helper's output)", helper_src))
        return "both", key or None, var, values
    if token:
        shown = f"{token} (placeholder)" if token in placeholder_tokens() else mask(token)
        values.append(Value("ANTHROPIC_AUTH_TOKEN", shown, token_src))
    if api_key:
        values.append(Value("ANTHROPIC_API_KEY", mask(api_key), key_src))
    if token and api_key:
        return "both", token, "ANTHROPIC_AUTH_TOKEN", values
    if token:
        return "bearer", token, "ANTHROPIC_AUTH_TOKEN", values
    if api_key:
        return "x-api-key", api_key, "ANTHROPIC_API_KEY", values
    return "none", None, None, values


def helper_variable(helper: str) -> str | None:
    """The variable an `apiKeyHelper` like `printenv NAME` or `echo $NAME` reads, if simple."""
    parts = helper.split()
    if len(parts) == 2 and parts[0] == "printenv":
        return parts[1]
    if len(parts) == 2 and parts[0] == "echo" and parts[1].lstrip('"').startswith("$"):
        return parts[1].strip('"').lstrip("$").strip("{}")
    return None


def _custom_headers(raw: str) -> dict[str, str]:
    headers: dict[str, str] = {}
    for line in raw.splitlines():
        name, sep, value = line.partition(":")
        if sep and name.strip():
            headers[name.strip()] = value.strip()
    return headers


def _coerce(value: object) -> str:
    """Claude Code coerces non-string env values (0 → "0", true → "true")."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    import json

    return json.dumps(value) if isinstance(value, (dict, list)) else str(value)
