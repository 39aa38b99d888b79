"""Wide expert parallelism and attention data parallelism cost what the systems measure: each
attention-DP replica pays for its own sequences only, in parallel with the others (issue 37).
Expected figures are worked from the formulas in docs/engine-model.md."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from notes_cli.engine.core.costmodel import NodeCost, expert_copies
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


def test_a_chunked_steps_lone_prompt_runs_on_one_dp_rank(catalog: Catalog) -> None:
    # Chunked prefill (agg TRT-LLM / vLLM / SGLang with attention DP): a prompt's chunk runs on
    # its own replica, so beside 8 decodes a lone 4,000-token chunk on 8 replicas of one GPU
    # costs what it costs on one GPU with its one decode, not an eighth of it; 8 chunks of
    # 4,000 tokens (one a replica) cost the same as one.
    m, h100 = catalog.models["llama-3.1-8b"], catalog.chips["h100-sxm"]
    one = NodeCost(m, h100, tp=1, dp=1)
    eight = NodeCost(m, h100, tp=1, dp=8)
    lone = eight.dp_chunked_step_ms(8, 8 * 2000.0, [(4000.0, 0.0)])
    assert lone == pytest.approx(one.dp_chunked_step_ms(1, 2000.0, [(4000.0, 0.0)]), rel=0.02)
    assert lone > 4 * eight.step_ms(8 + 4000, 8 * 2000.0 + 4000.0**2 / 2, 8 * 2000.0, eager=True)
    full = eight.dp_chunked_step_ms(8, 8 * 2000.0, [(4000.0, 0.0)] * 8)
    assert full == pytest.approx(lone, rel=0.02)
    # with dp = 1 it is the plain step, and so is a step without chunks
    assert one.dp_chunked_step_ms(4, 4 * 2000.0, [(512.0, 1024.0)]) == one.step_ms(
        4 + 512, 4 * 2000.0 + 512 * (1024 + 256), 4 * 2000.0 + 1024, eager=True
    )
    assert eight.dp_chunked_step_ms(16, 16 * 2000.0, []) == eight.decode_step_ms(16, 32000.0)


def test_a_lone_prompts_ttft_in_chunked_mode_with_dp_is_one_ranks_prefill(
    catalog: Catalog,
) -> None:
    base = Deployment(
        name="dp-chunked",
        mode="chunked",
        model="llama-3.1-8b",
        link="nvlink4",
        colocated=NodeGroup(1, "h100-sxm"),
        chunk_tokens=8192,
        prefill_token_budget=8192,
    )
    wide = replace(base, colocated=NodeGroup(1, "h100-sxm", dp=8))
    (alone,) = simulate(base, [SimRequest(0.0, 4000, 2)], catalog=catalog)
    (spread,) = simulate(wide, [SimRequest(0.0, 4000, 2)], catalog=catalog)
    assert spread.ttft_ms == pytest.approx(alone.ttft_ms, rel=0.02)


def test_deepseek_one_long_prompt_is_slower_than_eight_short_ones(catalog: Catalog) -> None:
    # DeepSeek-R1 on 8 H200 with DP8 + EP8: the attention and dense layers of one 4,000-token
    # prompt run on one GPU, while eight 500-token prompts (the same tokens) run on eight.
    m, h200 = catalog.models["deepseek-r1"], catalog.chips["h200"]
    dp8 = NodeCost(m, h200, tp=1, dp=8, ep=8, weight_dtype="fp8")
    spread = dp8.prefill_ms(4000, 8 * 500.0**2)  # the node-wide cost of eight short prompts
    assert dp8.prefill_batch_ms([500] * 8) == pytest.approx(spread, rel=0.05)
    assert dp8.prefill_time_ms(4000) > 3 * spread


def test_node_limited_routing_caps_the_all_to_alls_destinations(catalog: Catalog) -> None:
    # DeepSeek-V3 over 8 nodes (EP 64): with its experts on at most topk_group = 4 nodes a
    # prefill token crosses to at most 4 nodes (per-node dedup), 4 x (1 - (3/4)^8) of them on
    # average, 7/8 of those remote; without the limit 8 x (1 - (7/8)^8).
    m = catalog.models["deepseek-v3"]
    assert m.topk_group == 4
    h100 = catalog.chips["h100-sxm"]
    limited = NodeCost(m, h100, tp=1, dp=64, ep=64, weight_dtype="fp8")
    free = NodeCost(replace(m, topk_group=0), h100, tp=1, dp=64, ep=64, weight_dtype="fp8")
    assert expert_copies(m, 64, 8)[1] == pytest.approx(4 * (1 - 0.75**8) * 7 / 8)
    assert expert_copies(replace(m, topk_group=0), 64, 8)[1] == pytest.approx(
        8 * (1 - (7 / 8) ** 8) * 7 / 8
    )
    ratio = (4 * (1 - 0.75**8)) / (8 * (1 - (7 / 8) ** 8))
    tokens = 64 * 4096
    latency = 2 * h100.scaleout_us / 1e3  # the network share sets each direction's time
    assert limited.alltoall_ms(tokens) - latency == pytest.approx(
        (free.alltoall_ms(tokens) - latency) * ratio
    )
    assert limited.prefill_batch_ms([4096] * 64) < free.prefill_batch_ms([4096] * 64)


@pytest.mark.parametrize(("phase", "per_gpu"), [("prefill", 8192), ("decode", 4)])
def test_two_batch_overlap_hides_the_smaller_of_comm_and_compute(
    catalog: Catalog, phase: str, per_gpu: int
) -> None:
    m, h100 = catalog.models["deepseek-r1"], catalog.chips["h100-sxm"]
    off = NodeCost(m, h100, tp=1, dp=32, ep=32, weight_dtype="fp8")
    on = NodeCost(m, h100, tp=1, dp=32, ep=32, weight_dtype="fp8", two_batch_overlap=True)
    tokens = 32 * per_gpu
    eager = phase == "prefill"
    context = 0.0 if eager else tokens * 2000.0
    pairs = tokens * 4096 / 2 if eager else context
    comm = off.allreduce_ms(tokens, None, not eager)
    overhead = off.eager_overhead_ms if eager else off.decode_overhead_ms
    t_off = off.step_ms(tokens, pairs, context, eager=eager)
    t_on = on.step_ms(tokens, pairs, context, eager=eager)
    kernels = t_off - comm - overhead  # max(compute, memory)
    assert min(kernels, comm) > 1.0  # both are there to hide
    assert t_on == pytest.approx(max(kernels, comm) + overhead)
    assert t_off - t_on == pytest.approx(min(kernels, comm))


def test_mtp_raises_decode_tokens_per_second_by_the_documented_factor(catalog: Catalog) -> None:
    # One draft token accepted with probability a: a verify step gains 1 + a tokens per
    # sequence and costs a step of 2 query tokens per sequence over the same KV, plus one
    # layer's worth of draft (DeepSeek's MTP module is one layer).
    m, h200 = catalog.models["deepseek-r1"], catalog.chips["h200"]
    plain = NodeCost(m, h200, tp=1, dp=16, ep=16, weight_dtype="fp8")
    mtp = replace(plain, mtp_acceptance=0.8)
    batch, context = 16 * 64, 16 * 64 * 3000.0
    one = plain.decode_step_ms(batch, context)
    verify = plain.step_ms(2 * batch, 2 * context, context, eager=False)
    factor = 1.8 * one / (verify + one / m.layers)
    assert mtp.tokens_per_decode_step == pytest.approx(1.8)
    assert one / mtp.decode_step_ms(batch, context) == pytest.approx(factor)
    # At 64 sequences per GPU DeepSeek's absorbed MLA attention and the all-to-all double with
    # the queries: throughput gains less than the 1.8 tokens per step (latency gains them).
    assert 1.0 < factor < 1.8
    # Two draft tokens: 1 + a + a^2 per step.
    assert replace(mtp, mtp_tokens=2).tokens_per_decode_step == pytest.approx(1 + 0.8 + 0.64)


def test_mtp_shortens_a_simulated_streams_tpot(catalog: Catalog) -> None:
    base = Deployment(
        name="mtp-probe",
        mode="colocated",
        model="llama-3.1-8b",
        link="nvlink4",
        colocated=NodeGroup(1, "h100-sxm"),
    )
    (plain,) = simulate(base, [SimRequest(0.0, 1000, 100)], catalog=catalog)
    (fast,) = simulate(
        replace(base, mtp_acceptance=0.7), [SimRequest(0.0, 1000, 100)], catalog=catalog
    )
    cost = NodeCost(catalog.models["llama-3.1-8b"], catalog.chips["h100-sxm"])
    factor = cost.decode_step_ms(1, 1050) / replace(cost, mtp_acceptance=0.7).decode_step_ms(
        1, 1050
    )
    assert factor > 1.5
    assert plain.tpot_ms / fast.tpot_ms == pytest.approx(factor, rel=0.02)


def test_a_56_percent_prefix_hit_rate_cuts_prefill_compute_accordingly(catalog: Catalog) -> None:
    # DeepSeek's production hit rate: 56 % of prompt tokens are cached. The rest are computed
    # (linear work x 0.44) and attend to the whole prompt (causal pairs x (1 - 0.56^2)).
    m = catalog.models["llama-3.1-70b"]
    h100 = catalog.chips["h100-sxm"].with_constant_mfu(0.45)  # one MFU: the FLOPs alone
    cold = NodeCost(m, h100, tp=8)
    warm = replace(cold, prefix_cache_hit=0.56)
    n = 8000
    linear = cold.linear_ms_per_token() * n
    attention = cold.prefill_compute_ms(n) - linear
    expected = linear * 0.44 + attention * (1 - 0.56**2)
    assert warm.prefill_compute_ms(n) == pytest.approx(expected)
    assert warm.prefill_time_ms(n) < 0.6 * cold.prefill_time_ms(n)
    # The simulator's TTFT follows.
    dep = Deployment(
        name="hit-probe",
        mode="colocated",
        model="llama-3.1-70b",
        link="nvlink4",
        colocated=NodeGroup(1, "h100-sxm", tp=8),
    )
    (first,) = simulate(dep, [SimRequest(0.0, n, 2)], catalog=catalog)
    (cached,) = simulate(
        replace(dep, prefix_cache_hit=0.56), [SimRequest(0.0, n, 2)], catalog=catalog
    )
    assert cached.prefill_ms < 0.6 * first.prefill_ms


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("mtp_acceptance = 1.5", "mtp_acceptance 1.5 must be at least 0 and below 1"),
        ("prefix_cache_hit = -0.1", "prefix_cache_hit -0.1 must be at least 0"),
        ("expert_imbalance = 0.5", "expert_imbalance 0.5 must be 1 to 16"),
        ('dispatch_dtype = "int4"', "dispatch_dtype 'int4' is not one of"),
        ('two_batch_overlap = "yes"', "two_batch_overlap = 'yes' should be true or false"),
        ('eplb = "on"', "eplb = 'on' should be true or false"),
    ],
)
def test_a_deployment_files_bad_ep_settings_are_refused(
    cli: object, tmp_path: Path, line: str, message: str
) -> None:
    path = tmp_path / "dep.toml"
    path.write_text(
        '[deployments.mine]\nmode = "colocated"\nmodel = "qwen3-30b-a3b"\n'
        f'link = "nvlink4"\n{line}\ncolocated = {{ count = 1, chip = "h200" }}\n',
        encoding="utf-8",
    )
    result = cli("engine", "simulate", "-p", str(path), "-n", "4")  # type: ignore[operator]
    assert result.exit_code == 2 and message in result.stderr
    assert path.read_text(encoding="utf-8").count("mine") == 1  # never rewritten


def test_a_deployment_file_keeps_its_ep_settings(catalog: Catalog, tmp_path: Path) -> None:
    from notes_cli.engine.core.deployment_file import dump_deployment, resolve_preset

    dep = replace(
        catalog.deployments["deepseek-r1-h200-disagg"],
        two_batch_overlap=True,
        expert_imbalance=1.2,
        dispatch_dtype="bf16",
        combine_dtype="bf16",
        mtp_acceptance=0.8,
        mtp_tokens=2,
        prefix_cache_hit=0.56,
    )
    path = tmp_path / "wide.toml"
    path.write_text(dump_deployment(dep, catalog), encoding="utf-8")
    again, _ = resolve_preset(str(path))
    assert again == replace(dep, source=again.source, description=again.description)
    plain = tmp_path / "plain.toml"
    plain.write_text(
        dump_deployment(catalog.deployments["deepseek-r1-h200-disagg"], catalog), encoding="utf-8"
    )
    text = plain.read_text(encoding="utf-8")
    assert "two_batch_overlap" not in text and "mtp" not in text  # defaults stay out of files
