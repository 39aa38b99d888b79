"""A small HTTP/1.1 client on asyncio protocols: the lean transport of the seam (`_transport`),
which the async gateway client streams over, and the bridge's relay.

Why it exists: `pdnotes bench` times first tokens to the millisecond while dozens of streams
run. Through httpx (httpcore, h11, anyio) a streamed request spends ~1.2 ms of Python between
"send" and its first byte on the wire, ~0.6 ms between a chunk's arrival and its delivery, and
~60 µs per chunk. Here a response is parsed inside `data_received`, the moment its bytes are
read, with no task switch: ~0.3 ms for a whole round trip over loopback
(docs/benchmarks/simulate-bench.md).

Kept small on purpose: one request at a time per connection, a keep-alive pool per origin,
Content-Length, chunked and close-delimited bodies, gzip / deflate (decoded in bounded pieces,
`_limits`), TLS with the client's SSL context. Not here (`_transport.pick` sends these through
the httpx adapter): proxies, HTTP/2. Redirects are not followed (nor by the httpx adapter).
Failures raise httpx's exception types, so `_http.translate` stays the one place that words
them for the user.
"""

from __future__ import annotations

import asyncio
import re
import ssl
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

import httpx

from notes_cli.gateway._limits import (
    DRAIN_BYTES,
    DRAIN_S,
    MAX_HEAD_BYTES,
    Decoder,
    UnsupportedEncoding,
    human,
)
from notes_cli.gateway._transport import Headers, Sink, StalledReader

_MAX_HEAD = MAX_HEAD_BYTES  # status line + headers
_MAX_CHUNK_LINE = 4 * 1024
_HEX_SIZE = re.compile(rb"[0-9A-Fa-f]{1,16}")
# An idle connection older than this is not reused: uvicorn (and so vLLM and SGLang) closes
# idle connections after 5 s, and a request written just as the server closes would be lost.
KEEPALIVE_S = 4.0
__all__ = ["DRAIN_BYTES", "DRAIN_S", "Headers", "Http1Pool", "Sink", "StalledReader"]


class _Stale(httpx.RemoteProtocolError):
    """A reused connection closed before any byte of the answer: the server had timed it out,
    so it never saw the request, which is safe to send again on a new connection."""


def supports(url: str) -> bool:
    """Whether this transport can send to `url` as httpx would: http(s), no credentials in it."""
    try:
        parts = urlsplit(url)
        return parts.scheme in ("http", "https") and bool(parts.hostname) and not parts.username
    except ValueError:
        return False


class Origin:
    """Where a URL's requests go, and their request-line target."""

    __slots__ = ("key", "host", "port", "tls", "host_header", "target")

    def __init__(self, url: str) -> None:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise httpx.UnsupportedProtocol(f"unsupported URL {url!r}")
        self.tls = parts.scheme == "https"
        self.host = parts.hostname
        default = 443 if self.tls else 80
        self.port = parts.port or default
        shown = f"[{self.host}]" if ":" in self.host else self.host
        self.host_header = shown if self.port == default else f"{shown}:{self.port}"
        self.target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        self.key = (self.tls, self.host, self.port)


def encode_request(
    method: str, origin: Origin, headers: dict[str, str], body: bytes | None
) -> bytes:
    """The request's bytes. A CR, LF or NUL in a header would let a value smuggle in headers."""
    return _with_body(encode_head(method, origin, headers), body)


def _with_body(head: bytes, body: bytes | None) -> bytes:
    if body is None:
        return head + b"\r\n"
    return head + b"content-length: %d\r\n\r\n" % len(body) + body


def encode_head(method: str, origin: Origin, headers: dict[str, str]) -> bytes:
    """The request line and headers, without the length and the blank line."""
    lines = [f"{method} {origin.target} HTTP/1.1", f"host: {origin.host_header}"]
    for name, value in headers.items():
        if any(c in name or c in value for c in "\r\n\0"):
            raise httpx.LocalProtocolError(f"illegal character in header {name!r}")
        lines.append(f"{name}: {value}")
    if "accept-encoding" not in headers:  # (the relay asks for identity itself)
        lines.append("accept-encoding: identity")  # a compressed event stream arrives in lumps
    return ("\r\n".join(lines) + "\r\n").encode("utf-8")


def _nowhere(data: bytes) -> bool:
    """The body's sink while a connection serves no request: nothing needs more."""
    return True


class _Connection(asyncio.Protocol):
    """One keep-alive connection, parsing the answer to the request it serves."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.transport: asyncio.Transport | None = None
        self.closed = False
        self.reused = False
        self.paused = False  # reading held back by the sink (its client is slow)
        self.paused_at = 0.0
        self.idle_since = 0.0
        self.release: Callable[[_Connection], None] | None = None
        self.on_lost: Callable[[_Connection], None] | None = None
        self._buf = bytearray()
        self._timer: asyncio.TimerHandle | None = None
        self._begin(None, None, 0.0)

    def _begin(self, sink: Sink | None, done: asyncio.Future[None] | None, idle: float) -> None:
        self.sink = sink
        # where body bytes go: the sink, or what it names once it has the head (`_head`)
        self.on_body: Callable[[bytes], bool] = sink.on_body if sink else _nowhere
        self.done = done
        self.state = "idle"  # idle | head | body | drain | finished
        self.idle_timeout = idle
        self.framing = ""  # length | chunked | close | none
        self.left = 0  # bytes left of the body (length) or of the current chunk (chunked)
        self.chunk_state = "size"  # size | data | crlf | trailers
        self.reusable = False
        self.received = 0
        self.drain_limit = 0
        self.decoder: Decoder | None = None  # for gzip / deflate bodies
        self.timeout = 0.0
        self.last = 0.0

    # --- asyncio.Protocol ----------------------------------------------------------------
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        if (
            self.state == "body"
            and self.framing == "chunked"
            and self.chunk_state == "size"
            and not self._buf
            and self.decoder is None
        ):
            # A stream's hot path: a read of whole chunks goes to the sink without the
            # general parser's buffer and layers (a third of the bridge's Python per lone
            # event, benchmarks/bridge); what is left (a partial chunk, the end) takes the
            # general path.
            self.received += len(data)
            self.last = self.loop.time()
            try:
                end = len(data)
                line_end = data.find(b"\r\n")  # (no bounds: those cost a tenth of the step)
                if 0 < line_end < _MAX_CHUNK_LINE and data[end - 2 :] == b"\r\n":
                    # a read of exactly one chunk (a streamed event), the commonest: straight
                    # to the sink, inlined (`_take_chunks` reads it the same way)
                    try:
                        size = int(data[:line_end], 16)
                    except ValueError:
                        size = 0
                    if size > 0 and line_end + 4 + size == end:
                        if self.on_body(data[line_end + 2 : end - 2]):
                            self._drain()
                        return
                at = self._take_chunks(data)
                if at < len(data):
                    self._buf += data[at:] if at else data
                    self._parse()
            except Exception as error:  # the sink's own errors too
                self._fail(error)
            return
        if self.state in ("idle", "finished"):
            self.close()  # bytes nobody asked for: the connection cannot be trusted
            return
        self.received += len(data)
        if self.state == "drain":  # a hard deadline: trickling bytes do not extend it
            if self.received > self.drain_limit:
                self.reusable = False
                self._settle()
                return
        else:
            self.last = self.loop.time()
        self._buf += data
        try:
            self._parse()
        except Exception as error:  # the sink's own errors too (an upstream error event…)
            self._fail(error)

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        if self.on_lost is not None:
            self.on_lost(self)
        reason = f" ({exc})" if exc else ""
        if self.state == "body" and self.framing == "close":
            self._finish_body()
        elif self.state == "head":
            kind = _Stale if self.reused and not self.received else httpx.RemoteProtocolError
            self._fail(kind(f"the server closed the connection without an answer{reason}"))
        elif self.state == "body":
            self._fail(httpx.RemoteProtocolError(f"the server closed the body early{reason}"))
        elif self.state == "drain":
            self._settle()

    # --- serving one request -----------------------------------------------------------
    def send(
        self, request: bytes, sink: Sink, headers_s: float, idle_s: float
    ) -> asyncio.Future[None]:
        """Write `request`; the future resolves once the answer has ended (or its drain was
        given up), and fails with a transport error or whatever the sink raised."""
        done = self.loop.create_future()
        self._begin(sink, done, idle_s)
        self._buf.clear()
        self.state = "head"
        self._watch(headers_s)
        assert self.transport is not None
        self.transport.write(request)
        return done

    def close(self) -> None:
        self.closed = True
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self.transport is not None:
            self.transport.close()

    def pause(self) -> None:
        """Stop reading the answer until `resume`; the idle timeout then counts the pause (a
        sink paused for that long fails the request with `StalledReader`)."""
        if not self.paused and self.transport is not None and not self.closed:
            self.paused = True
            self.paused_at = self.loop.time()
            self.transport.pause_reading()

    def resume(self) -> None:
        if self.paused:
            self.paused = False
            self.last = self.loop.time()
            if self.transport is not None and not self.closed:
                self.transport.resume_reading()

    def _watch(self, timeout: float) -> None:
        """Fail (or, draining, give up) after `timeout` s without data. One timer per request,
        moved only when it fires or must fire sooner: a chunk just notes the time."""
        self.timeout = timeout
        self.last = now = self.loop.time()
        timer = self._timer
        if timer is not None and timer.when() <= now + timeout:
            return
        if timer is not None:
            timer.cancel()
        self._timer = self.loop.call_at(now + timeout, self._check)

    def _check(self) -> None:
        self._timer = None
        if self.state not in ("head", "body", "drain"):
            return
        due = (self.paused_at if self.paused else self.last) + self.timeout
        if self.loop.time() < due:
            self._timer = self.loop.call_at(due, self._check)
        elif self.state == "drain":
            self.reusable = False  # the body never ended: do not reuse the connection
            self._settle()
        elif self.paused:
            self._fail(StalledReader(f"the answer was held back for {self.timeout:g} s"))
        else:
            self._fail(httpx.ReadTimeout(f"no data for {self.timeout:g} s"))

    def _fail(self, error: BaseException) -> None:
        if self.done is not None and not self.done.done():
            self.done.set_exception(error)
        self.state = "finished"
        self.close()

    def _settle(self) -> None:
        """The answer is over, or given up on: back to the pool if it can be reused."""
        if self.done is not None and not self.done.done():
            self.done.set_result(None)
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self.resume()
        if self.reusable and not self.closed and self.release is not None:
            self.state = "idle"
            self.idle_since = self.loop.time()
            self.release(self)
        else:
            self.state = "finished"
            self.close()

    # --- parsing -------------------------------------------------------------------------
    def _parse(self) -> None:
        while self.state == "head":
            end = self._buf.find(b"\r\n\r\n")
            if end < 0:
                if len(self._buf) > _MAX_HEAD:
                    raise httpx.RemoteProtocolError(
                        f"response headers larger than {human(_MAX_HEAD)}"
                    )
                return
            head = bytes(self._buf[:end])
            del self._buf[: end + 4]
            self._head(head)  # stays in "head" after an interim 1xx answer
        if self.state in ("body", "drain"):
            self._body()

    def _head(self, head: bytes) -> None:
        status_line, *lines = head.decode("latin-1").split("\r\n")
        version, _, rest = status_line.partition(" ")
        code, _, reason = rest.partition(" ")
        if not version.startswith("HTTP/1.") or not code.isdigit():
            raise httpx.RemoteProtocolError(f"not an HTTP/1.x answer: {status_line[:80]!r}")
        status = int(code)
        if 100 <= status < 200:
            return
        headers: Headers = []
        fields: dict[str, str] = {}
        for line in lines:
            name, sep, value = line.partition(":")
            if not sep:
                raise httpx.RemoteProtocolError(f"malformed header line {line[:80]!r}")
            name, value = name.strip().lower(), value.strip()
            headers.append((name, value))
            fields[name] = f"{fields[name]}, {value}" if name in fields else value
        self._framing(version, status, fields)
        self.state = "body"
        self._watch(self.idle_timeout)
        assert self.sink is not None
        self.sink.on_headers(status, reason, headers)
        # a sink that only forwards a 2xx body (`StatusSink`) names the final one: a call less
        # per streamed event
        target = getattr(self.sink, "body_target", None)
        if target is not None:
            self.on_body = target()
        if self.framing == "none":
            self._finish_body()

    def _framing(self, version: str, status: int, fields: dict[str, str]) -> None:
        connection = fields.get("connection", "").lower()
        if version == "HTTP/1.0":
            self.reusable = "keep-alive" in connection
        else:
            self.reusable = "close" not in connection
        if status in (204, 304):
            self.framing = "none"
        elif "chunked" in fields.get("transfer-encoding", "").lower():
            self.framing = "chunked"
        elif "content-length" in fields:
            length = fields["content-length"].split(",")[0].strip()
            if not length.isdigit():
                raise httpx.RemoteProtocolError(f"bad content-length {length!r}")
            self.left = int(length)
            self.framing = "length" if self.left else "none"
        else:
            self.framing, self.reusable = "close", False
        coding = fields.get("content-encoding", "identity").lower()
        if coding not in ("identity", ""):
            try:
                self.decoder = Decoder(coding)
            except UnsupportedEncoding as exc:
                raise httpx.DecodingError(str(exc)) from None

    def _body(self) -> None:
        buf = self._buf
        if self.framing == "close":
            data = bytes(buf)
            buf.clear()
            self._deliver(data)
        elif self.framing == "length":
            data = bytes(buf[: self.left])
            del buf[: len(data)]
            self.left -= len(data)
            self._deliver(data)
            if self.left == 0:
                self._finish_body()
        else:
            self._chunks()

    def _chunks(self) -> None:
        buf = self._buf
        if self.chunk_state == "size" and self.state == "body":
            self._whole_chunks()
        while buf and self.state in ("body", "drain"):
            if self.chunk_state == "data":
                data = bytes(buf[: self.left])
                del buf[: len(data)]
                self.left -= len(data)
                self._deliver(data)
                if self.left:
                    return
                self.chunk_state = "crlf"
                continue
            end = buf.find(b"\r\n")
            if end < 0:
                if len(buf) > _MAX_CHUNK_LINE:
                    raise httpx.RemoteProtocolError("malformed chunked body (line too long)")
                return
            line = bytes(buf[:end])
            del buf[: end + 2]
            if self.chunk_state == "crlf":
                if line:
                    raise httpx.RemoteProtocolError("malformed chunked body (no CRLF after data)")
                self.chunk_state = "size"
            elif self.chunk_state == "size":
                size = line.split(b";", 1)[0].strip()
                if not _HEX_SIZE.fullmatch(size):  # int() would take -1, +5, 0x5, 0_5
                    raise httpx.RemoteProtocolError(f"bad chunk size {size[:20]!r}")
                self.left = int(size, 16)
                self.chunk_state = "data" if self.left else "trailers"
            elif not line:  # the blank line that ends the (usually empty) trailers
                self._finish_body()

    def _whole_chunks(self) -> None:
        """The buffered bytes' whole chunks (see `_take_chunks`), taken off the buffer."""
        at = self._take_chunks(self._buf)
        if at:
            del self._buf[:at]

    def _take_chunks(self, buf: bytes | bytearray) -> int:
        """The common case first: `buf` starts with whole `size CRLF data CRLF` chunks. Their
        data goes to the sink in one piece (one call per read, not per chunk: a streamed
        event is one chunk, and this was a sixth of the bridge's CPU per event); returns how
        many bytes were taken. What is left (a partial chunk, the last chunk, anything odd) is
        for `_chunks` to parse."""
        end = len(buf)
        line_end = buf.find(b"\r\n", 0, _MAX_CHUNK_LINE)
        if line_end > 0:  # a read of exactly one chunk, the commonest, without the loop
            try:
                size = int(buf[:line_end], 16)
            except ValueError:
                size = 0
            # (int() also takes `+5` or `0x5` here: harmless, the chunk must end where it says)
            if size > 0 and line_end + 4 + size == end and buf[end - 2 :] == b"\r\n":
                self._deliver(bytes(buf[line_end + 2 : end - 2]))
                return end
        pieces: list[bytes] = []
        at = 0
        while at < end:
            line_end = buf.find(b"\r\n", at, at + _MAX_CHUNK_LINE)
            if line_end < 0:
                break
            try:
                size = int(buf[at:line_end], 16)  # (int() allows the spaces around it)
            except ValueError:
                try:  # a chunk extension: `1a;name=value`
                    size = int(buf[at:line_end].split(b";", 1)[0], 16)
                except ValueError:
                    break  # `_chunks` says what is wrong with it
            data_end = line_end + 2 + size
            if size <= 0 or data_end + 2 > end or buf[data_end : data_end + 2] != b"\r\n":
                break
            pieces.append(bytes(buf[line_end + 2 : data_end]))
            at = data_end + 2
        if pieces:
            self._deliver(pieces[0] if len(pieces) == 1 else b"".join(pieces))
        return at

    def _deliver(self, data: bytes) -> None:
        if self.state != "body" or self.sink is None:
            return  # draining: the sink already has what it needs
        if self.decoder is None:
            if data:
                self._give(data)
            return
        try:
            # Piece by piece, so a sink over its byte bound stops a bomb after one piece.
            for piece in self.decoder.decode(data):
                if self._give(piece):
                    return
        except UnsupportedEncoding as exc:
            raise httpx.DecodingError(str(exc)) from None

    def _give(self, data: bytes) -> bool:
        if not self.on_body(data):
            return False
        self._drain()
        return True

    def _drain(self) -> None:
        """The sink has what it needs: read the rest of the body briefly (for reuse)."""
        self.state = "drain"
        self.drain_limit = self.received + DRAIN_BYTES
        self._watch(DRAIN_S)

    def _finish_body(self) -> None:
        if self.decoder is not None:
            rest, self.decoder = self.decoder.flush(), None
            if rest and self.state == "body" and self.sink is not None:
                self._give(rest)
        if self._buf:
            self.reusable = False  # bytes beyond the body: the next answer would be misread
        self._settle()


class Http1Pool:
    """Keep-alive HTTP/1.1 connections per origin, at most `max_connections` busy at once."""

    def __init__(self, ssl_context: ssl.SSLContext, max_connections: int = 256) -> None:
        self._ssl = ssl_context
        self._idle: dict[tuple[bool, str, int], list[_Connection]] = {}
        self._origins: dict[str, Origin] = {}
        self._heads: dict[tuple[Any, ...], bytes] = {}
        self._slots = asyncio.Semaphore(max_connections)
        self._open: set[_Connection] = set()  # idle, busy and draining
        self._closed = False
        self._takes: dict[str, bool] = {}

    def takes(self, url: str) -> bool:
        """Whether requests to `url` go through this pool; the rest (a proxy applies, or a URL
        this transport cannot send to) are httpx's. Cached: a client posts to one or two URLs."""
        direct = self._takes.get(url)
        if direct is None:
            from notes_cli.proxy import select_proxy

            if len(self._takes) > 64:
                self._takes.clear()
            direct = self._takes[url] = supports(url) and select_proxy(url) is None
        return direct

    def _encode(self, method: str, url: str, headers: dict[str, str], body: bytes | None) -> bytes:
        """`encode_request`, its head built (and checked) once per method, URL and headers:
        a relay sends the same few, and checking each header's characters was a tenth of
        the bridge's set-up before the upstream call (benchmarks/bridge)."""
        key = (method, url, *headers.items())
        head = self._heads.get(key)
        if head is None:
            if len(self._heads) > 64:
                self._heads.clear()
            head = self._heads[key] = encode_head(method, self.origin(url), headers)
        return _with_body(head, body)

    def origin(self, url: str) -> Origin:
        """`url` parsed (cached: a client posts to one or two URLs)."""
        origin = self._origins.get(url)
        if origin is None:
            if len(self._origins) > 64:
                self._origins.clear()
            origin = self._origins[url] = Origin(url)
        return origin

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
        on_connect: Callable[[], None] | None = None,
        slot_timeout: float | None = None,
    ) -> None:
        """Send one request and feed its answer to `sink`; return once the body has ended (at
        most DRAIN_S after the sink was satisfied). Raises httpx's exception types for
        transport failures (`httpx.PoolTimeout` when every connection stayed busy for
        `slot_timeout`, default `headers_timeout`), and whatever the sink raised."""
        origin = self.origin(url)
        request = self._encode(method, url, headers, body)
        await self._take_slot(headers_timeout if slot_timeout is None else slot_timeout)
        try:
            connection = self._take_idle(origin)
            if connection is not None:
                try:
                    return await self._exchange(
                        connection, request, sink, headers_timeout, idle_timeout
                    )
                except _Stale:
                    pass  # the server had closed it; it never saw the request: send it anew
            connection = await self._connect(origin, connect_timeout)
            if on_connect is not None:
                on_connect()
            await self._exchange(connection, request, sink, headers_timeout, idle_timeout)
        finally:
            self._slots.release()

    async def _take_slot(self, seconds: float) -> None:
        """A connection slot, waited for at most `seconds`: with every slot held (a stalled
        upstream, or a relay's clients that never read) a request waited forever (issue 36)."""
        if not self._slots.locked():
            await self._slots.acquire()  # (free now: no timer)
            return
        try:
            async with asyncio.timeout(seconds):
                await self._slots.acquire()
        except TimeoutError:
            raise httpx.PoolTimeout(f"no free connection within {seconds:g} s") from None

    async def _exchange(
        self, connection: _Connection, request: bytes, sink: Sink, headers_s: float, idle_s: float
    ) -> None:
        done = connection.send(request, sink, headers_s, idle_s)
        on_reader = getattr(sink, "on_reader", None)  # (optional: see `Sink`)
        if on_reader is not None:
            on_reader(connection)
        try:
            await done
        except BaseException:
            connection.close()
            raise

    def _take_idle(self, origin: Origin) -> _Connection | None:
        idle = self._idle.get(origin.key)
        now = asyncio.get_running_loop().time()
        while idle:
            connection = idle.pop()
            transport = connection.transport
            fresh = now - connection.idle_since < KEEPALIVE_S
            if fresh and not connection.closed and transport and not transport.is_closing():
                connection.reused = True
                return connection
            connection.close()
        return None

    def _release(self, connection: _Connection, key: tuple[bool, str, int]) -> None:
        if self._closed:
            connection.close()
        else:
            self._idle.setdefault(key, []).append(connection)

    async def _connect(self, origin: Origin, timeout: float) -> _Connection:
        loop = asyncio.get_running_loop()
        tls = self._ssl if origin.tls else None
        try:
            async with asyncio.timeout(timeout):
                _, connection = await loop.create_connection(
                    lambda: _Connection(loop),
                    origin.host,
                    origin.port,
                    ssl=tls,
                    server_hostname=origin.host if tls else None,
                )
        except TimeoutError as exc:
            raise httpx.ConnectTimeout(f"no connection within {timeout:g} s") from exc
        except (OSError, ssl.SSLError) as exc:  # refused, unresolvable, TLS handshake…
            raise httpx.ConnectError(str(exc) or type(exc).__name__) from exc
        key = origin.key
        connection.release = lambda c: self._release(c, key)
        connection.on_lost = self._open.discard
        self._open.add(connection)
        return connection

    async def aclose(self) -> None:
        """Close every connection, idle or still draining a finished answer."""
        self._closed = True
        for connection in list(self._open):
            connection.close()
        self._open.clear()
        self._idle.clear()
