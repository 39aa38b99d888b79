"""GatewayClient / AsyncGatewayClient: call an endpoint the way its client does, and time it.

Both drivers share everything but the IO loop (`_Call` holds the per-request state) and send
through the transport seam (`_transport`): the async client streams over `_h1` (a lean HTTP/1.1
transport, for bench's millisecond timings) unless `_transport.pick` declines it (a proxy
applies to the URL, or a test injected an httpx transport); everything else goes through the
httpx adapters. Timeouts are split: `connect_timeout` (DNS + TCP + TLS), `timeout` (time to
response headers), and `idle_timeout` (the longest silent gap once the stream is flowing);
`total_timeout` is a wall clock on the whole call, whatever the server sends (a byte a second,
pings, endless headers): `asyncio.timeout` on the async client, a `_http.Watchdog` that shuts
the socket on the sync one. Every answer is also bounded in decoded bytes (`_limits`), so an
endless body or a gzip bomb ends in `ResponseTooLarge`. Redirects are never followed, so
`Authorization` / `x-api-key` never reach another origin; a 3xx becomes an HttpStatusError
naming the new location.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import os
import ssl
import time
from collections.abc import AsyncIterator, Callable
from typing import Any, TypeVar

import httpx

from notes_cli.clients.endpoint import Endpoint
from notes_cli.gateway import _h1, _limits, errors
from notes_cli.gateway import _requests as proto
from notes_cli.gateway._http import Watchdog, safe_url, status_error, translate
from notes_cli.gateway._limits import MAX_STREAM_BYTES
from notes_cli.gateway._reader import StreamFailed, StreamReader, reply_result
from notes_cli.gateway._transport import (
    AsyncHttpxTransport,
    AsyncTransport,
    Headers,
    HttpxTransport,
    StatusSink,
    pick,
)
from notes_cli.gateway.results import ModelsResult, StreamResult, Timings
from notes_cli.gateway.sse import EventTooLarge, SSEParser
from notes_cli.secrets import mask_sent

OnChunk = Callable[[str, float], None]
Messages = list[dict[str, Any]] | str
T = TypeVar("T")
_EVENT_STREAM = "text/event-stream"


class _Call:
    """One request's state, shared by the sync and async drivers."""

    __slots__ = (
        "endpoint",
        "url",
        "shown_url",
        "start",
        "timings",
        "state",
        "parser",
        "headers_seen",
        "on_chunk",
        "connect_timeout",
        "headers_timeout",
        "idle_timeout",
        "total_timeout",
        "status",
        "stream_bytes",
        "answer",
    )

    def __init__(self, client: _BaseClient, url: str, *, on_chunk: OnChunk | None = None) -> None:
        self.endpoint = client.endpoint
        self.url = url
        self.shown_url = safe_url(url)
        self.start = time.perf_counter()
        self.timings = Timings()
        self.state = StreamReader(client.endpoint.protocol)
        self.parser = SSEParser(_limits.MAX_EVENT_LINE_BYTES)
        self.stream_bytes = 0
        self.headers_seen = False
        self.on_chunk = on_chunk
        self.connect_timeout = client.connect_timeout
        self.headers_timeout = client.timeout
        self.idle_timeout = client.idle_timeout
        self.total_timeout = client.total_timeout
        self.status = 0
        self.answer = StatusSink()

    def sink(self, *, events: bool) -> StatusSink:
        """The transport's sink for this call: an event stream is parsed as it arrives (this
        call is its `Stream`), anything else kept whole (`_limits.MAX_BODY_BYTES`)."""
        self.answer = StatusSink(
            self if events else None, stream_type=_EVENT_STREAM, on_status=self.headers_arrived
        )
        return self.answer

    def elapsed_ms(self) -> float:
        return (time.perf_counter() - self.start) * 1000

    def connected(self) -> None:
        """A new connection is up (DNS + TCP, then TLS): a reused one leaves `connect_ms` None."""
        self.timings.connect_ms = self.elapsed_ms()

    def headers_arrived(self, status: int) -> None:
        self.headers_seen = True
        self.status = status
        self.timings.headers_ms = self.elapsed_ms()

    def on_headers(self, status: int, headers: Headers) -> None:
        """(`Stream`: the status is already in, from `headers_arrived`.)"""

    def translate(self, exc: httpx.HTTPError) -> errors.GatewayError:
        if isinstance(exc, httpx.ConnectTimeout):
            seconds = self.connect_timeout
        else:
            seconds = self.idle_timeout if self.headers_seen else self.headers_timeout
        partial = self.partial() if self.headers_seen else None
        error = translate(
            exc,
            url=self.shown_url,
            headers_seen=self.headers_seen,
            timeout=seconds,
            partial=partial,
        )
        return errors.scrubbed(error, self.sent_secrets())

    def sent_secrets(self) -> tuple[str, ...]:
        """What this request carried in credential positions (computed once the answer is in:
        an error's words and an answer's are masked of it)."""
        return self.endpoint.sent_secrets()

    def deadline_error(self) -> errors.GatewayError:
        """The wall clock (`total_timeout`) ran out: before the headers were complete (a
        server that never answers, or sends its head a byte at a time) or during the body.
        When an error status had arrived, that status is the answer: a 400 whose message
        trickles in is reported as the 400, not as a stream that never finished."""
        seconds = self.total_timeout or 0.0
        if self.headers_seen and self.status >= 300:  # (a body cut short would be noise)
            return self.cut_at_deadline(self.status_error(self.answer.response(), b""))
        if not self.headers_seen:
            return errors.HeadersTimeout(
                f"connected to {self.shown_url} but no complete response headers within "
                f"{seconds:g} s",
                url=self.shown_url,
                seconds=seconds,
                fix="the gateway accepted the connection but never answered (or answers a "
                "byte at a time): check the gateway, a proxy in front of it, or raise --timeout",
            )
        return errors.TotalTimeout(
            f"the answer from {self.shown_url} was still arriving after {seconds:g} s "
            "(the stream never finished)",
            url=self.shown_url,
            seconds=seconds,
            partial=self.partial(),
            fix="the gateway kept the answer open without finishing it (an endless stream, "
            "keep-alive pings only, or a trickle): check the gateway, or raise --timeout if "
            "the model is just slow",
        )

    def cut_at_deadline(self, error: errors.HttpStatusError) -> errors.HttpStatusError:
        """A status error whose body the wall clock cut: said so after what did arrive."""
        seconds = self.total_timeout or 0.0
        error.message += f" (its error body was still arriving after {seconds:g} s)"
        error.args = (error.message,)
        return error

    def too_large(self, exc: _limits.TooLarge) -> errors.ResponseTooLarge:
        return errors.ResponseTooLarge(
            f"the answer from {self.shown_url} was cut off: {exc} (decoded)",
            url=self.shown_url,
            limit=exc.limit,
            fix="no reply to this request is that large: the gateway sent an endless body, "
            "a compression bomb or something else than the API; check the base URL and the "
            "gateway",
        )

    def status_error(self, response: httpx.Response, body: bytes) -> errors.HttpStatusError:
        endpoint = self.endpoint
        error = status_error(
            response, body, self.shown_url, endpoint.key_env, has_key=bool(endpoint.key)
        )
        return errors.scrubbed(error, self.sent_secrets())

    def not_a_stream(self, response: httpx.Response, body: bytes) -> StreamResult:
        """A 2xx that is not an event stream. Claude Code falls back to a plain Message JSON,
        so that is accepted for "anthropic"; Codex and the OpenAI SDK fail on it."""
        ctype = response.headers.get("content-type", "")
        if self.endpoint.protocol == "anthropic" and "json" in ctype:
            return self.body_result(body)
        error = errors.ProtocolError(  # (a content-type is the gateway's words: scrubbed)
            f"{self.shown_url} answered {ctype or 'no content-type'}, not text/event-stream",
            url=self.shown_url,
            fix="the gateway ignored `stream: true`; the client would fail with "
            "'stream closed before completion': check the path and the gateway's streaming support",
        )
        raise errors.scrubbed(error, self.sent_secrets())

    def body_result(self, body: bytes) -> StreamResult:
        try:
            payload = json.loads(body)
        except (ValueError, RecursionError) as exc:  # RecursionError: nested thousands deep
            raise self.bad_json() from exc
        if not isinstance(payload, dict):
            raise self.bad_json()
        self.timings.total_ms = self.elapsed_ms()
        try:
            result = reply_result(self.endpoint.protocol, payload, self.status, self.timings)
        except StreamFailed as exc:
            raise self.upstream(exc) from exc
        return self.masked(result)

    def bad_json(self) -> errors.ProtocolError:
        return errors.ProtocolError(
            f"{self.shown_url} answered 2xx with a body that is not JSON",
            url=self.shown_url,
            fix="a proxy or web server answered instead of the gateway; check the base URL",
        )

    def feed(self, chunk: bytes) -> bool:
        """Parse a chunk; True once the stream's last event arrived."""
        now = self.elapsed_ms()
        if self.total_timeout is not None and now > self.total_timeout * 1000:
            raise self.deadline_error()  # also bounds a transport without a wall clock (mocks)
        self.stream_bytes += len(chunk)
        if self.stream_bytes > MAX_STREAM_BYTES:
            raise self.too_large(_limits.TooLarge("the event stream", MAX_STREAM_BYTES))
        state = self.state
        on_chunk = self.on_chunk
        try:
            for event in self.parser.feed(chunk):
                text = state.handle(event, now)
                if text is not None and on_chunk is not None:
                    on_chunk(text, now)
        except StreamFailed as exc:
            raise self.upstream(exc) from exc
        except EventTooLarge as exc:
            raise self.too_large(_limits.TooLarge("one event", exc.limit)) from exc
        return state.closed

    on_body = feed  # (`Stream`; an alias, not a wrapper: this is the hot path)

    def stream_result(self) -> StreamResult:
        """What the streamed request's answer (`self.answer`) amounts to."""
        answer = self.answer
        if answer.mode == "error":
            raise self.status_error(answer.response(), answer.error_body())
        if answer.mode == "whole":
            return self.not_a_stream(answer.response(), bytes(answer.body))
        return self.finish()

    def whole_body(self) -> bytes:
        """A whole answer's body, or its status error."""
        answer = self.answer
        if answer.mode == "error":
            raise self.status_error(answer.response(), answer.error_body())
        return bytes(answer.body)

    def finish(self) -> StreamResult:
        now = self.elapsed_ms()
        try:
            for event in self.parser.close():
                self.state.handle(event, now)
        except StreamFailed as exc:
            raise self.upstream(exc) from exc
        except EventTooLarge as exc:
            raise self.too_large(_limits.TooLarge("one event", exc.limit)) from exc
        self.timings.total_ms = self.state.chunk_ms[-1] if self.state.chunk_ms else now
        self.timings.ended_ms = now
        result = self.masked(self.state.result(self.status, self.timings))
        if not self.state.done:
            raise errors.TruncatedStream(
                f"the stream from {self.shown_url} ended without its completion event "
                f"({_COMPLETION[self.endpoint.protocol]}) after {len(result.text)} characters",
                url=self.shown_url,
                partial=result,
                fix="the gateway cut the answer off (a proxy timeout, a crashed upstream, or a "
                "gateway that does not finish streams the way the client expects)",
            )
        return result

    def partial(self) -> StreamResult:
        self.timings.total_ms = self.timings.ended_ms = self.elapsed_ms()
        return self.masked(self.state.result(self.status, self.timings))

    def masked(self, result: StreamResult) -> StreamResult:
        """`result` with the secrets this request sent masked in the gateway's words (the
        answer, the finish reason, the model name), in place: a gateway that echoes the
        `Authorization` header into its answer would otherwise put the key into a note, a JSON
        report or the terminal (issue 36). Only the sent values change (`mask_sent`): the
        answer is kept as written otherwise."""
        sent = self.sent_secrets()
        if sent:
            result.text = mask_sent(result.text, sent)
            result.finish_reason = result.finish_reason and mask_sent(result.finish_reason, sent)
            result.model = result.model and mask_sent(result.model, sent)
        return result

    def upstream(self, exc: StreamFailed) -> errors.UpstreamError:
        error = errors.UpstreamError(
            f"the stream from {self.shown_url} reported an error: {exc}",
            url=self.shown_url,
            fix="the model or its upstream failed mid-answer; retry, or check the gateway's logs",
        )
        return errors.scrubbed(error, self.sent_secrets())

    def models(self, body: bytes) -> ModelsResult:
        try:
            payload = json.loads(body)
        except (ValueError, RecursionError) as exc:
            raise self.bad_json() from exc
        self.timings.total_ms = self.elapsed_ms()
        sent = self.sent_secrets()
        ids = [mask_sent(i, sent) for i in proto.parse_model_ids(payload)]
        data = payload.get("data") if isinstance(payload, dict) else None
        entries = [e for e in data if isinstance(e, dict)] if isinstance(data, list) else []
        return ModelsResult(self.status, ids, self.timings, entries)


_COMPLETION = {
    "chat": "a choice with finish_reason",
    "responses": "response.completed",
    "anthropic": "message_delta with stop_reason",
    "gemini": "a candidate with finishReason",
}


class _BaseClient:
    def __init__(
        self,
        endpoint: Endpoint,
        *,
        timeout: float = 10.0,
        connect_timeout: float | None = None,
        idle_timeout: float | None = None,
        total_timeout: float | None = None,
    ) -> None:
        self.endpoint = endpoint
        self.timeout = timeout
        self.connect_timeout = connect_timeout if connect_timeout is not None else timeout
        self.idle_timeout = idle_timeout if idle_timeout is not None else timeout
        self.total_timeout = total_timeout

    def _stream_request(
        self, messages: Messages, max_tokens: int, extra_body: dict[str, Any] | None, stream: bool
    ) -> tuple[str, dict[str, str], bytes]:
        url = proto.request_url(self.endpoint)
        headers = proto.base_headers(self.endpoint, stream=stream)
        headers["content-type"] = "application/json"
        body = proto.build_body(
            self.endpoint, messages, max_tokens=max_tokens, stream=stream, extra_body=extra_body
        )
        return url, headers, body


class GatewayClient(_BaseClient):
    """Synchronous client for one endpoint. Use as a context manager (or call `close()`)."""

    def __init__(
        self,
        endpoint: Endpoint,
        *,
        timeout: float = 10.0,
        transport: httpx.BaseTransport | None = None,
        connect_timeout: float | None = None,
        idle_timeout: float | None = None,
        total_timeout: float | None = None,
    ) -> None:
        super().__init__(
            endpoint,
            timeout=timeout,
            connect_timeout=connect_timeout,
            idle_timeout=idle_timeout,
            total_timeout=total_timeout,
        )
        self._watchdog = Watchdog()
        self._transport = HttpxTransport(transport, on_socket=self._watchdog.track)

    def __enter__(self) -> GatewayClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._transport.close()

    def list_models(self) -> ModelsResult:
        """`GET {base}/models` (`/v1/models` for Anthropic) with the client's auth headers."""
        url = self.endpoint.models_url()
        call = _Call(self, url)
        headers = proto.base_headers(self.endpoint, stream=False)
        body = self._guarded(call, lambda: self._whole(call, "GET", url, headers, None))
        return call.models(body)

    def complete(
        self, messages: Messages, *, max_tokens: int = 256, extra_body: dict[str, Any] | None = None
    ) -> StreamResult:
        """One non-streamed turn in the endpoint's protocol."""
        url, headers, content = self._stream_request(messages, max_tokens, extra_body, False)
        call = _Call(self, url)
        body = self._guarded(call, lambda: self._whole(call, "POST", url, headers, content))
        return call.body_result(body)

    def stream(
        self,
        messages: Messages,
        *,
        max_tokens: int = 256,
        on_chunk: OnChunk | None = None,
        extra_body: dict[str, Any] | None = None,
    ) -> StreamResult:
        """One streamed turn; `on_chunk(text, ms_since_start)` is called for each output chunk.
        Raises a `notes_cli.gateway.errors` error on any failure (TruncatedStream and the idle
        timeouts carry the partial result)."""
        url, headers, content = self._stream_request(messages, max_tokens, extra_body, True)
        call = _Call(self, url, on_chunk=on_chunk)
        return self._guarded(call, lambda: self._stream(call, url, headers, content))

    def _guarded(self, call: _Call, work: Callable[[], T]) -> T:
        """Run `work` under the wall clock. Once the watchdog has cut the connection, whatever
        the cut looks like (a reset, an early EOF, a truncated body) is the deadline error."""
        watchdog = self._watchdog
        with watchdog.armed(self.total_timeout):
            try:
                result = work()
            except httpx.HTTPError as exc:
                if watchdog.expired:
                    raise call.deadline_error() from exc
                raise call.translate(exc) from exc
            except errors.GatewayError as exc:
                if watchdog.expired and isinstance(exc, errors.HttpStatusError):
                    raise call.cut_at_deadline(exc) from None  # with what of its body came
                if watchdog.expired and not isinstance(exc, errors.GatewayTimeout):
                    raise call.deadline_error() from exc
                raise
            if watchdog.expired:  # a close-delimited body "ended" when the socket was cut
                raise call.deadline_error()
            return result

    def _send(
        self, call: _Call, method: str, url: str, headers: dict[str, str], body: bytes | None
    ) -> None:
        try:
            self._transport.request(
                method,
                url,
                headers,
                body,
                call.answer,
                connect_timeout=self.connect_timeout,
                headers_timeout=self.timeout,
                idle_timeout=self.idle_timeout,
                on_connect=call.connected,
            )
        except _limits.TooLarge as exc:
            raise call.too_large(exc) from None

    def _stream(
        self, call: _Call, url: str, headers: dict[str, str], content: bytes
    ) -> StreamResult:
        call.sink(events=True)
        self._send(call, "POST", url, headers, content)
        return call.stream_result()

    def _whole(
        self, call: _Call, method: str, url: str, headers: dict[str, str], content: bytes | None
    ) -> bytes:
        call.sink(events=False)
        self._send(call, method, url, headers, content)
        return call.whole_body()


def tls_context() -> ssl.SSLContext:
    """The process's TLS context for the CA setting in force (`SSL_CERT_FILE`, `SSL_CERT_DIR`):
    building one reads the CA bundle, ~20 ms of CPU, which bench paid again at every point of a
    sweep (each point has its own client). An SSLContext may serve any number of connections
    and event loops; a changed setting gets a context of its own."""
    return _tls_context(os.environ.get("SSL_CERT_FILE"), os.environ.get("SSL_CERT_DIR"))


@functools.lru_cache(maxsize=4)
def _tls_context(cert_file: str | None, cert_dir: str | None) -> ssl.SSLContext:
    return httpx.create_ssl_context(trust_env=True)


class AsyncGatewayClient(_BaseClient):
    """The async twin of GatewayClient (same methods, awaited), for many concurrent streams."""

    def __init__(
        self,
        endpoint: Endpoint,
        *,
        timeout: float = 10.0,
        transport: httpx.AsyncBaseTransport | None = None,
        connect_timeout: float | None = None,
        idle_timeout: float | None = None,
        total_timeout: float | None = None,
        max_connections: int = 256,
    ) -> None:
        super().__init__(
            endpoint,
            timeout=timeout,
            connect_timeout=connect_timeout,
            idle_timeout=idle_timeout,
            total_timeout=total_timeout,
        )
        if transport is None:
            context = tls_context()  # one for both transports
            self._h1: _h1.Http1Pool | None = _h1.Http1Pool(context, max_connections)
            verify: ssl.SSLContext | bool = context
        else:
            verify, self._h1 = True, None  # (the injected transport takes every request)
        self._httpx = AsyncHttpxTransport(transport, verify=verify, max_connections=max_connections)

    async def __aenter__(self) -> AsyncGatewayClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        if self._h1 is not None:
            await self._h1.aclose()
        await self._httpx.aclose()

    @contextlib.asynccontextmanager
    async def _wall_clock(self, call: _Call) -> AsyncIterator[None]:
        """`total_timeout` over the whole call: the reads are cancelled when it runs out."""
        if self.total_timeout is None:
            yield
            return
        try:
            async with asyncio.timeout(self.total_timeout):
                yield
        except TimeoutError as exc:
            raise call.deadline_error() from exc

    async def list_models(self) -> ModelsResult:
        """`GET {base}/models` (`/v1/models` for Anthropic) with the client's auth headers."""
        url = self.endpoint.models_url()
        call = _Call(self, url)
        headers = proto.base_headers(self.endpoint, stream=False)
        call.sink(events=False)
        async with self._wall_clock(call):  # (whole answers go through httpx: not timed to ms)
            await self._send(self._httpx, call, "GET", url, headers, None)
        return call.models(call.whole_body())

    async def complete(
        self, messages: Messages, *, max_tokens: int = 256, extra_body: dict[str, Any] | None = None
    ) -> StreamResult:
        """One non-streamed turn in the endpoint's protocol."""
        url, headers, content = self._stream_request(messages, max_tokens, extra_body, False)
        call = _Call(self, url)
        call.sink(events=False)
        async with self._wall_clock(call):
            await self._send(self._httpx, call, "POST", url, headers, content)
        return call.body_result(call.whole_body())

    async def stream(
        self,
        messages: Messages,
        *,
        max_tokens: int = 256,
        on_chunk: OnChunk | None = None,
        extra_body: dict[str, Any] | None = None,
    ) -> StreamResult:
        """One streamed turn (see GatewayClient.stream)."""
        url, headers, content = self._stream_request(messages, max_tokens, extra_body, True)
        call = _Call(self, url, on_chunk=on_chunk)
        call.sink(events=True)
        async with self._wall_clock(call):
            await self._send(pick(self._h1, self._httpx, url), call, "POST", url, headers, content)
            return call.stream_result()

    async def _send(
        self,
        transport: AsyncTransport,
        call: _Call,
        method: str,
        url: str,
        headers: dict[str, str],
        body: bytes | None,
    ) -> None:
        try:
            await transport.request(
                method,
                url,
                headers,
                body,
                call.answer,
                connect_timeout=self.connect_timeout,
                headers_timeout=self.timeout,
                idle_timeout=self.idle_timeout,
                on_connect=call.connected,
            )
        except httpx.HTTPError as exc:
            raise call.translate(exc) from exc
        except _limits.TooLarge as exc:
            raise call.too_large(exc) from None
