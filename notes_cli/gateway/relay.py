"""Calling an upstream on behalf of another program (the bridge): send a request body as it is,
hand the answer's bytes to a sink the moment they are read, and fail with the typed errors of
`gateway.errors`.

    upstream = Upstream("http://gpu-box:23333/v1", key=os.environ["UPSTREAM_KEY"])
    await upstream.stream("/chat/completions", body, sink)   # sink.on_body(bytes) per read
    status, body = await upstream.fetch("GET", "/models")

Unlike `GatewayClient` this parses nothing: the caller owns the protocol. It streams over the
lean HTTP/1.1 transport (`_h1`, parsing inside `data_received`, no task switch per chunk) unless
a proxy applies to the URL, then over httpx. An error status (3xx/4xx/5xx) never reaches the
sink: its body (up to 64 KiB) becomes an `HttpStatusError` carrying the upstream's message.
Cancelling the awaiting task closes the upstream connection, which is how the upstream learns
that the client went away.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncGenerator
from typing import Protocol

import httpx

from notes_cli.gateway import _h1, _limits, errors
from notes_cli.gateway._http import safe_url, status_error, translate

_MAX_ERROR_BODY = 64 * 1024
_MAX_WHOLE_BODY = 16 * 1024 * 1024


class RelaySink(Protocol):
    """Where a 2xx answer goes, called from the transport's read callback."""

    def on_headers(self, status: int, headers: list[tuple[str, str]]) -> None: ...

    def on_body(self, data: bytes) -> bool:
        """A piece of the body; True once the sink has seen the stream's last event."""
        ...


class Reader(Protocol):
    """The reading of an answer, which a sink may hold back while its own client is slow."""

    def pause(self) -> None: ...

    def resume(self) -> None: ...


class Upstream:
    """One upstream API root (`base_url`, e.g. `https://host/v1`) and its key (sent as a Bearer
    token; never shown: errors name the URL only)."""

    def __init__(
        self,
        base_url: str,
        key: str | None = None,
        *,
        connect_timeout: float = 10.0,
        headers_timeout: float = 300.0,
        idle_timeout: float = 300.0,
        max_connections: int = 512,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self._key = key
        self.connect_timeout = connect_timeout
        self.headers_timeout = headers_timeout
        self.idle_timeout = idle_timeout
        verify = httpx.create_ssl_context(trust_env=True)
        self._httpx = httpx.AsyncClient(
            transport=transport,
            verify=verify,
            follow_redirects=False,  # the key must never go to another origin
            trust_env=True,
            timeout=httpx.Timeout(headers_timeout, connect=connect_timeout, read=idle_timeout),
            limits=httpx.Limits(max_connections=max_connections),
        )
        self._h1 = None if transport is not None else _h1.Http1Pool(verify, max_connections)

    def url(self, path: str) -> str:
        return self.base_url + path

    def headers(self, *, stream: bool) -> dict[str, str]:
        headers = {"content-type": "application/json"}
        headers["accept"] = "text/event-stream" if stream else "application/json"
        if self._key:
            headers["authorization"] = f"Bearer {self._key}"
        return headers

    async def stream(self, path: str, body: bytes, sink: RelaySink) -> None:
        """POST `body` to `path` and feed the 2xx answer to `sink` as it arrives; return when
        the body ended (or soon after the sink said it had the last event). A sink with an
        `on_reader(reader)` method gets a `Reader` once the request is sent, to pause and
        resume reading the answer."""
        url = self.url(path)
        headers = self.headers(stream=True)
        guard = _StatusGuard(sink, url)
        lean = self._lean(url)
        try:
            if lean is not None:
                await lean.request(
                    "POST",
                    url,
                    headers,
                    body,
                    guard,
                    connect_timeout=self.connect_timeout,
                    headers_timeout=self.headers_timeout,
                    idle_timeout=self.idle_timeout,
                )
            else:
                await self._stream_httpx(url, headers, body, guard)
        except httpx.HTTPError as exc:
            raise guard.translate(exc, self) from exc
        guard.raise_for_status()

    async def fetch(self, method: str, path: str, body: bytes | None = None) -> tuple[int, bytes]:
        """A whole answer (for `GET /models` and non-streamed turns): (status, body). Error
        statuses raise `HttpStatusError`, transport failures the other typed errors."""
        url = self.url(path)
        collected = _Collect()
        guard = _StatusGuard(collected, url)
        headers = {**self.headers(stream=False), "accept-encoding": _limits.ENCODINGS}
        try:
            async with self._httpx.stream(method, url, headers=headers, content=body) as response:
                guard.on_headers(
                    response.status_code, response.reason_phrase, list(response.headers.items())
                )
                async with contextlib.aclosing(_decoded(response)) as pieces:
                    async for piece in pieces:
                        if guard.on_body(piece):
                            break
        except httpx.HTTPError as exc:
            raise guard.translate(exc, self) from exc
        guard.raise_for_status()
        return guard.status, bytes(collected.body)

    async def aclose(self) -> None:
        if self._h1 is not None:
            await self._h1.aclose()
        await self._httpx.aclose()

    def _lean(self, url: str) -> _h1.Http1Pool | None:
        """The lean transport, unless httpx must send to `url` (a proxy applies to it)."""
        return self._h1 if self._h1 is not None and self._h1.takes(url) else None

    async def _stream_httpx(
        self, url: str, headers: dict[str, str], body: bytes, guard: _StatusGuard
    ) -> None:
        gate = _Gate()
        guard.on_reader(gate)
        headers = {**headers, "accept-encoding": "identity"}  # (compressed, events come in lumps)
        async with (
            self._httpx.stream("POST", url, headers=headers, content=body) as response,
            contextlib.aclosing(_decoded(response)) as pieces,
        ):
            guard.on_headers(
                response.status_code, response.reason_phrase, list(response.headers.items())
            )
            async for piece in pieces:
                if guard.on_body(piece):
                    return
                if not gate.open.is_set():
                    try:
                        await asyncio.wait_for(gate.open.wait(), self.idle_timeout)
                    except TimeoutError:
                        held = f"the answer was held back for {self.idle_timeout:g} s"
                        raise _h1.StalledReader(held) from None


async def _decoded(response: httpx.Response) -> AsyncGenerator[bytes, None]:
    """The answer's bytes, decoded (an upstream may compress whatever was asked) in pieces of
    at most 64 KiB (`_limits.Decoder`), so a bound on them stops a gzip bomb after one piece:
    httpx's own decoding inflates a whole read at once."""
    try:
        decoder = _limits.Decoder(response.headers.get("content-encoding"))
    except _limits.UnsupportedEncoding as exc:
        raise httpx.DecodingError(str(exc)) from None
    async for raw in response.aiter_raw():
        try:
            for piece in decoder.decode(raw):
                yield piece
        except _limits.UnsupportedEncoding as exc:
            raise httpx.DecodingError(str(exc)) from None
    rest = decoder.flush()
    if rest:
        yield rest


class _Gate:
    """The httpx path's `Reader`: the next chunk is read only while the gate is open."""

    def __init__(self) -> None:
        self.open = asyncio.Event()
        self.open.set()

    def pause(self) -> None:
        self.open.clear()

    def resume(self) -> None:
        self.open.set()


class _Collect:
    """A sink that keeps the whole body (bounded)."""

    def __init__(self) -> None:
        self.body = bytearray()

    def on_headers(self, status: int, headers: list[tuple[str, str]]) -> None:
        pass

    def on_body(self, data: bytes) -> bool:
        self.body += data
        if len(self.body) > _MAX_WHOLE_BODY:
            raise httpx.RemoteProtocolError("the upstream's answer is larger than 16 MiB")
        return False


class _StatusGuard:
    """Between the transport and the caller's sink: a 2xx goes through, an error answer's body
    is kept (up to 64 KiB) for `raise_for_status`."""

    __slots__ = ("sink", "url", "status", "reason", "headers", "error_body", "headers_at")

    def __init__(self, sink: RelaySink, url: str) -> None:
        self.sink = sink
        self.url = safe_url(url)
        self.status = 0
        self.reason = ""
        self.headers: list[tuple[str, str]] = []
        self.error_body = bytearray()
        self.headers_at: float | None = None

    def on_headers(self, status: int, reason: str, headers: list[tuple[str, str]]) -> None:
        self.status, self.reason, self.headers = status, reason, headers
        self.headers_at = time.perf_counter()
        if status < 300:
            self.sink.on_headers(status, self.headers)

    def on_reader(self, reader: Reader) -> None:
        on_reader = getattr(self.sink, "on_reader", None)
        if on_reader is not None:
            on_reader(reader)

    def on_body(self, data: bytes) -> bool:
        if self.status < 300:
            return self.sink.on_body(data)
        self.error_body += data
        return len(self.error_body) >= _MAX_ERROR_BODY

    def raise_for_status(self) -> None:
        if self.status >= 300:
            reason = {"reason_phrase": self.reason.encode("latin-1", "replace")}
            response = httpx.Response(self.status, headers=self.headers, extensions=reason)
            body = bytes(self.error_body[:_MAX_ERROR_BODY])
            raise status_error(response, body, self.url, None)

    def translate(self, exc: httpx.HTTPError, upstream: Upstream) -> errors.GatewayError:
        seen = self.headers_at is not None
        if isinstance(exc, _h1.StalledReader):
            return errors.IdleStreamTimeout(
                f"the client stopped reading the stream from {self.url} for "
                f"{upstream.idle_timeout:g} s; the upstream request was ended",
                url=self.url,
                seconds=upstream.idle_timeout,
                fix="the client stalled; it can ask again",
            )
        if seen and isinstance(exc, httpx.TransportError | httpx.DecodingError):
            if isinstance(exc, httpx.TimeoutException):
                return errors.IdleStreamTimeout(
                    f"the stream from {self.url} went silent for {upstream.idle_timeout:g} s",
                    url=self.url,
                    seconds=upstream.idle_timeout,
                    fix="the upstream stalled mid-answer; retry, or check the upstream",
                )
            return errors.UpstreamError(
                f"the stream from {self.url} broke off mid-answer ({exc})",
                url=self.url,
                fix="the upstream closed the connection early; retry, or check its logs",
            )
        timeout = upstream.connect_timeout
        if isinstance(exc, httpx.ReadTimeout):
            timeout = upstream.headers_timeout
        return translate(exc, url=self.url, headers_seen=seen, timeout=timeout)
