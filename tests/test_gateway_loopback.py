"""Both clients over a real socket: timings, and the failures only a real server can show (no
headers, a stall after headers, a connection dropped mid-body, nothing listening). Every test
runs twice: GatewayClient (httpx) and AsyncGatewayClient (its lean HTTP/1.1 path) must agree."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Callable
from typing import Any

import pytest
from loopback import LoopbackServer, Reply, anthropic_stream, chat_stream, responses_stream, spaced

from notes_cli.clients.endpoint import Endpoint
from notes_cli.gateway import AsyncGatewayClient, GatewayClient, StreamResult, errors


def endpoint(url: str, protocol: str = "chat") -> Endpoint:
    return Endpoint("openai", url + "/api", protocol, model="m", key="sk-test-0123456789")  # type: ignore[arg-type]


@pytest.fixture(params=["httpx", "lean"])
def driver(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def stream_with(driver: str, target: Endpoint, on_chunk: Any = None, **client_kw: float) -> Any:
    """One streamed turn through the sync client (httpx) or the async one (lean transport)."""
    if driver == "httpx":
        with GatewayClient(target, **client_kw) as client:
            return client.stream("hi", on_chunk=on_chunk)

    async def go() -> StreamResult:
        async with AsyncGatewayClient(target, **client_kw) as client:
            return await client.stream("hi", on_chunk=on_chunk)

    return asyncio.run(go())


@pytest.fixture
def run(driver: str) -> Callable[..., StreamResult]:
    def serve(reply: Reply, protocol: str = "chat", **client_kw: float) -> StreamResult:
        """Serve `reply` on a real socket and stream one turn from it."""
        seen: list[str] = []
        with LoopbackServer(reply) as server:
            on_chunk = lambda text, ms: seen.append(text)  # noqa: E731
            result: StreamResult = stream_with(
                driver, endpoint(server.url, protocol), on_chunk, **client_kw
            )
        assert seen == [p for p in seen if p] and "".join(seen) == result.text
        return result

    return serve


def test_ttft_and_total_are_measured_over_a_real_socket(run: Callable[..., StreamResult]) -> None:
    # 0.15 s before the first token, then 4 more tokens 0.05 s apart.
    events = chat_stream(["a", "b", "c", "d", "e"])
    chunks: list[bytes | float] = [0.15, events[0], *spaced(events[1:5], 0.05), *events[5:]]
    result = run(Reply.sse(chunks))
    t = result.timings
    assert t.connect_ms is not None and t.headers_ms is not None
    assert t.connect_ms <= t.headers_ms < t.ttft_ms  # headers came before the model started
    assert t.ttft_ms is not None and t.ttft_ms >= 150
    assert t.total_ms is not None and t.total_ms - t.ttft_ms >= 180  # 4 gaps of 50 ms, less jitter
    assert len(t.chunk_ms) == 5 and t.chunk_ms == sorted(t.chunk_ms)
    assert result.tokens_per_s is not None and 5 < result.tokens_per_s < 25


@pytest.mark.parametrize(
    ("protocol", "events"),
    [("responses", responses_stream(["po", "ng"])), ("anthropic", anthropic_stream(["po", "ng"]))],
)
def test_each_protocol_streams_over_a_socket(
    run: Callable[..., StreamResult], protocol: str, events: list[bytes]
) -> None:
    result = run(Reply.sse(spaced(events, 0.01)), protocol)
    assert result.text == "pong" and result.completed


def test_server_that_never_sends_headers(run: Callable[..., StreamResult]) -> None:
    with pytest.raises(errors.HeadersTimeout, match="no response headers within 0.3 s"):
        run(Reply.sse(chat_stream(["a"]), hold_headers=30), timeout=0.3)


def test_stall_after_headers_uses_the_idle_timeout(run: Callable[..., StreamResult]) -> None:
    events = chat_stream(["a", "b"])
    with pytest.raises(errors.IdleStreamTimeout, match="went silent for 0.3 s") as info:
        run(Reply.sse([events[0], 30.0, *events[1:]]), timeout=5, idle_timeout=0.3)
    assert info.value.partial is not None and info.value.partial.text == "a"


def test_connection_dropped_mid_stream_is_truncated(run: Callable[..., StreamResult]) -> None:
    with pytest.raises(errors.TruncatedStream) as info:
        run(Reply.sse(chat_stream(["a", "b"])[:2], abort=True), timeout=2)
    assert info.value.partial.text == "ab"


def test_nothing_listening_is_unreachable(driver: str) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    with pytest.raises(errors.Unreachable, match="cannot connect"):
        stream_with(driver, endpoint(f"http://127.0.0.1:{port}"), timeout=2)


def test_async_client_times_concurrent_streams_over_a_real_socket() -> None:
    events = chat_stream(["a", "b", "c"])
    with LoopbackServer(Reply.sse([0.1, *spaced(events, 0.01)])) as server:

        async def go() -> list[StreamResult]:
            async with AsyncGatewayClient(endpoint(server.url), timeout=5) as client:
                return list(await asyncio.gather(*(client.stream("hi") for _ in range(8))))

        results = asyncio.run(go())
    assert len(results) == 8 and all(r.text == "abc" and r.completed for r in results)
    for result in results:
        t = result.timings
        assert t.connect_ms is not None and t.ttft_ms is not None and t.ttft_ms >= 100
