"""How the live engine paces token release when its event loop runs late (the driver's catch-up)
and in which order a finishing step's work reaches streams and observers."""

from __future__ import annotations

import asyncio
import itertools

import pytest

from notes_cli.engine.api import (
    ChatMessage,
    Completion,
    GenerationRequest,
    QueueFull,
    RequestRecord,
    TokenChunk,
)
from notes_cli.engine.clock import WallClock
from notes_cli.engine.config import EngineConfig
from notes_cli.engine.profiles import Catalog, load_catalog
from notes_cli.engine.scheduler import Scheduler
from notes_cli.engine.service import LiveEngineService, _Turnstile, create_service
from notes_cli.engine.workers import SchedRequest


@pytest.fixture(scope="module")
def catalog() -> Catalog:
    return load_catalog()


def scheduler(catalog: Catalog) -> tuple[Scheduler, list[RequestRecord]]:
    sched = Scheduler(catalog.deployment("h800-h20-rdma"), catalog, keep_gaps=True)
    records: list[RequestRecord] = []
    sched.on_finish = lambda _request, record: records.append(record)
    return sched, records


def test_a_late_driver_holds_time_at_the_first_late_token_not_at_a_late_prefill(
    catalog: Catalog,
) -> None:
    sched, records = scheduler(catalog)
    sched.submit(SchedRequest("a", 0.0, 2000, 3), 0.0)
    sched.run_until(0.0)  # the arrival: prefill starts
    prefill_end = sched.next_event_time()
    assert prefill_end is not None and sched.next_release_time() is None
    # the driver wakes a whole second late: prefill, transfer and the first decode step are all
    # overdue, but only the decode step releases anything a client sees
    reached = sched.catch_up(prefill_end + 1000.0, max_lag_ms=5.0)
    assert reached > prefill_end + 1.0  # not held at the prefill: no stream was waiting on it
    assert not records  # one token released, then time is held: the other two are not a burst
    sched.run_until(reached + 1000.0)
    (record,) = records
    assert reached == pytest.approx(record.arrival_ms + record.ttft_ms)


def test_catch_up_processes_everything_when_no_token_is_late(catalog: Catalog) -> None:
    sched, records = scheduler(catalog)
    sched.submit(SchedRequest("a", 0.0, 64, 4), 0.0)
    sched.run_until(0.0)
    t = 0.0
    while not records:
        due = sched.next_event_time()
        assert due is not None
        t = due + 2.0  # every event seen 2 ms late: within the tolerance, nothing is held
        assert sched.catch_up(t, max_lag_ms=5.0) == t
    assert sched.now == t and records[0].output_tokens == 4


def test_observers_see_a_record_before_its_stream_completes() -> None:
    seen: list[str] = []
    observed_at_completion: list[bool] = []

    def observe(item: object) -> None:
        if isinstance(item, RequestRecord):
            seen.append(item.request_id)

    async def one(service: LiveEngineService, index: int) -> None:
        request_id = f"r{index}"
        messages = (ChatMessage("user", f"{index} hello there"),)
        request = GenerationRequest("pd-mock-1", messages, 6, request_id=request_id)
        async for item in service.generate(request):
            if isinstance(item, Completion):
                observed_at_completion.append(request_id in seen)

    async def main() -> None:
        service = create_service(EngineConfig(speed=20))
        await service.start()
        service.add_observer(observe)
        try:
            await asyncio.wait_for(asyncio.gather(*(one(service, i) for i in range(8))), 20)
        finally:
            await service.stop()

    asyncio.run(main())
    assert observed_at_completion == [True] * 8


def test_the_admission_turnstile_lets_one_caller_through_per_loop_turn_in_order() -> None:
    async def main() -> tuple[list[tuple[int, int]], int]:
        turnstile = _Turnstile()
        turn = itertools.count()
        passed: list[tuple[int, int]] = []
        ticking = True

        async def ticker() -> None:  # counts loop turns: one step per turn
            while ticking:
                next(turn)
                await asyncio.sleep(0)

        async def caller(index: int) -> None:
            await turnstile.enter()
            passed.append((index, next(turn)))

        tick = asyncio.ensure_future(ticker())
        callers = [asyncio.ensure_future(caller(0))]
        doomed = asyncio.ensure_future(caller(99))
        callers += [asyncio.ensure_future(caller(i)) for i in range(1, 5)]
        await asyncio.sleep(0)
        doomed.cancel()  # a client that goes away while waiting loses its place, nothing more
        await asyncio.wait_for(asyncio.gather(*callers), 5)
        ticking = False
        await tick
        return passed, len(turnstile)

    passed, left = asyncio.run(main())
    assert [index for index, _ in passed] == [0, 1, 2, 3, 4] and left == 0
    turns = [t for _, t in passed]
    assert all(b > a + 1 for a, b in itertools.pairwise(turns))  # loop turns in between


def test_a_burst_of_arrivals_past_max_queue_is_refused_before_admission() -> None:
    async def body(service: LiveEngineService) -> list[object]:
        async def first(i: int) -> object:
            messages = (ChatMessage("user", f"{i} hi"),)
            return await anext(service.generate(GenerationRequest("m", messages, 2)))

        return await asyncio.gather(*(first(i) for i in range(6)), return_exceptions=True)

    async def main() -> list[object]:
        service = create_service(EngineConfig(speed=1, max_queue=4))
        await service.start()
        try:
            return await asyncio.wait_for(body(service), 20)
        finally:
            await service.stop()

    outcomes = asyncio.run(main())
    assert sum(isinstance(o, QueueFull) for o in outcomes) == 2
    assert sum(isinstance(o, TokenChunk) for o in outcomes) == 4


def test_a_caller_cancelled_just_after_its_turn_came_passes_the_turn_on() -> None:
    async def main() -> list[str]:
        turnstile = _Turnstile()
        passed: list[str] = []
        tasks: dict[str, asyncio.Task[None]] = {}

        async def caller(name: str) -> None:
            await turnstile.enter()
            passed.append(name)
            if name == "a":  # runs right after the turnstile lets "b" through
                asyncio.get_running_loop().call_soon(tasks["b"].cancel)

        for name in "abc":
            tasks[name] = asyncio.ensure_future(caller(name))
        await asyncio.wait_for(asyncio.gather(*tasks.values(), return_exceptions=True), 5)
        assert tasks["b"].cancelled()
        return passed

    assert asyncio.run(main()) == ["a", "c"]


def test_the_wall_clock_counts_the_time_it_was_held() -> None:
    clock = WallClock(speed=1000.0)  # 1 ms of simulated time per wall microsecond
    clock.hold_at(clock.now_ms() + 60_000.0)  # a time still ahead: nothing to give up
    assert (clock.holds, clock.held_ms) == (0, 0.0)
    before = clock.now_ms()
    clock.hold_at(before - 250.0)
    assert clock.holds == 1 and clock.held_ms >= 250.0
    assert clock.now_ms() < before
