"""Calling an upstream on behalf of another program (the bridge): send a request body as it is,
hand the answer's bytes to a sink the moment they are read, and fail with the typed errors of
`gateway.errors`.

    upstream = Upstream("http://gpu-box:23333/v1", key=os.environ["UPSTREAM_KEY"])
    await upstream.stream("/chat/completions", body, sink)   # sink.on_body(bytes) per read
    status, body = await upstream.fetch("GET", "/models")

Unlike `GatewayClient` this parses nothing: the caller owns the protocol. It sends through the
transport seam (`_transport`): streams over the lean HTTP/1.1 transport (`_h1`, parsing inside
`data_received`, no task switch per chunk) unless `_transport.pick` declines it (a proxy applies
to the URL), then over the httpx adapter; whole answers over the httpx adapter. An error status
(3xx/4xx/5xx) never reaches the sink: the `StatusSink` keeps its body (up to 64 KiB) for an
`HttpStatusError` carrying the upstream's message. Neither does a 2xx that is not the API's
answer (an HTML page, binary bytes): a stream's head is held until its content type and first
bytes show an event stream, a whole answer must be JSON, else `NotTheAnswer`, raised before
`on_status` heard of the 2xx (so a fallback may still answer). Cancelling the awaiting task
closes the upstream connection, which is how the upstream learns that the client went away.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import httpx

from notes_cli.gateway import _h1, errors
from notes_cli.gateway._http import safe_url, status_error, translate
from notes_cli.gateway._limits import MAX_RELAYED_BODY_BYTES, TooLarge
from notes_cli.gateway._transport import (
    AsyncHttpxTransport,
    AsyncTransport,
    Reader,
    StalledReader,
    StatusSink,
    Stream,
    pick,
)

RelaySink = Stream  # where a 2xx answer goes, called from the transport's read callback
MAX_CONNECTIONS = 512  # requests in flight to one upstream at once
SLOT_WAIT_S = 30.0
"""The longest a request waits for one of the `max_connections` when all are in use (a stalled
upstream, or clients that do not read, hold them for up to the idle timeout): then it fails
with `errors.Busy`, which the bridge answers with a 503 and Retry-After, or sends to a
fallback upstream."""
ANSWER_TIMEOUT_S = 600.0
"""The longest a whole (non-streamed) answer may take, head to last byte: each read is bounded
by `idle_timeout`, but an upstream sending a byte just inside it would hold the request (and a
connection) forever. Streams have no such deadline: their events keep the client informed."""

__all__ = ["Reader", "RelaySink", "Upstream"]


class Upstream:
    """One upstream API root (`base_url`, e.g. `https://host/v1`) and its key (sent as a Bearer
    token; never shown: errors name the URL only). At most `max_connections` requests are in
    flight at once; the next waits up to `slot_timeout` seconds for one to end (`errors.Busy`)."""

    def __init__(
        self,
        base_url: str,
        key: str | None = None,
        *,
        connect_timeout: float = 10.0,
        headers_timeout: float = 300.0,
        idle_timeout: float = 300.0,
        max_connections: int = MAX_CONNECTIONS,
        slot_timeout: float = SLOT_WAIT_S,
        answer_timeout: float = ANSWER_TIMEOUT_S,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self._key = key
        self.connect_timeout = connect_timeout
        self.headers_timeout = headers_timeout
        self.idle_timeout = idle_timeout
        self.slot_timeout = slot_timeout
        self.answer_timeout = answer_timeout
        verify = httpx.create_ssl_context(trust_env=True)
        self._httpx = AsyncHttpxTransport(transport, verify=verify, max_connections=max_connections)
        self._h1 = None if transport is not None else _h1.Http1Pool(verify, max_connections)

    def url(self, path: str) -> str:
        return self.base_url + path

    def headers(self, *, stream: bool) -> dict[str, str]:
        headers = {"content-type": "application/json"}
        headers["accept"] = "text/event-stream" if stream else "application/json"
        if self._key:
            headers["authorization"] = f"Bearer {self._key}"
        return headers

    async def stream(
        self,
        path: str,
        body: bytes,
        sink: RelaySink,
        *,
        on_status: Callable[[int], None] | None = None,
    ) -> None:
        """POST `body` to `path` and feed the 2xx answer to `sink` as it arrives; return when
        the body ended (or soon after the sink said it had the last event). A sink with an
        `on_reader(reader)` method gets a `Reader` once the request is sent, to pause and
        resume reading the answer. `on_status` is told the status the moment the head is
        read (a failure before it means nothing of the answer reached the sink)."""
        url = self.url(path)
        # (identity: a compressed event stream arrives in lumps; one that comes anyway is decoded)
        headers = {**self.headers(stream=True), "accept-encoding": "identity"}
        check = _EventStreamCheck(sink, on_status)
        answer = StatusSink(check, on_status=check.on_error_status)
        await self._send(pick(self._h1, self._httpx, url), "POST", url, headers, body, answer)
        check.finish(safe_url(url))

    async def fetch(
        self,
        method: str,
        path: str,
        body: bytes | None = None,
        *,
        on_status: Callable[[int], None] | None = None,
    ) -> tuple[int, bytes]:
        """A whole answer (for `GET /models` and non-streamed turns): (status, body). Error
        statuses raise `HttpStatusError`, transport failures the other typed errors; an answer
        not whole within `answer_timeout` seconds raises `AnswerTimeout`."""
        url = self.url(path)
        answer = StatusSink(limit=MAX_RELAYED_BODY_BYTES, on_status=_errors_only(on_status))
        deadline = asyncio.timeout(self.answer_timeout)
        try:
            async with deadline:
                await self._send(self._httpx, method, url, self.headers(stream=False), body, answer)
        except TimeoutError:
            if not deadline.expired():
                raise
            shown = safe_url(url)
            raise errors.AnswerTimeout(
                f"the answer from {shown} was not whole after {self.answer_timeout:g} s",
                url=shown,
                seconds=self.answer_timeout,
                fix="the upstream sends its answer too slowly; check it, or raise the bridge's "
                "--answer-timeout",
            ) from None
        whole = bytes(answer.body)
        if not _looks_like_json(answer.header("content-type"), whole):
            kind = answer.header("content-type")
            raise _not_the_answer(safe_url(url), answer.status, kind, whole, "JSON")
        if on_status is not None:
            on_status(answer.status)
        return answer.status, whole

    async def aclose(self) -> None:
        if self._h1 is not None:
            await self._h1.aclose()
        await self._httpx.aclose()

    async def _send(
        self,
        transport: AsyncTransport,
        method: str,
        url: str,
        headers: dict[str, str],
        body: bytes | None,
        answer: StatusSink,
    ) -> None:
        shown = safe_url(url)
        try:
            await transport.request(
                method,
                url,
                headers,
                body,
                answer,
                connect_timeout=self.connect_timeout,
                headers_timeout=self.headers_timeout,
                idle_timeout=self.idle_timeout,
                slot_timeout=self.slot_timeout,
            )
        except httpx.HTTPError as exc:
            raise self._translate(exc, shown, answer.headers_seen) from exc
        except TooLarge as exc:
            raise errors.ResponseTooLarge(
                f"the answer from {shown} was cut off: {exc} (decoded)",
                url=shown,
                limit=exc.limit,
                fix="no answer the bridge relays whole is that large: the upstream sent an "
                "endless body or a compression bomb; check the upstream",
            ) from None
        if answer.status >= 300:
            raise status_error(answer.response(), answer.error_body(), shown, None)

    def _translate(self, exc: httpx.HTTPError, url: str, seen: bool) -> errors.GatewayError:
        if isinstance(exc, StalledReader):
            return errors.IdleStreamTimeout(
                f"the client stopped reading the stream from {url} for "
                f"{self.idle_timeout:g} s; the upstream request was ended",
                url=url,
                seconds=self.idle_timeout,
                fix="the client stalled; it can ask again",
            )
        if seen and isinstance(exc, httpx.TransportError | httpx.DecodingError):
            if isinstance(exc, httpx.TimeoutException):
                return errors.IdleStreamTimeout(
                    f"the stream from {url} went silent for {self.idle_timeout:g} s",
                    url=url,
                    seconds=self.idle_timeout,
                    fix="the upstream stalled mid-answer; retry, or check the upstream",
                )
            return errors.UpstreamError(
                f"the stream from {url} broke off mid-answer ({exc})",
                url=url,
                fix="the upstream closed the connection early; retry, or check its logs",
            )
        timeout = self.connect_timeout
        if isinstance(exc, httpx.ReadTimeout):
            timeout = self.headers_timeout
        elif isinstance(exc, httpx.PoolTimeout):
            timeout = self.slot_timeout
        return translate(exc, url=url, headers_seen=seen, timeout=timeout)


_EVENT_STREAM = "text/event-stream"
# What an event stream starts with (after a BOM and blank lines): a comment or a field name.
_SSE_STARTS = (b":", b"data", b"event", b"id", b"retry")
_BLANK = b"\xef\xbb\xbf \t\r\n"
_MAX_UNDECIDED = 4096  # blank bytes before the first field: more is not an event stream


class _EventStreamCheck:
    """Between the `StatusSink` and the caller's sink for a streamed 2xx: the head and the
    first bytes are held until they show an event stream (its content type, then a first
    field or comment), and only then passed on. An HTML page, binary bytes or a JSON body is
    refused with nothing passed on; `finish` raises `NotTheAnswer` for it."""

    __slots__ = ("sink", "on_status", "status", "headers", "first", "state")

    def __init__(self, sink: RelaySink, on_status: Callable[[int], None] | None) -> None:
        self.sink, self.on_status = sink, on_status
        self.status = 0
        self.headers: list[tuple[str, str]] = []
        self.first = b""
        self.state = "head"  # head | checking | open | refused

    def on_error_status(self, status: int) -> None:
        """`StatusSink`'s `on_status`: an error status is told at once; a 2xx once it opens."""
        if status >= 300 and self.on_status is not None:
            self.on_status(status)

    def on_headers(self, status: int, headers: list[tuple[str, str]]) -> None:
        self.status, self.headers = status, headers
        self.state = "checking" if _EVENT_STREAM in self.content_type().lower() else "refused"

    def on_reader(self, reader: Reader) -> None:
        on_reader = getattr(self.sink, "on_reader", None)
        if on_reader is not None:
            on_reader(reader)

    def on_body(self, data: bytes) -> bool:
        if self.state == "open":
            return self.sink.on_body(data)
        if self.state == "refused":
            self.first = (self.first + data)[:64]  # (to say what it was)
            return True  # enough: nothing of it goes on
        self.first += data
        start = self.first.lstrip(_BLANK)
        if start.startswith(_SSE_STARTS):
            return self._open()
        if len(start) >= 5 or len(self.first) > _MAX_UNDECIDED:
            self.state = "refused"  # (a field name cut short stays undecided until 5 bytes)
            return True
        if start and not any(s.startswith(start) for s in _SSE_STARTS):
            self.state = "refused"
            return True
        return False

    def finish(self, url: str) -> None:
        """After the body ended: `NotTheAnswer` when refused; a short stream still held goes
        on (an empty one too: the caller's sink words a stream without its end)."""
        if self.state == "checking":
            start = self.first.lstrip(_BLANK)
            if start and not start.startswith(_SSE_STARTS):
                self.state = "refused"
            else:
                self._open()
        if self.state == "refused":
            kind = self.content_type()
            raise _not_the_answer(url, self.status, kind, self.first, "an event stream")

    def content_type(self) -> str:
        return next((v for k, v in self.headers if k == "content-type"), "")

    def _open(self) -> bool:
        self.state = "open"
        if self.on_status is not None:
            self.on_status(self.status)
        self.sink.on_headers(self.status, self.headers)
        first, self.first = self.first, b""
        return self.sink.on_body(first) if first else False


def _errors_only(on_status: Callable[[int], None] | None) -> Callable[[int], None] | None:
    if on_status is None:
        return None
    return lambda status: on_status(status) if status >= 300 else None


def _looks_like_json(content_type: str, body: bytes) -> bool:
    """A whole answer the caller can parse: typed JSON (or untyped) and starting like JSON."""
    kind = content_type.partition(";")[0].strip().lower()
    if kind and "json" not in kind:
        return False
    start = body.lstrip(_BLANK)[:1]
    return start in (b"{", b"[")


def _not_the_answer(
    url: str, status: int, content_type: str, first: bytes, wanted: str
) -> errors.NotTheAnswer:
    kind = content_type.partition(";")[0].strip() or "no content type"
    start = first.lstrip(_BLANK)[:64]
    if start[:1] == b"<":
        shape = "an HTML page"
    elif any(b < 0x09 or 0x0D < b < 0x20 or b >= 0x80 for b in start):
        shape = "binary bytes"
    else:
        shape = "a body" if start else "an empty body"
    return errors.NotTheAnswer(
        f"{url} answered {status} with {shape} ({kind}) instead of {wanted}",
        url=url,
        fix="the URL reaches something that is not the API (a web page, a proxy's sign-in "
        "page, a file): check the upstream's URL and path",
    )
