"""Typed gateway errors. httpx exceptions become one of these in `gateway._http`, and nowhere else.

    GatewayError (notes_cli.errors)          exit 1
    ├── Unreachable          DNS failure, connection refused, proxy refused
    ├── TLSError             TLS handshake or certificate failure
    ├── GatewayTimeout
    │   ├── ConnectTimeout   no TCP/TLS connection within the connect timeout
    │   ├── HeadersTimeout   connected, but no response headers in time
    │   ├── IdleStreamTimeout  headers arrived, then the stream went silent
    │   └── TotalTimeout     the stream kept trickling past the overall limit
    ├── HttpStatusError      a 3xx/4xx/5xx answer, with the server's parsed error
    ├── TruncatedStream      the stream ended before its completion event
    ├── UpstreamError        the stream itself reported a failure (`response.failed`, `error`)
    ├── UnsendableHeader     a key or header with a character HTTP cannot carry (nothing sent)
    └── ProtocolError        the answer is not what the protocol says (bad JSON, not SSE, bad URL)
        ├── ResponseTooLarge the answer (decoded) went over a byte bound (`gateway._limits`)
        └── HeadersTooLarge  the response headers went over their byte bound

Every message names the URL (secrets in it masked) and every error carries a `fix`. Text that
came from the gateway (an error body, a stream's error event, a garbled status line) goes through
`scrubbed` before anyone can show it: a gateway may echo the key it was sent.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, TypeVar

from notes_cli.errors import GatewayError
from notes_cli.gateway._limits import MAX_SHOWN_CHARS
from notes_cli.secrets import scrub

if TYPE_CHECKING:
    from notes_cli.gateway.results import StreamResult

__all__ = [
    "ConnectTimeout",
    "GatewayError",
    "GatewayTimeout",
    "HeadersTimeout",
    "HeadersTooLarge",
    "HttpStatusError",
    "IdleStreamTimeout",
    "ProtocolError",
    "ResponseTooLarge",
    "TLSError",
    "TotalTimeout",
    "TruncatedStream",
    "Unreachable",
    "UnsendableHeader",
    "UpstreamError",
    "scrubbed",
]

_E = TypeVar("_E", bound=GatewayError)
_TEXT_FIELDS = ("message", "fix", "url", "error_message", "error_type", "error_code", "location")


def scrubbed(error: _E, sent: Iterable[str]) -> _E:
    """`error` with the secrets the request `sent` (its key, credential headers and query
    values) and anything key-shaped removed from every text field, in place; then each field
    cut to MAX_SHOWN_CHARS (scrubbed first, so a cut never leaves part of a key unmasked)."""
    secrets = tuple(sent)
    for name in _TEXT_FIELDS:
        value = getattr(error, name, None)
        if isinstance(value, str):
            setattr(error, name, shortened(scrub(value, secrets)))
    error.args = tuple(
        shortened(scrub(a, secrets)) if isinstance(a, str) else a for a in error.args
    )
    return error


def shortened(text: str) -> str:
    """`text` as shown: its first MAX_SHOWN_CHARS characters, then how many were left out. A
    gateway's error message can be its whole 64 KiB error body (a 400 quoting the prompt)."""
    if len(text) <= MAX_SHOWN_CHARS:
        return text
    return f"{text[:MAX_SHOWN_CHARS]}… ({len(text) - MAX_SHOWN_CHARS:,} more characters)"


class _UrlError(GatewayError):
    """A gateway error about one URL. `kind` is the stable name used in JSON output."""

    kind = "gateway-error"

    def __init__(self, message: str, *, url: str, fix: str | None = None) -> None:
        super().__init__(message, fix=fix)
        self.url = url

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "message": self.message, "fix": self.fix, "url": self.url}


class Unreachable(_UrlError):
    kind = "unreachable"


class TLSError(_UrlError):
    kind = "tls"


class GatewayTimeout(_UrlError):
    kind = "timeout"

    def __init__(self, message: str, *, url: str, seconds: float, fix: str | None = None) -> None:
        super().__init__(message, url=url, fix=fix)
        self.seconds = seconds


class ConnectTimeout(GatewayTimeout):
    kind = "connect-timeout"


class HeadersTimeout(GatewayTimeout):
    kind = "headers-timeout"


class Busy(GatewayTimeout):
    """Every connection this client may open to the URL was in use for `seconds`: the request
    was never sent (a stalled upstream, or the clients of a relay that do not read, hold them)."""

    kind = "busy"


class AnswerTimeout(GatewayTimeout):
    """A whole (non-streamed) answer did not arrive within its overall deadline: each read
    came within the read timeout, but the body trickled (a byte every few minutes would
    otherwise hold the request forever)."""

    kind = "answer-timeout"


class IdleStreamTimeout(GatewayTimeout):
    kind = "idle-stream-timeout"

    def __init__(
        self,
        message: str,
        *,
        url: str,
        seconds: float,
        partial: StreamResult | None = None,
        fix: str | None = None,
    ) -> None:
        super().__init__(message, url=url, seconds=seconds, fix=fix)
        self.partial = partial


class TotalTimeout(IdleStreamTimeout):
    kind = "total-timeout"


class HttpStatusError(_UrlError):
    """The server answered with an error status. `error_message` / `error_type` / `error_code`
    come from an OpenAI or Anthropic error body, or the <title> of an HTML page (proxies)."""

    kind = "http-status"

    def __init__(
        self,
        message: str,
        *,
        url: str,
        status: int,
        error_message: str | None = None,
        error_type: str | None = None,
        error_code: str | None = None,
        retry_after: float | None = None,
        location: str | None = None,
        fix: str | None = None,
    ) -> None:
        super().__init__(message, url=url, fix=fix)
        self.status = status
        self.error_message = error_message
        self.error_type = error_type
        self.error_code = error_code
        self.retry_after = retry_after
        self.location = location

    @property
    def is_model_error(self) -> bool:
        """The gateway says the model id is unknown (OpenAI `model_not_found`, Anthropic's
        `model: <id>` not_found_error, or a message about the model on a 404 / 400)."""
        code = (self.error_code or "").lower()
        if code in ("model_not_found", "invalid_model"):
            return True
        from notes_cli.gateway.model_errors import model_unknown_gateway

        if model_unknown_gateway(self.status, self.error_message):
            return True  # another gateway's words (templates/gateway_errors.toml)
        text = (self.error_message or "").lower()
        if self.status not in (400, 404):
            return False
        # Anthropic: {"type": "not_found_error", "message": "model: claude-x"}
        return text.startswith("model:") or ("model" in text and "not" in text)

    def to_json(self) -> dict[str, Any]:
        data = super().to_json()
        data.update(
            status=self.status,
            error_message=self.error_message,
            error_type=self.error_type,
            error_code=self.error_code,
            retry_after=self.retry_after,
        )
        return data


class TruncatedStream(_UrlError):
    """The stream ended (EOF or a broken connection) before its completion event."""

    kind = "truncated-stream"

    def __init__(
        self, message: str, *, url: str, partial: StreamResult, fix: str | None = None
    ) -> None:
        super().__init__(message, url=url, fix=fix)
        self.partial = partial


class UpstreamError(_UrlError):
    kind = "upstream-error"


class ProtocolError(_UrlError):
    kind = "protocol-error"


class NotTheAnswer(ProtocolError):
    """A 2xx whose content is not the API's answer: an HTML page (a proxy's login, a web
    server's index), binary bytes, an event stream where JSON was asked. Found before any of
    it was passed on (`gateway.relay`)."""

    kind = "not-the-answer"


class UnsendableHeader(_UrlError):
    kind = "unsendable-header"


class ResponseTooLarge(ProtocolError):
    """An endless body, a huge event line or a decompression bomb: reading stopped at `limit`
    decoded bytes."""

    kind = "response-too-large"

    def __init__(self, message: str, *, url: str, limit: int, fix: str | None = None) -> None:
        super().__init__(message, url=url, fix=fix)
        self.limit = limit


class HeadersTooLarge(ProtocolError):
    kind = "headers-too-large"
