"""A model's limits as a gateway's `GET /models` states them, for `config codex --context-window
gateway`. Each server names the context window its own way:

    OpenRouter   context_length, top_provider.context_length, supported_parameters ["reasoning"]
    vLLM         max_model_len
    llama.cpp    meta.n_ctx_train (the trained window; the served one may be smaller)
    others       context_window, max_context_length, max_input_tokens
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from notes_cli.errors import InputError

_WINDOW_PATHS = (
    ("context_length",),
    ("max_model_len",),
    ("context_window",),
    ("max_context_length",),
    ("max_input_tokens",),
    ("top_provider", "context_length"),
    ("meta", "n_ctx_train"),
)
_OUTPUT_PATHS = (("top_provider", "max_completion_tokens"), ("max_output_tokens",))


@dataclass(frozen=True)
class ModelLimits:
    context_window: int | None
    max_output_tokens: int | None
    reasoning: bool | None  # None: the gateway does not say
    field: str  # where the window was read, e.g. "max_model_len"


def limits_of(entry: Mapping[str, Any]) -> ModelLimits:
    window, where = _first(entry, _WINDOW_PATHS)
    output, _ = _first(entry, _OUTPUT_PATHS)
    params = entry.get("supported_parameters")
    reasoning = "reasoning" in params if isinstance(params, list) else None
    return ModelLimits(window, output, reasoning, where)


def fetch_limits(
    base_url: str, key_env: str | None, model: str, timeout: float = 10.0
) -> ModelLimits:
    """The model's limits from `GET {base_url}/models`; InputError (exit 2) when the gateway
    cannot be asked, does not list the model, or states no window for it."""
    from notes_cli.clients.endpoint import Endpoint
    from notes_cli.gateway.client import GatewayClient
    from notes_cli.gateway.errors import GatewayError

    key = os.environ.get(key_env) if key_env else None
    endpoint = Endpoint("codex", base_url, "responses", model=model, key_env=key_env, key=key)
    manual = "pass the window yourself: --context-window <tokens>"
    try:
        with GatewayClient(endpoint, timeout=timeout) as client:
            listed = client.list_models()
    except GatewayError as exc:
        raise InputError(f"cannot read the model list: {exc.message}", fix=manual) from exc
    entry = next((e for e in listed.entries if e.get("id") == model), None)
    if entry is None:
        raise InputError(f"{endpoint.models_url()} does not list {model!r}", fix=manual)
    limits = limits_of(entry)
    if limits.context_window is None:
        raise InputError(
            f"{endpoint.models_url()} lists {model!r} without a context window "
            "(no context_length, max_model_len or similar field)",
            fix=manual,
        )
    return limits


def _first(entry: Mapping[str, Any], paths: tuple[tuple[str, ...], ...]) -> tuple[int | None, str]:
    for path in paths:
        value: Any = entry
        for part in path:
            value = value.get(part) if isinstance(value, Mapping) else None
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value, ".".join(path)
    return None, ""
