"""PD behaviour as a client sees it over real sockets, against `pdnotes engine serve` in its own
process (so the client's timing is not skewed by sharing an interpreter with the server).

The article's claims, each measured from the client side:
  - prefill is compute-bound: TTFT grows with prompt length while TPOT barely moves;
  - decode is memory-bound: TPOT grows with the decode batch (and the KV it reads);
  - colocated, a long prefill stalls every decoding stream; disaggregated, it does not;
  - the KV transfer grows with the prompt and is many times slower over a TCP fallback;
  - what the client measures agrees with the engine's own `usage.pd_timing`.
`--speed` keeps each test around a second; tolerances allow for HTTP and parsing overhead.

CPU load (other tests, other processes) only ever makes a client's measurement later, never
earlier, so each wall-clock claim is measured REPEATS times and judged on the fastest run (the
one nearest what the engine did); the claims on `pd_timing`, the engine's model, need no
repeats.
"""

from __future__ import annotations

import asyncio
import json
import statistics
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
from engine_process import EngineProcess

SPEED = 2.0
TIMER_SLACK_S = 0.001  # scheduling and HTTP jitter per token (the engine's timers are ~0.1 ms late)
REPEATS = 3


@pytest.fixture(scope="module")
def disagg() -> Iterator[EngineProcess]:
    with EngineProcess("--mode", "disagg", "--speed", str(SPEED)) as engine:
        yield engine


@pytest.fixture(scope="module")
def colocated() -> Iterator[EngineProcess]:
    with EngineProcess(
        "--preset", "h800-h20-rdma", "--mode", "colocated", "--speed", str(SPEED)
    ) as engine:
        yield engine


def prompt(filler_tokens: int, output_tokens: int) -> str:
    """About `filler_tokens` of context, then a line asking the engine to repeat
    `output_tokens` words (so the answer length is known exactly)."""
    filler = ("context " * 50 + "\n") * (filler_tokens // 50)
    return filler + "repeat: " + " ".join(f"w{i}" for i in range(output_tokens))


@dataclass
class Measured:
    """One streamed request, timed by the client (wall seconds) plus the engine's pd_timing."""

    ttft_s: float
    arrivals: list[float]
    pd: dict[str, Any]

    @property
    def tpot_s(self) -> float:
        return (self.arrivals[-1] - self.arrivals[0]) / (len(self.arrivals) - 1)

    @property
    def max_gap_s(self) -> float:
        return max(b - a for a, b in zip(self.arrivals, self.arrivals[1:], strict=False))


def fastest(runs: list[Measured]) -> Measured:
    """The same request measured several times: the run with the shortest TTFT, carrying the
    steadiest run's arrivals (shortest TPOT). Load adds delay to both, it never removes any."""
    first = min(runs, key=lambda m: m.ttft_s)
    steadiest = min(runs, key=lambda m: m.tpot_s)
    return Measured(first.ttft_s, steadiest.arrivals, first.pd)


def repeated(measure: Any) -> list[Measured]:
    """`measure()` (a list of requests' measurements) REPEATS times; each request's fastest."""
    runs = [run(measure()) for _ in range(REPEATS)]
    return [fastest(list(same)) for same in zip(*runs, strict=True)]


async def stream_chat(
    client: httpx.AsyncClient, base_url: str, filler: int, output: int, delay_s: float = 0.0
) -> Measured:
    """TTFT by vLLM's rule: the first chunk carrying generated text."""
    await asyncio.sleep(delay_s)
    body = {
        "model": "pd-mock-1",
        "stream": True,
        "stream_options": {"include_usage": True},
        "max_tokens": output,
        "messages": [{"role": "user", "content": prompt(filler, output)}],
    }
    began = time.perf_counter()
    arrivals: list[float] = []
    usage: dict[str, Any] = {}
    async with client.stream("POST", f"{base_url}/chat/completions", json=body) as response:
        assert response.status_code == 200
        async for line in response.aiter_lines():
            if not line.startswith("data: {"):
                continue
            chunk = json.loads(line[6:])
            if chunk.get("usage"):
                usage = chunk["usage"]
            if chunk["choices"] and chunk["choices"][0]["delta"].get("content"):
                arrivals.append(time.perf_counter())
    assert len(arrivals) == output == usage["completion_tokens"]
    return Measured(arrivals[0] - began, arrivals, usage["pd_timing"])


def run(coroutine: Any) -> Any:
    async def main() -> Any:
        return await coroutine

    return asyncio.run(main())


async def sequential(base_url: str, fillers: list[int], output: int) -> list[Measured]:
    async with httpx.AsyncClient(timeout=60) as client:
        await stream_chat(client, base_url, 0, 2)  # warm-up: connection, first-call imports
        return [await stream_chat(client, base_url, f, output) for f in fillers]


async def concurrent(base_url: str, count: int, filler: int, output: int) -> list[Measured]:
    """`count` requests at once, after one warm-up request. (Opening all `count` connections
    beforehand with `count` warm-up streams made the batch reach the engine spread out: on a
    quiet machine the 64 requests then decoded almost alone, TPOT 1.14x instead of 1.6x.)"""
    limits = httpx.Limits(max_connections=count + 4)
    async with httpx.AsyncClient(timeout=60, limits=limits) as client:
        await stream_chat(client, base_url, 0, 2)
        jobs = [stream_chat(client, base_url, filler, output) for _ in range(count)]
        return list(await asyncio.gather(*jobs))


# --- prefill is compute-bound ---------------------------------------------------------------


@pytest.fixture(scope="module")
def by_prompt_length(disagg: EngineProcess) -> list[Measured]:
    return repeated(lambda: sequential(disagg.base_url, [0, 2000, 8000], output=32))


def test_ttft_grows_with_prompt_length_while_tpot_barely_moves(
    by_prompt_length: list[Measured],
) -> None:
    short, medium, long = by_prompt_length

    assert short.pd["ttft_ms"] < medium.pd["ttft_ms"] < long.pd["ttft_ms"]
    assert long.pd["tpot_ms"] == pytest.approx(short.pd["tpot_ms"], rel=0.1)
    assert short.ttft_s < medium.ttft_s < long.ttft_s
    assert long.ttft_s > 5 * short.ttft_s
    assert long.tpot_s == pytest.approx(short.tpot_s, rel=0.25, abs=TIMER_SLACK_S)


def test_client_timing_agrees_with_pd_timing(by_prompt_length: list[Measured]) -> None:
    for measured in by_prompt_length:
        modelled_ttft_s = measured.pd["ttft_ms"] / 1000 / SPEED
        modelled_tpot_s = measured.pd["tpot_ms"] / 1000 / SPEED
        # The server's own wall time before its model had the request (DESIGN: a server's TTFT
        # in wall time is ttft_ms / speed + admission_wall_ms).
        server_ttft_s = modelled_ttft_s + measured.pd["admission_wall_ms"] / 1000
        # TTFT: never earlier than the server's; 15% plus 30 ms wall later at most, for HTTP,
        # JSON and reading the prompt on the client's side.
        assert measured.ttft_s >= 0.85 * modelled_ttft_s
        assert measured.ttft_s <= server_ttft_s + 0.15 * modelled_ttft_s + 0.03
        # TPOT: 15% plus the event loop's timer granularity (about 1 ms wall per token when the
        # machine is busy).
        assert measured.tpot_s == pytest.approx(modelled_tpot_s, rel=0.15, abs=TIMER_SLACK_S)


# --- decode is memory-bound -----------------------------------------------------------------


def test_tpot_grows_with_batch_size() -> None:
    # Its own engine at half SPEED. Under CPU load the engine takes in 64 requests one by one
    # over a second or more of wall time, longer than a stream's decode at SPEED: the streams
    # then overlap only in part, so the engine is judged by the stream that decoded in the
    # biggest batch (its TPOT is the batch's), and the client by what that stream saw. (The
    # mean over all 64 streams fell to 1.10x on a quiet CI run: the late ones decode alone.)
    with EngineProcess("--mode", "disagg", "--speed", str(SPEED / 2)) as engine:
        (alone,) = repeated(lambda: sequential(engine.base_url, [500], output=128))
        batch = run(concurrent(engine.base_url, 64, filler=500, output=128))

    biggest = max(batch, key=lambda m: m.pd["tpot_ms"])
    assert biggest.pd["tpot_ms"] > 1.15 * alone.pd["tpot_ms"]
    assert biggest.tpot_s > 1.15 * alone.tpot_s


def test_tpot_grows_with_context(disagg: EngineProcess) -> None:
    short, long = repeated(lambda: sequential(disagg.base_url, [0, 16000], output=64))

    assert long.pd["tpot_ms"] > 1.1 * short.pd["tpot_ms"]  # each step reads 16k more KV
    assert long.tpot_s > 1.04 * short.tpot_s


# --- colocated vs disaggregated -------------------------------------------------------------


async def decode_under_long_prefill(base_url: str) -> tuple[Measured, Measured]:
    """A stream decodes 96 tokens; 50 ms in, a 16k-token prompt arrives."""
    async with httpx.AsyncClient(timeout=60) as client:
        await stream_chat(client, base_url, 0, 2)
        decoding = stream_chat(client, base_url, 0, 96)
        long_prompt = stream_chat(client, base_url, 16000, 2, delay_s=0.05)
        return tuple(await asyncio.gather(decoding, long_prompt))  # type: ignore[return-value]


def test_colocated_long_prefill_stalls_a_decoding_stream(colocated: EngineProcess) -> None:
    decoding, long_prompt = run(decode_under_long_prefill(colocated.base_url))
    prefill_s = long_prompt.pd["prefill_ms"] / 1000 / SPEED

    assert decoding.max_gap_s > 0.5 * prefill_s
    assert decoding.max_gap_s > 10 * statistics.median(
        b - a for a, b in zip(decoding.arrivals, decoding.arrivals[1:], strict=False)
    )


def test_disaggregated_long_prefill_leaves_decoding_alone(disagg: EngineProcess) -> None:
    runs = [run(decode_under_long_prefill(disagg.base_url)) for _ in range(REPEATS)]
    prefill_s = runs[0][1].pd["prefill_ms"] / 1000 / SPEED

    # The calmest run: a gap there is the engine's, not a CPU-load pause of the client.
    assert min(decoding.max_gap_s for decoding, _ in runs) < 0.25 * prefill_s


# --- KV transfer ----------------------------------------------------------------------------


def transfer_ms(engine: EngineProcess, filler: int) -> float:
    body = {
        "model": "pd-mock-1",
        "max_tokens": 1,
        "messages": [{"role": "user", "content": prompt(filler, 1)}],
    }
    with httpx.Client(timeout=60) as client:
        reply = client.post(f"{engine.base_url}/chat/completions", json=body)
    return float(reply.json()["usage"]["pd_timing"]["transfer_ms"])


def test_transfer_grows_with_prompt_and_tcp_fallback_is_many_times_slower(
    disagg: EngineProcess,
) -> None:
    rdma_short, rdma_long = transfer_ms(disagg, 1000), transfer_ms(disagg, 4000)
    admin = disagg.url("/engine/faults")
    httpx.post(admin, json={"faults": ["kv-tcp-fallback"]}, timeout=10).raise_for_status()
    try:
        tcp_long = transfer_ms(disagg, 4000)
        state = httpx.get(disagg.url("/engine/state"), timeout=10).json()
    finally:
        httpx.delete(admin, timeout=10).raise_for_status()

    assert rdma_long > 2 * rdma_short
    assert tcp_long > 5 * rdma_long
    assert state["link_fallback_tcp"] is True
    assert transfer_ms(disagg, 4000) == pytest.approx(rdma_long, rel=0.05)


# --- clean shutdown -------------------------------------------------------------------------


def test_sigterm_drains_the_stream_in_flight_then_exits_cleanly() -> None:
    with EngineProcess("--speed", "1") as engine:

        async def interrupted() -> Measured:
            async with httpx.AsyncClient(timeout=10) as client:
                stream = asyncio.create_task(stream_chat(client, engine.base_url, 0, 100))
                await asyncio.sleep(0.2)
                stopping = asyncio.create_task(asyncio.to_thread(engine.stop))
                measured = await stream
                await stopping
                return measured

        measured = run(interrupted())

    assert len(measured.arrivals) == 100  # finished within the grace period, not cut
    assert engine.returncode == 0
    assert "engine stopped" in "".join(engine.output)
    assert "Traceback" not in "".join(engine.output)
