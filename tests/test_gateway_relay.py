"""The relay (the bridge's upstream calls): bytes reach the sink as they are read, error
answers become typed errors carrying the upstream's message, a dead upstream names its URL,
and cancelling the call hangs up on the upstream."""

from __future__ import annotations

import asyncio
import json
import time

import pytest
from loopback import LoopbackServer, Reply, chat_stream

from notes_cli.gateway import errors as gw
from notes_cli.gateway.relay import Upstream


class Sink:
    def __init__(self, done_after: bytes | None = None) -> None:
        self.status = 0
        self.parts: list[tuple[float, bytes]] = []
        self.done_after = done_after

    def on_headers(self, status: int, headers: list[tuple[str, str]]) -> None:
        self.status = status

    def on_body(self, data: bytes) -> bool:
        self.parts.append((time.monotonic(), data))
        return self.done_after is not None and self.done_after in data

    @property
    def body(self) -> bytes:
        return b"".join(p for _, p in self.parts)


def run(coro):  # noqa: ANN001, ANN201
    return asyncio.run(asyncio.wait_for(coro, 20))


async def _stream(url: str, sink: Sink, **kw) -> None:  # noqa: ANN003
    upstream = Upstream(url, key="sk-upstream-secret-0000", **kw)
    try:
        await upstream.stream("/chat/completions", b"{}", sink)
    finally:
        await upstream.aclose()


def test_each_chunk_reaches_the_sink_when_it_is_read_not_at_the_end():
    events = chat_stream(["a", "b"])
    reply = Reply.sse([events[0], 1.5, *events[1:]])
    with LoopbackServer(reply) as server:
        sink = Sink()
        start = time.monotonic()
        run(_stream(server.url, sink))
        assert server.requests[0].headers["authorization"] == "Bearer sk-upstream-secret-0000"
    assert sink.status == 200 and b"[DONE]" in sink.body
    first_at = sink.parts[0][0] - start
    last_at = sink.parts[-1][0] - start
    assert first_at < 1.0 <= 1.5 <= last_at  # the first chunk did not wait for the pause


@pytest.mark.parametrize("status", [401, 429, 500])
def test_error_answers_carry_the_upstreams_message(status):
    body = {"error": {"message": f"upstream says {status}", "type": "x", "code": "c"}}
    reply = Reply.json(body, status=status)
    reply.headers["retry-after"] = "7"
    with LoopbackServer(reply) as server:
        sink = Sink()
        with pytest.raises(gw.HttpStatusError) as caught:
            run(_stream(server.url, sink))
    assert caught.value.status == status
    assert caught.value.error_message == f"upstream says {status}"
    assert caught.value.retry_after == 7
    assert sink.parts == []  # an error body never reaches the sink


def test_a_dead_upstream_is_unreachable_naming_the_url():
    with LoopbackServer(Reply()) as server:
        url = server.url
    with pytest.raises(gw.Unreachable) as caught:
        run(_stream(url, Sink(), connect_timeout=2))
    assert url in caught.value.message


def test_a_stalled_upstream_times_out_within_the_idle_limit():
    reply = Reply.sse([chat_stream(["a"])[0], 30.0])
    with LoopbackServer(reply) as server:
        start = time.monotonic()
        with pytest.raises(gw.IdleStreamTimeout):
            run(_stream(server.url, Sink(), idle_timeout=0.5))
    assert time.monotonic() - start < 5


def test_a_stream_cut_mid_body_is_an_upstream_error():
    reply = Reply.sse([chat_stream(["a"])[0], b'data: {"choi'], abort=True)
    with LoopbackServer(reply) as server, pytest.raises(gw.UpstreamError):
        run(_stream(server.url, Sink()))


def test_cancelling_the_call_hangs_up_on_the_upstream():
    closed = asyncio.Event()

    async def scenario() -> None:
        async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            await reader.readuntil(b"\r\n\r\n")
            writer.write(
                b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
                b"transfer-encoding: chunked\r\n\r\n"
            )
            chunk = chat_stream(["a"])[0]
            writer.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
            await writer.drain()
            await reader.read()  # EOF: the client hung up
            closed.set()
            writer.close()

        server = await asyncio.start_server(handle, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        sink = Sink()
        task = asyncio.ensure_future(_stream(f"http://127.0.0.1:{port}", sink))
        while not sink.parts:
            await asyncio.sleep(0.01)
        task.cancel()
        await asyncio.wait_for(closed.wait(), 5)
        server.close()

    run(scenario())
    assert closed.is_set()


# ------------------------------------------------------------ compressed answers (httpx path)


def _gzipped(body: bytes, *, stream: bool = False, status: int = 200) -> Reply:
    import gzip

    kind = "text/event-stream" if stream else "application/json"
    headers = {"content-type": kind, "content-encoding": "gzip"}
    return Reply(status, headers, [gzip.compress(body)], stream=stream)


async def _fetch(url: str, path: str = "/models") -> tuple[int, bytes]:
    upstream = Upstream(url, key="sk-upstream-secret-0000")
    try:
        return await upstream.fetch("GET", path)
    finally:
        await upstream.aclose()


def test_a_gzipped_whole_answer_is_decoded() -> None:
    # nginx's `gzip on` or a CDN: `GET /models` and non-streamed turns read through httpx
    models = json.dumps({"object": "list", "data": [{"id": "up-model"}]}).encode()
    with LoopbackServer(_gzipped(models)) as server:
        status, body = run(_fetch(server.url))
        asked = server.requests[0].headers["accept-encoding"]
    assert status == 200 and json.loads(body)["data"][0]["id"] == "up-model"
    assert asked == "gzip, deflate"  # only what is decoded in bounded pieces (no br, no zstd)


def test_a_gzipped_error_answer_keeps_the_upstreams_message() -> None:
    error = json.dumps({"error": {"message": "model not found", "type": "x"}}).encode()
    with (
        LoopbackServer(_gzipped(error, status=404)) as server,
        pytest.raises(gw.HttpStatusError) as caught,
    ):
        run(_fetch(server.url))
    assert caught.value.error_message == "model not found"


def test_a_gzip_bomb_as_a_whole_answer_stops_at_the_bound() -> None:
    from hostile_gateway import BOMB_DECODED, _gzip_bomb

    bomb = Reply(200, {"content-type": "application/json", "content-encoding": "gzip"})
    bomb.chunks = [_gzip_bomb()]
    with LoopbackServer(bomb) as server, pytest.raises(gw.GatewayError) as caught:
        run(_fetch(server.url))
    assert "16 MiB" in caught.value.message, caught.value.message
    assert BOMB_DECODED > 16 * 1024 * 1024


def test_a_gzipped_stream_through_httpx_is_decoded() -> None:
    # an upstream behind a proxy is read through httpx, which must ask for no compression
    # (events would come in lumps) and decode an upstream that compresses anyway
    import httpx

    events = b"".join(chat_stream(["a", "b"]))
    with LoopbackServer(_gzipped(events, stream=True)) as server:
        sink = Sink()
        run(_stream(server.url, sink, transport=httpx.AsyncHTTPTransport()))
        asked = server.requests[0].headers["accept-encoding"]
    assert sink.body == events
    assert asked == "identity"


def test_the_httpx_path_waits_the_headers_timeout_for_the_head_then_the_idle_timeout() -> None:
    # an upstream behind a proxy goes through httpx: its head gets `headers_timeout` (a model
    # that thinks long before answering), each later read `idle_timeout`, as on the lean path
    import httpx

    waits: list[tuple[str, float]] = []

    class Body(httpx.AsyncByteStream):
        def __init__(self, request: httpx.Request) -> None:
            self.request = request

        async def __aiter__(self):  # noqa: ANN204
            waits.append(("read", self.request.extensions["timeout"]["read"]))
            yield b"".join(chat_stream(["a"]))

    class Recording(httpx.AsyncBaseTransport):
        async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
            waits.append(("head", request.extensions["timeout"]["read"]))
            headers = {"content-type": "text/event-stream"}
            return httpx.Response(200, headers=headers, stream=Body(request))

    sink = Sink()
    kw = {"headers_timeout": 7.0, "idle_timeout": 70.0, "transport": Recording()}
    run(_stream("http://upstream.test/v1", sink, **kw))
    assert b"[DONE]" in sink.body
    assert waits == [("head", 7.0), ("read", 70.0)]
