"""The bench load generator against an injected `send`: metric definitions, bounds, stop."""

from __future__ import annotations

import asyncio
import time

import pytest

from notes_cli.bench.client import BenchPlan, Outcome, run_bench
from notes_cli.bench.stats import Slo
from notes_cli.bench.workload import ArrivalSpec, LengthSpec, WorkItem, synthetic


def fixed_stream(
    ttft_ms: float = 40.0,
    itl_ms: float = 10.0,
    *,
    usage: bool = True,
    pd_timing: dict | None = None,
):
    """A fake endpoint that answers every request with the same timeline, instantly."""
    calls: list[WorkItem] = []

    async def send(item: WorkItem) -> Outcome:
        calls.append(item)
        chunks = tuple(ttft_ms + i * itl_ms for i in range(item.output_tokens))
        return Outcome(
            ok=True,
            e2e_ms=chunks[-1] + 1,
            chunk_ms=chunks,
            ttft_ms=ttft_ms,
            output_tokens=item.output_tokens if usage else 0,
            tokens_source="usage" if usage else "counted",
            pd_timing=pd_timing,
        )

    send.calls = calls  # type: ignore[attr-defined]
    return send


def run(items, send, plan, **kw):
    return asyncio.run(run_bench(items, send, plan, **kw))


def test_vllm_metric_definitions() -> None:
    items = synthetic(10, LengthSpec(100, 11), ArrivalSpec())
    report = run(items, fixed_stream(40.0, 10.0), BenchPlan(requests=10))
    s = report.stats.summaries()
    assert report.completed == 10 and report.failed == 0
    assert s["ttft_ms"].median == pytest.approx(40.0, rel=0.01)
    # E2E is the last token chunk (40 + 10*10), not the trailing usage/close at +1
    assert s["e2e_ms"].median == pytest.approx(140.0, rel=0.01)
    assert s["tpot_ms"].median == pytest.approx(10.0, rel=0.01)  # (140-40)/(11-1)
    assert s["itl_ms"].count == 100  # pooled: 10 gaps per request
    assert report.stats.output_tokens == 110
    assert report.counted_requests == 0


def test_counted_tokens_are_reported() -> None:
    report = run(
        synthetic(4, LengthSpec(10, 5), ArrivalSpec()),
        fixed_stream(usage=False),
        BenchPlan(requests=4),
    )
    assert report.counted_requests == 4
    assert report.stats.output_tokens == 20


def test_goodput_counts_requests_meeting_every_slo() -> None:
    plan = BenchPlan(requests=6, slo=Slo(ttft_ms=30.0))
    report = run(synthetic(6, LengthSpec(10, 5), ArrivalSpec()), fixed_stream(40.0), plan)
    assert report.stats.met_all_slos == 0 and report.goodput == 0.0
    plan = BenchPlan(requests=6, slo=Slo(ttft_ms=50.0, tpot_ms=10.0))
    report = run(synthetic(6, LengthSpec(10, 5), ArrivalSpec()), fixed_stream(40.0), plan)
    assert report.stats.met_all_slos == 6 and report.goodput > 0


def test_failures_and_timeouts_are_counted_not_raised() -> None:
    async def send(item: WorkItem) -> Outcome:
        if item.input_tokens == 1:
            await asyncio.sleep(5)
        return Outcome(ok=False, e2e_ms=1.0, error="HTTP 500")

    items = [WorkItem(0, 1, 5), WorkItem(0, 2, 5), WorkItem(0, 2, 5)]
    report = run(items, send, BenchPlan(requests=3, timeout_s=0.05))
    assert report.completed == 0 and report.failed == 3
    assert report.errors == {"HTTP 500": 2, "timeout": 1}


def test_a_send_that_raises_is_a_failed_request() -> None:
    async def send(item: WorkItem) -> Outcome:
        raise ConnectionResetError("peer went away")

    report = run([WorkItem(0, 1, 2)], send, BenchPlan(requests=1))
    assert report.failed == 1 and not report.to_json()["ok"]
    assert report.errors == {"ConnectionResetError: peer went away": 1}


def test_concurrency_cap_is_never_exceeded() -> None:
    active = peak = 0

    async def send(item: WorkItem) -> Outcome:
        nonlocal active, peak
        active += 1
        peak = max(peak, active)
        await asyncio.sleep(0.002)
        active -= 1
        return Outcome(
            ok=True,
            e2e_ms=2,
            chunk_ms=(1.0, 2.0),
            ttft_ms=1.0,
            output_tokens=2,
            tokens_source="usage",
        )

    report = run(
        synthetic(40, LengthSpec(), ArrivalSpec()), send, BenchPlan(requests=40, concurrency=4)
    )
    assert report.completed == 40 and peak == 4


def test_request_count_bounds_an_endless_workload() -> None:
    send = fixed_stream()
    report = run(synthetic(10**9, LengthSpec(5, 2), ArrivalSpec()), send, BenchPlan(requests=7))
    assert report.sent == 7 and len(send.calls) == 7


def test_duration_bounds_the_run_and_cancels_stragglers() -> None:
    async def slow(item: WorkItem) -> Outcome:
        await asyncio.sleep(10)
        raise AssertionError("never reached")

    started = time.perf_counter()
    report = run(
        synthetic(100, LengthSpec(), ArrivalSpec(rate=50)),
        slow,
        BenchPlan(requests=100, duration_s=0.2),
    )
    assert time.perf_counter() - started < 2.0
    assert report.completed == 0 and report.cancelled == report.sent > 0
    assert report.sent < 100
    assert not report.interrupted


def test_stop_event_ends_the_run_with_the_results_so_far() -> None:
    async def scenario():
        stop = asyncio.Event()
        finished = 0

        async def send(item: WorkItem) -> Outcome:
            nonlocal finished
            if finished >= 3:
                stop.set()
                await asyncio.sleep(10)
            finished += 1
            return Outcome(
                ok=True,
                e2e_ms=2,
                chunk_ms=(1.0, 2.0),
                ttft_ms=1.0,
                output_tokens=2,
                tokens_source="usage",
            )

        return await run_bench(
            synthetic(50, LengthSpec(), ArrivalSpec()),
            send,
            BenchPlan(requests=50, concurrency=1),
            stop=stop,
        )

    report = asyncio.run(scenario())
    assert report.interrupted
    assert report.completed == 3 and report.cancelled == 1 and report.sent == 4


def test_server_view_and_client_overhead() -> None:
    pd = {
        "ttft_ms": 3800.0,
        "tpot_ms": 950.0,
        "queue_ms": 100.0,
        "transfer_ms": 50.0,
        "mode": "disagg",
    }
    plan = BenchPlan(requests=5, server_speed=100.0)  # server ran 100x faster than it reports
    report = run(
        synthetic(5, LengthSpec(10, 3), ArrivalSpec()), fixed_stream(40.0, pd_timing=pd), plan
    )
    view = report.server
    assert view is not None and view.requests == 5
    assert view.ttft_ms.median == pytest.approx(38.0, rel=0.01)
    assert view.overhead_ms.median == pytest.approx(2.0, rel=0.01)
    assert view.modes == {"disagg": 5} and view.overhead_negative == 0


def test_the_servers_admission_time_is_part_of_its_ttft() -> None:
    pd = {"ttft_ms": 380.0, "tpot_ms": 95.0, "queue_ms": 0.0, "transfer_ms": 5.0, "mode": "disagg"}
    pd |= {"admission_wall_ms": 1.5, "speed": 10.0}  # 38 ms simulated-at-10x, plus 1.5 ms wall
    report = run(
        synthetic(4, LengthSpec(10, 3), ArrivalSpec()),
        fixed_stream(40.0, pd_timing=pd),
        BenchPlan(requests=4),
    )
    view = report.server
    assert view is not None
    assert view.ttft_ms.median == pytest.approx(39.5, rel=0.01)
    assert view.admission_ms.median == pytest.approx(1.5, rel=0.01)
    assert view.overhead_ms.median == pytest.approx(0.5, rel=0.02)
    assert report.to_json()["server"]["admission_ms"]["median"] == pytest.approx(1.5, rel=0.01)


def test_a_server_slower_than_the_client_saw_is_counted_and_reported() -> None:
    pd = {"ttft_ms": 50.0, "tpot_ms": 1.0, "queue_ms": 0.0, "transfer_ms": 0.0, "mode": "disagg"}
    plan = BenchPlan(requests=3, server_speed=1.0)  # the engine ran at --speed 10, say
    report = run(
        synthetic(3, LengthSpec(10, 3), ArrivalSpec()), fixed_stream(40.0, pd_timing=pd), plan
    )
    assert report.server is not None and report.server.overhead_negative == 3
    assert report.to_json()["server"]["client_overhead_negative"] == 3
    assert report.server.overhead_ms.p99 == 0.0


def test_rate_paces_the_sends() -> None:
    started = time.perf_counter()
    run([WorkItem(0, 1, 2), WorkItem(150, 1, 2)], fixed_stream(), BenchPlan(requests=2))
    assert time.perf_counter() - started >= 0.15
