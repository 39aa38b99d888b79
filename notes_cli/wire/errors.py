"""`WireError`: a request or answer that breaks its protocol, as an HTTP error.

Decoders raise it with a neutral `kind` and the `param` at fault; each protocol module's
`encode_error` renders it as that protocol's error object (OpenAI `{"error": {...}}`,
Anthropic `{"type": "error", "error": {...}}`), so one failure looks native on every route.
Servers (the engine, the bridge) raise it for their own refusals too.
"""

from __future__ import annotations

from typing import Literal

ErrorKind = Literal[
    "invalid_request",
    "context_length",
    "authentication",
    "permission",
    "not_found",
    "model_not_found",
    "method_not_allowed",
    "request_too_large",
    "rate_limit",
    "server_error",
    "bad_gateway",
    "overloaded",
]

# The status a kind has when nobody says otherwise (decode_error reads it back).
KIND_STATUS: dict[str, int] = {
    "invalid_request": 400,
    "context_length": 400,
    "authentication": 401,
    "permission": 403,
    "not_found": 404,
    "model_not_found": 404,
    "method_not_allowed": 405,
    "request_too_large": 413,
    "rate_limit": 429,
    "server_error": 500,
    "bad_gateway": 502,
    "overloaded": 503,
}


class WireError(Exception):
    """An HTTP error response: status, neutral kind, message, the `param` at fault (as the
    protocol spells its path: chat `messages[0].role`, Anthropic `messages.0.role`), a
    protocol `code` when one is known, and extra response headers (Retry-After)."""

    def __init__(
        self,
        status: int,
        kind: ErrorKind,
        message: str,
        *,
        param: str | None = None,
        code: str | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.kind = kind
        self.message = message
        self.param = param
        self.code = code
        self.headers = headers or {}

    def __repr__(self) -> str:
        return f"WireError({self.status}, {self.kind!r}, {self.message!r}, param={self.param!r})"


def invalid(message: str, *, param: str | None = None) -> WireError:
    """400 for a body that is not what the protocol accepts."""
    return WireError(400, "invalid_request", message, param=param)


def kind_for_status(status: int) -> ErrorKind:
    """The neutral kind of an upstream's HTTP status (for decode_error)."""
    table: dict[int, ErrorKind] = {
        400: "invalid_request",
        401: "authentication",
        403: "permission",
        404: "not_found",
        405: "method_not_allowed",
        413: "request_too_large",
        429: "rate_limit",
        502: "bad_gateway",
        503: "overloaded",
        529: "overloaded",
    }
    if status in table:
        return table[status]
    return "invalid_request" if 400 <= status < 500 else "server_error"
