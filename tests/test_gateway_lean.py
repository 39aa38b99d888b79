"""The async client's lean HTTP/1.1 transport (notes_cli/gateway/_h1.py) over real sockets.

What the shared loopback tests cannot show: answers framed every way HTTP/1.1 allows, error
answers, connection reuse and its races, the bounded drain after the last event, header
injection, and which URLs go to httpx instead (proxies, credentials in the URL)."""

from __future__ import annotations

import asyncio
import gzip
import json
import socket
import ssl
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from loopback import LoopbackServer, Received, Reply, anthropic_stream, chat_stream

from notes_cli.clients.endpoint import Endpoint
from notes_cli.gateway import AsyncGatewayClient, StreamResult, _h1, errors
from notes_cli.gateway._h1 import Origin, encode_request, supports

KEY = "sk-test-0123456789abcdef"


def endpoint(url: str, protocol: str = "chat", **kw: Any) -> Endpoint:
    return Endpoint("openai", url + "/api", protocol, model="m", key=KEY, **kw)  # type: ignore[arg-type]


def stream(target: Endpoint, times: int = 1, **client_kw: float) -> list[StreamResult]:
    """`times` streamed turns, one after the other; a hang fails in 10 s, not at pytest's limit."""

    async def go() -> list[StreamResult]:
        async with AsyncGatewayClient(target, **client_kw) as client:
            return [await client.stream("hi") for _ in range(times)]

    return asyncio.run(asyncio.wait_for(go(), 10))


# --------------------------------------------------------------------------- a raw server

Script = Callable[[int, bytes], bytes | None]  # (request number on this connection, head) → reply


class RawServer:
    """Answers each request with the exact bytes `script` returns; None closes the connection
    without an answer. Counts connections and requests."""

    def __init__(self, script: Script, close_after: bool = False) -> None:
        self.script = script
        self.close_after = close_after  # close once the reply is written
        self.connections = 0
        self.requests: list[bytes] = []
        self._sock = socket.create_server(("127.0.0.1", 0))
        self._sock.settimeout(0.05)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._sock.getsockname()[1]}"

    def __enter__(self) -> RawServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(5)
        self._sock.close()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self._sock.accept()
            except TimeoutError:
                continue
            self.connections += 1
            threading.Thread(target=self._connection, args=(conn,), daemon=True).start()

    def _connection(self, conn: socket.socket) -> None:
        conn.settimeout(5)
        buffer = b""
        number = 0
        with conn:
            while not self._stop.is_set():
                while b"\r\n\r\n" not in buffer:
                    try:
                        data = conn.recv(65536)
                    except OSError:
                        return
                    if not data:
                        return
                    buffer += data
                head, buffer = buffer.split(b"\r\n\r\n", 1)
                length = 0
                for line in head.split(b"\r\n")[1:]:
                    name, _, value = line.partition(b":")
                    if name.strip().lower() == b"content-length":
                        length = int(value)
                while len(buffer) < length:
                    buffer += conn.recv(65536)
                buffer = buffer[length:]
                self.requests.append(head)
                number += 1
                reply = self.script(number, head)
                if reply is None:
                    return
                conn.sendall(reply)
                if self.close_after:
                    return


def chunked(*parts: bytes) -> bytes:
    return b"".join(b"%x\r\n%s\r\n" % (len(p), p) for p in parts) + b"0\r\n\r\n"


SSE_HEAD = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
EVENTS = chat_stream(["po", "ng"])


def sse_chunked(**_: Any) -> bytes:
    return SSE_HEAD + b"transfer-encoding: chunked\r\n\r\n" + chunked(*EVENTS)


# --------------------------------------------------------------------------- framing


@pytest.mark.parametrize(
    "reply",
    [
        pytest.param(sse_chunked(), id="chunked"),
        pytest.param(
            SSE_HEAD + b"content-length: %d\r\n\r\n%s" % (len(b"".join(EVENTS)), b"".join(EVENTS)),
            id="content-length",
        ),
        pytest.param(
            SSE_HEAD
            + b"transfer-encoding: chunked\r\ncontent-encoding: gzip\r\n\r\n"
            + chunked(gzip.compress(b"".join(EVENTS))),
            id="gzip",
        ),
        pytest.param(b"HTTP/1.1 100 Continue\r\n\r\n" + sse_chunked(), id="interim-100"),
        pytest.param(
            SSE_HEAD
            + b"transfer-encoding: chunked\r\n\r\n"
            + b"".join(b"%x;ext=1\r\n%s\r\n" % (len(e), e) for e in EVENTS)
            + b"0\r\nx-trailer: 1\r\n\r\n",
            id="chunk-extensions-and-trailers",
        ),
    ],
)
def test_every_framing_of_a_stream_reads_the_same(reply: bytes) -> None:
    with RawServer(lambda n, head: reply) as server:
        (result,) = stream(endpoint(server.url), timeout=3)
    assert result.text == "pong" and result.completed and result.output_tokens == 2


def test_a_close_delimited_body_reads_to_the_end_and_the_connection_is_not_reused() -> None:
    reply = SSE_HEAD + b"\r\n" + b"".join(EVENTS)
    with RawServer(lambda n, head: reply, close_after=True) as server:
        first, second = stream(endpoint(server.url), times=2, timeout=3)
    assert first.text == second.text == "pong" and second.completed
    assert server.connections == 2 and second.timings.connect_ms is not None


def test_events_split_across_reads_are_joined() -> None:
    body = b"".join(EVENTS)

    def trickle(n: int, head: bytes) -> bytes:
        return (
            SSE_HEAD + b"transfer-encoding: chunked\r\n\r\n" + chunked(*[bytes([b]) for b in body])
        )

    with RawServer(trickle) as server:
        (result,) = stream(endpoint(server.url), timeout=3)
    assert result.text == "pong" and result.completed


class _Collect:
    def __init__(self) -> None:
        self.body = b""
        self.calls = 0

    def on_headers(self, status: int, reason: str, headers: list[tuple[str, str]]) -> None:
        pass

    def on_body(self, data: bytes) -> bool:
        self.body += data
        self.calls += 1
        return False


def test_a_chunked_answer_cut_at_any_two_bytes_delivers_the_same_body() -> None:
    """Whole chunks of one read go to the sink at once; cuts anywhere (inside a size line,
    the data, the CRLFs, the last chunk, the trailers) give the same body and the same end."""
    from notes_cli.gateway._h1 import _Connection

    events = [*EVENTS[:2], b"data: x\r\n\r\n", *EVENTS[2:]]
    wire = b"".join(b"%x;ext=1\r\n%s\r\n" % (len(e), e) for e in events[:2])
    wire += b"".join(b"%x\r\n%s\r\n" % (len(e), e) for e in events[2:])
    wire += b"0\r\nx-trailer: 1\r\n\r\n"
    head = b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n"
    loop = asyncio.new_event_loop()
    try:
        step = 7  # every 7th pair of cut points: ~3,000 cases, a second
        for first in range(0, len(wire) + 1, step):
            for second in range(first, len(wire) + 1, step):
                connection = _Connection(loop)
                sink = _Collect()
                connection._begin(sink, loop.create_future(), 5)
                connection.state = "head"
                done = connection.done
                connection.data_received(head + wire[:first])
                connection.data_received(wire[first:second])
                connection.data_received(wire[second:])
                assert sink.body == b"".join(events), (first, second)
                assert done is not None and done.done() and done.exception() is None
    finally:
        loop.close()
    whole = _Collect()
    connection = _Connection(asyncio.new_event_loop())
    connection._begin(whole, connection.loop.create_future(), 5)
    connection.state = "head"
    connection.data_received(head + wire)
    assert whole.body == b"".join(events) and whole.calls == 1  # one call for the read
    connection.loop.close()


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        (b"SSH-2.0-OpenSSH_9.6\r\n\r\n", errors.ProtocolError),
        (SSE_HEAD + b"transfer-encoding: chunked\r\n\r\nzz\r\n", errors.TruncatedStream),
        # int("-1", 16) is -1: the bytes after it were taken for the body
        (
            SSE_HEAD + b"transfer-encoding: chunked\r\n\r\n-1\r\ndata: [DONE]\n\n",
            errors.TruncatedStream,
        ),
        (SSE_HEAD + b"content-encoding: br\r\ncontent-length: 3\r\n\r\nabc", errors.ProtocolError),
    ],
    ids=["not-http", "bad-chunk-size", "negative-chunk-size", "unsupported-encoding"],
)
def test_a_malformed_answer_is_a_named_error(reply: bytes, expected: type[Exception]) -> None:
    # the server keeps the connection open: the error must come from the bytes, not the close
    with (
        RawServer(lambda n, head: reply) as server,
        pytest.raises(expected) as info,
    ):
        url = server.url
        stream(endpoint(url), timeout=3)
    assert url in str(info.value) and info.value.fix  # type: ignore[attr-defined]


# --------------------------------------------------------------------------- error answers


def test_error_answers_carry_the_servers_message_and_a_fix() -> None:
    body = json.dumps({"error": {"message": "Incorrect API key", "type": "invalid_request_error"}})
    reply = Reply.json(json.loads(body), status=401)
    with LoopbackServer(reply) as server, pytest.raises(errors.HttpStatusError) as info:
        stream(endpoint(server.url, key_env="GW_KEY"), timeout=3)
    error = info.value
    assert error.status == 401 and error.error_message == "Incorrect API key"
    assert "$GW_KEY" in (error.fix or "") and KEY not in str(error)


def test_an_html_error_page_is_named_by_its_title() -> None:
    page = b"<html><head><title>502 Bad Gateway</title></head><body>nginx</body></html>"
    reply = Reply(502, {"content-type": "text/html"}, [page])
    with LoopbackServer(reply) as server, pytest.raises(errors.HttpStatusError) as info:
        stream(endpoint(server.url), timeout=3)
    assert info.value.status == 502 and "HTML page: 502 Bad Gateway" in str(info.value)


def test_429_reports_retry_after_and_a_redirect_is_not_followed() -> None:
    def answer(request: Received) -> Reply:
        if request.path.startswith("/api/chat"):
            return Reply(429, {"retry-after": "7"}, [b'{"error": {"message": "slow down"}}'])
        return Reply.sse(EVENTS)

    with LoopbackServer(answer) as server, pytest.raises(errors.HttpStatusError) as info:
        stream(endpoint(server.url), timeout=3)
    assert info.value.retry_after == 7.0

    moved = Reply(307, {"location": "https://elsewhere.example/v1/chat/completions"}, [b""])
    with LoopbackServer(moved) as server, pytest.raises(errors.HttpStatusError) as info:
        stream(endpoint(server.url), timeout=3)
    assert info.value.location == "https://elsewhere.example/v1/chat/completions"
    assert len(server.requests) == 1  # nothing was sent to the new location


def test_a_json_answer_is_accepted_for_anthropic_and_refused_for_chat() -> None:
    message = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "content": [{"type": "text", "text": "pong"}],
        "stop_reason": "end_turn",
        "usage": {"input_tokens": 3, "output_tokens": 1},
    }
    with LoopbackServer(Reply.json(message)) as server:
        (result,) = stream(endpoint(server.url, "anthropic"), timeout=3)
        assert result.text == "pong" and result.completed
        with pytest.raises(errors.ProtocolError, match="not text/event-stream"):
            stream(endpoint(server.url, "chat"), timeout=3)


def test_an_upstream_error_event_fails_the_stream_and_drops_the_connection() -> None:
    failed = [
        *anthropic_stream(["po"], stop=None),
        b'event: error\ndata: {"type":"error",'
        b'"error":{"type":"overloaded_error","message":"Overloaded"}}\n\n',
    ]
    with LoopbackServer(Reply.sse(failed)) as server, pytest.raises(errors.UpstreamError):
        stream(endpoint(server.url, "anthropic"), timeout=3)


# --------------------------------------------------------------------------- connections


def test_a_kept_alive_connection_the_server_dropped_is_replaced_transparently() -> None:
    # The first request on each connection is answered; a second one on the same connection
    # finds it closed (what a server's keep-alive timeout does between two requests).
    with RawServer(lambda n, head: sse_chunked() if n == 1 else None) as server:
        first, second = stream(endpoint(server.url), times=2, timeout=3)
    assert first.completed and second.completed and second.text == "pong"
    assert server.connections == 2 and second.timings.connect_ms is not None


def test_a_server_that_trickles_after_the_last_event_does_not_hold_the_caller() -> None:
    def trickle(n: int, head: bytes) -> bytes:
        return (
            SSE_HEAD
            + b"transfer-encoding: chunked\r\n\r\n"
            + b"".join(b"%x\r\n%s\r\n" % (len(e), e) for e in EVENTS)
        )  # no terminator: the body stays open; pings follow below

    class Pinging(RawServer):
        def _connection(self, conn: socket.socket) -> None:
            ping = b": ping\n\n"
            with conn:
                conn.recv(65536)
                conn.sendall(trickle(1, b""))
                while not self._stop.wait(0.05):
                    try:
                        conn.sendall(b"%x\r\n%s\r\n" % (len(ping), ping))
                    except OSError:
                        return

    with Pinging(trickle) as server:
        started = time.perf_counter()
        first, second = stream(endpoint(server.url), times=2, timeout=3)
        elapsed = time.perf_counter() - started
    assert first.completed and second.completed
    assert elapsed < 2.0  # each caller was let go about 0.25 s after its last event
    assert server.connections == 2  # a body that never ended is not reused


def test_a_cancelled_stream_closes_its_connection() -> None:
    # The first answer stalls mid-stream and its caller gives up. Were that connection reused,
    # the second request would sit behind the stalled answer, which the server never finishes.
    def answer(request: Received) -> Reply:
        stall = 30.0 if len(server.requests) == 1 else 0.0
        return Reply.sse([*EVENTS[:1], stall, *EVENTS[1:]])

    with LoopbackServer(answer) as server:

        async def go() -> StreamResult:
            async with AsyncGatewayClient(endpoint(server.url), timeout=3) as client:
                with pytest.raises(TimeoutError):
                    async with asyncio.timeout(0.3):
                        await client.stream("hi")
                return await client.stream("hi")

        second = asyncio.run(asyncio.wait_for(go(), 10))
        assert len(server.requests) == 2
    assert second.text == "pong" and second.completed
    assert second.timings.connect_ms is not None  # on a new connection


def test_a_header_that_would_smuggle_another_is_refused_before_sending() -> None:
    with RawServer(lambda n, head: sse_chunked()) as server:
        target = endpoint(server.url, headers={"x-team": "a\r\nx-admin: yes"})
        with pytest.raises(errors.UnsendableHeader):
            stream(target, timeout=3)
    assert server.requests == []


def test_the_request_is_what_the_httpx_path_sends() -> None:
    seen: list[Received] = []

    def answer(request: Received) -> Reply:
        seen.append(request)
        return Reply.sse(EVENTS)

    with LoopbackServer(answer) as server:
        stream(endpoint(server.url), timeout=3)
    (request,) = seen
    assert request.method == "POST" and request.path == "/api/chat/completions"
    assert request.headers["authorization"] == f"Bearer {KEY}"
    assert request.headers["host"] == server.url.removeprefix("http://")
    assert request.headers["accept"] == "text/event-stream"
    assert request.json()["stream"] is True and request.json()["model"] == "m"


# --------------------------------------------------------------------------- who takes which URL


@pytest.fixture
def no_proxy_env(monkeypatch: pytest.MonkeyPatch) -> Iterator[pytest.MonkeyPatch]:
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY"):
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.lower(), raising=False)
    yield monkeypatch


def test_a_proxied_url_goes_through_httpx_and_the_proxy(no_proxy_env: pytest.MonkeyPatch) -> None:
    # The "proxy" is a loopback server: httpx sends it the absolute URL, as proxies expect.
    with LoopbackServer(Reply.sse(EVENTS)) as proxy:
        no_proxy_env.setenv("HTTP_PROXY", proxy.url)
        (result,) = stream(endpoint("http://gateway.internal.test"), timeout=3)
    assert result.text == "pong"
    assert proxy.requests[0].path == "http://gateway.internal.test/api/chat/completions"


def test_tls_to_a_plain_http_port_is_a_tls_error(no_proxy_env: pytest.MonkeyPatch) -> None:
    with LoopbackServer(Reply.sse(EVENTS)) as server, pytest.raises(errors.TLSError) as info:
        stream(endpoint(server.url.replace("http://", "https://")), timeout=3)
    assert "plain http://" in (info.value.fix or "")


def test_which_urls_the_lean_transport_takes() -> None:
    assert supports("http://127.0.0.1:8000/api/chat/completions")
    assert supports("https://gw.example/v1/responses")
    assert not supports("http://user:secret@gw.example/v1")  # httpx sends these credentials
    assert not supports("ftp://gw.example/")
    assert not supports("127.0.0.1:8000/api")


def test_request_bytes_name_the_host_as_httpx_does() -> None:
    head = encode_request("POST", Origin("http://[::1]:8000/api/x?a=1"), {"x": "y"}, b"{}")
    assert head.startswith(b"POST /api/x?a=1 HTTP/1.1\r\nhost: [::1]:8000\r\n")
    assert head.endswith(b"content-length: 2\r\n\r\n{}")
    assert b"host: gw.example\r\n" in encode_request("GET", Origin("https://gw.example/"), {}, None)


class _Recorder:
    def __init__(self) -> None:
        self.status = 0
        self.body = bytearray()
        self.calls = 0

    def on_headers(self, status: int, reason: str, headers: Any) -> None:
        self.status = status

    def on_body(self, data: bytes) -> bool:
        assert type(data) is bytes  # the sink's contract, whichever parsing path ran
        self.calls += 1
        self.body += data
        return False


class _Transport:
    def write(self, data: bytes) -> None:
        pass

    def close(self) -> None:
        pass

    def is_closing(self) -> bool:
        return False


def test_a_chunked_answer_split_at_every_byte_gives_the_same_body() -> None:
    # the parser's paths: whole chunks in one read (one or several), a chunk cut anywhere,
    # an extension, an upper-case size, the terminator and trailers
    pieces = [b"data: one\n\n", b"data: two\n\n" * 3, b"x", b"data: four\n\n"]
    chunks = [b"%x\r\n%s\r\n" % (len(p), p) for p in pieces]
    chunks[2] = b"1;ext=1\r\nx\r\n"
    chunks[3] = chunks[3].upper().replace(b"DATA: FOUR", b"data: four")
    body = b"".join(chunks) + b"0\r\nx-trailer: 1\r\n\r\n"
    head = b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n"

    async def run(reads: list[bytes]) -> _Recorder:
        connection = _h1._Connection(asyncio.get_running_loop())
        connection.transport = _Transport()  # type: ignore[assignment]
        sink = _Recorder()
        done = connection.send(b"GET / HTTP/1.1\r\n\r\n", sink, 5, 5)
        for data in reads:
            connection.data_received(data)
        await asyncio.wait_for(done, 1)
        return sink

    whole = b"".join(pieces)
    for cut in range(len(head) + 1, len(head) + len(body)):
        wire = head + body
        sink = asyncio.run(run([wire[:cut], wire[cut:]]))
        assert (sink.status, bytes(sink.body)) == (200, whole), cut
    one_by_one = asyncio.run(run([head] + chunks + [b"0\r\n\r\n"]))
    assert bytes(one_by_one.body) == whole and one_by_one.calls == len(chunks)


def test_each_request_carries_its_own_headers_though_heads_are_reused() -> None:
    # the pool builds a request head once per method, URL and headers: a different key or
    # accept header on the same URL must not reuse another request's head
    sent = [
        {"authorization": "Bearer first", "accept": "text/event-stream"},
        {"authorization": "Bearer second", "accept": "application/json"},
        {"authorization": "Bearer first", "accept": "text/event-stream"},
    ]

    async def go(url: str) -> None:
        pool = _h1.Http1Pool(ssl.create_default_context())
        try:
            for headers in sent:
                await pool.request(
                    "POST", url, headers, b"{}", _Recorder(),
                    connect_timeout=5, headers_timeout=5, idle_timeout=5,
                )  # fmt: skip
        finally:
            await pool.aclose()

    with LoopbackServer(Reply.json({"ok": True})) as server:
        asyncio.run(asyncio.wait_for(go(server.url + "/v1/chat/completions"), 10))
    seen = [
        {name: r.headers[name] for name in ("authorization", "accept")} for r in server.requests
    ]
    assert seen == sent


def test_clients_share_one_tls_context_until_the_ca_setting_changes(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Each bench sweep point builds a client; reading the CA bundle for each cost ~20 ms of
    CPU. They share one context, but a private CA set in SSL_CERT_FILE is still honoured."""
    import certifi

    from notes_cli.gateway.client import tls_context

    monkeypatch.delenv("SSL_CERT_FILE", raising=False)
    monkeypatch.delenv("SSL_CERT_DIR", raising=False)
    default = tls_context()
    assert tls_context() is default
    assert default.cert_store_stats()["x509_ca"] > 1
    bundle = Path(certifi.where()).read_text()
    end = "-----END CERTIFICATE-----"
    private = tmp_path / "private-ca.pem"
    private.write_text(
        bundle[bundle.index("-----BEGIN CERTIFICATE-----") : bundle.index(end)] + end + "\n"
    )
    monkeypatch.setenv("SSL_CERT_FILE", str(private))
    own = tls_context()
    assert own is not default
    assert own.cert_store_stats()["x509_ca"] == 1  # exactly the CA the variable names
