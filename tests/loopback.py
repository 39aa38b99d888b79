"""A small scripted HTTP server on a real 127.0.0.1 socket (port 0), in a thread.

For what respx cannot show: real timing over a socket (TTFT vs total), a server that accepts the
connection but never sends headers, a stream that stalls, a stream cut off mid-body.

    with LoopbackServer(Reply.sse(chat_stream(["po", "ng"]))) as srv:
        srv.url            # http://127.0.0.1:PORT
        srv.requests       # what was received (method, path, headers, body)

A reply's `chunks` mixes bytes (written and flushed) and floats (pauses, in seconds). Every pause
ends early when the server stops, so no test can hang on it.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import socketserver
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import httpx


@dataclass
class Received:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


@dataclass
class Reply:
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    chunks: list[bytes | float] = field(default_factory=list)
    hold_headers: float = 0.0  # pause before sending anything (a server that never answers)
    stream: bool = False  # chunked transfer encoding, flushed chunk by chunk
    abort: bool = False  # stream only: drop the connection without the terminating chunk

    @classmethod
    def sse(cls, chunks: Iterable[bytes | float], **kw: Any) -> Reply:
        headers = {"content-type": "text/event-stream", "cache-control": "no-cache"}
        return cls(headers=headers, chunks=list(chunks), stream=True, **kw)

    @classmethod
    def json(cls, payload: Any, status: int = 200, **kw: Any) -> Reply:
        body = json.dumps(payload).encode()
        return cls(status, {"content-type": "application/json"}, [body], **kw)


Handler = Callable[[Received], Reply]


class LoopbackServer:
    """Serve `handler(request) -> Reply` on 127.0.0.1:0 until the `with` block ends."""

    def __init__(self, handler: Handler | Reply) -> None:
        self.handler: Handler = handler if callable(handler) else (lambda _req: handler)
        self.requests: list[Received] = []
        self.stopping = threading.Event()
        self._server = _Server(("127.0.0.1", 0), _make_handler(self))
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def __enter__(self) -> LoopbackServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stopping.set()
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)


class _Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True
    block_on_close = False

    def handle_error(self, request: Any, client_address: Any) -> None:
        import sys

        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)  # a client hanging up is normal


def _make_handler(server: LoopbackServer) -> type[BaseHTTPRequestHandler]:
    class _Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
            pass  # keep test output clean

        def _serve(self) -> None:
            length = int(self.headers.get("content-length") or 0)
            received = Received(
                self.command,
                self.path,
                {k.lower(): v for k, v in self.headers.items()},
                self.rfile.read(length) if length else b"",
            )
            server.requests.append(received)
            reply = server.handler(received)
            if reply.hold_headers and server.stopping.wait(reply.hold_headers):
                return
            try:
                self._write(reply)
            except (BrokenPipeError, ConnectionResetError):
                self.close_connection = True

        def _write(self, reply: Reply) -> None:
            self.send_response(reply.status)
            for name, value in reply.headers.items():
                self.send_header(name, value)
            if reply.stream:
                self.send_header("transfer-encoding", "chunked")
            else:
                body = b"".join(c for c in reply.chunks if isinstance(c, bytes))
                self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.flush()
            if not reply.stream:
                self.wfile.write(body)
                return
            for chunk in reply.chunks:
                if isinstance(chunk, float | int):
                    if server.stopping.wait(chunk):
                        return
                    continue
                self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                self.wfile.flush()
            if reply.abort:
                self.close_connection = True
                return
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()

        do_GET = do_POST = do_HEAD = _serve

    return _Handler


# --------------------------------------------------------------------------- canned streams


def sse_event(payload: Any, event: str | None = None) -> bytes:
    """One SSE event (`event:` line optional) with a JSON (or literal string) payload."""
    data = payload if isinstance(payload, str) else json.dumps(payload)
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {data}\n\n".encode()


def spaced(events: list[bytes], gap: float = 0.01) -> list[bytes | float]:
    """`events` for a `Reply`'s chunks, each after a pause of `gap` seconds."""
    out: list[bytes | float] = []
    for event in events:
        out += [gap, event]
    return out


def sse_response(events: list[bytes], status: int = 200) -> httpx.Response:
    """The same events as an `httpx.Response`, for tests that mock a gateway with respx."""
    import httpx

    return httpx.Response(
        status, headers={"content-type": "text/event-stream"}, content=b"".join(events)
    )


def chat_stream(
    words: list[str], *, finish: str | None = "stop", usage: bool = True, done: bool = True
) -> list[bytes]:
    """A chat-completions stream: one chunk per word, a finish chunk, a usage chunk, [DONE]."""
    base = {"id": "c1", "object": "chat.completion.chunk", "model": "m"}
    events = [
        sse_event(
            {**base, "choices": [{"index": 0, "delta": {"content": w}, "finish_reason": None}]}
        )
        for w in words
    ]
    if finish:
        events.append(
            sse_event({**base, "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]})
        )
    if usage:
        u = {"prompt_tokens": 5, "completion_tokens": len(words), "total_tokens": 5 + len(words)}
        events.append(sse_event({**base, "choices": [], "usage": u}))
    if done:
        events.append(b"data: [DONE]\n\n")
    return events


def responses_stream(words: list[str], *, completed: bool = True) -> list[bytes]:
    """A Responses API stream as Codex expects it (deltas, output_item.done, response.completed)."""
    events = [sse_event({"type": "response.created", "response": {"id": "r1", "model": "m"}})]
    events += [sse_event({"type": "response.output_text.delta", "delta": w}) for w in words]
    item = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "content": [{"type": "output_text", "text": "".join(words)}],
    }
    events.append(sse_event({"type": "response.output_item.done", "output_index": 0, "item": item}))
    if completed:
        usage = {"input_tokens": 5, "output_tokens": len(words), "total_tokens": 5 + len(words)}
        events.append(
            sse_event(
                {
                    "type": "response.completed",
                    "response": {"id": "r1", "status": "completed", "output": [], "usage": usage},
                }
            )
        )
    return events


def anthropic_stream(words: list[str], *, stop: str | None = "end_turn") -> list[bytes]:
    """A Messages stream as Claude Code expects it."""
    events = [
        sse_event(
            {
                "type": "message_start",
                "message": {
                    "id": "msg_1",
                    "model": "m",
                    "content": [],
                    "usage": {"input_tokens": 5, "output_tokens": 1},
                },
            },
            "message_start",
        ),
        sse_event(
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {"type": "text", "text": ""},
            },
            "content_block_start",
        ),
        sse_event({"type": "ping"}, "ping"),
    ]
    events += [
        sse_event(
            {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": w}},
            "content_block_delta",
        )
        for w in words
    ]
    events.append(sse_event({"type": "content_block_stop", "index": 0}, "content_block_stop"))
    if stop:
        events.append(
            sse_event(
                {
                    "type": "message_delta",
                    "delta": {"stop_reason": stop},
                    "usage": {"output_tokens": len(words)},
                },
                "message_delta",
            )
        )
        events.append(sse_event({"type": "message_stop"}, "message_stop"))
    return events


# ------------------------------------------------ asyncio servers: closing what they opened


CLOSE_SECONDS = 2.0  # how long a closing connection may wait for its client to read


async def close_writer(writer: asyncio.StreamWriter) -> None:
    """Close a connection and wait until its socket is closed: a transport only closes its
    socket on the loop's next turn, so a loop stopped right after `close()` leaves an unclosed
    socket to be garbage-collected inside some later test, which then fails on its warning.
    A close first sends what is buffered; a client that never reads it is cut off
    (`abort`) after CLOSE_SECONDS, so no test server waits on its client forever."""
    writer.close()
    try:
        await asyncio.wait_for(writer.wait_closed(), CLOSE_SECONDS)
    except TimeoutError:
        writer.transport.abort()
        with contextlib.suppress(Exception):
            await writer.wait_closed()
    except Exception:
        pass  # the connection broke while closing: closed all the same


async def close_connections(connections: set[asyncio.Task[Any]]) -> None:
    """Cancel the handlers still running when a test server stops (a dripping answer whose
    client hung up a moment ago) and wait for each to close its connection (`close_writer`)."""
    for task in connections:
        task.cancel()
    await asyncio.gather(*connections, return_exceptions=True)
