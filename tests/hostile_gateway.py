"""A hostile "gateway" on 127.0.0.1: one small asyncio server whose first path segment picks how
it misbehaves, so one server serves every case.

    with HostileGateway() as gw:
        gw.base("endless-sse")      # http://127.0.0.1:PORT/endless-sse  (use as a base URL)

`MODES` attack the client (its clock, memory, parser); `TERMINAL_MODES` send text that would act
on the user's terminal (`TERMINAL_ATTACK`) where pdnotes shows what the gateway said;
`ECHO_MODES` answer with the credential the client sent.

Every request under that base (`/models`, `/responses`, `/v1/messages?beta=true`,
`/chat/completions`, with or without `/v1`) gets the mode's answer. Every endless answer stops
when the client hangs up, when the server stops, or after `MAX_SECONDS`, so no test can hang
on it. `gw.seen_keys` holds the credentials clients sent (for the echo modes' assertions).
"""

from __future__ import annotations

import asyncio
import functools
import itertools
import json
import threading
import zlib
from collections.abc import Awaitable, Callable
from typing import Any

from loopback import close_connections, close_writer

MAX_SECONDS = 30.0  # the longest any answer runs, whatever the client does
BOMB_DECODED = 200 * 1024 * 1024  # a gzip bomb's decoded size (~200 KB on the wire)
_STREAM_EVENT = b'data: {"choices":[{"index":0,"delta":{"content":"x"}}]}\n\n'
_HTML_404 = b"<html><head><title>404 Not Found</title></head><body>nginx</body></html>"
_HTML_200 = b"<!doctype html><html><head><title>Welcome</title></head><body>hi</body></html>"

MODES = (
    "endless-sse",  # a valid event stream that never ends
    "ping-only",  # `: ping` comments forever, never an event
    "drip",  # headers, then the body one byte at a time
    "drip-headers",  # the status line and headers one byte at a time
    "endless-body",  # a JSON body that never ends, as fast as the client reads
    "gzip-bomb",  # ~200 KB of gzip that decodes to 200 MB
    "huge-headers",  # 2 MB of header lines before the body
    "invalid-utf8",  # invalid UTF-8 in the reason phrase, a header and the body
    "redirect-loop",  # 307 to the very same URL
    "no-answer",  # accepts, reads the request, never answers
    "html-404",  # a web server's 404 page
    "html-200",  # a web page with 200
    "echo-key-401",  # 401 whose body repeats the credential the client sent
    "echo-key-500",  # 500 whose body repeats the credential the client sent
    "deep-json",  # JSON (and an SSE data line) nested 100,000 deep
    "big-int",  # a 5,000-digit integer in the JSON and in an event
    "error-400-60k",  # 400 whose JSON error message is 60 KB of letters
    "error-400-1mb",  # 400 whose JSON error message is 1 MB of letters
    "endless-400",  # 400 whose JSON error body never ends
    "drip-400",  # 400, then its JSON error body one byte at a time
)
# Writes the clipboard (OSC 52), sets the window title (OSC 0), clears the screen (CSI 2J, once
# with ESC [ and once with the one-character C1 CSI), and returns to the line's start (CR).
TERMINAL_ATTACK = "A\x1b]52;c;cm0gLXJmIH4K\x07B\x1b]0;pwned\x07C\x1b[2JD\x9b2JE\rF"
TERMINAL_MODES = (
    "escape-answer",  # a complete chat-completions stream whose text is TERMINAL_ATTACK
    "escape-error",  # 400 whose error message (JSON) is TERMINAL_ATTACK, to every request
)
# A 200 whose answer repeats the `Authorization` header the client sent (issue 36): in prose, in
# a table cell of a passing note (`ECHO_NOTE`) and as the finish reason, in the protocol the
# request's path names (Responses, Anthropic Messages, else chat completions).
ECHO_MODES = ("echo-key-answer",)
ECHO_NOTE = (
    "| Stage | Bottleneck | Optimisation | Component |\n"
    "|---|---|---|---|\n"
    "| Prefill | Compute-bound, TTFT | High-compute chips; Graph mode whole-graph offload / "
    "subgraph fusion | DLInfer (asked with {auth}) |\n"
    "| Decode | Memory-bound, TPOT | High-bandwidth / large-memory chips; TP interconnect; "
    "PagedAttention | LMDeploy |\n"
    "| Cross-node KV cache transfer | latency | RDMA or chip-to-chip links | DLSlime |\n"
)
ERROR_400_PREFIX = "the prompt is too long "  # how each 400's message starts (no `name:`)


class HostileGateway:
    def __init__(self, drip_interval: float = 0.1) -> None:
        self.drip_interval = drip_interval
        self.port = 0
        self.seen_keys: list[str] = []
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._stop: asyncio.Event | None = None
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._bomb = _gzip_bomb()

    def base(self, mode: str) -> str:
        assert mode in MODES + TERMINAL_MODES + ECHO_MODES, mode
        return f"http://127.0.0.1:{self.port}/{mode}"

    def __enter__(self) -> HostileGateway:
        self._thread.start()
        if not self._ready.wait(10):
            raise RuntimeError("hostile gateway did not start")
        return self

    def __exit__(self, *exc: object) -> None:
        stop = self._stop
        if stop is not None:
            self._loop.call_soon_threadsafe(stop.set)
        self._thread.join(10)

    # ------------------------------------------------------------------ server

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        self._loop.run_until_complete(self._serve())
        self._loop.close()

    async def _serve(self) -> None:
        self._stop = asyncio.Event()
        server = await asyncio.start_server(self._client, "127.0.0.1", 0)
        self.port = server.sockets[0].getsockname()[1]
        self._ready.set()
        async with server:
            await self._stop.wait()
            server.close()
        # Cancel the handlers still running (endless answers, held connections).
        await close_connections({t for t in asyncio.all_tasks() if t is not asyncio.current_task()})

    async def _client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            async with asyncio.timeout(MAX_SECONDS):
                while True:  # keep-alive: answer requests until one answer closes
                    request = await _read_request(reader)
                    if request is None:
                        return
                    if not await self._answer(request, writer):
                        return
        except (OSError, TimeoutError, asyncio.IncompleteReadError, ValueError):
            pass
        except asyncio.CancelledError:
            pass  # the server is stopping; ending quietly keeps asyncio from logging it
        finally:
            await close_writer(writer)

    async def _answer(self, request: dict[str, Any], writer: asyncio.StreamWriter) -> bool:
        """Answer one request; False when the connection is to be closed afterwards."""
        path: str = request["path"]
        mode = path.strip("/").split("/", 1)[0].split("?", 1)[0]
        headers: dict[str, str] = request["headers"]
        key = headers.get("x-api-key") or headers.get("authorization", "")
        if key:
            self.seen_keys.append(key.removeprefix("Bearer "))
        is_get = request["method"] == "GET"
        handler = _HANDLERS.get(mode)
        if handler is None:
            await _send(writer, 404, {"content-type": "text/plain"}, b"unknown mode")
            return True
        return await handler(self, writer, is_get, key, path)

    async def endless_sse(self, w: asyncio.StreamWriter, *_: Any) -> bool:
        await _head(w, 200, {"content-type": "text/event-stream"})
        while True:
            w.write(_STREAM_EVENT)
            await w.drain()
            await asyncio.sleep(0.005)

    async def ping_only(self, w: asyncio.StreamWriter, *_: Any) -> bool:
        await _head(w, 200, {"content-type": "text/event-stream"})
        while True:
            w.write(b": ping\n\n")
            await w.drain()
            await asyncio.sleep(0.01)

    async def drip(self, w: asyncio.StreamWriter, is_get: bool, *_: Any) -> bool:
        ctype = "application/json" if is_get else "text/event-stream"
        await _head(w, 200, {"content-type": ctype})
        body = b'{"data": [' if is_get else _STREAM_EVENT
        for byte in itertools.cycle(body):
            w.write(bytes([byte]))
            await w.drain()
            await asyncio.sleep(self.drip_interval)
        return False  # not reached: the client hangs up, or MAX_SECONDS ends it

    async def drip_headers(self, w: asyncio.StreamWriter, *_: Any) -> bool:
        head = b"HTTP/1.1 200 OK\r\n" + b"x-slow: " + b"a" * 100_000 + b"\r\n\r\n"
        for byte in head:
            w.write(bytes([byte]))
            await w.drain()
            await asyncio.sleep(self.drip_interval)
        return False

    async def endless_body(self, w: asyncio.StreamWriter, *_: Any) -> bool:
        await _head(w, 200, {"content-type": "application/json"})
        w.write(b'{"data": [')
        item = b'{"id": "pd-mock-1", "object": "model"},' * 1000
        while True:
            w.write(item)
            await w.drain()

    async def gzip_bomb(self, w: asyncio.StreamWriter, is_get: bool, *_: Any) -> bool:
        ctype = "application/json" if is_get else "text/event-stream"
        headers = {
            "content-type": ctype,
            "content-encoding": "gzip",
            "content-length": str(len(self._bomb)),
        }
        await _send(w, 200, headers, self._bomb)
        return True

    async def huge_headers(self, w: asyncio.StreamWriter, *_: Any) -> bool:
        w.write(b"HTTP/1.1 200 OK\r\n")
        line = b"x-junk: " + b"j" * 1000 + b"\r\n"
        for _ in range(2000):
            w.write(line)
            await w.drain()
        w.write(b"content-type: application/json\r\ncontent-length: 2\r\n\r\n{}")
        await w.drain()
        return False

    async def invalid_utf8(self, w: asyncio.StreamWriter, is_get: bool, *_: Any) -> bool:
        if is_get:
            body = b'{"data": [{"id": "pd-\xff\xfe-1"}]}'
            ctype = b"application/json"
        else:
            body = b'data: {"choices":[{"index":0,"delta":{"content":"\xc3\x28\xff"}}]}\n\n'
            body += b"data: \xff\xfe\xfd\n\n"
            ctype = b"text/event-stream"
        head = b"HTTP/1.1 200 OK\xff\xfe\r\ncontent-type: " + ctype
        head += b"\r\nx-bad: \xff\xfe\xc3\x28\r\ncontent-length: " + str(len(body)).encode()
        w.write(head + b"\r\n\r\n" + body)
        await w.drain()
        return True

    async def redirect_loop(self, w: asyncio.StreamWriter, _g: bool, _k: str, path: str) -> bool:
        location = f"http://127.0.0.1:{self.port}{path}"
        await _send(w, 307, {"location": location, "content-type": "text/plain"}, b"again")
        return True

    async def no_answer(self, w: asyncio.StreamWriter, *_: Any) -> bool:
        await asyncio.sleep(MAX_SECONDS)
        return False

    async def html_404(self, w: asyncio.StreamWriter, *_: Any) -> bool:
        await _send(w, 404, {"content-type": "text/html"}, _HTML_404)
        return True

    async def html_200(self, w: asyncio.StreamWriter, *_: Any) -> bool:
        await _send(w, 200, {"content-type": "text/html"}, _HTML_200)
        return True

    async def echo_key_401(self, w: asyncio.StreamWriter, _g: bool, key: str, _p: str) -> bool:
        body = {"error": {"message": f"invalid key {key}", "type": "authentication_error"}}
        await _send(w, 401, {"content-type": "application/json"}, json.dumps(body).encode())
        return True

    async def echo_key_500(self, w: asyncio.StreamWriter, _g: bool, key: str, _p: str) -> bool:
        await _send(w, 500, {"content-type": "text/plain"}, f"upstream failed for {key}".encode())
        return True

    async def deep_json(self, w: asyncio.StreamWriter, is_get: bool, *_: Any) -> bool:
        nested = b"[" * 100_000 + b"]" * 100_000
        if is_get:
            await _send(w, 200, {"content-type": "application/json"}, nested)
        else:
            body = b"data: " + nested + b"\n\n" + _STREAM_EVENT
            await _send(w, 200, {"content-type": "text/event-stream"}, body)
        return True

    async def big_int(self, w: asyncio.StreamWriter, is_get: bool, *_: Any) -> bool:
        number = b"7" * 5000
        if is_get:
            body = b'{"data": [{"id": "pd-mock-1", "created": ' + number + b"}]}"
            await _send(w, 200, {"content-type": "application/json"}, body)
        else:
            body = b'data: {"choices":[{"index":0,"delta":{"content":"x"}}],"n":' + number
            await _send(w, 200, {"content-type": "text/event-stream"}, body + b"}\n\n")
        return True

    async def escape_answer(self, w: asyncio.StreamWriter, is_get: bool, *_: Any) -> bool:
        if is_get:
            body = json.dumps({"object": "list", "data": [{"id": "pd-mock-1"}]}).encode()
            await _send(w, 200, {"content-type": "application/json"}, body)
            return True
        events = [
            {"choices": [{"index": 0, "delta": {"role": "assistant"}}]},
            {"choices": [{"index": 0, "delta": {"content": TERMINAL_ATTACK}}]},
            {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
        ]
        body = b"".join(b"data: " + json.dumps(e).encode() + b"\n\n" for e in events)
        await _send(w, 200, {"content-type": "text/event-stream"}, body + b"data: [DONE]\n\n")
        return True

    async def escape_error(self, w: asyncio.StreamWriter, *_: Any) -> bool:
        error = {"message": TERMINAL_ATTACK, "type": "invalid_request_error"}
        body = json.dumps({"type": "error", "error": error}).encode()
        await _send(w, 400, {"content-type": "application/json"}, body)
        return True

    async def echo_key_answer(
        self, w: asyncio.StreamWriter, is_get: bool, key: str, p: str
    ) -> bool:
        if is_get:
            body = json.dumps({"object": "list", "data": [{"id": "pd-mock-1"}]}).encode()
            await _send(w, 200, {"content-type": "application/json"}, body)
            return True
        text = f"Your request carried {key}.\n\n" + ECHO_NOTE.format(auth=key)
        await _send(w, 200, {"content-type": "text/event-stream"}, _echo_stream(p, text, key))
        return True

    async def error_400_60k(self, w: asyncio.StreamWriter, *_: Any) -> bool:
        await _send(w, 400, {"content-type": "application/json"}, _error_body(60_000))
        return True

    async def error_400_1mb(self, w: asyncio.StreamWriter, *_: Any) -> bool:
        await _send(w, 400, {"content-type": "application/json"}, _error_body(1_000_000))
        return True

    async def endless_400(self, w: asyncio.StreamWriter, *_: Any) -> bool:
        await _head(w, 400, {"content-type": "application/json"})
        w.write(b'{"error": {"type": "invalid_request_error", "message": "' + b"a" * 1000)
        while True:
            w.write(b"a" * 65536)
            await w.drain()

    async def drip_400(self, w: asyncio.StreamWriter, *_: Any) -> bool:
        await _head(w, 400, {"content-type": "application/json"})
        for byte in itertools.cycle(_error_body(100)):
            w.write(bytes([byte]))
            await w.drain()
            await asyncio.sleep(self.drip_interval)
        return False  # not reached: the client hangs up, or MAX_SECONDS ends it


def _echo_stream(path: str, text: str, key: str) -> bytes:
    """`text` as one answer in the protocol `path` names; the finish reason echoes `key` too
    (where the protocol lets a gateway choose it)."""
    from loopback import anthropic_stream, chat_stream, responses_stream

    pieces = [text[i : i + 40] for i in range(0, len(text), 40)]  # a key split over events
    if "/responses" in path:
        return b"".join(responses_stream(pieces))
    if "/messages" in path:
        return b"".join(anthropic_stream(pieces))
    return b"".join(chat_stream(pieces, finish=f"stop ({key})"))


def _error_body(size: int) -> bytes:
    message = ERROR_400_PREFIX + "a" * size  # a run of letters: what made scrubbing quadratic
    return json.dumps({"error": {"type": "invalid_request_error", "message": message}}).encode()


Handler = Callable[[HostileGateway, asyncio.StreamWriter, bool, str, str], Awaitable[bool]]
_HANDLERS: dict[str, Handler] = {
    mode: getattr(HostileGateway, mode.replace("-", "_"))
    for mode in MODES + TERMINAL_MODES + ECHO_MODES
}


async def _read_request(reader: asyncio.StreamReader) -> dict[str, Any] | None:
    try:
        head = await reader.readuntil(b"\r\n\r\n")
    except asyncio.IncompleteReadError:
        return None
    if len(head) > 64 * 1024:
        raise ValueError("request head too large")
    request_line, *lines = head.decode("latin-1").split("\r\n")
    method, path, _ = request_line.split(" ", 2)
    headers: dict[str, str] = {}
    for line in lines:
        name, sep, value = line.partition(":")
        if sep:
            headers[name.strip().lower()] = value.strip()
    length = int(headers.get("content-length", "0") or 0)
    if length > 16 * 1024 * 1024:
        raise ValueError("request body too large")
    await reader.readexactly(length)
    return {"method": method, "path": path, "headers": headers}


async def _head(w: asyncio.StreamWriter, status: int, headers: dict[str, str]) -> None:
    """Headers of a close-delimited answer (no length, no chunking): the body runs until we
    hang up, which is what an endless answer needs."""
    lines = [f"HTTP/1.1 {status} X"] + [f"{k}: {v}" for k, v in headers.items()]
    lines.append("connection: close")
    w.write(("\r\n".join(lines) + "\r\n\r\n").encode())
    await w.drain()


async def _send(w: asyncio.StreamWriter, status: int, headers: dict[str, str], body: bytes) -> None:
    headers = {"content-length": str(len(body)), **headers}
    lines = [f"HTTP/1.1 {status} X"] + [f"{k}: {v}" for k, v in headers.items()]
    w.write(("\r\n".join(lines) + "\r\n\r\n").encode() + body)
    await w.drain()


@functools.cache
def _gzip_bomb() -> bytes:
    """BOMB_DECODED zero bytes, gzip-compressed (~1000:1)."""
    compressor = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    block = bytes(1024 * 1024)
    parts = [compressor.compress(block) for _ in range(BOMB_DECODED // len(block))]
    parts.append(compressor.flush())
    return b"".join(parts)
