"""The roofline cost model against published sanity ranges (docs/validation.md)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from notes_cli.engine.core.costmodel import (
    NodeCost,
    effective_bandwidth_gbps,
    kv_bytes,
    transfer_ms,
)
from notes_cli.engine.core.profiles import Catalog

KIB = 1024


def node(catalog: Catalog, model: str, chip: str, **kw: object) -> NodeCost:
    return NodeCost(catalog.models[model], catalog.chips[chip], **kw)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("model", "kib_per_token"),
    [("llama-3-8b", 128), ("llama-3-70b", 320), ("qwen3-8b", 144), ("llama-2-7b", 512)],
)
def test_kv_bytes_per_token_match_published_shapes(
    catalog: Catalog, model: str, kib_per_token: int
) -> None:
    assert catalog.models[model].kv_bytes_per_token == kib_per_token * KIB


def test_kv_bytes_count_kv_heads_not_query_heads(catalog: Catalog) -> None:
    gqa = catalog.models["llama-3-8b"]
    full_heads = replace(gqa, kv_heads=gqa.heads)
    assert kv_bytes(full_heads, 512) == kv_bytes(gqa, 512) * (gqa.heads // gqa.kv_heads)


def test_7b_fp16_decode_on_h100_sits_at_the_roofline_floor(catalog: Catalog) -> None:
    cost = node(catalog, "llama-2-7b", "h100-sxm")
    assert 4.0 <= cost.roofline_decode_floor_ms() <= 5.5  # "≈5 ms decode floor by roofline"
    step = cost.decode_step_ms(1, 512)
    assert cost.roofline_decode_floor_ms() < step <= 15.0  # real engines: 10-15 ms at batch 1-8


def test_prefill_is_flat_then_linear_then_superlinear(catalog: Catalog) -> None:
    cost = node(catalog, "llama-3-8b", "h100-sxm")
    assert cost.prefill_time_ms(128) == pytest.approx(cost.prefill_time_ms(32), rel=0.05)
    assert 1.8 <= cost.prefill_time_ms(4096) / cost.prefill_time_ms(2048) <= 2.2
    assert cost.prefill_time_ms(32768) / cost.prefill_time_ms(16384) > 2.2


def test_decode_step_grows_with_batch_and_with_context(catalog: Catalog) -> None:
    cost = node(catalog, "llama-3-8b", "h100-sxm")
    by_batch = [cost.decode_step_ms(b, b * 1024) for b in (1, 16, 64, 256)]
    assert by_batch == sorted(by_batch) and by_batch[-1] > 2 * by_batch[0]
    assert cost.decode_step_ms(8, 8 * 32768) > 1.3 * cost.decode_step_ms(8, 8 * 512)


def test_prompt_length_moves_prefill_far_more_than_a_decode_step(catalog: Catalog) -> None:
    cost = node(catalog, "llama-3-8b", "h100-sxm")
    prefill_growth = cost.prefill_time_ms(4096) / cost.prefill_time_ms(256)
    decode_growth = cost.decode_step_ms(1, 4096) / cost.decode_step_ms(1, 256)
    assert prefill_growth > 5 and decode_growth < 1.1


def test_eager_decode_pays_launch_overhead_that_graphs_remove(catalog: Catalog) -> None:
    eager = node(catalog, "llama-3-8b", "h100-sxm", decode_exec="eager")
    graph = node(catalog, "llama-3-8b", "h100-sxm", decode_exec="graph")
    gap = eager.decode_step_ms(4, 4096) - graph.decode_step_ms(4, 4096)
    assert gap == pytest.approx(eager.eager_overhead_ms - graph.chip.graph_step_ms)
    assert gap > 1.0


def test_h20_decodes_faster_while_h800_prefills_faster(catalog: Catalog) -> None:
    h800 = node(catalog, "qwen3-8b", "h800")
    h20 = node(catalog, "qwen3-8b", "h20")
    assert h20.decode_step_ms(1, 1024) < h800.decode_step_ms(1, 1024)
    assert h800.prefill_time_ms(4096) * 4 < h20.prefill_time_ms(4096)


def test_tensor_parallel_splits_weights_and_compute(catalog: Catalog) -> None:
    tp1 = node(catalog, "llama-3-70b", "h100-sxm", tp=1)
    tp4 = node(catalog, "llama-3-70b", "h100-sxm", tp=4)
    assert tp4.decode_step_ms(1, 1024) < tp1.decode_step_ms(1, 1024) / 3
    assert tp4.kv_capacity_tokens() > 0 == tp1.kv_capacity_tokens()  # 141 GB never fit in 80


def test_transfer_time_grows_with_prompt_and_tcp_is_many_times_slower(catalog: Catalog) -> None:
    model = catalog.models["llama-3-8b"]
    rdma, tcp = catalog.links["roce-200g"], catalog.links["tcp-25g"]
    times = [transfer_ms(rdma, kv_bytes(model, n)) for n in (128, 512, 2048, 8192)]
    assert times == sorted(times) and times[-1] > 10 * times[0]
    assert transfer_ms(tcp, kv_bytes(model, 512)) > 8 * transfer_ms(rdma, kv_bytes(model, 512))


def test_small_messages_run_far_below_line_rate(catalog: Catalog) -> None:
    rdma = catalog.links["roce-200g"]
    assert effective_bandwidth_gbps(rdma, 64 * KIB) < 0.3 * rdma.line_gbps
    assert effective_bandwidth_gbps(rdma, 128 * KIB * KIB) > 0.85 * rdma.line_gbps
    # DLSlime on ConnectX-7 200G moves 1 MiB in about 0.06 ms: the same order of magnitude
    assert 0.03 < transfer_ms(rdma, KIB * KIB) - rdma.alpha_ms < 0.1


def test_ascend_direct_curve_matches_its_published_points(catalog: Catalog) -> None:
    hccs = catalog.links["hccs"]
    assert effective_bandwidth_gbps(hccs, 64 * KIB) == pytest.approx(6.0, rel=0.15)
    assert effective_bandwidth_gbps(hccs, 16 * KIB * KIB) == pytest.approx(21.0, rel=0.1)


def test_moe_and_mla_decode_pay_each_layer_s_measured_floor_and_dense_pays_none(
    catalog: Catalog,
) -> None:
    # Issue 37: a MoE layer costs ~30-70 us and an MLA block ~37 us before reading a byte
    # (aiconfigurator's moe_perf / mla module tables, kernels.toml); a decode step pays them on
    # top of its reads. Dense GQA models have neither, so their steps must not move.
    h200 = catalog.chips["h200"]
    assert h200.fp8_moe_floor_us > 20 and h200.mla_floor_us > 20
    bare = replace(
        h200, moe_floor_us=0.0, fp8_moe_floor_us=0.0, w4_moe_floor_us=0.0, mla_floor_us=0.0
    )
    ds = catalog.models["deepseek-r1"]
    with_floor = NodeCost(ds, h200, 8, weight_dtype="fp8").decode_step_ms(8, 8 * 1000)
    without = NodeCost(ds, bare, 8, weight_dtype="fp8").decode_step_ms(8, 8 * 1000)
    floor_ms = (ds.moe_layers * h200.fp8_moe_floor_us + ds.layers * h200.mla_floor_us) / 1000
    assert with_floor - without == pytest.approx(floor_ms, rel=1e-6)
    assert floor_ms > 3.0  # 58 MoE layers and 61 MLA blocks: a third of the step
    oss = catalog.models["gpt-oss-120b"]  # mxfp4 experts: the 4-bit weight-only floor
    gained = NodeCost(oss, h200, 1).decode_step_ms(8, 8000) - NodeCost(oss, bare, 1).decode_step_ms(
        8, 8000
    )
    assert gained == pytest.approx(oss.moe_layers * h200.w4_moe_floor_us / 1000, rel=1e-6)
    for dense in ("llama-3.1-70b", "qwen3-32b"):
        model = catalog.models[dense]
        assert NodeCost(model, h200, 8).decode_step_ms(32, 32 * 2000) == NodeCost(
            model, bare, 8
        ).decode_step_ms(32, 32 * 2000)


def test_a_tp8_decode_step_pays_its_attention_kernels_after_the_gemms(catalog: Catalog) -> None:
    # Issue 37, round four: aiconfigurator's generation-attention tables (every engine) measure
    # ~10 us a layer at a few sequences, whatever the kernel reads, and a decode step's attention
    # runs between its GEMMs. At TP8 those GEMMs are bound by their small shards, so hiding the
    # attention under their roofline made the step ~20% too fast against the kernel tables.
    h100 = catalog.chips["h100-sxm"]
    assert 5.0 < h100.attn_floor_us < 20.0
    bare = replace(h100, attn_floor_us=0.0)
    llama = catalog.models["llama-3.1-8b"]
    tp8 = NodeCost(llama, h100, 8)
    parts = tp8.step_parts(8, 8 * 2000, 8 * 2000, eager=False)
    assert parts.compute > parts.weights  # the small-shard GEMMs bound the step, not their reads
    floor_ms = llama.layers * h100.attn_floor_us / 1000
    gained = tp8.decode_step_ms(8, 8 * 2000) - NodeCost(llama, bare, 8).decode_step_ms(8, 8 * 2000)
    assert gained == pytest.approx(floor_ms, rel=1e-6)
    # twice the context: the step grows by the extra KV read although the GEMMs bound it
    longer = tp8.decode_step_ms(8, 8 * 4000) - tp8.decode_step_ms(8, 8 * 2000)
    extra_kv = 8 * 2000 * kv_bytes(llama, 1) / 8 / (h100.hbm_tbps * 1e12 * h100.kv_bw_eff) * 1e3
    assert longer == pytest.approx(extra_kv, rel=0.05)
    # the step is still one roofline with its parts: the estimate's breakdown adds up to it
    assert parts.total == pytest.approx(tp8.decode_step_ms(8, 8 * 2000), rel=1e-9)
    # MLA models carry their attention kernel in mla_floor_us: no second floor
    ds = catalog.models["deepseek-r1"]
    h200 = catalog.chips["h200"]
    nofloor = replace(h200, attn_floor_us=0.0)
    assert NodeCost(ds, h200, 8, weight_dtype="fp8").decode_step_ms(8, 8000) == NodeCost(
        ds, nofloor, 8, weight_dtype="fp8"
    ).decode_step_ms(8, 8000)


def test_a_steps_remembered_communication_is_the_phase_it_was_computed_for(
    catalog: Catalog,
) -> None:
    # step_ms remembers each token count's communication, prefill and decode apart: an EP
    # decode step sends with DeepEP's low-latency kernels, a prefill step with its normal ones.
    m, h200 = catalog.models["deepseek-r1"], catalog.chips["h200"]

    def fresh() -> NodeCost:
        return NodeCost(m, h200, tp=1, dp=8, ep=8, weight_dtype="fp8")

    cost = fresh()
    for tokens in (64, 512, 4096):
        prefill = cost.step_ms(tokens, tokens * 100.0, 0.0, eager=True)
        decode = cost.step_ms(tokens, tokens * 100.0, tokens * 1000.0, eager=False)
        assert prefill == fresh().step_ms(tokens, tokens * 100.0, 0.0, eager=True)
        assert decode == fresh().step_ms(tokens, tokens * 100.0, tokens * 1000.0, eager=False)
    # past the memo's bound (4,096 counts a phase: flat memory) it computes again, the same
    for tokens in range(1, 5000):
        cost.step_ms(tokens, 0.0, 0.0, eager=False)
    assert len(cost._comm_decode) <= 4096
    assert cost.step_ms(6000, 0.0, 0.0, eager=False) == fresh().step_ms(6000, 0.0, 0.0, eager=False)
