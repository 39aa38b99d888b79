"""The bridge's own HTTP/1.1 server (`bridge.http1`), over real sockets: keep-alive and
pipelined requests answered in order, the bounds on slow or oversized requests, malformed
requests, and a slow reader holding the upstream back instead of the bridge buffering."""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
import threading
import time
from collections.abc import Iterator

import pytest
from bridge_support import asyncio_upstream, bridge_to, chunk, read_request
from loopback import LoopbackServer, Reply

from notes_cli.bridge.server import RunningBridge

DEAD_UPSTREAM = "http://127.0.0.1:9/v1"  # the discard port: nothing listens there


def _connect(port: int, timeout: float = 5.0) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    return sock


def _read_until_closed(sock: socket.socket, deadline_s: float = 5.0) -> bytes:
    pieces: list[bytes] = []
    deadline = time.monotonic() + deadline_s
    while time.monotonic() < deadline:
        try:
            piece = sock.recv(65536)
        except TimeoutError:
            break
        if not piece:
            break
        pieces.append(piece)
    return b"".join(pieces)


def _answers(data: bytes) -> list[tuple[int, bytes]]:
    """(status, body) of each Content-Length answer in `data`, in order."""
    out = []
    while data:
        head, _, rest = data.partition(b"\r\n\r\n")
        status = int(head.split(b" ", 2)[1])
        length = 0
        for line in head.split(b"\r\n")[1:]:
            name, _, value = line.partition(b":")
            if name.lower() == b"content-length":
                length = int(value)
        out.append((status, rest[:length]))
        data = rest[length:]
    return out


def test_a_keep_alive_connection_serves_requests_one_after_another() -> None:
    with bridge_to(DEAD_UPSTREAM) as bridge, _connect(bridge.config.port) as sock:
        for _ in range(3):
            sock.sendall(b"GET /nowhere HTTP/1.1\r\nhost: x\r\n\r\n")
            head = sock.recv(65536)
            assert head.startswith(b"HTTP/1.1 404 "), head
            assert b"no route GET /nowhere" in head


def test_pipelined_requests_are_answered_in_order() -> None:
    # the first is a stream that takes a while; the two behind it must wait for its end
    body = json.dumps({"model": "m", "stream": True, "input": "hi", "store": False}).encode()
    events = [chunk({"content": "slow"}), 0.3, chunk({"content": " answer"}, "stop")]
    with (
        LoopbackServer(Reply.sse([*events, b"data: [DONE]\n\n"])) as upstream,
        bridge_to(upstream.url) as bridge,
        _connect(bridge.config.port) as sock,
    ):
        sock.sendall(
            b"POST /v1/responses HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n"
            b"content-length: %d\r\n\r\n%s"
            % (len(body), body)
            + b"HEAD / HTTP/1.1\r\nhost: x\r\n\r\n"
            + b"GET /third HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n"
        )
        data = _read_until_closed(sock)
    stream, _, rest = data.partition(b"0\r\n\r\nHTTP/1.1 200 OK\r\n")  # the stream's end
    assert stream.startswith(b"HTTP/1.1 200") and b"response.completed" in stream, data[:300]
    head, _, third = rest.partition(b"\r\n\r\n")  # HEAD: a Content-Length, no body
    assert b"content-length: 0" in head
    assert third.startswith(b"HTTP/1.1 404") and b"/third" in third
    assert b"connection: close" in third


def test_a_connection_that_never_completes_its_head_is_cut() -> None:
    with (
        bridge_to(DEAD_UPSTREAM, request_timeout_s=0.5) as bridge,
        _connect(bridge.config.port) as silent,
        _connect(bridge.config.port) as slow,
    ):
        slow.sendall(b"POST /v1/responses HTTP/1.1\r\n")
        started = time.monotonic()
        for _ in range(3):  # slowloris: a header line now and then does not extend it
            time.sleep(0.2)
            with contextlib.suppress(OSError):
                slow.sendall(b"x-slow: 1\r\n")
        assert _read_until_closed(slow, 5) == b""
        assert _read_until_closed(silent, 5) == b""
        assert time.monotonic() - started < 4


def test_a_body_sent_a_byte_at_a_time_is_cut_too() -> None:
    with (
        bridge_to(DEAD_UPSTREAM, request_timeout_s=0.5) as bridge,
        _connect(bridge.config.port) as sock,
    ):
        sock.sendall(b"POST /v1/responses HTTP/1.1\r\nhost: x\r\ncontent-length: 100\r\n\r\n")
        started = time.monotonic()
        with contextlib.suppress(OSError):
            for _ in range(5):
                time.sleep(0.2)
                sock.sendall(b"{")
        assert _read_until_closed(sock, 5) == b""
        assert time.monotonic() - started < 4


def test_an_idle_keep_alive_connection_is_closed() -> None:
    with bridge_to(DEAD_UPSTREAM, keepalive_s=0.3) as bridge, _connect(bridge.config.port) as sock:
        sock.sendall(b"HEAD / HTTP/1.1\r\nhost: x\r\n\r\n")
        assert sock.recv(65536).startswith(b"HTTP/1.1 200")
        started = time.monotonic()
        assert _read_until_closed(sock, 5) == b""
        assert time.monotonic() - started < 4


def test_a_body_over_the_limit_is_refused_before_it_is_read() -> None:
    with bridge_to(DEAD_UPSTREAM, max_body=1000) as bridge, _connect(bridge.config.port) as sock:
        sock.sendall(
            b"POST /v1/responses HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n"
            b"content-length: 5000000\r\n\r\n{"
        )
        [(status, body)] = _answers(_read_until_closed(sock))
    assert status == 413
    assert json.loads(body)["error"]["type"] == "request_too_large"


def test_a_chunked_body_over_the_limit_is_refused() -> None:
    with bridge_to(DEAD_UPSTREAM, max_body=1000) as bridge, _connect(bridge.config.port) as sock:
        sock.sendall(
            b"POST /v1/responses HTTP/1.1\r\nhost: x\r\ntransfer-encoding: chunked\r\n\r\n"
            + b"400\r\n"
            + b"x" * 1024
            + b"\r\n"
        )
        [(status, _)] = _answers(_read_until_closed(sock))
    assert status == 413


def test_a_head_over_the_limit_is_refused() -> None:
    with bridge_to(DEAD_UPSTREAM) as bridge, _connect(bridge.config.port) as sock:
        sock.sendall(b"GET / HTTP/1.1\r\nhost: x\r\n")
        # 1.3 MB of headers: the bridge refuses after 64 KiB, with much still unsent
        with contextlib.suppress(OSError):  # if the bridge hangs up while we still send
            for _ in range(160):
                sock.sendall(b"x-filler: " + b"y" * 8000 + b"\r\n")
        data = _read_until_closed(sock)
    assert data.startswith(b"HTTP/1.1 431 ")


@pytest.mark.parametrize(
    "garbage", [b"NOT HTTP AT ALL\r\n\r\n", b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03"]
)
def test_a_malformed_request_is_a_400_and_a_hang_up(garbage: bytes) -> None:
    # the second: a TLS ClientHello, i.e. https:// pointed at the bridge's http port
    with bridge_to(DEAD_UPSTREAM) as bridge, _connect(bridge.config.port) as sock:
        sock.sendall(garbage)
        data = _read_until_closed(sock)
    assert data.startswith(b"HTTP/1.1 400 ")
    assert b"malformed HTTP request" in data


def test_expect_100_continue_is_answered_before_the_body() -> None:
    body = json.dumps({"model": "m", "input": "hi"}).encode()
    with bridge_to(DEAD_UPSTREAM) as bridge, _connect(bridge.config.port) as sock:
        sock.sendall(
            b"POST /v1/responses HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n"
            b"expect: 100-continue\r\ncontent-length: %d\r\n\r\n" % len(body)
        )
        assert sock.recv(65536) == b"HTTP/1.1 100 Continue\r\n\r\n"
        sock.sendall(body)
        answer = sock.recv(65536)
    assert answer.startswith(b"HTTP/1.1 502 "), answer  # the dead upstream, named
    assert b"127.0.0.1:9" in answer


@contextlib.contextmanager
def _firehose(total: int) -> Iterator[tuple[str, list[int], threading.Event]]:
    """An upstream that streams `total` bytes of chat chunks as fast as the bridge reads them,
    counts what it managed to send (asyncio, so a full socket really blocks it), and notes
    when the bridge hangs up on it."""
    sent = [0]
    hung_up = threading.Event()
    event = chunk({"content": "x" * 4000})
    framed = b"%x\r\n%s\r\n" % (len(event), event)

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        writer.write(
            b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
            b"transfer-encoding: chunked\r\n\r\n"
        )
        try:
            while sent[0] < total:
                writer.write(framed)
                sent[0] += len(framed)
                await writer.drain()
        except ConnectionError:
            hung_up.set()
        writer.close()

    with asyncio_upstream(handle) as url:
        yield url, sent, hung_up


def _ask_and_never_read(sock: socket.socket, port: int) -> None:
    """Ask the bridge for a stream on `sock` with a tiny receive buffer, then read nothing."""
    body = json.dumps({"model": "m", "stream": True, "input": "hi", "store": False}).encode()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.connect(("127.0.0.1", port))
    sock.sendall(
        b"POST /v1/responses HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n"
        b"content-length: %d\r\n\r\n%s" % (len(body), body)
    )


def _until_still(sent: list[int], deadline_s: float = 20.0) -> int:
    """How much the upstream had sent once it stopped (no more for 0.5 s), or by the deadline."""
    end = time.monotonic() + deadline_s
    last = -1
    while time.monotonic() < end and sent[0] != last:
        last = sent[0]
        time.sleep(0.5)
    return sent[0]


PATHS = pytest.mark.parametrize("httpx_path", [False, True], ids=["lean", "httpx"])


@PATHS
def test_a_client_that_does_not_read_holds_the_upstream_back(httpx_path: bool) -> None:
    total = 200 * 1024 * 1024
    with (
        _firehose(total) as (url, sent, _),
        bridge_to(url, httpx_path=httpx_path) as bridge,
        socket.socket() as sock,
    ):
        _ask_and_never_read(sock, bridge.config.port)
        held = _until_still(sent)  # the client reads nothing
        assert sock.recv(65536).startswith(b"HTTP/1.1 200")
    # Without the pause the bridge reads (and buffers) the whole 200 MB; with it, the upstream
    # stops once the socket buffers between them are full (a few MB on Linux).
    assert held < 32 * 1024 * 1024, f"the upstream sent {held} bytes into a stalled client"


@PATHS
def test_a_client_that_never_reads_ends_the_upstream_call_after_the_idle_timeout(
    httpx_path: bool,
) -> None:
    # held back, not silent: but not for as long as the client stays connected either
    with (
        _firehose(200 * 1024 * 1024) as (url, _, hung_up),
        bridge_to(url, idle_timeout=0.5, httpx_path=httpx_path) as bridge,
        socket.socket() as sock,
    ):
        _ask_and_never_read(sock, bridge.config.port)
        assert hung_up.wait(5), "the bridge kept the upstream call open for a stalled client"


def _post(path: bytes, body: bytes, *headers: bytes) -> bytes:
    head = b"POST %s HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n" % path
    return (
        head
        + b"".join(h + b"\r\n" for h in headers)
        + b"content-length: %d\r\n\r\n" % len(body)
        + body
    )


def test_a_request_that_asks_to_upgrade_is_served_with_its_body() -> None:
    # `curl --http2 http://...` asks for h2c this way; the bridge stays on HTTP/1.1, which
    # must not cost the request its body, nor the pipelined request after it its answer
    body = json.dumps({"model": "m", "input": "hi"}).encode()
    upgrade = (b"connection: Upgrade, HTTP2-Settings", b"upgrade: h2c", b"http2-settings: AAMA")
    with bridge_to(DEAD_UPSTREAM) as bridge, _connect(bridge.config.port) as sock:
        sock.sendall(
            _post(b"/v1/responses", body, *upgrade)
            + b"GET /second HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n"
        )
        answers = _answers(_read_until_closed(sock))
    [(first, message), (second, _)] = answers
    assert first == 502 and b"127.0.0.1:9" in message, message  # the body was read: upstream
    assert second == 404


def test_connect_is_refused() -> None:
    with bridge_to(DEAD_UPSTREAM) as bridge, _connect(bridge.config.port) as sock:
        sock.sendall(b"CONNECT example.com:443 HTTP/1.1\r\nhost: example.com:443\r\n\r\n")
        [(status, body)] = _answers(_read_until_closed(sock))
    assert status == 405 and b"not a proxy" in body


def _slow_stream() -> LoopbackServer:
    events = [chunk({"content": "one "}), 0.4, chunk({"content": "two"}, "stop")]
    return LoopbackServer(Reply.sse([*events, b"data: [DONE]\n\n"]))


STREAM = json.dumps({"model": "m", "stream": True, "input": "hi", "store": False}).encode()


def test_100_continue_for_a_pipelined_request_waits_for_the_answer_ahead() -> None:
    # written at once, the interim answer would land inside the stream's chunked body
    with (
        _slow_stream() as upstream,
        bridge_to(upstream.url) as bridge,
        _connect(bridge.config.port) as sock,
    ):
        second = STREAM
        sock.sendall(
            _post(b"/v1/responses", STREAM)
            + b"POST /v1/responses HTTP/1.1\r\nhost: x\r\nexpect: 100-continue\r\n"
            b"content-type: application/json\r\nconnection: close\r\n"
            b"content-length: %d\r\n\r\n" % len(second)
        )
        data = b""
        while b"100 Continue" not in data:
            piece = sock.recv(65536)
            assert piece, data
            data += piece
        sock.sendall(second)
        data += _read_until_closed(sock)
    stream, _, after = data.partition(b"\r\n0\r\n\r\n")  # the stream's terminating chunk
    assert b"100 Continue" not in stream and b'"two"' in stream
    assert after.startswith(b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 "), after[:80]


def test_a_body_over_the_limit_gets_no_100_continue_whatever_the_header_order() -> None:
    with bridge_to(DEAD_UPSTREAM, max_body=1000) as bridge, _connect(bridge.config.port) as sock:
        sock.sendall(
            b"POST /v1/responses HTTP/1.1\r\nhost: x\r\nexpect: 100-continue\r\n"
            b"content-length: 5000\r\n\r\n"
        )
        data = _read_until_closed(sock)
    assert data.startswith(b"HTTP/1.1 413 "), data[:60]


def test_a_bad_request_pipelined_behind_a_stream_does_not_cut_the_stream() -> None:
    with (
        _slow_stream() as upstream,
        bridge_to(upstream.url, max_body=1000) as bridge,
        _connect(bridge.config.port) as sock,
    ):
        sock.sendall(
            _post(b"/v1/responses", STREAM)
            + b"POST /v1/responses HTTP/1.1\r\nhost: x\r\ncontent-length: 5000\r\n\r\n"
        )
        data = _read_until_closed(sock)
    stream, _, after = data.partition(b"\r\n0\r\n\r\n")
    assert b'"two"' in stream and b"response.completed" in stream
    assert after.startswith(b"HTTP/1.1 413 "), after[:60]


def test_too_many_headers_are_refused() -> None:
    with bridge_to(DEAD_UPSTREAM) as bridge, _connect(bridge.config.port) as sock:
        sock.sendall(b"GET / HTTP/1.1\r\nhost: x\r\n" + b"a: b\r\n" * 200 + b"\r\n")
        data = _read_until_closed(sock)
    assert data.startswith(b"HTTP/1.1 431 ") and b"more than 128 request headers" in data


def _write_buffered(bridge: RunningBridge) -> int:
    """What the bridge holds, unsent, for its clients (read on the bridge's own loop)."""

    async def total() -> int:
        server = bridge._server
        return sum(c.transport.get_write_buffer_size() for c in server.connections if c.transport)

    return asyncio.run_coroutine_threadsafe(total(), bridge._loop).result(5)


def test_pipelined_requests_from_a_client_that_does_not_read_are_not_answered_ahead() -> None:
    # 100,000 small requests (2.5 MB) and nothing read: answering them all piled up their
    # answers (some 17 MB) in the bridge; it stops starting them until the client reads
    with bridge_to(DEAD_UPSTREAM) as bridge, socket.socket() as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        sock.connect(("127.0.0.1", bridge.config.port))
        sock.settimeout(5)
        with contextlib.suppress(OSError):
            sock.sendall(b"GET /nowhere HTTP/1.1\r\n\r\n" * 100_000)
        held, deadline = -1, time.monotonic() + 15
        while time.monotonic() < deadline:  # until the bridge stops adding to it
            time.sleep(0.5)
            last, held = held, _write_buffered(bridge)
            if held == last or held > 4 * 1024 * 1024:
                break
    assert held < 1024 * 1024, f"the bridge buffered {held} bytes of unread answers"


def test_a_chunked_body_of_tiny_chunks_takes_memory_in_proportion_to_its_size() -> None:
    # 2 MiB sent in 2-byte chunks: kept as a list of pieces, it took ~70x its size
    import tracemalloc

    from notes_cli.bridge import http1

    seen: list[int] = []

    class Parsed:
        def __init__(self) -> None:
            self.server = http1.HttpServer(self.handle)
            self.server.loop = asyncio.new_event_loop()

        async def handle(self, request: http1.Request, response: http1.Response) -> None:
            seen.append(len(request.body))

    parsed = Parsed()
    connection = http1._Connection(parsed.server)
    head = b"POST /x HTTP/1.1\r\nhost: x\r\ntransfer-encoding: chunked\r\n\r\n"
    body = b"2\r\nab\r\n" * (1024 * 1024) + b"0\r\n\r\n"
    tracemalloc.start()
    try:
        connection.data_received(head)
        for at in range(0, len(body), 65536):
            connection.data_received(body[at : at + 65536])
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
        connection._disarm()
        parsed.server.loop.run_until_complete(asyncio.sleep(0))
        parsed.server.loop.close()
    assert seen == [2 * 1024 * 1024]
    assert peak < 8 * 1024 * 1024, f"peak {peak} bytes for a 2 MiB body"


@contextlib.contextmanager
def _big_answers(**bounds: float) -> Iterator[int]:
    """The bridge's server alone on a free port, answering `GET /big` with 8 MiB in one
    `send` (as a large model list or a whole turn goes out) and anything else with `ok`."""
    from notes_cli.bridge import http1

    async def handle(request: http1.Request, response: http1.Response) -> None:
        body = b"x" * (8 * 1024 * 1024) if request.path == "/big" else b"ok"
        response.send(200, [(b"content-type", b"text/plain")], body)

    server = http1.HttpServer(handle, **bounds)
    loop = asyncio.new_event_loop()
    sock = socket.create_server(("127.0.0.1", 0))
    ready = threading.Event()
    thread = threading.Thread(
        target=loop.run_until_complete, args=(server.serve(sock, ready.set),), daemon=True
    )
    thread.start()
    assert ready.wait(5)
    try:
        yield sock.getsockname()[1]
    finally:
        loop.call_soon_threadsafe(server.stop)
        thread.join(10)
        loop.close()


def _slow_reader(port: int) -> socket.socket:
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.connect(("127.0.0.1", port))
    sock.settimeout(5)
    return sock


def _read_big_answer(sock: socket.socket) -> bytes:
    """The 8 MiB answer, read to its end; returns what came after it."""
    data = b""
    while b"\r\n\r\n" not in data:
        data += sock.recv(65536)
    head, _, data = data.partition(b"\r\n\r\n")
    length = int(head.lower().split(b"content-length: ")[1].split(b"\r\n")[0])
    while len(data) < length:
        piece = sock.recv(1 << 20)
        assert piece, "the answer was cut short"
        data += piece
    return data[length:]


def test_an_answer_that_ends_while_the_client_is_behind_still_ends_in_the_keep_alive() -> None:
    # the handler finishes with its answer unread in the bridge: once the client has read it,
    # the idle connection must still be closed after keepalive_s (it stayed open for good)
    with _big_answers(keepalive_s=0.5) as port, _slow_reader(port) as sock:
        sock.sendall(b"GET /big HTTP/1.1\r\nhost: x\r\n\r\n")
        time.sleep(1.0)  # the handler is done; its answer waits for this client
        assert _read_big_answer(sock) == b""
        started = time.monotonic()
        assert _read_until_closed(sock, 5) == b""
        assert time.monotonic() - started < 4


def test_100_continue_due_behind_an_unread_answer_is_sent_once_it_is_read() -> None:
    with _big_answers() as port, _slow_reader(port) as sock:
        sock.sendall(b"GET /big HTTP/1.1\r\nhost: x\r\n\r\n")
        time.sleep(1.0)
        sock.sendall(
            b"POST /p HTTP/1.1\r\nhost: x\r\nexpect: 100-continue\r\ncontent-length: 2\r\n\r\n"
        )
        time.sleep(0.3)
        after = _read_big_answer(sock)
        while b"\r\n\r\n" not in after:
            piece = sock.recv(65536)
            assert piece, after
            after += piece
        assert after.startswith(b"HTTP/1.1 100 Continue\r\n\r\n"), after
        sock.sendall(b"hi")
        assert sock.recv(65536).startswith(b"HTTP/1.1 200")


_UPGRADE = b"connection: Upgrade, HTTP2-Settings\r\nupgrade: h2c\r\nhttp2-settings: AAMA\r\n"


@pytest.mark.timeout(120)
def test_a_thousand_pipelined_upgrade_requests_are_each_answered(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # each asks for h2c in one send: served one after another, not by one call per request
    # nested in the last (that recursed into a RecursionError and a 5,900-line traceback)
    count = 1000
    ask = b"GET /nowhere HTTP/1.1\r\nhost: x\r\n" + _UPGRADE + b"\r\n"
    last = b"GET /last HTTP/1.1\r\nhost: x\r\n" + _UPGRADE + b"connection: close\r\n\r\n"
    with bridge_to(DEAD_UPSTREAM) as bridge, _connect(bridge.config.port, timeout=60) as sock:
        sock.sendall(ask * (count - 1) + last)
        answers = _answers(_read_until_closed(sock, deadline_s=60))
    assert [status for status, _ in answers] == [404] * count
    assert b"/last" in answers[-1][1]
    assert "Traceback" not in caplog.text and not any(r.exc_info for r in caplog.records)


@pytest.mark.parametrize(
    "stream",
    [
        # an upgrade with a body, then one with a chunked body, then a plain request
        _post(b"/nowhere", b"{}", _UPGRADE.strip())
        + b"POST /nowhere HTTP/1.1\r\nhost: x\r\ntransfer-encoding: chunked\r\n"
        + _UPGRADE
        + b"\r\n2\r\n{}\r\n0\r\n\r\n"
        + b"GET /end HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n",
        # an upgrade, then garbage: the answer, then a 400
        b"GET /nowhere HTTP/1.1\r\nhost: x\r\n" + _UPGRADE + b"\r\n" + b"\x00\x01 junk\r\n\r\n",
        # an upgrade whose head is over the bound once it is parsed again
        b"GET /" + b"a" * 70_000 + b" HTTP/1.1\r\nhost: x\r\n" + _UPGRADE + b"\r\n",
    ],
    ids=["bodies", "garbage-after", "long-head"],
)
def test_upgrade_requests_mixed_with_others_get_answers_or_a_refusal(
    stream: bytes, caplog: pytest.LogCaptureFixture
) -> None:
    with bridge_to(DEAD_UPSTREAM) as bridge, _connect(bridge.config.port, timeout=30) as sock:
        sock.sendall(stream)
        answers = _answers(_read_until_closed(sock, deadline_s=30))
    assert answers, "no answer at all"
    assert all(status in (400, 404, 431) for status, _ in answers), answers
    assert "Traceback" not in caplog.text and not any(r.exc_info for r in caplog.records)
