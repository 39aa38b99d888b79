"""The engine app's HTTP errors, protocol-neutral.

Parsers, auth, limits, admission and faults raise `ApiError` (the wire layer's `WireError`)
with a neutral `kind`; the route's wire module renders it as its own error object (OpenAI
`{"error": {...}}`, Anthropic `{"type": "error", "error": {...}}`), so one failure looks native
on every route. Messages
follow what the real services say, because clients match on them (Claude Code on
`invalid x-api-key`, Codex on the code `model_not_found` / `context_length_exceeded`).
"""

from __future__ import annotations

import math

from notes_cli.secrets import mask
from notes_cli.wire.errors import ErrorKind, WireError, invalid

__all__ = ["ApiError", "ErrorKind", "invalid"]

# One error type for the whole HTTP path: the wire layer's decoders raise it for bad bodies,
# the engine for its own refusals, and the route's wire module renders it.
ApiError = WireError


def too_large(limit: int) -> ApiError:
    return ApiError(413, "request_too_large", f"Request body exceeds the {limit}-byte limit.")


def bad_key(presented: str | None, *, anthropic: bool) -> ApiError:
    """401; the key is only ever shown masked."""
    if anthropic:
        return ApiError(401, "authentication", "invalid x-api-key")
    if not presented:
        message = "You didn't provide an API key. Send it as 'Authorization: Bearer <key>'."
    else:
        message = f"Incorrect API key provided: {mask(presented)}."
    return ApiError(401, "authentication", message)


def bad_google_key(presented: str | None) -> ApiError:
    """Google's answers, which Gemini CLI shows: a wrong key is a 400 whose reason is
    API_KEY_INVALID; no key at all a 403."""
    if not presented:
        return ApiError(
            403,
            "permission",
            "Method doesn't allow unregistered callers (callers without established identity). "
            "Please use API Key or other form of API consumer identity to call this API.",
        )
    return ApiError(
        400,
        "authentication",
        "API key not valid. Please pass a valid API key.",
        code="API_KEY_INVALID",
    )


def model_not_found(model: str, served: tuple[str, ...], *, note: str = "") -> ApiError:
    served_note = f" Served models: {', '.join(served)}." if served else ""
    return ApiError(
        404,
        "model_not_found",
        f"The model `{model}` does not exist or you do not have access to it{note}." + served_note,
        param="model",
    )


def context_too_long(limit: int, prompt_tokens: int) -> ApiError:
    return ApiError(
        400,
        "context_length",
        f"This model's maximum context length is {limit} tokens. However, your messages "
        f"resulted in {prompt_tokens} tokens. Please reduce the length of the messages.",
        param="messages",
    )


def queue_full(retry_after_s: float) -> ApiError:
    return ApiError(
        429,
        "rate_limit",
        f"The engine queue is full; retry after {retry_after_s:.1f}s.",
        headers={"retry-after": str(max(1, math.ceil(retry_after_s)))},
    )


def injected(status: int, model: str) -> ApiError:
    """The error an HTTP fault (`--fault 500@first:2` …) answers with."""
    if status == 401:
        return ApiError(401, "authentication", "invalid x-api-key (injected fault)")
    if status == 404:
        return model_not_found(model, (), note=" (injected fault)")
    if status == 429:
        message = "Rate limit reached (injected fault)."
        return ApiError(429, "rate_limit", message, headers={"retry-after": "1"})
    if status == 503:
        return ApiError(503, "overloaded", "The engine is overloaded (injected fault).")
    return ApiError(500, "server_error", "The engine had an internal error (injected fault).")
