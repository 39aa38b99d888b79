"""Codex's effective setup: its layers merged (`layers`), the provider `model_provider` names
(a `[model_providers.<id>]` table or a built-in one) and the Responses URL it joins
(`base_url + "/responses"`), each value with the layer that set it."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from notes_cli.clients.codex.home import codex_config_path
from notes_cli.clients.codex.view import CodexView
from notes_cli.clients.endpoint import Endpoint
from notes_cli.clients.resolve import OPENAI_DEFAULT_BASE_URL, ClientSetup, Value, opt_str, str_map
from notes_cli.secrets import mask, mask_url

if TYPE_CHECKING:
    from notes_cli.clients.codex.layers import MergedCodex

BUILTIN_PROVIDERS = {
    "openai": OPENAI_DEFAULT_BASE_URL,
    "ollama": "http://localhost:11434/v1",
    "lmstudio": "http://localhost:1234/v1",
}


def codex_setup(
    codex_home: Path | None, env: Mapping[str, str], *, view: CodexView | None = None
) -> ClientSetup:
    """Codex's effective setup from all its layers (`notes_cli.clients.codex.layers`); each value's
    source is the file (or `-c`) that won."""
    from notes_cli.clients.codex.layers import codex_layers

    view = view or CodexView()
    merged = codex_layers(codex_home, cwd=view.cwd, profile=view.profile, overrides=view.overrides)
    return codex_setup_of(merged, env, codex_config_path(codex_home))


def codex_setup_of(merged: MergedCodex, env: Mapping[str, str], path: Path) -> ClientSetup:
    """Codex's effective setup from layers already read (`path`: its config.toml)."""
    # Codex runs on a selected profile file alone (`codex --profile NAME`, no config.toml).
    if not any(layer.kind in ("user", "profile") for layer in merged.layers):
        return ClientSetup("codex", (), (), None, problem=f"{path} does not exist")
    doc = merged.doc
    used = tuple(layer.path for layer in merged.layers if layer.path is not None)

    def source(*dotted: str) -> str:
        layer = merged.layer_of(*dotted)
        return layer.where if layer else "default"

    provider_id = str(doc.get("model_provider") or "openai")
    model = doc.get("model")
    values = [Value("model_provider", provider_id, source("model_provider"))]
    if isinstance(model, str):
        values.append(Value("model", model, source("model")))
    providers = doc.get("model_providers")
    table = providers.get(provider_id) if isinstance(providers, dict) else None
    if isinstance(table, dict):
        endpoint = _custom(
            provider_id, dict(table), model, source("model_providers", provider_id), env, values
        )
    elif provider_id in BUILTIN_PROVIDERS:
        base = BUILTIN_PROVIDERS[provider_id]
        if provider_id == "openai" and isinstance(doc.get("openai_base_url"), str):
            base = str(doc["openai_base_url"])
        values.append(Value("base_url", mask_url(base), f"built-in provider {provider_id}"))
        endpoint = Endpoint("codex", base, "responses", opt_str(model), source=source("model"))
    else:
        return ClientSetup(
            "codex",
            used,
            tuple(values),
            None,
            problem=f"model_provider {provider_id!r} names no [model_providers.{provider_id}]",
        )
    return ClientSetup("codex", used, tuple(values), endpoint)


def _custom(
    provider_id: str,
    table: dict[str, Any],
    model: object,
    source: str,
    env: Mapping[str, str],
    values: list[Value],
) -> Endpoint:
    where = f"{source} [model_providers.{provider_id}]"
    base = table.get("base_url")
    base_url = base if isinstance(base, str) else OPENAI_DEFAULT_BASE_URL
    shown_url = mask_url(base_url)
    values.append(Value("base_url", shown_url, where if isinstance(base, str) else "default"))
    env_key = table.get("env_key") if isinstance(table.get("env_key"), str) else None
    key: str | None = None
    if env_key:
        key = env.get(env_key) or None
        values.append(Value("key", mask(key), f"${env_key}"))
    elif isinstance(table.get("experimental_bearer_token"), str):
        key = table["experimental_bearer_token"]
        values.append(Value("key", mask(key), f"{where} experimental_bearer_token"))
    query = table.get("query_params")
    query_params = {str(k): str(v) for k, v in query.items()} if isinstance(query, dict) else {}
    headers = str_map(table.get("http_headers"))
    for header, var in str_map(table.get("env_http_headers")).items():
        if env.get(var):
            headers[header] = env[var]
    return Endpoint(
        client="codex",
        base_url=base_url,
        protocol="responses",
        model=opt_str(model),
        auth_style="bearer" if env_key or key else "none",
        key_env=env_key,
        key=key,
        source=where,
        query_params=query_params,
        headers=headers,
    )
