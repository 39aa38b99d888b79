"""A model's limits as a gateway's `GET /models` states them, for `config codex --context-window
gateway` (read over HTTP by `gateway.model_limits`). Each server names the context window its
own way:

    OpenRouter   context_length, top_provider.context_length, supported_parameters ["reasoning"]
    vLLM         max_model_len
    llama.cpp    meta.n_ctx: the window it serves, each slot's share of `-c` (llama-server
                 `-c 4096 --parallel 2` says 2048); meta.n_ctx_train (the trained window, often
                 8x larger) only from a server too old to say n_ctx
    others       context_window, max_context_length, max_input_tokens
A request larger than the served window fails, whatever the model was trained on: the served
window is the one a client must plan for.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

_WINDOW_PATHS = (
    ("context_length",),
    ("max_model_len",),
    ("context_window",),
    ("max_context_length",),
    ("max_input_tokens",),
    ("top_provider", "context_length"),
    ("meta", "n_ctx"),  # llama.cpp: served, per slot
    ("meta", "n_ctx_train"),  # llama.cpp before it said n_ctx: trained
)
_OUTPUT_PATHS = (("top_provider", "max_completion_tokens"), ("max_output_tokens",))


@dataclass(frozen=True)
class ModelLimits:
    context_window: int | None
    max_output_tokens: int | None
    reasoning: bool | None  # None: the gateway does not say
    field: str  # where the window was read, e.g. "max_model_len"


LimitsFetcher = Callable[[str, "str | None", str], ModelLimits]
"""(base_url, key_env, model) -> the model's limits; `gateway.model_limits.fetch_limits` reads
them over HTTP (clients/ does no HTTP, so the CLI hands it in)."""


def limits_of(entry: Mapping[str, Any]) -> ModelLimits:
    window, where = _first(entry, _WINDOW_PATHS)
    output, _ = _first(entry, _OUTPUT_PATHS)
    params = entry.get("supported_parameters")
    reasoning = "reasoning" in params if isinstance(params, list) else None
    return ModelLimits(window, output, reasoning, where)


def _first(entry: Mapping[str, Any], paths: tuple[tuple[str, ...], ...]) -> tuple[int | None, str]:
    for path in paths:
        value: Any = entry
        for part in path:
            value = value.get(part) if isinstance(value, Mapping) else None
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value, ".".join(path)
    return None, ""
