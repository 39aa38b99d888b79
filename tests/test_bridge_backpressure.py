"""A client that reads slower than the upstream writes still gets every event, in order: the
bridge writes events straight from the upstream's read callback, and a write that has to wait
for the client (the server's flow control) must hold back the ones after it."""

from __future__ import annotations

import json
import socket
import time

from bridge_support import bridge_to, sse_payloads
from loopback import LoopbackServer, Reply, chat_stream

# ~6 MB of text: more than the kernel buffers (4 MB on Linux) can take from the bridge
WORDS = [f"w{i:05d}-" + "x" * 2000 for i in range(3000)]


def _read_chunked(sock: socket.socket, deadline_s: float) -> bytes:
    """The whole chunked body of one HTTP/1.1 answer (connection: close)."""
    pieces: list[bytes] = []
    deadline = time.monotonic() + deadline_s
    while time.monotonic() < deadline:
        piece = sock.recv(65536)
        if not piece:
            break
        pieces.append(piece)
    data = b"".join(pieces)
    end = data.index(b"\r\n\r\n")
    assert data.startswith(b"HTTP/1.1 200"), data[:200]
    out: list[bytes] = []
    at = end + 4
    while True:
        line_end = data.index(b"\r\n", at)
        size = int(data[at:line_end], 16)
        if size == 0:
            return b"".join(out)
        out.append(data[line_end + 2 : line_end + 2 + size])
        at = line_end + 2 + size + 2


def test_a_slow_reader_gets_every_event_in_order() -> None:
    with (
        LoopbackServer(Reply.sse(chat_stream(WORDS))) as upstream,
        bridge_to(upstream.url) as bridge,
    ):
        body = json.dumps({"model": "m", "stream": True, "input": "hi", "store": False}).encode()
        with socket.socket() as sock:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # a small window
            sock.settimeout(20)
            sock.connect(("127.0.0.1", bridge.config.port))
            sock.sendall(
                b"POST /v1/responses HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n"
                b"connection: close\r\ncontent-length: %d\r\n\r\n%s" % (len(body), body)
            )
            time.sleep(1.5)  # the upstream has sent everything; the bridge has to wait
            stream = _read_chunked(sock, 30)
    events = sse_payloads(stream)
    deltas = [e["delta"] for e in events if e["type"] == "response.output_text.delta"]
    assert deltas == WORDS
    numbers = [e["sequence_number"] for e in events]
    assert numbers == sorted(numbers) and len(set(numbers)) == len(numbers)
    assert events[-1]["type"] == "response.completed"
