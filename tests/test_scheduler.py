"""PD behaviour of the scheduler, on the virtual clock (simulate), as a user would observe it."""

from __future__ import annotations

import itertools
import statistics
from dataclasses import replace

import pytest

from notes_cli.engine.core.api import RequestRecord, StepStats
from notes_cli.engine.core.config import EngineConfig
from notes_cli.engine.core.profiles import Catalog, load_catalog
from notes_cli.engine.core.scheduler import Scheduler
from notes_cli.engine.core.simcore import SimRequest, simulate
from notes_cli.engine.core.workers import SchedRequest


def run(
    target: object, *requests: SimRequest, catalog: Catalog | None = None
) -> list[RequestRecord]:
    """Records in request order."""
    records = list(simulate(target, requests, catalog=catalog))  # type: ignore[arg-type]
    return sorted(records, key=lambda r: int(r.request_id))


def alone(target: object, input_tokens: int, output_tokens: int = 32) -> RequestRecord:
    return run(target, SimRequest(0.0, input_tokens, output_tokens))[0]


def test_ttft_grows_with_prompt_length_while_tpot_barely_moves() -> None:
    short, long = alone("h800-h20-rdma", 256), alone("h800-h20-rdma", 8192)
    # 32x the tokens: the prefill grows over 10x (a short prompt fills the GPU's GEMMs less,
    # as measured kernels show), the TTFT with the PD stack's fixed overhead over 5x
    assert long.prefill_ms > 10 * short.prefill_ms
    assert long.ttft_ms > 5 * short.ttft_ms
    assert long.tpot_ms == pytest.approx(short.tpot_ms, rel=0.15)


def test_tpot_grows_with_batch_size() -> None:
    one = alone("h800-h20-rdma", 128, 256)
    crowd = run("h800-h20-rdma", *(SimRequest(0.0, 128, 256) for _ in range(128)))
    assert statistics.median(r.tpot_ms for r in crowd) > 1.5 * one.tpot_ms


def test_tpot_grows_with_context() -> None:
    # A decode step reads the sequence's whole KV cache: 16K tokens more context add at least
    # their bytes at the chip's full HBM bandwidth to every token's time (it cannot be faster).
    catalog = load_catalog()
    deployment = catalog.deployment("h100-disagg")
    chip = catalog.chips[deployment.decode.chip]
    extra = (16384 - 256) * catalog.models[deployment.model].kv_bytes_per_token
    floor_ms = extra / (chip.hbm_tbps * 1e12 * deployment.decode.tp) * 1e3
    short, long = alone("h100-disagg", 256), alone("h100-disagg", 16384)
    assert long.tpot_ms - short.tpot_ms >= floor_ms > 0.5


def decoding_stream_with_long_prompt(target: object) -> tuple[RequestRecord, RequestRecord]:
    """A short request decoding 200 tokens; an 8000-token prompt arrives half a second in."""
    stream, intruder = run(target, SimRequest(0.0, 128, 200), SimRequest(500.0, 8000, 4))
    return stream, intruder


def test_colocated_long_prompt_stalls_decoding_but_disagg_does_not() -> None:
    colocated, _ = decoding_stream_with_long_prompt("h100-colocated")
    disagg, _ = decoding_stream_with_long_prompt("h100-disagg")
    assert colocated.max_itl_ms > 10 * disagg.max_itl_ms
    assert disagg.max_itl_ms < 1.5 * disagg.tpot_ms  # no step stands out
    assert colocated.max_itl_ms > 20 * colocated.tpot_ms / 2


def test_chunked_prefill_bounds_the_stall() -> None:
    colocated, _ = decoding_stream_with_long_prompt("h100-colocated")
    chunked, intruder = decoding_stream_with_long_prompt("h100-chunked")
    disagg, _ = decoding_stream_with_long_prompt("h100-disagg")
    assert disagg.max_itl_ms < chunked.max_itl_ms < colocated.max_itl_ms / 5
    assert intruder.transfer_ms == 0.0 and intruder.prefill_ms > 0


def test_transfer_grows_with_prompt_and_tcp_fallback_is_many_times_slower() -> None:
    rdma = [alone("h800-h20-rdma", n).transfer_ms for n in (256, 1024, 4096)]
    assert rdma == sorted(rdma) and rdma[-1] > 5 * rdma[0]
    tcp = alone(EngineConfig(preset="h800-h20-rdma", link_fallback_tcp=True), 1024)
    assert tcp.transfer_ms > 8 * rdma[1]
    assert tcp.transfer_bytes == 1024 * 144 * 1024  # Qwen3-8B: 144 KiB per token


def test_colocated_and_chunked_report_no_transfer() -> None:
    for preset in ("h100-colocated", "h100-chunked"):
        record = alone(preset, 2048)
        assert (record.transfer_ms, record.transfer_bytes) == (0.0, 0)
        assert record.prefill_node == record.decode_node == "node-0"


def test_concurrent_transfers_share_the_link(catalog: Catalog) -> None:
    solo = alone("h800-h20-rdma", 4096, 8)
    pair = run("h800-h20-rdma", SimRequest(0.0, 4096, 8), SimRequest(0.0, 4096, 8))
    alpha = catalog.links["roce-200g"].alpha_ms
    for record in pair:  # prefilled in one batch, so both transfers overlap fully
        assert record.transfer_ms - alpha == pytest.approx(2 * (solo.transfer_ms - alpha), rel=0.02)


def test_pd_timing_adds_up_like_a_client_would_measure() -> None:
    for preset in ("h800-h20-rdma", "h100-colocated", "h100-chunked"):
        for record in run(preset, *(SimRequest(i * 3.0, 700 + 100 * i, 20) for i in range(20))):
            parts = record.queue_ms + record.prefill_ms + record.transfer_ms
            assert parts < record.ttft_ms
            assert record.e2e_ms == pytest.approx(record.ttft_ms + record.decode_ms)
            assert record.tpot_ms == pytest.approx(record.decode_ms / 19)
            assert record.itl_count == 19 and record.itl_sum_ms == pytest.approx(record.decode_ms)
            assert record.tpot_ms <= record.max_itl_ms


def small_memory(catalog: Catalog, preset: str, **changes: object) -> Scheduler:
    deployment = replace(catalog.deployment(preset), **changes)  # type: ignore[arg-type]
    return Scheduler(deployment, catalog)


def drive(
    scheduler: Scheduler, requests: list[SchedRequest]
) -> tuple[list[RequestRecord], list[StepStats]]:
    records: list[RequestRecord] = []
    steps: list[StepStats] = []
    scheduler.on_finish = lambda _r, record: records.append(record)
    scheduler.on_step = steps.append
    for request in requests:
        scheduler.submit(request, request.arrival_ms)
    while scheduler.next_event_time() is not None:
        scheduler.step()
    return records, steps


@pytest.mark.parametrize("preset", ["h800-h20-rdma", "h100-colocated", "h100-chunked"])
def test_requests_wait_for_kv_memory(catalog: Catalog, preset: str) -> None:
    scheduler = small_memory(catalog, preset, kv_capacity_tokens=2500)
    requests = [SchedRequest(str(i), 0.0, 1000, 100) for i in range(5)]  # 1100 KV entries each
    records, steps = drive(scheduler, requests)
    assert len(records) == 5
    assert all(s.kv_used_tokens <= 2500 for s in steps)
    assert max(s.batch_size for s in steps if s.phase == "decode") == 2
    first_two = sorted(r.ttft_ms for r in records)[:2]
    assert max(r.ttft_ms for r in records) > max(first_two) + 50 * min(r.tpot_ms for r in records)


def test_decode_batch_never_exceeds_max_batch(catalog: Catalog) -> None:
    scheduler = small_memory(catalog, "h100-disagg", max_batch=3)
    records, steps = drive(scheduler, [SchedRequest(str(i), 0.0, 200, 10) for i in range(7)])
    assert len(records) == 7
    assert max(s.batch_size for s in steps if s.node.startswith("decode")) == 3


def test_routing_spreads_requests_over_nodes() -> None:
    records = run("h100-2p2d-ib", SimRequest(0.0, 4096, 16), SimRequest(0.0, 4096, 16))
    assert {r.prefill_node for r in records} == {"prefill-0", "prefill-1"}
    assert {r.decode_node for r in records} == {"decode-0", "decode-1"}


def test_mode_override_turns_disagg_nodes_into_colocated_workers() -> None:
    config = EngineConfig(preset="h100-2p2d-ib", mode="colocated")
    records = run(config, SimRequest(0.0, 512, 8), SimRequest(0.0, 512, 8))
    assert {r.decode_node for r in records} == {"node-0", "node-1"}
    assert all(r.prefill_node == r.decode_node for r in records)
    assert {r.mode for r in records} == {"colocated"}


def test_simulate_is_deterministic() -> None:
    trace = [SimRequest(i * 7.5, 200 + (i * 37) % 900, 10 + (i * 13) % 50) for i in range(300)]
    assert list(simulate("h800-h20-rdma", trace, seed=3)) == list(
        simulate("h800-h20-rdma", trace, seed=3)
    )


def test_simulate_consumes_arrivals_lazily() -> None:
    endless = (SimRequest(i * 50.0, 256, 8) for i in itertools.count())
    first = list(itertools.islice(simulate("h100-disagg", endless), 20))
    assert len(first) == 20  # an endless trace still yields records as requests finish


def test_cancelled_request_frees_its_memory(catalog: Catalog) -> None:
    scheduler = Scheduler(catalog.deployment("h100-disagg"), catalog)
    victim, other = SchedRequest("v", 0.0, 500, 1000), SchedRequest("o", 0.0, 500, 50)
    records: list[RequestRecord] = []
    scheduler.on_finish = lambda _r, record: records.append(record)
    scheduler.submit(victim, 0.0)
    scheduler.submit(other, 0.0)
    scheduler.run_until(200.0)
    scheduler.cancel(victim)
    while scheduler.next_event_time() is not None:
        scheduler.step()
    assert [r.request_id for r in records] == ["o"]
    decode = scheduler.decode_workers[0]
    assert (decode.kv_used, decode.context, len(decode.running)) == (0, 0, 0)
    assert scheduler.waiting == 0


def test_a_chunked_step_costs_what_the_cost_model_says_for_its_mix(catalog: Catalog) -> None:
    # A decoding request, then a long prompt prefilled in chunks beside it: every mixed step
    # lasts the cost model's time for that mix (its decodes' context and the chunk's prior
    # tokens), plus the engine's CPU time; the scheduler sums the chunks itself (hot path).
    scheduler = Scheduler(catalog.deployment("h100-chunked"), catalog)
    node = scheduler.workers[0]
    mixed: list[tuple[float, float]] = []

    def check(step: StepStats) -> None:
        if step.phase != "mixed":
            return
        ((request, chunk),) = node.chunks
        gpu = node.cost.mixed_step_ms(len(node.running), node.context, chunk, request.prefilled)
        mixed.append((step.duration_ms, node.step_duration(gpu, len(node.running) + 1)))

    scheduler.on_step = check
    prompt = 3 * (node.chunk_tokens - 1) + 8  # the last chunk small: its KV reads matter
    for request in (SchedRequest("0", 0.0, 300, 400), SchedRequest("1", 40.0, prompt, 4)):
        scheduler.submit(request, request.arrival_ms)
    while scheduler.next_event_time() is not None:
        scheduler.step()
    assert len(mixed) >= 3  # the prompt took several chunks, after the first some prefilled
    for duration, expected in mixed:
        assert duration == pytest.approx(expected, rel=1e-12)
