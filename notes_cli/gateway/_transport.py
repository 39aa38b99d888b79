"""The one seam between pdnotes' HTTP callers and the wire: send a request, hand the answer to a
sink as it is read.

    await transport.request("POST", url, headers, body, sink, connect_timeout=10,
                            headers_timeout=10, idle_timeout=30, on_connect=None)

A transport calls `sink.on_headers(status, reason, headers)` once, then `sink.on_body(piece)` with
decoded pieces of at most `_limits.DECODE_PIECE` bytes until the body ends or the sink returns
True; it raises httpx's exception types for transport failures (`_http.translate` words them) and
whatever the sink raised. Two implementations: the lean `_h1.Http1Pool` (async, parsing inside
`data_received`, for bench's millisecond timings and the bridge's relay) and the httpx adapters
below (sync and async: proxies, and the cases `_h1` does not take). `pick` is the one choice
between them. `StatusSink` is the one sink that tells an error answer from a 2xx, and `Decoded`
the one bounded body decoder of the httpx side (`_h1` decodes with the same `_limits.Decoder`).
Redirects are never followed, so a key never reaches another origin.
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any, Protocol

import anyio
import httpx

from notes_cli.gateway import _limits
from notes_cli.gateway._limits import DRAIN_BYTES, DRAIN_S, MAX_ERROR_BODY
from notes_cli.gateway._pools import Pools

Headers = list[tuple[str, str]]
OnConnect = Callable[[], None]
_CONNECTED = ("connection.connect_tcp.complete", "connection.start_tls.complete")


class Sink(Protocol):
    """Where an answer goes. An exception raised here fails the request with it (and closes the
    connection)."""

    def on_headers(self, status: int, reason: str, headers: Headers) -> None: ...

    def on_body(self, data: bytes) -> bool:
        """A piece of the decoded body; True once the sink needs no more (the rest of the body
        is then read, briefly, so that the connection can be reused)."""
        ...

    # Optional: `on_reader(reader)`, called once the request is sent, for a sink that may hold
    # the answer back (a relay whose own client reads slowly) with the `Reader`'s pause/resume.


class Stream(Protocol):
    """What reads a 2xx as it arrives, behind a `StatusSink` (the relay's caller, the gateway
    client's `_Call`)."""

    def on_headers(self, status: int, headers: Headers) -> None: ...

    def on_body(self, data: bytes) -> bool:
        """A piece of the body; True once the stream's last event is in."""
        ...


class Reader(Protocol):
    """The reading of an answer, which a sink may hold back while its own client is slow."""

    def pause(self) -> None: ...

    def resume(self) -> None: ...


class AsyncTransport(Protocol):
    """What the async gateway client and the relay send through."""

    def takes(self, url: str) -> bool:
        """Whether this transport sends to `url` (the lean one declines proxied URLs)."""
        ...

    async def request(
        self,
        method: str,
        url: str,
        headers: dict[str, str],
        body: bytes | None,
        sink: Sink,
        *,
        connect_timeout: float,
        headers_timeout: float,
        idle_timeout: float,
        on_connect: OnConnect | None = None,
        slot_timeout: float | None = None,
    ) -> None:
        """Send one request and feed its answer to `sink`; return once the body has ended.
        `slot_timeout`: the longest wait for a free connection when all are busy
        (`httpx.PoolTimeout` after it; default `headers_timeout`)."""
        ...

    async def aclose(self) -> None: ...


class Transport(Protocol):
    """The same for the sync gateway client (httpx only)."""

    def request(
        self,
        method: str,
        url: str,
        headers: dict[str, str],
        body: bytes | None,
        sink: Sink,
        *,
        connect_timeout: float,
        headers_timeout: float,
        idle_timeout: float,
        on_connect: OnConnect | None = None,
    ) -> None: ...

    def close(self) -> None: ...


def pick(lean: AsyncTransport | None, fallback: AsyncTransport, url: str) -> AsyncTransport:
    """The lean transport for `url` unless it declines it (a proxy applies) or there is none (a
    test injected an httpx transport); then the httpx adapter."""
    return lean if lean is not None and lean.takes(url) else fallback


# --------------------------------------------------------------------------- the status sink


class StatusSink:
    """Between a transport and the reader of a 2xx: an error answer (3xx/4xx/5xx) never reaches
    `stream`, its body is kept (up to `MAX_ERROR_BODY`) to word the error; a 2xx goes to
    `stream` as it arrives, or, without one (or when its content-type lacks `stream_type`), is
    kept whole, at most `limit` decoded bytes (else `_limits.TooLarge`). `on_status(status)` is
    told of every status the moment the head is read."""

    __slots__ = (
        "stream",
        "stream_type",
        "on_status",
        "counter",
        "status",
        "reason",
        "headers",
        "body",
        "mode",
    )

    def __init__(
        self,
        stream: Stream | None = None,
        *,
        stream_type: str = "",
        limit: int = _limits.MAX_BODY_BYTES,
        on_status: Callable[[int], None] | None = None,
    ) -> None:
        self.stream = stream
        self.stream_type = stream_type
        self.on_status = on_status
        self.counter = _limits.Counter("the body", limit)
        self.status = 0
        self.reason = ""
        self.headers: Headers = []
        self.body = bytearray()
        self.mode = "whole"  # whole | stream | error

    @property
    def headers_seen(self) -> bool:
        return self.status != 0

    def on_headers(self, status: int, reason: str, headers: Headers) -> None:
        self.status, self.reason, self.headers = status, reason, headers
        if self.on_status is not None:
            self.on_status(status)
        if status >= 300:
            self.mode = "error"
        elif self.stream is not None and self.stream_type in self.header("content-type"):
            self.mode = "stream"
            self.stream.on_headers(status, headers)

    def on_reader(self, reader: Reader) -> None:
        on_reader = getattr(self.stream, "on_reader", None)
        if on_reader is not None:
            on_reader(reader)

    def body_target(self) -> Callable[[bytes], bool]:
        """Where the body goes once the head is read: a 2xx stream's own sink, directly."""
        if self.mode == "stream":
            return self.stream.on_body  # type: ignore[union-attr]
        return self.on_body

    def on_body(self, data: bytes) -> bool:
        mode = self.mode
        if mode == "stream":
            return self.stream.on_body(data)  # type: ignore[union-attr]
        if mode == "error":
            self.body += data
            return len(self.body) >= MAX_ERROR_BODY  # enough to word the error
        self.counter.add(len(data))
        self.body += data
        return False

    def header(self, name: str, default: str = "") -> str:
        return next((v for k, v in self.headers if k == name), default)

    def error_body(self) -> bytes:
        return bytes(self.body[:MAX_ERROR_BODY])

    def response(self) -> httpx.Response:
        """The answer's head as httpx shows it, for `_http.status_error`."""
        reason = {"reason_phrase": self.reason.encode("latin-1", "replace")}
        return httpx.Response(self.status, headers=self.headers, extensions=reason)


# --------------------------------------------------------------------------- the httpx side
# httpx decodes gzip / deflate in one step per network read (~64 KiB in, up to ~64 MiB out);
# `Decoded` reads the raw bytes and decodes them with `_limits.Decoder`, in 64 KiB pieces, so a
# sink's bound stops a compression bomb after one piece.


class Decoded:
    """The decoded pieces of one httpx response's raw reads. An error answer whose body cannot
    be decoded ends quietly (the status is the news, not its encoding); a 2xx's raises
    `httpx.DecodingError`."""

    __slots__ = ("response", "decoder")

    def __init__(self, response: httpx.Response) -> None:
        self.response = response
        self.decoder: _limits.Decoder | None = None

    def already_read(self) -> bytes | None:
        """The body of a response read before it reached us (a mocked response object served
        twice); None for a live stream."""
        if not self.response.is_stream_consumed:
            return None
        try:
            return self.response.content
        except httpx.ResponseNotRead:
            return None

    def start(self) -> bool:
        """Make the decoder; False when an error answer's encoding is not decodable."""
        try:
            self.decoder = _limits.Decoder(self.response.headers.get("content-encoding"))
        except _limits.UnsupportedEncoding as exc:
            return self._undecodable(exc)
        return True

    def pieces(self, raw: bytes) -> Iterator[bytes]:
        assert self.decoder is not None
        try:
            yield from self.decoder.decode(raw)
        except _limits.UnsupportedEncoding as exc:
            self._undecodable(exc)
            raise _Undecodable from None

    def rest(self) -> bytes:
        return self.decoder.flush() if self.decoder is not None else b""

    def _undecodable(self, exc: _limits.UnsupportedEncoding) -> bool:
        if self.response.status_code >= 300:
            return False
        raise httpx.DecodingError(str(exc)) from None


class _Undecodable(Exception):
    """An error answer's body stopped decoding: it ends there."""


def _timeouts(connect: float, headers: float, slot: float | None = None) -> dict[str, float]:
    # httpcore reads the read timeout from this dict when the body starts, so the headers wait
    # and the idle gap can differ (`_answered` switches it).
    pool = headers if slot is None else slot
    return {"connect": connect, "read": headers, "write": headers, "pool": pool}


def _answered(
    response: httpx.Response, sink: Sink, timeouts: dict[str, float], idle: float
) -> None:
    timeouts["read"] = idle
    sink.on_headers(response.status_code, response.reason_phrase, list(response.headers.items()))


def require_valid_proxies() -> None:
    """A malformed proxy variable (HTTPS_PROXY=http://[::1, a port past 65535) is a usage
    error naming it: httpx raises `InvalidURL` building any client that trusts the
    environment, before a request is made."""
    import importlib.util
    import urllib.request

    from notes_cli.clients.urls import require_url, shown_url
    from notes_cli.errors import UsageError

    for scheme, value in urllib.request.getproxies().items():
        if scheme == "no" or not value:
            continue
        name = f"{scheme.upper()}_PROXY"
        flag = f"{name} (or {name.lower()})"
        kind, _, rest = value.partition("://") if "://" in value else ("http", "", value)
        # the scheme may be socks5://: only the host and port are judged here
        require_url("http://" + rest, flag=flag, example="http://proxy.example:3128")
        if kind.lower().startswith("socks") and importlib.util.find_spec("socksio") is None:
            raise UsageError(
                f"{flag} {shown_url(value)!r} is a SOCKS proxy, and httpx needs the socksio "
                "package for one",
                fix="pip install 'httpx[socks]', or use an HTTP proxy",
            )


def _client_kwargs() -> dict[str, Any]:
    # follow_redirects=False: credentials must never be forwarded to another origin.
    # Accept-Encoding: only what `_limits.Decoder` can decode in bounded pieces.
    require_valid_proxies()
    return {
        "follow_redirects": False,
        "trust_env": True,
        "timeout": None,
        "headers": {"accept-encoding": _limits.ENCODINGS},
    }


class HttpxTransport:
    """The sync adapter: one `httpx.Client`. `on_socket(stream)` gets each new connection's
    network stream (the sync client's `Watchdog` shuts it when the wall clock runs out)."""

    def __init__(
        self,
        transport: httpx.BaseTransport | None = None,
        *,
        on_socket: Callable[[Any], None] | None = None,
    ) -> None:
        self._http = httpx.Client(transport=transport, **_client_kwargs())
        self._on_socket = on_socket

    def request(
        self,
        method: str,
        url: str,
        headers: dict[str, str],
        body: bytes | None,
        sink: Sink,
        *,
        connect_timeout: float,
        headers_timeout: float,
        idle_timeout: float,
        on_connect: OnConnect | None = None,
    ) -> None:
        timeouts = _timeouts(connect_timeout, headers_timeout)
        on_socket = self._on_socket

        def trace(name: str, info: dict[str, Any]) -> None:
            if name in _CONNECTED:
                if on_connect is not None:
                    on_connect()
                if on_socket is not None:
                    on_socket(info.get("return_value"))

        extensions = {"trace": trace, "timeout": timeouts}
        request = self._http.build_request(
            method, url, headers=headers, content=body, extensions=extensions
        )
        response = self._http.send(request, stream=True)
        try:
            _answered(response, sink, timeouts, idle_timeout)
            decoded = Decoded(response)
            done = decoded.already_read()
            if done is not None:
                sink.on_body(done)
                return
            if not decoded.start():
                return
            for raw in response.iter_raw():
                for piece in decoded.pieces(raw):
                    if sink.on_body(piece):
                        return
            rest = decoded.rest()
            if rest:
                sink.on_body(rest)
        except _Undecodable:
            return
        finally:
            response.close()

    def close(self) -> None:
        self._http.close()


class AsyncHttpxTransport:
    """The async adapter, over `Pools` of small httpx clients (see `_pools`; one client for an
    injected transport, which they would all share). A sink with `on_reader` may pause the
    reading; paused for the idle timeout, the request ends in `StalledReader`."""

    def __init__(
        self,
        transport: httpx.AsyncBaseTransport | None = None,
        *,
        verify: ssl.SSLContext | bool = True,
        max_connections: int = 256,
    ) -> None:
        kwargs = _client_kwargs()

        def make(connections: int) -> httpx.AsyncClient:
            limits = httpx.Limits(
                max_connections=connections, max_keepalive_connections=connections
            )
            return httpx.AsyncClient(transport=transport, verify=verify, limits=limits, **kwargs)

        self._pools = Pools(make, max_connections, shared=transport is not None)

    def takes(self, url: str) -> bool:
        return True

    async def request(
        self,
        method: str,
        url: str,
        headers: dict[str, str],
        body: bytes | None,
        sink: Sink,
        *,
        connect_timeout: float,
        headers_timeout: float,
        idle_timeout: float,
        on_connect: OnConnect | None = None,
        slot_timeout: float | None = None,
    ) -> None:
        timeouts = _timeouts(connect_timeout, headers_timeout, slot_timeout)

        async def trace(name: str, info: dict[str, Any]) -> None:  # (httpcore awaits it)
            if name in _CONNECTED and on_connect is not None:
                on_connect()

        with self._pools.client() as http:
            request = http.build_request(
                method,
                url,
                headers=headers,
                content=body,
                extensions={"trace": trace, "timeout": timeouts},
            )
            gate = _Gate()
            on_reader = getattr(sink, "on_reader", None)  # (optional: see `Sink`)
            if on_reader is not None:
                on_reader(gate)
            response = await http.send(request, stream=True)
            try:
                _answered(response, sink, timeouts, idle_timeout)
                await self._feed(response, sink, gate, idle_timeout)
            finally:
                await response.aclose()

    async def _feed(
        self, response: httpx.Response, sink: Sink, gate: _Gate, idle_timeout: float
    ) -> None:
        decoded = Decoded(response)
        done = decoded.already_read()
        if done is not None:
            sink.on_body(done)
            return
        if not decoded.start():
            return
        chunks = response.aiter_raw()
        try:
            async for raw in chunks:
                for piece in decoded.pieces(raw):
                    if sink.on_body(piece):
                        if response.status_code < 300:
                            await _read_to_end(chunks)
                        return
                if not gate.open.is_set():
                    await gate.wait(idle_timeout)
        except _Undecodable:
            return
        rest = decoded.rest()
        if rest:
            sink.on_body(rest)

    async def aclose(self) -> None:
        await self._pools.aclose()


class StalledReader(httpx.ReadTimeout):
    """The sink held the answer back (its own client read nothing) for the idle timeout: the
    request is ended rather than kept open for as long as that client stays connected."""


class _Gate:
    """The httpx adapter's `Reader`: the next read happens only while the gate is open."""

    def __init__(self) -> None:
        self.open = asyncio.Event()
        self.open.set()

    def pause(self) -> None:
        self.open.clear()

    def resume(self) -> None:
        self.open.set()

    async def wait(self, seconds: float) -> None:
        try:
            await asyncio.wait_for(self.open.wait(), seconds)
        except TimeoutError:
            raise StalledReader(f"the answer was held back for {seconds:g} s") from None


async def _read_to_end(chunks: AsyncIterator[bytes]) -> None:
    """Read what follows a stream's last event (a `[DONE]`, the chunked-encoding terminator)
    so httpcore puts the connection back in the pool: closing a response with body left
    unread closes its connection, and the next request would pay a new TCP connect. Bounded
    in time and size, and best effort: a server that keeps the body open only loses reuse."""
    size = 0
    with anyio.move_on_after(DRAIN_S), contextlib.suppress(httpx.HTTPError):
        async for chunk in chunks:
            size += len(chunk)
            if size > DRAIN_BYTES:
                return
