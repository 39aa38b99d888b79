"""GatewayClient / AsyncGatewayClient: call an endpoint the way its client does, and time it.

Both drivers share everything but the IO loop (`_Call` holds the per-request state). The async
client streams over `_h1` (a lean HTTP/1.1 transport, for bench's millisecond timings) unless a
proxy applies to the URL or a test injected an httpx transport; everything else is httpx. Timeouts
are split: `connect_timeout` (DNS + TCP + TLS), `timeout` (time to response headers), and
`idle_timeout` (the longest silent gap once the stream is flowing); `total_timeout` is a wall
clock on the whole call, whatever the server sends (a byte a second, pings, endless headers):
`asyncio.timeout` on the async client, a `_http.Watchdog` that shuts the socket on the sync one.
Every answer is also bounded in decoded bytes (`_limits`), so an endless body or a gzip bomb
ends in `ResponseTooLarge`. Redirects are never followed, so `Authorization` / `x-api-key`
never reach another origin; a 3xx becomes an HttpStatusError naming the new location.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any, TypeVar

import anyio
import httpx

from notes_cli.clients.endpoint import Endpoint
from notes_cli.gateway import _h1, _limits, errors
from notes_cli.gateway import _requests as proto
from notes_cli.gateway._http import (
    AsyncConnectTrace,
    ConnectTrace,
    Watchdog,
    safe_url,
    status_error,
    translate,
)
from notes_cli.gateway._limits import MAX_BODY_BYTES, MAX_ERROR_BODY, MAX_STREAM_BYTES
from notes_cli.gateway._pools import Pools
from notes_cli.gateway._reader import StreamFailed, StreamReader, reply_result
from notes_cli.gateway.results import ModelsResult, StreamResult, Timings
from notes_cli.gateway.sse import EventTooLarge, SSEParser

OnChunk = Callable[[str, float], None]
Messages = list[dict[str, Any]] | str
T = TypeVar("T")

_MAX_ERROR_BODY = MAX_ERROR_BODY
_MAX_WHOLE_BODY = MAX_BODY_BYTES  # a JSON answer (a model list, Claude Code's fallback Message)


class _Call:
    """One request's state, shared by the sync and async drivers."""

    __slots__ = (
        "endpoint",
        "url",
        "shown_url",
        "start",
        "trace",
        "timings",
        "state",
        "parser",
        "headers_seen",
        "on_chunk",
        "timeouts",
        "total_timeout",
        "idle_timeout",
        "status",
        "stream_bytes",
    )

    def __init__(
        self,
        client: _BaseClient,
        url: str,
        *,
        on_chunk: OnChunk | None = None,
        is_async: bool = False,
        watchdog: Watchdog | None = None,
    ) -> None:
        self.endpoint = client.endpoint
        self.url = url
        self.shown_url = safe_url(url)
        self.start = time.perf_counter()
        self.trace = (
            AsyncConnectTrace(self.start) if is_async else ConnectTrace(self.start, watchdog)
        )
        self.timings = Timings()
        self.state = StreamReader(client.endpoint.protocol)
        self.parser = SSEParser(_limits.MAX_EVENT_LINE_BYTES)
        self.stream_bytes = 0
        self.headers_seen = False
        self.on_chunk = on_chunk
        self.total_timeout = client.total_timeout
        self.idle_timeout = client.idle_timeout
        self.status = 0
        # httpcore reads the read timeout from this dict when the body starts, so the headers
        # wait and the idle gap can differ (see `headers_arrived`).
        self.timeouts = {
            "connect": client.connect_timeout,
            "read": client.timeout,
            "write": client.timeout,
            "pool": client.timeout,
        }

    def extensions(self) -> dict[str, Any]:
        return {"trace": self.trace, "timeout": self.timeouts}

    def elapsed_ms(self) -> float:
        return (time.perf_counter() - self.start) * 1000

    def connected(self) -> None:
        """A new connection is up (the lean transport's equivalent of the connect trace)."""
        self.trace.connect_ms = self.elapsed_ms()

    def headers_arrived(self, status: int) -> None:
        self.headers_seen = True
        self.status = status
        self.timings.headers_ms = self.elapsed_ms()
        self.timings.connect_ms = self.trace.connect_ms
        self.timeouts["read"] = self.idle_timeout

    def translate(self, exc: httpx.HTTPError) -> errors.GatewayError:
        if isinstance(exc, httpx.ConnectTimeout):
            seconds = self.timeouts["connect"]
        else:
            seconds = self.timeouts["read"]
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
        """What this request carried in credential positions (only computed on an error)."""
        return self.endpoint.sent_secrets()

    def deadline_error(self) -> errors.GatewayError:
        """The wall clock (`total_timeout`) ran out: before the headers were complete (a
        server that never answers, or sends its head a byte at a time) or during the body.
        When an error status had arrived, that status is the answer: a 400 whose message
        trickles in is reported as the 400, not as a stream that never finished."""
        seconds = self.total_timeout or 0.0
        if self.headers_seen and self.status >= 300:
            return self.cut_at_deadline(self.status_error(httpx.Response(self.status), b""))
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
            return reply_result(self.endpoint.protocol, payload, self.status, self.timings)
        except StreamFailed as exc:
            raise self.upstream(exc) from exc

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
        result = self.state.result(self.status, self.timings)
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
        self.timings.total_ms = self.elapsed_ms()
        return self.state.result(self.status, self.timings)

    def upstream(self, exc: StreamFailed) -> errors.UpstreamError:
        error = errors.UpstreamError(
            f"the stream from {self.shown_url} reported an error: {exc}",
            url=self.shown_url,
            fix="the model or its upstream failed mid-answer; retry, or check the gateway's logs",
        )
        return errors.scrubbed(error, self.sent_secrets())

    def models(self, response: httpx.Response, body: bytes) -> ModelsResult:
        try:
            payload = json.loads(body)
        except (ValueError, RecursionError) as exc:
            raise self.bad_json() from exc
        self.timings.total_ms = self.elapsed_ms()
        ids = proto.parse_model_ids(payload)
        data = payload.get("data") if isinstance(payload, dict) else None
        entries = [e for e in data if isinstance(e, dict)] if isinstance(data, list) else []
        return ModelsResult(response.status_code, ids, self.timings, entries)


class _StreamSink:
    """A lean-transport answer into a `_Call`: the event stream as it arrives, or the body of an
    error answer (up to 64 KiB) or of a 2xx that is not a stream, handled as the httpx path does."""

    __slots__ = ("call", "status", "reason", "headers", "body", "kind", "counter")

    def __init__(self, call: _Call) -> None:
        self.call = call
        self.status = 0
        self.reason = ""
        self.headers: list[tuple[str, str]] = []
        self.body = bytearray()
        self.kind = "events"  # events | error | whole
        self.counter = _limits.Counter("the body", _MAX_WHOLE_BODY)

    def on_headers(self, status: int, reason: str, headers: list[tuple[str, str]]) -> None:
        self.call.headers_arrived(status)
        self.status, self.reason, self.headers = status, reason, headers
        ctype = next((v for k, v in headers if k == "content-type"), "event-stream")
        if status >= 300:
            self.kind = "error"
        elif "text/event-stream" not in ctype:
            self.kind = "whole"

    def on_body(self, data: bytes) -> bool:
        if self.kind == "events":
            return self.call.feed(data)
        if self.kind == "error":
            self.body += data
            return len(self.body) >= _MAX_ERROR_BODY  # enough to word the error
        try:
            self.counter.add(len(data))
        except _limits.TooLarge as exc:
            raise self.call.too_large(exc) from None
        self.body += data
        return False

    def result(self) -> StreamResult:
        call = self.call
        if self.kind == "error":
            raise call.status_error(self._response(), bytes(self.body[:_MAX_ERROR_BODY]))
        if self.kind == "whole":
            return call.not_a_stream(self._response(), bytes(self.body))
        return call.finish()

    def _response(self) -> httpx.Response:
        """The answer as httpx would show it, for the error and fallback paths they share."""
        reason = {"reason_phrase": self.reason.encode("latin-1", "replace")}
        return httpx.Response(self.status, headers=self.headers, extensions=reason)


_COMPLETION = {
    "chat": "a choice with finish_reason",
    "responses": "response.completed",
    "anthropic": "message_delta with stop_reason",
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


def _client_kwargs() -> dict[str, Any]:
    # follow_redirects=False: credentials must never be forwarded to another origin.
    # Accept-Encoding: only what `_limits.Decoder` can decode in bounded pieces.
    return {
        "follow_redirects": False,
        "trust_env": True,
        "timeout": None,
        "headers": {"accept-encoding": _limits.ENCODINGS},
    }


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
        self._http = httpx.Client(transport=transport, **_client_kwargs())
        self._watchdog = Watchdog()

    def __enter__(self) -> GatewayClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._http.close()

    def list_models(self) -> ModelsResult:
        """`GET {base}/models` (`/v1/models` for Anthropic) with the client's auth headers."""
        url = self.endpoint.models_url()
        call = self._call(url)
        headers = proto.base_headers(self.endpoint, stream=False)
        body, response = self._guarded(call, lambda: self._fetch(call, "GET", url, headers, None))
        return call.models(response, body)

    def complete(
        self, messages: Messages, *, max_tokens: int = 256, extra_body: dict[str, Any] | None = None
    ) -> StreamResult:
        """One non-streamed turn in the endpoint's protocol."""
        url, headers, content = self._stream_request(messages, max_tokens, extra_body, False)
        call = self._call(url)
        body, _ = self._guarded(call, lambda: self._fetch(call, "POST", url, headers, content))
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
        call = self._call(url, on_chunk=on_chunk)
        return self._guarded(call, lambda: self._stream(call, url, headers, content))

    def _call(self, url: str, on_chunk: OnChunk | None = None) -> _Call:
        return _Call(self, url, on_chunk=on_chunk, watchdog=self._watchdog)

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

    def _stream(
        self, call: _Call, url: str, headers: dict[str, str], content: bytes
    ) -> StreamResult:
        request = self._http.build_request(
            "POST", url, headers=headers, content=content, extensions=call.extensions()
        )
        response = self._http.send(request, stream=True)
        try:
            call.headers_arrived(response.status_code)
            if response.status_code >= 300:
                raise call.status_error(response, _read_capped(response))
            if "text/event-stream" not in response.headers.get("content-type", "event-stream"):
                return call.not_a_stream(response, _read_body(call, response))
            for chunk in _decoded(call, response):
                if call.feed(chunk):
                    break
            return call.finish()
        finally:
            response.close()

    def _fetch(
        self, call: _Call, method: str, url: str, headers: dict[str, str], content: bytes | None
    ) -> tuple[bytes, httpx.Response]:
        request = self._http.build_request(
            method, url, headers=headers, content=content, extensions=call.extensions()
        )
        response = self._http.send(request, stream=True)
        try:
            call.headers_arrived(response.status_code)
            if response.status_code >= 300:
                raise call.status_error(response, _read_capped(response))
            return _read_body(call, response), response
        finally:
            response.close()


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
        kwargs = _client_kwargs()
        if transport is None:
            # One TLS context for every pool: building one reads the CA bundle (~20 ms).
            kwargs["verify"] = httpx.create_ssl_context(trust_env=True)

        def make(connections: int) -> httpx.AsyncClient:
            limits = httpx.Limits(
                max_connections=connections, max_keepalive_connections=connections
            )
            return httpx.AsyncClient(transport=transport, limits=limits, **kwargs)

        self._pools = Pools(make, max_connections, shared=transport is not None)
        self._h1 = _h1.Http1Pool(kwargs["verify"], max_connections) if transport is None else None

    def _lean(self, url: str) -> _h1.Http1Pool | None:
        """The lean transport, unless httpx must send to `url` (a proxy applies to it)."""
        return self._h1 if self._h1 is not None and self._h1.takes(url) else None

    async def __aenter__(self) -> AsyncGatewayClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        if self._h1 is not None:
            await self._h1.aclose()
        await self._pools.aclose()

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
        call = _Call(self, url, is_async=True)
        headers = proto.base_headers(self.endpoint, stream=False)
        async with self._wall_clock(call):
            body, response = await self._fetch(call, "GET", url, headers, None)
        return call.models(response, body)

    async def complete(
        self, messages: Messages, *, max_tokens: int = 256, extra_body: dict[str, Any] | None = None
    ) -> StreamResult:
        """One non-streamed turn in the endpoint's protocol."""
        url, headers, content = self._stream_request(messages, max_tokens, extra_body, False)
        call = _Call(self, url, is_async=True)
        async with self._wall_clock(call):
            body, _ = await self._fetch(call, "POST", url, headers, content)
        return call.body_result(body)

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
        call = _Call(self, url, on_chunk=on_chunk, is_async=True)
        lean = self._lean(url)
        async with self._wall_clock(call):
            if lean is not None:
                return await self._stream_lean(lean, call, url, headers, content)
            with self._pools.client() as http:
                return await self._stream(http, call, url, headers, content)

    async def _stream_lean(
        self, lean: _h1.Http1Pool, call: _Call, url: str, headers: dict[str, str], body: bytes
    ) -> StreamResult:
        sink = _StreamSink(call)
        try:
            await lean.request(
                "POST",
                url,
                headers,
                body,
                sink,
                connect_timeout=self.connect_timeout,
                headers_timeout=self.timeout,
                idle_timeout=self.idle_timeout,
                on_connect=call.connected,
            )
        except httpx.HTTPError as exc:
            raise call.translate(exc) from exc
        return sink.result()

    async def _stream(
        self, http: httpx.AsyncClient, call: _Call, url: str, headers: dict[str, str], body: bytes
    ) -> StreamResult:
        request = http.build_request(
            "POST", url, headers=headers, content=body, extensions=call.extensions()
        )
        try:
            response = await http.send(request, stream=True)
        except httpx.HTTPError as exc:
            raise call.translate(exc) from exc
        try:
            call.headers_arrived(response.status_code)
            if response.status_code >= 300:
                raise call.status_error(response, await _aread_capped(response))
            if "text/event-stream" not in response.headers.get("content-type", "event-stream"):
                return call.not_a_stream(response, await _aread_body(call, response))
            chunks = _adecoded(call, response)
            async for chunk in chunks:
                if call.feed(chunk):
                    await _read_to_end(chunks)
                    break
            return call.finish()
        except httpx.HTTPError as exc:
            raise call.translate(exc) from exc
        finally:
            await response.aclose()

    async def _fetch(
        self, call: _Call, method: str, url: str, headers: dict[str, str], content: bytes | None
    ) -> tuple[bytes, httpx.Response]:
        with self._pools.client() as http:
            request = http.build_request(
                method, url, headers=headers, content=content, extensions=call.extensions()
            )
            try:
                response = await http.send(request, stream=True)
                try:
                    call.headers_arrived(response.status_code)
                    if response.status_code >= 300:
                        raise call.status_error(response, await _aread_capped(response))
                    return await _aread_body(call, response), response
                finally:
                    await response.aclose()
            except httpx.HTTPError as exc:
                raise call.translate(exc) from exc


async def _read_to_end(chunks: AsyncIterator[bytes]) -> None:
    """Read what follows a stream's last event (a `[DONE]`, the chunked-encoding terminator)
    so httpcore puts the connection back in the pool: closing a response with body left
    unread closes its connection, and the next request would pay a new TCP connect. Bounded
    in time and size, and best effort: a server that keeps the body open only loses reuse."""
    size = 0
    with anyio.move_on_after(_h1.DRAIN_S):
        try:
            async for chunk in chunks:
                size += len(chunk)
                if size > _MAX_ERROR_BODY:
                    return
        except (httpx.HTTPError, errors.GatewayError):
            return


# --------------------------------------------------------------------------- bounded reads
# httpx decodes gzip / deflate in one step per network read (~64 KiB in, up to ~64 MiB out);
# these read the raw bytes and decode them with `_limits.Decoder`, in 64 KiB pieces, counted.


def _decoder(call: _Call, response: httpx.Response) -> _limits.Decoder:
    try:
        return _limits.Decoder(response.headers.get("content-encoding"))
    except _limits.UnsupportedEncoding as exc:
        raise httpx.DecodingError(str(exc)) from None


def _decode(decoder: _limits.Decoder, raw: bytes) -> Iterator[bytes]:
    try:
        yield from decoder.decode(raw)
    except _limits.UnsupportedEncoding as exc:
        raise httpx.DecodingError(str(exc)) from None


def _already_read(response: httpx.Response) -> bytes | None:
    """The decoded body of a response that was read before it reached us (a mocked response
    object served twice); None for a live stream."""
    if not response.is_stream_consumed:
        return None
    try:
        return response.content
    except httpx.ResponseNotRead:
        return None


def _decoded(call: _Call, response: httpx.Response) -> Iterator[bytes]:
    """The decoded body in pieces (the event stream counts its own bytes in `_Call.feed`)."""
    done = _already_read(response)
    if done is not None:
        yield done
        return
    decoder = _decoder(call, response)
    for raw in response.iter_raw():
        yield from _decode(decoder, raw)
    rest = decoder.flush()
    if rest:
        yield rest


async def _adecoded(call: _Call, response: httpx.Response) -> AsyncIterator[bytes]:
    done = _already_read(response)
    if done is not None:
        yield done
        return
    decoder = _decoder(call, response)
    async for raw in response.aiter_raw():
        for piece in _decode(decoder, raw):
            yield piece
    rest = decoder.flush()
    if rest:
        yield rest


def _read_body(call: _Call, response: httpx.Response) -> bytes:
    """A whole (JSON) body, at most `_MAX_WHOLE_BODY` decoded bytes, else ResponseTooLarge."""
    counter = _limits.Counter("the body", _MAX_WHOLE_BODY)
    parts: list[bytes] = []
    try:
        for piece in _decoded(call, response):
            counter.add(len(piece))
            parts.append(piece)
    except _limits.TooLarge as exc:
        raise call.too_large(exc) from None
    return b"".join(parts)


async def _aread_body(call: _Call, response: httpx.Response) -> bytes:
    counter = _limits.Counter("the body", _MAX_WHOLE_BODY)
    parts: list[bytes] = []
    try:
        async for piece in _adecoded(call, response):
            counter.add(len(piece))
            parts.append(piece)
    except _limits.TooLarge as exc:
        raise call.too_large(exc) from None
    return b"".join(parts)


def _read_capped(response: httpx.Response) -> bytes:
    """An error body, read up to 64 KiB (an HTML page from a proxy can be large); a body that
    cannot be decoded is shown as empty rather than hiding the status behind a decoding error."""
    done = _already_read(response)
    if done is not None:
        return done[:_MAX_ERROR_BODY]
    data = bytearray()
    try:
        decoder = _limits.Decoder(response.headers.get("content-encoding"))
        for raw in response.iter_raw():
            for piece in decoder.decode(raw):
                data += piece
                if len(data) >= _MAX_ERROR_BODY:
                    return bytes(data[:_MAX_ERROR_BODY])
    except _limits.UnsupportedEncoding:
        return b""
    return bytes(data)


async def _aread_capped(response: httpx.Response) -> bytes:
    done = _already_read(response)
    if done is not None:
        return done[:_MAX_ERROR_BODY]
    data = bytearray()
    try:
        decoder = _limits.Decoder(response.headers.get("content-encoding"))
        async for raw in response.aiter_raw():
            for piece in decoder.decode(raw):
                data += piece
                if len(data) >= _MAX_ERROR_BODY:
                    return bytes(data[:_MAX_ERROR_BODY])
    except _limits.UnsupportedEncoding:
        return b""
    return bytes(data)
