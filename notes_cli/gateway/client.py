"""GatewayClient / AsyncGatewayClient: call an endpoint the way its client does, and time it.

Both drivers share everything but the IO loop (`_Call` holds the per-request state). The async
client streams over `_h1` (a lean HTTP/1.1 transport, for bench's millisecond timings) unless a
proxy applies to the URL or a test injected an httpx transport; everything else is httpx. Timeouts
are split: `connect_timeout` (DNS + TCP + TLS), `timeout` (time to response headers), and
`idle_timeout` (the longest silent gap once the stream is flowing); `total_timeout` bounds a
stream that keeps trickling. Redirects are never followed, so `Authorization` / `x-api-key`
never reach another origin; a 3xx becomes an HttpStatusError naming the new location.
"""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

import anyio
import httpx

from notes_cli.clients.endpoint import Endpoint
from notes_cli.gateway import _h1, errors
from notes_cli.gateway import _protocols as proto
from notes_cli.gateway._http import (
    AsyncConnectTrace,
    ConnectTrace,
    proxy_for,
    safe_url,
    status_error,
    translate,
)
from notes_cli.gateway._pools import Pools
from notes_cli.gateway.results import ModelsResult, StreamResult, Timings
from notes_cli.gateway.sse import SSEParser
from notes_cli.secrets import position_secrets

OnChunk = Callable[[str, float], None]
Messages = list[dict[str, Any]] | str

_MAX_ERROR_BODY = 64 * 1024
_MAX_WHOLE_BODY = 8 * 1024 * 1024  # a JSON answer to a streamed request (Claude Code's fallback)


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
    )

    def __init__(
        self,
        client: _BaseClient,
        url: str,
        *,
        on_chunk: OnChunk | None = None,
        is_async: bool = False,
    ) -> None:
        self.endpoint = client.endpoint
        self.url = url
        self.shown_url = safe_url(url)
        self.start = time.perf_counter()
        self.trace = (AsyncConnectTrace if is_async else ConnectTrace)(self.start)
        self.timings = Timings()
        self.state = proto.STATES[client.endpoint.protocol]()
        self.parser = SSEParser()
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
        endpoint = self.endpoint
        return position_secrets(
            endpoint.key, endpoint.headers, endpoint.query_params, url=endpoint.base_url
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
        raise errors.ProtocolError(
            f"{self.shown_url} answered {ctype or 'no content-type'}, not text/event-stream",
            url=self.shown_url,
            fix="the gateway ignored `stream: true`; the client would fail with "
            "'stream closed before completion': check the path and the gateway's streaming support",
        )

    def body_result(self, body: bytes) -> StreamResult:
        try:
            payload = json.loads(body)
        except ValueError as exc:
            raise self.bad_json() from exc
        if not isinstance(payload, dict):
            raise self.bad_json()
        self.timings.total_ms = self.elapsed_ms()
        return proto.parse_body(self.endpoint.protocol, payload, self.status, self.timings)

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
            raise errors.TotalTimeout(
                f"the stream from {self.shown_url} was still running after "
                f"{self.total_timeout:g} s",
                url=self.shown_url,
                seconds=self.total_timeout,
                partial=self.partial(),
                fix="the answer is too long or too slow: lower max tokens or raise --timeout",
            )
        state = self.state
        on_chunk = self.on_chunk
        try:
            for event in self.parser.feed(chunk):
                text = state.handle(event, now)
                if text is not None and on_chunk is not None:
                    on_chunk(text, now)
        except proto.StreamFailed as exc:
            raise self.upstream(exc) from exc
        return state.closed

    def finish(self) -> StreamResult:
        now = self.elapsed_ms()
        try:
            for event in self.parser.close():
                self.state.handle(event, now)
        except proto.StreamFailed as exc:
            raise self.upstream(exc) from exc
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

    def upstream(self, exc: proto.StreamFailed) -> errors.UpstreamError:
        error = errors.UpstreamError(
            f"the stream from {self.shown_url} reported an error: {exc}",
            url=self.shown_url,
            fix="the model or its upstream failed mid-answer; retry, or check the gateway's logs",
        )
        return errors.scrubbed(error, self.sent_secrets())

    def models(self, response: httpx.Response, body: bytes) -> ModelsResult:
        try:
            payload = json.loads(body)
        except ValueError as exc:
            raise self.bad_json() from exc
        self.timings.total_ms = self.elapsed_ms()
        return ModelsResult(response.status_code, proto.parse_model_ids(payload), self.timings)


class _StreamSink:
    """A lean-transport answer into a `_Call`: the event stream as it arrives, or the body of an
    error answer (up to 64 KiB) or of a 2xx that is not a stream, handled as the httpx path does."""

    __slots__ = ("call", "status", "reason", "headers", "body", "kind")

    def __init__(self, call: _Call) -> None:
        self.call = call
        self.status = 0
        self.reason = ""
        self.headers: list[tuple[str, str]] = []
        self.body = bytearray()
        self.kind = "events"  # events | error | whole

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
        self.body += data
        return len(self.body) >= (_MAX_ERROR_BODY if self.kind == "error" else _MAX_WHOLE_BODY)

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
    return {"follow_redirects": False, "trust_env": True, "timeout": None}


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

    def __enter__(self) -> GatewayClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._http.close()

    def list_models(self) -> ModelsResult:
        """`GET {base}/models` (`/v1/models` for Anthropic) with the client's auth headers."""
        url = self.endpoint.models_url()
        call = _Call(self, url)
        headers = proto.base_headers(self.endpoint, stream=False)
        body, response = self._fetch(call, "GET", url, headers, None)
        return call.models(response, body)

    def complete(
        self, messages: Messages, *, max_tokens: int = 256, extra_body: dict[str, Any] | None = None
    ) -> StreamResult:
        """One non-streamed turn in the endpoint's protocol."""
        url, headers, content = self._stream_request(messages, max_tokens, extra_body, False)
        call = _Call(self, url)
        body, _ = self._fetch(call, "POST", url, headers, content)
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
        request = self._http.build_request(
            "POST", url, headers=headers, content=content, extensions=call.extensions()
        )
        try:
            response = self._http.send(request, stream=True)
        except httpx.HTTPError as exc:
            raise call.translate(exc) from exc
        try:
            call.headers_arrived(response.status_code)
            if response.status_code >= 300:
                raise call.status_error(response, _read_capped(response))
            if "text/event-stream" not in response.headers.get("content-type", "event-stream"):
                return call.not_a_stream(response, response.read())
            for chunk in response.iter_bytes():
                if call.feed(chunk):
                    break
            return call.finish()
        except httpx.HTTPError as exc:
            raise call.translate(exc) from exc
        finally:
            response.close()

    def _fetch(
        self, call: _Call, method: str, url: str, headers: dict[str, str], content: bytes | None
    ) -> tuple[bytes, httpx.Response]:
        request = self._http.build_request(
            method, url, headers=headers, content=content, extensions=call.extensions()
        )
        try:
            response = self._http.send(request, stream=True)
            try:
                call.headers_arrived(response.status_code)
                if response.status_code >= 300:
                    raise call.status_error(response, _read_capped(response))
                return response.read(), response
            finally:
                response.close()
        except httpx.HTTPError as exc:
            raise call.translate(exc) from exc


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
        self._direct: dict[str, bool] = {}

    def _lean(self, url: str) -> _h1.Http1Pool | None:
        """The lean transport for `url`, unless a proxy applies to it (httpx handles those)."""
        if self._h1 is None:
            return None
        direct = self._direct.get(url)
        if direct is None:
            direct = self._direct[url] = _h1.supports(url) and proxy_for(url) is None
        return self._h1 if direct else None

    async def __aenter__(self) -> AsyncGatewayClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        if self._h1 is not None:
            await self._h1.aclose()
        await self._pools.aclose()

    async def list_models(self) -> ModelsResult:
        """`GET {base}/models` (`/v1/models` for Anthropic) with the client's auth headers."""
        url = self.endpoint.models_url()
        call = _Call(self, url, is_async=True)
        headers = proto.base_headers(self.endpoint, stream=False)
        body, response = await self._fetch(call, "GET", url, headers, None)
        return call.models(response, body)

    async def complete(
        self, messages: Messages, *, max_tokens: int = 256, extra_body: dict[str, Any] | None = None
    ) -> StreamResult:
        """One non-streamed turn in the endpoint's protocol."""
        url, headers, content = self._stream_request(messages, max_tokens, extra_body, False)
        call = _Call(self, url, is_async=True)
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
                return call.not_a_stream(response, await response.aread())
            chunks = response.aiter_bytes()
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
                    return await response.aread(), response
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
        except httpx.HTTPError:
            return


def _read_capped(response: httpx.Response) -> bytes:
    """An error body, read up to 64 KiB (an HTML page from a proxy can be large)."""
    data = b""
    for chunk in response.iter_bytes():
        data += chunk
        if len(data) >= _MAX_ERROR_BODY:
            break
    return data


async def _aread_capped(response: httpx.Response) -> bytes:
    data = b""
    async for chunk in response.aiter_bytes():
        data += chunk
        if len(data) >= _MAX_ERROR_BODY:
            break
    return data
