"""The bridge's HTTP/1.1 server: an asyncio protocol over httptools (the C parser uvicorn uses),
handing each whole request to the app with a `Response` that writes straight to the socket.

Why not uvicorn, which the engine keeps: the bridge is a relay, and its cost is what it adds
to every request and every event (issue 17's goals: < 1 ms of first-token time, < 20 µs per
event). Timed inside the bridge on this 2-core machine, one request at a time
(benchmarks/bridge; docs/benchmarks/bridge.md has the before and after), uvicorn and ASGI took
~90 µs from a request's bytes to the app, a task per request plus one to watch for the
client's disconnect, a loop turn between the upstream's first bytes and the client's, and three
writes (headers, the head events, the first text) before the first token left. Here the app
is called once per request, the client's disconnect cancels its task, and a stream's status
line, headers and first events go out in one write from the upstream's read callback.

Kept to what the bridge's clients need: keep-alive, pipelined requests answered in order,
`Expect: 100-continue`, Content-Length and chunked request bodies (httptools decodes both),
chunked streamed answers. `Upgrade` (curl --http2 asks for h2c) is ignored, as RFC 9110
allows: the request is served over HTTP/1.1, body and all. Bounded: a request, head and body,
must be complete within `request_timeout_s` of its first byte (or of the connection opening:
slowloris, or a body sent a byte at a time), and its head must fit in 64 KiB and 128 headers
(nginx and Node stop at 8-16 KiB; Claude Code sends ~25 headers); a body over `max_body` is
refused with 413 before it is read; an idle keep-alive connection is closed after
`keepalive_s`. A client that reads slower than the answer is produced gets `pause_writing`,
which the app turns into pausing its upstream, and no pipelined request is started until it
reads again (no unbounded buffering). A client that half-closes (shuts down its sending side)
is taken as gone, as nginx takes it for a proxied request: that is how the bridge learns
early that a client left, and its upstream call is cancelled.
"""

from __future__ import annotations

import asyncio
import collections
import logging
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from http import HTTPStatus
from typing import Any

import httptools

log = logging.getLogger("pdnotes.bridge")

MAX_HEAD_BYTES = 64 * 1024
MAX_HEADERS = 128
LINGER_S = 1.0  # after refusing a request, its remaining bytes are read (and dropped) this long

Handler = Callable[["Request", "Response"], Coroutine[Any, Any, None]]


@dataclass(slots=True)
class Request:
    """One whole request: `headers` are (lower-cased name, value) pairs, as sent."""

    method: str
    path: str
    query: str
    headers: list[tuple[bytes, bytes]]
    body: bytes
    keep_alive: bool


def _status_line(status: int) -> bytes:
    try:
        phrase = HTTPStatus(status).phrase
    except ValueError:
        phrase = ""
    return b"HTTP/1.1 %d %s\r\n" % (status, phrase.encode("latin-1"))


_STATUS_LINES = {status.value: _status_line(status.value) for status in HTTPStatus}
_LAST_CHUNK = b"0\r\n\r\n"


_HEADS: dict[tuple[int, tuple[tuple[bytes, bytes], ...], bool], bytes] = {}


def _head(status: int, headers: list[tuple[bytes, bytes]], close: bool) -> bytes:
    """The status line and headers, without the framing header and the blank line. The app's
    heads are a handful of constants: each is built (and checked) once."""
    key = (status, tuple(headers), close)
    head = _HEADS.get(key)
    if head is None:
        parts = [_STATUS_LINES.get(status) or _status_line(status)]
        for name, value in headers:
            if any(c in name or c in value for c in (b"\r", b"\n")):
                raise ValueError(f"a CR or LF in the header {name!r}")  # would split the answer
            parts += (name, b": ", value, b"\r\n")
        if close:
            parts.append(b"connection: close\r\n")
        head = b"".join(parts)
        if len(_HEADS) < 256:  # (a Retry-After value varies: error answers stay uncached)
            _HEADS[key] = head
    return head


def _chunk(data: bytes) -> bytes:
    return b"%x\r\n%s\r\n" % (len(data), data) if data else b""


class Response:
    """The answer to one request, written as it is given: `send` a whole answer, or `start` a
    chunked stream, `write` to it and `end` it. Writes after the client has gone are dropped.
    `on_pause` / `on_resume` (set by a streaming handler) run when the client's socket buffer
    fills and drains again."""

    __slots__ = (
        "_connection",
        "started",
        "complete",
        "keep_alive",
        "head_only",
        "on_pause",
        "on_resume",
    )

    def __init__(self, connection: _Connection, keep_alive: bool, head_only: bool) -> None:
        self._connection = connection
        self.started = False
        self.complete = False
        self.keep_alive = keep_alive
        self.head_only = head_only
        self.on_pause: Callable[[], None] | None = None
        self.on_resume: Callable[[], None] | None = None

    @property
    def disconnected(self) -> bool:
        return self._connection.lost

    @property
    def paused(self) -> bool:
        return self._connection.write_paused

    def send(self, status: int, headers: list[tuple[bytes, bytes]], body: bytes = b"") -> None:
        """A whole answer, with its Content-Length (no body for HEAD)."""
        self._begin()
        head = _head(status, headers, not self.keep_alive)
        length = b"content-length: %d\r\n\r\n" % len(body)
        self._connection.write(head + length if self.head_only else head + length + body)
        self._finish()

    def start(self, status: int, headers: list[tuple[bytes, bytes]], first: bytes = b"") -> None:
        """The head of a chunked stream, and `first` as its first chunk, in one write."""
        self._begin()
        head = _head(status, headers, not self.keep_alive)
        self._connection.write(head + b"transfer-encoding: chunked\r\n\r\n" + _chunk(first))

    def write(self, data: bytes) -> None:
        if data:  # (the connection's `write`, inlined: once per streamed event)
            connection = self._connection
            transport = connection.transport
            if transport is not None and not connection.lost and not transport.is_closing():
                transport.write(b"%x\r\n%s\r\n" % (len(data), data))

    def end(self, data: bytes = b"") -> None:
        """The stream's last bytes and its terminating chunk, in one write."""
        if self.complete:
            return
        self._connection.write(_chunk(data) + _LAST_CHUNK)
        self._finish()

    def _begin(self) -> None:
        if self.started:
            raise RuntimeError("the answer has already started")
        self.started = True

    def _finish(self) -> None:
        self.complete = True


class _Reject(Exception):
    """A request refused while it is parsed (too large): answered at once, then hung up."""

    def __init__(self, status: int, kind: str, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.kind = kind


class _Connection(asyncio.Protocol):
    """One client connection: parses requests, runs one handler at a time, in order."""

    def __init__(self, server: HttpServer) -> None:
        self.server = server
        self.loop = server.loop
        self.parser = httptools.HttpRequestParser(self)
        self.transport: asyncio.Transport | None = None
        self.timer: asyncio.TimerHandle | None = None
        self.lost = False
        self.write_paused = False
        self.task: asyncio.Task[None] | None = None
        self.response: Response | None = None
        self.queue: collections.deque[Request] = collections.deque()
        self.rejected = False  # refused: what else comes is read and dropped
        self.deferred: _Reject | None = None  # a refusal due once the answers before it are out
        self._reset()

    def _reset(self) -> None:
        self.url = b""
        self.headers: list[tuple[bytes, bytes]] = []
        self.head_size = 0
        self.body: bytes | bytearray = b""  # (a bytearray once a second piece comes)
        self.continue_due = False  # `Expect: 100-continue` waiting for the answers ahead
        self.upgrading = False

    # --- asyncio.Protocol ----------------------------------------------------------------
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]
        self.server.connections.add(self)
        self._arm(self.server.request_timeout_s)  # a connection that sends nothing is cut too

    def data_received(self, data: bytes) -> None:
        # A loop, not recursion: each request that asks to upgrade hands back the bytes to
        # parse next (a thousand pipelined `Upgrade: h2c` requests recursed past Python's limit)
        pending: bytes | None = data
        while pending is not None and not self.rejected:
            pending = self._feed(pending)

    def _feed(self, data: bytes) -> bytes | None:
        """Parse `data`; what is still to parse after a request that asked to upgrade."""
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserUpgrade as upgrade:
            return self._without_upgrade(data[upgrade.args[0] :])
        except _Reject as reject:
            self._reject(reject)
        except httptools.HttpParserError as error:
            cause = error.__context__
            if isinstance(cause, _Reject):  # raised in a parser callback
                self._reject(cause)
            else:
                self._reject(_Reject(400, "invalid_request", "malformed HTTP request"))
        return None

    def connection_lost(self, exc: Exception | None) -> None:
        self.lost = True
        self.server.connections.discard(self)
        self._disarm()
        self.queue.clear()
        if self.task is not None:
            self.task.cancel()  # the client went away: its handler (and upstream call) ends
        if self.write_paused:
            self.resume_writing()

    def pause_writing(self) -> None:
        self.write_paused = True
        response = self.response
        if response is not None and response.on_pause is not None:
            response.on_pause()

    def resume_writing(self) -> None:
        self.write_paused = False
        response = self.response
        if response is not None and response.on_resume is not None:
            response.on_resume()
        if self.task is None:  # an answer ended while paused: what was due between answers
            self._next()  # (the next request, a refusal, a 100 Continue, the keep-alive timer)

    # --- httptools callbacks -------------------------------------------------------------
    def on_message_begin(self) -> None:
        self._reset()
        if self.task is None:
            self._arm(self.server.request_timeout_s)

    def on_url(self, url: bytes) -> None:
        self.url += url
        self._count(len(url))

    def on_header(self, name: bytes, value: bytes) -> None:
        self.headers.append((name.lower(), value))
        self._count(len(name) + len(value) + 4)
        if len(self.headers) > MAX_HEADERS:
            raise _Reject(431, "invalid_request", f"more than {MAX_HEADERS} request headers")

    def on_headers_complete(self) -> None:
        self.upgrading = self.parser.should_upgrade()  # (then httptools skips the body)
        expect = False
        for name, value in self.headers:  # the length first: refused before "continue"
            if name == b"content-length" and value.strip().isdigit():
                if int(value) > self.server.max_body:
                    raise _Reject(413, "request_too_large", self._too_large())
            elif name == b"expect" and value.lower() == b"100-continue":
                expect = True
        if expect and not self.upgrading:
            if self._idle():
                self.write(b"HTTP/1.1 100 Continue\r\n\r\n")
            else:  # in the middle of another answer it would corrupt that answer
                self.continue_due = True

    def on_body(self, body: bytes) -> None:
        if len(self.body) + len(body) > self.server.max_body:  # chunked: no length up front
            raise _Reject(413, "request_too_large", self._too_large())
        if not self.body:
            self.body = body
        else:  # one growing buffer: a list of 2-byte chunks took 70x the body's size
            if isinstance(self.body, bytes):
                self.body = bytearray(self.body)
            self.body += body

    def on_message_complete(self) -> None:
        if self.upgrading:
            return  # `_without_upgrade` parses it again, body included
        if self.task is None:
            self._disarm()  # the whole request came in time (a body can drip too)
        method = self.parser.get_method().decode("latin-1")
        url = self.url
        if not url.startswith(b"/"):  # the absolute form a proxy would be sent
            try:
                parsed = httptools.parse_url(url)
                url = (parsed.path or b"/") + (b"?" + parsed.query if parsed.query else b"")
            except httptools.HttpParserInvalidURLError:
                raise _Reject(400, "invalid_request", "malformed request target") from None
        path, _, query = url.partition(b"?")
        body = self.body if isinstance(self.body, bytes) else bytes(self.body)
        keep_alive = self.parser.should_keep_alive()
        request = Request(
            method, path.decode("latin-1"), query.decode("latin-1"), self.headers, body, keep_alive
        )
        self._reset()
        if self._idle():
            self._dispatch(request)
        else:  # pipelined behind the answer under way: read no more until it is out
            self.queue.append(request)
            if self.transport is not None:
                self.transport.pause_reading()

    def _without_upgrade(self, rest: bytes) -> bytes | None:
        """Serve a request that asked to switch protocols as the HTTP/1.1 request it also is:
        the bytes to parse instead (its head again without `Upgrade`, then its body and
        whatever follows), for a fresh parser; None when it is refused."""
        if self.parser.get_method() == b"CONNECT":
            self._reject(_Reject(405, "invalid_request", "CONNECT: the bridge is not a proxy"))
            return None
        version = self.parser.get_http_version().encode("latin-1")
        head = [self.parser.get_method(), b" ", self.url, b" HTTP/", version, b"\r\n"]
        for name, value in self.headers:
            if name != b"upgrade":
                head += (name, b": ", value, b"\r\n")
        self.parser = httptools.HttpRequestParser(self)
        return b"".join(head) + b"\r\n" + rest

    # --- running handlers ----------------------------------------------------------------
    def _dispatch(self, request: Request) -> None:
        keep_alive = request.keep_alive and not self.server.stopping
        response = Response(self, keep_alive, request.method == "HEAD")
        self.response = response
        self.task = self.loop.create_task(self.server.handler(request, response))
        self.task.add_done_callback(self._handled)

    def _handled(self, task: asyncio.Task[None]) -> None:
        self.task = None
        response, self.response = self.response, None
        if self.lost or self.transport is None:
            return
        if task.cancelled():
            self.transport.close()  # shutting down mid-answer
            return
        error = task.exception()
        if error is not None:
            log.error("the bridge failed on a request", exc_info=error)
        if response is None or not response.complete:
            if response is not None and not response.started:
                response.keep_alive = False
                response.send(500, _JSON, _error_body("server_error", "the bridge failed"))
            self.transport.close()  # an answer cut short cannot be framed: hang up
            return
        if not response.keep_alive:
            self.transport.close()
        else:
            self._next()

    def _idle(self) -> bool:
        """Nothing being answered or waiting, and a client that reads what it is sent."""
        return self.task is None and not self.queue and not self.write_paused

    def _next(self) -> None:
        """Between answers: the next pipelined request, a refusal due, or waiting for more.
        Not while the client leaves its answers unread (`resume_writing` comes back here)."""
        if self.task is not None or self.write_paused or self.lost or self.transport is None:
            return
        if self.queue:
            self._dispatch(self.queue.popleft())
            if not self.queue and self.deferred is None:
                self.transport.resume_reading()
        elif self.deferred is not None:
            self._refuse(self.deferred)
        else:
            if self.continue_due:  # the request after the last answer waits for its body
                self.continue_due = False
                self.write(b"HTTP/1.1 100 Continue\r\n\r\n")
            self._arm(self.server.keepalive_s)

    def write(self, data: bytes) -> None:
        transport = self.transport
        if transport is not None and not self.lost and not transport.is_closing():
            transport.write(data)

    def close(self) -> None:
        if self.transport is not None:
            self.transport.close()

    # --- bounds ---------------------------------------------------------------------------
    def _count(self, size: int) -> None:
        self.head_size += size
        if self.head_size > MAX_HEAD_BYTES:
            raise _Reject(431, "invalid_request", "request head over 64 KiB")

    def _too_large(self) -> str:
        return f"request body over {self.server.max_body} bytes"

    def _reject(self, reject: _Reject) -> None:
        """Refuse a request that cannot be read: at once, or after the answers to the
        (pipelined) requests before it, which are not cut short for it."""
        transport = self.transport
        if transport is None or transport.is_closing() or self.rejected:
            return
        self.rejected = True
        if self._idle():
            self._refuse(reject)
        else:
            self.deferred = reject
            transport.pause_reading()

    def _refuse(self, reject: _Reject) -> None:
        """Answer `reject`, then close gently: closing with the client's bytes still unread
        would reset the connection, and the reset can destroy the answer before the client
        reads it. So the answer is followed by a half-close, and what the client still sends
        is read and dropped for a second (nginx's "lingering close")."""
        transport = self.transport
        if transport is None or transport.is_closing():
            return
        self.deferred = None
        body = _error_body(reject.kind, str(reject))
        head = _head(reject.status, _JSON, True)
        self.write(head + b"content-length: %d\r\n\r\n" % len(body) + body)
        if transport.can_write_eof():
            transport.write_eof()
        self._disarm()
        self.timer = self.loop.call_later(LINGER_S, transport.close)

    def _arm(self, seconds: float) -> None:
        self._disarm()
        self.timer = self.loop.call_later(seconds, self._overdue)

    def _disarm(self) -> None:
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None

    def _overdue(self) -> None:
        self.timer = None
        if self.task is None and self.transport is not None:
            self.transport.close()  # no head in time, or idle past the keep-alive


_JSON = [(b"content-type", b"application/json")]


def _error_body(kind: str, message: str) -> bytes:
    """An error both SDKs read: OpenAI's `error.message` and Anthropic's `type: error`."""
    import json

    document = {"type": "error", "error": {"type": kind, "message": message, "code": kind}}
    return json.dumps(document).encode()


class HttpServer:
    """Serves `handler` on a bound socket until `stop()`; in-flight answers get `graceful_s`."""

    def __init__(
        self,
        handler: Handler,
        *,
        request_timeout_s: float = 30.0,
        keepalive_s: float = 30.0,
        max_body: int = 16 * 1024 * 1024,
        graceful_s: float = 5.0,
    ) -> None:
        self.handler = handler
        self.request_timeout_s = request_timeout_s
        self.keepalive_s = keepalive_s
        self.max_body = max_body
        self.graceful_s = graceful_s
        self.connections: set[_Connection] = set()
        self.stopping = False
        self.loop: asyncio.AbstractEventLoop = None  # type: ignore[assignment]
        self._stop: asyncio.Event | None = None

    async def serve(self, sock: Any, on_ready: Callable[[], None] | None = None) -> None:
        self.loop = asyncio.get_running_loop()
        self._stop = asyncio.Event()
        server = await self.loop.create_server(lambda: _Connection(self), sock=sock, backlog=2048)
        if on_ready is not None:
            on_ready()
        try:
            await self._stop.wait()
        finally:
            await self._shutdown(server)

    def stop(self) -> None:
        """From the server's loop: stop accepting, finish what is in flight, return."""
        self.stopping = True
        if self._stop is not None:
            self._stop.set()

    async def _shutdown(self, server: asyncio.AbstractServer) -> None:
        self.stopping = True
        server.close()
        for connection in list(self.connections):
            if connection.task is None:
                connection.close()
        began = self.loop.time()
        while any(c.task is not None for c in self.connections):
            if self.loop.time() > began + self.graceful_s:  # (a second Ctrl-C zeroes it)
                break
            await asyncio.sleep(0.02)
        tasks = [c.task for c in self.connections if c.task is not None]
        for connection in list(self.connections):
            if connection.task is not None:
                connection.task.cancel()
            connection.close()
        if tasks:
            await asyncio.wait(tasks, timeout=1.0)
