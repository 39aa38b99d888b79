"""TTFT as real engines report it (issue 13.2): the first token comes from the prefill pass, a
fixed per-request overhead is its own pd_timing field, and tensor parallelism pays for its
all-reduces instead of a flat efficiency."""

from __future__ import annotations

from dataclasses import replace

import pytest

from notes_cli.engine.core.api import RequestRecord
from notes_cli.engine.core.costmodel import NodeCost
from notes_cli.engine.core.profiles import DEFAULT_OVERHEAD_MS, Catalog, Deployment
from notes_cli.engine.core.simcore import SimRequest, simulate


def one(catalog: Catalog, dep: Deployment, prompt: int, output: int) -> RequestRecord:
    return next(simulate(dep, [SimRequest(0.0, prompt, output)], catalog=catalog))


@pytest.mark.parametrize("preset", ["h100-colocated", "h100-chunked", "h100-disagg"])
def test_ttft_is_overhead_plus_prefill_plus_transfer_without_a_decode_step(
    catalog: Catalog, preset: str
) -> None:
    dep = catalog.deployment(preset)
    r = one(catalog, dep, 2048, 32)
    assert r.overhead_ms == DEFAULT_OVERHEAD_MS[dep.mode]
    assert r.ttft_ms == pytest.approx(r.overhead_ms + r.prefill_ms + r.transfer_ms, abs=1e-6)
    assert r.queue_ms == pytest.approx(0.0, abs=1e-6)
    # The other 31 tokens take 31 decode steps: TPOT is one step, not inflated by a 32nd.
    step = NodeCost(catalog.models[dep.model], catalog.chips["h100-sxm"]).decode_step_ms(1, 2049)
    assert r.tpot_ms == pytest.approx(step, rel=0.02)


def test_a_one_token_answer_ends_with_its_prefill(catalog: Catalog) -> None:
    r = one(catalog, catalog.deployment("h100-disagg"), 1000, 1)
    assert r.e2e_ms == pytest.approx(r.ttft_ms)
    assert r.decode_ms == 0.0


def test_the_fixed_overhead_is_per_deployment_and_in_pd_timing(catalog: Catalog) -> None:
    dep = catalog.deployment("h100-colocated")
    base = one(catalog, dep, 64, 8)
    slower = one(catalog, replace(dep, request_overhead_ms=50.0), 64, 8)
    assert slower.ttft_ms - base.ttft_ms == pytest.approx(50.0 - base.overhead_ms)
    assert slower.pd_timing().to_json()["overhead_ms"] == 50.0
    assert slower.tpot_ms == pytest.approx(base.tpot_ms)  # the GPUs are not slower


def test_tensor_parallel_speedup_comes_from_the_intra_node_link(catalog: Catalog) -> None:
    model, chip = catalog.models["llama-3-70b"], catalog.chips["h100-sxm"]
    tp1 = NodeCost(model, chip, 1).prefill_time_ms(2048)
    tp8 = NodeCost(model, chip, 8).prefill_time_ms(2048)
    efficiency = tp1 / tp8 / 8
    assert 0.5 < efficiency < 0.9  # the all-reduces cost something, not a constant 0.9
    slow_link = NodeCost(model, replace(chip, intra_gbps=chip.intra_gbps / 4), 8)
    assert slow_link.prefill_time_ms(2048) > 1.3 * tp8
    assert NodeCost(model, replace(chip, intra_gbps=1.0), 1).prefill_time_ms(2048) == tp1
