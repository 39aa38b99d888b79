"""Wide expert parallelism and attention data parallelism cost what the systems measure: each
attention-DP replica pays for its own sequences only, in parallel with the others (issue 37).
Expected figures are worked from the formulas in docs/engine-model.md."""

from __future__ import annotations

from dataclasses import replace

import pytest

from notes_cli.engine.core.costmodel import NodeCost
from notes_cli.engine.core.profiles import Catalog, Deployment, NodeGroup
from notes_cli.engine.core.simcore import SimRequest, simulate


def test_decode_step_per_replica_does_not_grow_with_the_dp_degree(catalog: Catalog) -> None:
    # Llama-3.1-8B, one GPU per attention replica: 8 replicas of 128 sequences each run the
    # same step as one replica of 128 (each reads its own KV and weights, in parallel).
    m, h100 = catalog.models["llama-3.1-8b"], catalog.chips["h100-sxm"]
    one = NodeCost(m, h100, tp=1, dp=1)
    eight = NodeCost(m, h100, tp=1, dp=8)
    for per_gpu, context in ((128, 2048), (16, 8192), (512, 64)):  # the last compute-bound
        single = one.decode_step_ms(per_gpu, per_gpu * context)
        assert eight.decode_step_ms(8 * per_gpu, 8 * per_gpu * context) == pytest.approx(single)


def test_deepseek_decode_at_144_way_dp_is_as_fast_per_gpu_as_at_8(catalog: Catalog) -> None:
    # DeepSeek-R1, 128 sequences of 4k context per GPU: spreading attention over 144 replicas
    # must not make each replica's KV work 18 times larger; only the all-to-all grows.
    m, h800 = catalog.models["deepseek-r1"], catalog.chips["h800"]
    small = NodeCost(m, h800, tp=1, dp=8, ep=8, weight_dtype="fp8")
    wide = NodeCost(m, h800, tp=1, dp=144, ep=144, weight_dtype="fp8")
    t_small = small.decode_step_ms(8 * 128, 8 * 128 * 4000) - small.allreduce_ms(8 * 128)
    t_wide = wide.decode_step_ms(144 * 128, 144 * 128 * 4000) - wide.allreduce_ms(144 * 128)
    assert t_wide < 1.05 * t_small


def test_per_sequence_cpu_time_is_charged_per_dp_replica(catalog: Catalog) -> None:
    # A backend's per-sequence CPU cost (sampling, detokenising, streaming) runs in each DP
    # replica's own scheduler: 8 replicas with 32 streams each decode as fast as one with 32.
    base = Deployment(
        name="dp-probe",
        mode="colocated",
        model="llama-3.1-8b",
        link="nvlink4",
        colocated=NodeGroup(1, "h100-sxm"),
        backend="sglang",
        seq_overhead_us=200.0,  # large, so the charge shows
    )
    wide = replace(base, colocated=NodeGroup(1, "h100-sxm", dp=8))

    def tpot(dep: Deployment, streams: int) -> float:
        trace = [SimRequest(0.0, 16, 64) for _ in range(streams)]  # one prefill batch
        records = list(simulate(dep, trace, catalog=catalog))
        return sum(r.tpot_ms for r in records) / len(records)

    assert tpot(wide, 8 * 32) == pytest.approx(tpot(base, 32), rel=1e-6)


def test_one_prompt_prefills_on_one_dp_rank_not_spread_over_all(catalog: Catalog) -> None:
    # A request lives on one attention-DP rank: a lone 4,000-token prompt on 8 replicas of one
    # GPU takes as long as on one GPU, not an eighth of it.
    m, h100 = catalog.models["llama-3.1-8b"], catalog.chips["h100-sxm"]
    one = NodeCost(m, h100, tp=1, dp=1)
    eight = NodeCost(m, h100, tp=1, dp=8)
    assert eight.prefill_time_ms(4000) == pytest.approx(one.prefill_time_ms(4000))
    # A batch spreads over the ranks, and the busiest rank sets the step: 8 prompts take one
    # prompt's time, 9 take two prompts' (one rank gets two).
    assert eight.prefill_batch_ms([4000] * 8) == pytest.approx(one.prefill_time_ms(4000))
    assert eight.prefill_batch_ms([4000] * 9) == pytest.approx(one.prefill_batch_ms([4000] * 2))


def test_a_lone_prompts_ttft_on_a_dp_deployment_is_one_ranks_prefill(catalog: Catalog) -> None:
    base = Deployment(
        name="dp-prefill",
        mode="colocated",
        model="llama-3.1-8b",
        link="nvlink4",
        colocated=NodeGroup(1, "h100-sxm"),
    )
    wide = replace(base, colocated=NodeGroup(1, "h100-sxm", dp=8))
    (alone,) = simulate(base, [SimRequest(0.0, 4000, 2)], catalog=catalog)
    (spread,) = simulate(wide, [SimRequest(0.0, 4000, 2)], catalog=catalog)
    assert spread.ttft_ms == pytest.approx(alone.ttft_ms)


def test_deepseek_one_long_prompt_is_slower_than_eight_short_ones(catalog: Catalog) -> None:
    # DeepSeek-R1 on 8 H200 with DP8 + EP8: the attention and dense layers of one 4,000-token
    # prompt run on one GPU, while eight 500-token prompts (the same tokens) run on eight.
    m, h200 = catalog.models["deepseek-r1"], catalog.chips["h200"]
    dp8 = NodeCost(m, h200, tp=1, dp=8, ep=8, weight_dtype="fp8")
    spread = dp8.prefill_ms(4000, 8 * 500.0**2)  # the node-wide cost of eight short prompts
    assert dp8.prefill_batch_ms([500] * 8) == pytest.approx(spread, rel=0.05)
    assert dp8.prefill_time_ms(4000) > 3 * spread
