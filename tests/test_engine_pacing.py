"""How the live engine paces token release when its event loop runs late (the driver's catch-up)
and in which order a finishing step's work reaches streams and observers."""

from __future__ import annotations

import asyncio

import pytest

from notes_cli.engine.api import ChatMessage, Completion, GenerationRequest, RequestRecord
from notes_cli.engine.config import EngineConfig
from notes_cli.engine.profiles import Catalog, load_catalog
from notes_cli.engine.scheduler import Scheduler
from notes_cli.engine.service import LiveEngineService, create_service
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
