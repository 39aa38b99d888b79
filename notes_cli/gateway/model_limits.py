"""Read a model's limits from a gateway's `GET /models` (`config codex|claude|… --context-window
gateway`); what each server calls them is `clients.model_limits`'."""

from __future__ import annotations

import os

from notes_cli.clients.model_limits import ModelLimits, limits_of
from notes_cli.errors import InputError


def fetch_limits(
    base_url: str,
    key_env: str | None,
    model: str,
    timeout: float = 10.0,
    *,
    anthropic: bool = False,
) -> ModelLimits:
    """The model's limits from `GET {base_url}/models` (`anthropic`: an Anthropic-compatible
    root, `GET {base_url}/v1/models` with Claude Code's headers); InputError (exit 2) when the
    gateway cannot be asked, does not list the model, or states no window for it."""
    from notes_cli.clients.endpoint import Endpoint
    from notes_cli.gateway.client import GatewayClient
    from notes_cli.gateway.errors import GatewayError

    key = os.environ.get(key_env) if key_env else None
    if anthropic:  # Claude Code sends a token as a bearer, a key as x-api-key: send both
        endpoint = Endpoint(
            "anthropic", base_url, "anthropic", model=model, key_env=key_env, key=key,
            auth_style="both" if key else "none",
        )  # fmt: skip
    else:
        endpoint = Endpoint("openai", base_url, "responses", model=model, key_env=key_env, key=key)
    manual = "pass the window yourself: --context-window <tokens>"
    try:
        # the whole answer within `timeout`: a list trickled a byte at a time held it forever
        with GatewayClient(endpoint, timeout=timeout, total_timeout=timeout) as client:
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
            "(no context_length, max_model_len, max_input_tokens or similar field)",
            fix=manual,
        )
    return limits
