"""How the live engine paces token release when its event loop runs late (the driver's catch-up)
and in which order a finishing step's work reaches streams and observers."""

from __future__ import annotations

import asyncio
import itertools

import pytest

from notes_cli.engine.core.api import (
    Admitted,
    ChatMessage,
    Completion,
    GenerationRequest,
    QueueFull,
    RequestRecord,
)
from notes_cli.engine.core.config import EngineConfig
from notes_cli.engine.core.profiles import Catalog
from notes_cli.engine.core.scheduler import Scheduler
from notes_cli.engine.core.workers import SchedRequest
from notes_cli.engine.live.clock import WallClock
from notes_cli.engine.live.service import LiveEngineService, _Admissions, create_service


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
    sched.run_until(sched.overhead_ms)  # the arrival (after the API server's overhead)
    prefill_end = sched.next_event_time()
    assert prefill_end is not None and sched.next_release_time() is None
    # the driver wakes a whole second late: prefill, transfer and the decode steps are all
    # overdue; the transfer's end releases the first token (made by the prefill pass)
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


def admit_in_turns(budget_s: float, works: int, cancel: int | None = None) -> list[tuple[int, int]]:
    """(work index, loop turn it ran in) for `works` callers arriving in the same loop turn."""

    async def main() -> list[tuple[int, int]]:
        admissions = _Admissions(budget_s)
        turn = 0
        ran: list[tuple[int, int]] = []
        ticking = True

        async def ticker() -> None:
            nonlocal turn
            while ticking:
                turn += 1
                await asyncio.sleep(0)

        def work(index: int) -> int:
            ran.append((index, turn))
            if index == 3:
                raise ValueError("no answer for this one")
            return index

        tick = asyncio.ensure_future(ticker())
        callers = [asyncio.ensure_future(admissions.run(lambda i=i: work(i))) for i in range(works)]
        if cancel is not None:
            callers[cancel].cancel()
        results = await asyncio.wait_for(asyncio.gather(*callers, return_exceptions=True), 5)
        ticking = False
        await tick
        expected = [i if i != 3 else "error" for i in range(works) if i != cancel]
        got = [
            "error" if isinstance(r, ValueError) else r
            for r in results
            if not isinstance(r, asyncio.CancelledError)
        ]
        assert got == expected and len(admissions) == 0
        return ran

    return asyncio.run(main())


def test_admission_work_runs_in_order_one_loop_turn_at_a_time_when_over_budget() -> None:
    ran = admit_in_turns(budget_s=0.0, works=6, cancel=2)  # no budget: one caller per turn
    assert [index for index, _ in ran] == [0, 1, 3, 4, 5]  # the cancelled caller never ran
    turns = [t for _, t in ran]
    assert all(b > a for a, b in itertools.pairwise(turns))  # the loop turned in between


def test_admission_work_within_budget_shares_one_loop_turn() -> None:
    ran = admit_in_turns(budget_s=60.0, works=6)
    assert [index for index, _ in ran] == list(range(6)) and len({t for _, t in ran}) == 1


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
    assert sum(isinstance(o, Admitted) for o in outcomes) == 4


def test_the_wall_clock_counts_the_time_it_was_held() -> None:
    clock = WallClock(speed=1000.0)  # 1 ms of simulated time per wall microsecond
    clock.hold_at(clock.now_ms() + 60_000.0)  # a time still ahead: nothing to give up
    assert (clock.holds, clock.held_ms) == (0, 0.0)
    before = clock.now_ms()
    clock.hold_at(before - 250.0)
    assert clock.holds == 1 and clock.held_ms >= 250.0
    assert clock.now_ms() < before
