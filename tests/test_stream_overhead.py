"""What keeps a streamed request cheap: the async client reuses its connection, never waits long
for a body that stays open after the last event, and the engine stops a stream whose client
hung up (the disconnect watcher runs beside the stream, not the other way round)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

import httpx
from fake_engine import FakeEngine
from loopback import LoopbackServer, Reply, chat_stream

from notes_cli.clients.endpoint import Endpoint
from notes_cli.engine.core.api import Admitted, Completion, GenerationRequest, TokenChunk
from notes_cli.gateway import AsyncGatewayClient, StreamResult


def endpoint(url: str) -> Endpoint:
    return Endpoint("openai", url + "/api", "chat", model="m", key="sk-test-0123456789")


def stream_twice(url: str) -> list[StreamResult]:
    async def go() -> list[StreamResult]:
        async with AsyncGatewayClient(endpoint(url), timeout=10) as client:
            return [await client.stream("hi"), await client.stream("hi")]

    return asyncio.run(go())


def test_the_second_stream_reuses_the_first_ones_connection() -> None:
    with LoopbackServer(Reply.sse(chat_stream(["po", "ng"]))) as server:
        first, second = stream_twice(server.url)
    assert first.text == second.text == "pong" and second.completed
    assert first.timings.connect_ms is not None  # a new connection was made
    assert second.timings.connect_ms is None  # none was needed


def test_a_body_left_open_after_the_last_event_does_not_hold_the_caller() -> None:
    # [DONE], then 5 s before the chunked terminator: the answer is complete at [DONE].
    reply = Reply.sse([*chat_stream(["po", "ng"]), 5.0])
    with LoopbackServer(reply) as server:
        started = time.perf_counter()
        first, second = stream_twice(server.url)
        elapsed = time.perf_counter() - started
    assert elapsed < 2.5
    assert first.text == "pong" and first.completed and second.completed
    assert second.timings.connect_ms is not None  # that connection could not be reused


class _RecordingEngine(FakeEngine):
    """A FakeEngine that notes when a request's token stream is closed."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.closed = asyncio.Event()
        self.closed_at: float | None = None

    async def generate(
        self, request: GenerationRequest
    ) -> AsyncIterator[Admitted | TokenChunk | Completion]:
        try:
            async for item in super().generate(request):
                yield item
        finally:
            self.closed_at = time.monotonic()


def test_the_engine_stops_a_stream_whose_client_hung_up(
    start_engine_server: Callable[..., Any],
) -> None:
    fake = _RecordingEngine(reply=" ".join(["word"] * 200), tpot_s=0.05)  # a 10 s stream
    engine = start_engine_server(service=fake)
    body = {"model": "pd-mock-1", "stream": True, "messages": [{"role": "user", "content": "hi"}]}
    with httpx.Client(timeout=5) as http:
        with http.stream("POST", engine.base_url + "/chat/completions", json=body) as response:
            assert response.status_code == 200
            next(response.iter_bytes())
        hung_up = time.monotonic()
    deadline = hung_up + 3
    while fake.closed_at is None and time.monotonic() < deadline:
        time.sleep(0.02)
    assert fake.closed_at is not None, "the stream kept running after the client left"
    assert fake.closed_at - hung_up < 1.0


def test_a_finished_stream_is_complete_on_the_wire(
    start_engine_server: Callable[..., Any],
) -> None:
    engine = start_engine_server(service=FakeEngine(reply="pong from the mock"))
    body = {"model": "pd-mock-1", "stream": True, "messages": [{"role": "user", "content": "hi"}]}
    with httpx.Client(timeout=5) as http:
        for _ in range(3):  # the same connection each time: every body really ended
            text = http.post(engine.base_url + "/chat/completions", json=body).text
            assert text.endswith("data: [DONE]\n\n")
            assert '"content":" mock"' in text


def test_many_concurrent_streams_complete_and_the_next_round_reuses_every_connection() -> None:
    # 12 overlapping streams need two small pools (see gateway._pools).
    reply = Reply.sse([0.2, *chat_stream(["po", "ng"])])
    with LoopbackServer(reply) as server:

        async def go() -> tuple[list[StreamResult], list[StreamResult]]:
            async with AsyncGatewayClient(endpoint(server.url), timeout=10) as client:
                first = await asyncio.gather(*(client.stream("hi") for _ in range(12)))
                second = await asyncio.gather(*(client.stream("hi") for _ in range(12)))
                return list(first), list(second)

        first, second = asyncio.run(go())
    assert all(r.text == "pong" and r.completed for r in first + second)
    assert all(r.timings.connect_ms is not None for r in first)
    assert all(r.timings.connect_ms is None for r in second)
