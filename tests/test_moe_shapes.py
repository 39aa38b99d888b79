"""The models of 2026 in the cost model: MoE active parameters and expert reads, MLA's compressed
KV, fp8 weights and KV, expert-parallel all-to-alls, sliding windows and attention width. Each
expected number is worked out by hand from the model's config.json (docs/engine-model.md)."""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from notes_cli.engine.core.costmodel import NodeCost, attention_flops_per_pair, kv_bytes, kv_streams
from notes_cli.engine.core.profiles import Catalog, NodeGroup, load_catalog
from notes_cli.engine.core.simcore import SimRequest, simulate
from notes_cli.errors import InputError

# DeepSeek-V3: 61 layers, the first 3 dense; 256 routed experts of 3 x 7168 x 2048 parameters,
# 8 per token; MLA latent 512 + rope key 64 per token per layer.
EXPERT = 3 * 7168 * 2048  # 44,040,192
DSV3_ROUTED = 58 * 256 * EXPERT  # 653,908,770,816
DSV3_ACTIVE = 671e9 - 58 * (256 - 8) * EXPERT  # 37,525,878,272


def test_deepseek_v3_uses_37b_of_its_671b_parameters_per_token(catalog: Catalog) -> None:
    m = catalog.models["deepseek-v3"]
    assert m.routed_params == DSV3_ROUTED
    assert m.active_params == pytest.approx(DSV3_ACTIVE)
    assert 37e9 < m.active_params < 38e9  # the technical report's "37B activated"
    # Prefill FLOPs follow the active parameters, not the total: 2 x 37.5B per token at the
    # fp8 peak (twice bf16's), attention apart (2 x 128 heads x (192 + 128) per pair per layer).
    # A constant MFU keeps the FLOPs visible (the measured curves are tested in
    # test_kernel_validation.py).
    h200 = catalog.chips["h200"].with_constant_mfu(0.45)
    cost = NodeCost(m, h200, tp=8, weight_dtype="fp8")
    n = 1000
    linear_ms = 2 * DSV3_ACTIVE * n / (1979e12 * 8 * h200.mfu / 1e3)  # the fp8 peak
    attention_ms = 2 * 128 * (192 + 128) * 61 * n * n / 2 / (989e12 * 8 * h200.mfu / 1e3)
    assert cost.prefill_compute_ms(n) == pytest.approx(linear_ms + attention_ms)


def test_moe_decode_reads_the_experts_its_batch_touches(catalog: Catalog) -> None:
    m = catalog.models["deepseek-v3"]
    h200 = catalog.chips["h200"]
    cost = NodeCost(m, h200, tp=8, weight_dtype="fp8")
    hbm_per_ms = h200.hbm_tbps * 1e12 * h200.bw_eff / 1e3
    dense = (671e9 - DSV3_ROUTED) / 8  # fp8: one byte each, split over 8 GPUs
    # One token touches 8 experts per layer; E x (1 - (1 - k/E)^T) for T tokens.
    one = dense + 8 * 58 * EXPERT / 8
    assert cost.weights_read_ms(1) == pytest.approx(one / hbm_per_ms)
    touched_64 = 256 * (1 - (1 - 8 / 256) ** 64)  # ~221 of 256
    assert cost.weights_read_ms(64) == pytest.approx(
        (dense + touched_64 * 58 * EXPERT / 8) / hbm_per_ms
    )
    # A large decode batch reads every expert: the whole 671 GB over the 8 GPUs.
    assert cost.weights_read_ms(4096) == pytest.approx(671e9 / 8 / hbm_per_ms, rel=1e-6)


def test_mla_caches_one_latent_per_token_per_layer(catalog: Catalog) -> None:
    m = catalog.models["deepseek-v3"]
    assert m.kv_bytes_per_token == 70_272  # (512 + 64) x 61 layers x 2 bytes
    assert kv_bytes(m, 1000) == 70_272_000
    assert kv_bytes(m, 1000, "fp8") == 35_136_000
    assert catalog.models["kimi-k2"].kv_bytes_per_token == 70_272


def test_mla_latent_is_held_whole_by_every_tp_gpu(catalog: Catalog) -> None:
    m = catalog.models["deepseek-r1"]
    h200 = catalog.chips["h200"]
    tp8 = NodeCost(m, h200, tp=8)
    free = 8 * 141e9 * 0.9 - 671e9  # fp8 weights as released
    assert tp8.kv_capacity_tokens(0.9) == int(free / (70_272 * 8))  # eight copies
    dp8 = NodeCost(m, h200, tp=1, dp=8, ep=8)  # attention DP: each replica its own KV
    weights = (671e9 - DSV3_ROUTED) * 8 + DSV3_ROUTED  # the non-expert part once per replica
    assert dp8.kv_capacity_tokens(0.9) == int((8 * 141e9 * 0.9 - weights) / 70_272)
    # One copy crosses the link, from one GPU per pipeline stage.
    group = NodeGroup(1, "h200", tp=8)
    assert kv_streams(group, group, m, nics=8) == 1
    llama = catalog.models["llama-3.1-70b"]
    assert kv_streams(group, group, llama, nics=8) == 8


def test_fp8_weights_and_kv_halve_the_bytes(catalog: Catalog) -> None:
    m = catalog.models["llama-3.1-70b"]
    h100 = catalog.chips["h100-sxm"].with_constant_mfu(0.45)  # one MFU: the FLOPs alone
    bf16 = NodeCost(m, h100, tp=4)
    fp8 = NodeCost(m, h100, tp=4, weight_dtype="fp8", kv_dtype="fp8")
    assert bf16.weight_bytes == pytest.approx(141.2e9)
    assert fp8.weight_bytes == pytest.approx(70.6e9)
    assert fp8.kv_bytes_per_token == bf16.kv_bytes_per_token / 2 == 163_840
    assert fp8.roofline_decode_floor_ms() == pytest.approx(bf16.roofline_decode_floor_ms() / 2)
    usable = 4 * 80e9 * 0.9
    assert fp8.kv_capacity_tokens(0.9) == int((usable - 70.6e9) / 163_840)
    # fp8 GEMMs run at the fp8 peak (1,979 vs 989 TFLOP/s): the weights' FLOPs cost half.
    assert fp8.linear_ms_per_token() == pytest.approx(
        bf16.linear_ms_per_token() * h100.tflops / 1979.0
    )
    a100 = NodeCost(m, catalog.chips["a100-80g"], tp=4, weight_dtype="fp8")
    assert a100.linear_ms_per_token() == pytest.approx(  # no fp8 tensor cores: bf16 peak
        NodeCost(m, catalog.chips["a100-80g"], tp=4).linear_ms_per_token()
    )


def test_expert_parallel_all_to_all(catalog: Catalog) -> None:
    m = catalog.models["deepseek-v3"]
    h200 = catalog.chips["h200"]
    # EP 8 in one node, DeepEP's normal kernels (prefill): each GPU sends its 1024 / 8 tokens
    # once to each distinct GPU among its 8 experts', 8 x (1 - (7/8)^8) = 5.25 of them, 7/8
    # remote (issue 37: per-GPU dedup; it was 8 copies), dispatch in fp8 (1 byte), combine in
    # bf16 (2), over NVLink (the chip's measured all-reduce bus rate and latency, kernels.toml).
    distinct = 8 * (1 - (7 / 8) ** 8)
    message = 1024 / 8 * 7168 * distinct
    nvlink, latency_ms = h200.intra_gbps * 1e9, h200.allreduce_us / 1e3
    expected = 2 * latency_ms + (message * 7 / 8 * (1 + 2)) / nvlink * 1e3
    ep8 = NodeCost(m, h200, tp=1, dp=8, ep=8, weight_dtype="fp8")
    assert ep8.alltoall_ms(1024) == pytest.approx(expected)
    # The low-latency kernels (decode) send one copy per expert: 8 x 7/8.
    low = 2 * latency_ms + (1024 / 8 * 7168 * 8 * 7 / 8 * (1 + 2)) / nvlink * 1e3
    assert ep8.alltoall_ms(1024, low_latency=True) == pytest.approx(low)
    # EP 16 over two nodes: a token crosses once to the other node if any of its 8 experts is
    # there, 2 x (1 - (1/2)^8) distinct nodes, half of them remote, over each GPU's own
    # 50 GB/s NIC (20 us), which is slower than the NVLink forwarding.
    remote = 2 * (1 - 0.5**8) / 2
    message = 1024 / 16 * 7168
    expected = 2 * 0.020 + (message * remote * (1 + 2)) / 50e9 * 1e3
    ep16 = NodeCost(m, h200, tp=1, dp=16, ep=16, weight_dtype="fp8")
    assert ep16.alltoall_ms(1024) == pytest.approx(expected)
    # Decode's low-latency kernels send every copy bound for the other node over RDMA: 8 x 1/2.
    expected_ll = 2 * 0.020 + (message * 8 * 0.5 * (1 + 2)) / 50e9 * 1e3
    assert ep16.alltoall_ms(1024, low_latency=True) == pytest.approx(expected_ll)
    # Every MoE layer pays it; without EP the experts' all-reduce runs instead.
    assert ep8.allreduce_ms(1024) == pytest.approx(58 * ep8.alltoall_ms(1024))
    # In a GB200 NVL72 rack the 16 GPUs share one NVLink domain.
    gb200 = NodeCost(m, catalog.chips["gb200"], tp=1, dp=16, ep=16, weight_dtype="fp8")
    assert gb200.alltoall_ms(1024, True) < ep16.alltoall_ms(1024, True) / 3


def test_sliding_window_layers_keep_at_most_the_window(catalog: Catalog) -> None:
    m = catalog.models["gpt-oss-120b"]
    per_layer = 2 * 8 * 64 * 2  # K and V of 8 KV heads of 64, bf16
    assert m.kv_bytes_per_token == 18 * per_layer  # the 18 full-attention layers
    assert kv_bytes(m, 1000) == 18 * per_layer * 1000 + 18 * per_layer * 128
    assert kv_bytes(m, 100) == 36 * per_layer * 100  # shorter than the window: all 36 layers
    h100 = catalog.chips["h100-sxm"].with_constant_mfu(0.45)  # the bytes alone decide
    cost = NodeCost(m, h100)
    plain = NodeCost(replace(m, sliding_window=0, sliding_layers=0), h100)
    # A long decode reads the full layers' KV and the sliding layers' last 128 tokens.
    long_read = cost.decode_step_ms(1, 100_000) - cost.decode_step_ms(1, 0)
    plain_read = plain.decode_step_ms(1, 100_000) - plain.decode_step_ms(1, 0)
    assert long_read == pytest.approx(plain_read * (100_000 + 128) / 200_000, rel=0.01)
    # A model without windows never turns an empty step into NaN (0 tokens x no window).
    assert math.isfinite(plain.decode_step_ms(0, 0))


def test_attention_flops_use_heads_times_head_dim_not_hidden(catalog: Catalog) -> None:
    qwen = catalog.models["qwen3-32b"]
    assert qwen.hidden == 5120
    assert attention_flops_per_pair(qwen) == (4 * 64 * 128, 4 * 64 * 128)  # 8,192 wide
    glm = catalog.models["glm-4.5"]
    assert attention_flops_per_pair(glm)[0] == 4 * 96 * 128
    # MLA: prefill per head on 192-wide keys and 128-wide values; decode in the latent.
    mla = catalog.models["deepseek-v3"]
    assert attention_flops_per_pair(mla) == (2 * 128 * (192 + 128), 2 * 128 * (576 + 512))


def test_fp8_kv_halves_what_crosses_the_link(catalog: Catalog) -> None:
    dep = catalog.deployment("deepseek-r1-h200-disagg")
    requests = [SimRequest(i * 50.0, 3000, 4) for i in range(4)]
    bf16 = list(simulate(dep, requests, catalog=catalog))
    fp8 = list(simulate(replace(dep, kv_dtype="fp8"), requests, catalog=catalog))
    assert {r.transfer_bytes for r in bf16} == {3000 * 70_272}
    assert {r.transfer_bytes for r in fp8} == {3000 * 35_136}
    assert sum(r.pd_timing().transfer_ms for r in fp8) < sum(
        r.pd_timing().transfer_ms for r in bf16
    )


@pytest.mark.parametrize(
    ("row", "message"),
    [
        ("experts = 8\nactive_experts = 9\nexpert_ffn = 64", "active_experts <= experts"),
        ("active_experts = 2", "need experts"),
        ("kv_lora_rank = 512", "needs qk_rope_head_dim"),
        ("sliding_window = 128", "go together"),
        ('weight_dtype = "fp7"', "weight_dtype 'fp7' is not one of"),
    ],
)
def test_inconsistent_model_rows_are_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, row: str, message: str
) -> None:
    folder = tmp_path / "home" / "engine"
    folder.mkdir(parents=True)
    (folder / "mine.toml").write_text(
        "[models.mine]\nparams_b = 10.0\nlayers = 8\nhidden = 1024\nheads = 8\nkv_heads = 8\n"
        f"head_dim = 128\n{row}\n",
        encoding="utf-8",
    )
    monkeypatch.setenv("PDNOTES_HOME", str(tmp_path / "home"))
    with pytest.raises(InputError, match=message):
        load_catalog()


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            'model = "llama-3.1-8b"\ncolocated = { count = 1, chip = "h200", tp = 2, ep = 2 }',
            "dense",
        ),
        ('colocated = { count = 1, chip = "h200", tp = 2, ep = 4 }', "must divide tp x dp"),
        ('colocated = { count = 1, chip = "h200", dp = 0 }', "dp must be at least 1"),
        ('kv_dtype = "int4"', "kv_dtype = 'int4' is not one of"),
    ],
)
def test_a_users_deployment_with_bad_parallelism_or_precision_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, change: str, message: str
) -> None:
    folder = tmp_path / "home" / "engine"
    folder.mkdir(parents=True)
    base = {
        "mode": '"colocated"',
        "model": '"qwen3-30b-a3b"',
        "link": '"nvlink4"',
        "colocated": '{ count = 1, chip = "h200" }',
    }
    for line in change.splitlines():
        key, _, value = line.partition(" = ")
        base[key] = value
    body = "".join(f"{k} = {v}\n" for k, v in base.items())
    (folder / "mine.toml").write_text(f"[deployments.mine]\n{body}", encoding="utf-8")
    monkeypatch.setenv("PDNOTES_HOME", str(tmp_path / "home"))
    with pytest.raises(InputError, match=message):
        load_catalog()


def test_a_users_moe_row_and_chip_override_are_used(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "home" / "engine"
    folder.mkdir(parents=True)
    (folder / "mine.toml").write_text(
        "[models.tiny-moe]\nparams_b = 2.0\nlayers = 4\nhidden = 1024\nheads = 8\nkv_heads = 2\n"
        "head_dim = 128\nexperts = 16\nactive_experts = 2\nexpert_ffn = 512\n"
        "[chips.h200]\ntflops = 989.0\nfp8_tflops = 3000.0\nhbm_gb = 141.0\nhbm_tbps = 4.8\n"
        'source = "mine"\n',
        encoding="utf-8",
    )
    monkeypatch.setenv("PDNOTES_HOME", str(tmp_path / "home"))
    catalog = load_catalog()
    moe = catalog.models["tiny-moe"]
    assert moe.active_params == pytest.approx(2e9 - 4 * 14 * 3 * 1024 * 512)
    assert catalog.chips["h200"].peak_tflops("fp8") == 3000.0


def test_the_planner_searches_ep_and_attention_dp_for_moe_models_only(catalog: Catalog) -> None:
    from notes_cli.plan.space import ChipOption, Layout, SearchSpace

    space = SearchSpace(chips=(ChipOption("h200"),), max_chips=16)
    dense = space.layouts(catalog.models["qwen3-32b"])
    assert dense == tuple(Layout(tp) for tp in (1, 2, 4, 8))
    moe = space.layouts(catalog.models["deepseek-r1"])
    assert set(moe) == {
        *dense,
        Layout(8, 1, 8),
        Layout(1, 8, 8),
        Layout(1, 16, 16),
    }
    # EP must divide the experts: GLM-4.5's 160 split 8, 16 or 32 ways, never 64.
    wide = SearchSpace(chips=(ChipOption("h200"),), max_chips=64)
    assert max(lay.ep for lay in wide.layouts(catalog.models["glm-4.5"])) == 32
    assert all(160 % lay.ep == 0 for lay in wide.layouts(catalog.models["glm-4.5"]))


PLAN = (
    "engine", "plan", "--model", "deepseek-r1", "--chip", "h200", "--link", "rdma-8x400g",
    "--max-instances", "1", "--modes", "disagg", "--input-len", "2000", "--output-len", "100",
    "-n", "200", "--tolerance", "0.2", "--jobs", "1", "--slo-ttft-ms", "1000",
    "--slo-tpot-ms", "50",
)  # fmt: skip


def test_a_newcomer_plans_deepseek_r1_on_h200_with_fp8_and_ep(cli: Any, tmp_path: Path) -> None:
    out = tmp_path / "r1.toml"
    planned = cli(*PLAN, "--weight-dtype", "fp8", "--kv-dtype", "fp8", "--json", "--out", str(out))
    assert planned.exit_code == 0, planned.stderr
    doc = planned.json()
    assert doc["space"]["weight_dtype"] == "fp8" and doc["space"]["kv_dtype"] == "fp8"
    best = next(c for c in doc["candidates"] if c["id"] == doc["best"]["id"])
    assert any(g["ep"] > 1 for g in best["groups"].values())  # expert parallel wins here
    assert doc["best"]["capacity_rps"] > 1
    text = out.read_text(encoding="utf-8")
    assert 'weight_dtype = "fp8"' in text and 'kv_dtype = "fp8"' in text
    simulated = cli("engine", "simulate", "-p", str(out), "-n", "20", "--rate", "2", "--json")
    assert simulated.exit_code == 0, simulated.stderr
    # In bf16 the 671B weights (1.3 TB) fit no 8-GPU H200 node, and the planner says why.
    bf16 = cli(*PLAN, "--weight-dtype", "bf16", "--json")
    assert bf16.exit_code == 1
    doc = bf16.json()
    assert doc["counts"]["pruned"]["memory"] == doc["counts"]["candidates"]
    reasons = {c["label"]: c["pruned"] for c in doc["candidates"]}
    assert reasons["disagg P 1xh200-dp8-ep8 + D 1xh200-tp8 b256"] == (
        "prefill h200 tp1-dp8-ep8: the weights do not fit in HBM"
    )


def test_unknown_precisions_are_usage_errors(cli: Any) -> None:
    bad = cli(*PLAN, "--weight-dtype", "fp6")
    assert bad.exit_code == 2 and "--weight-dtype: unknown precision 'fp6'" in bad.stderr
    bad = cli("engine", "simulate", "-p", "deepseek-r1-h200-disagg", "--kv-dtype", "int4")
    assert bad.exit_code == 2 and "choose from bf16, fp16, fp8" in bad.stderr


def test_simulate_serves_a_preset_in_another_precision(cli: Any) -> None:
    run = ("engine", "simulate", "-p", "deepseek-r1-h200-disagg", "-n", "40", "--rate", "4")
    run += ("--input-len", "3000", "--output-len", "20", "--json")
    (as_shipped,) = cli(*run).json()["configurations"]
    (fp8,) = cli(*run, "--kv-dtype", "fp8").json()["configurations"]
    assert fp8["label"].endswith("weights fp8 KV fp8")
    # Half the KV bytes to read and to move: every request's first token comes sooner.
    shipped_ttft = as_shipped["points"][0]["metrics"]["ttft_ms"]["mean"]
    assert fp8["points"][0]["metrics"]["ttft_ms"]["mean"] < shipped_ttft


def test_a_launch_sketch_says_what_it_cannot_write(catalog: Catalog) -> None:
    from notes_cli.plan.launch import launch_sketch

    sketch = launch_sketch(catalog.deployment("deepseek-r1-h200-disagg"), catalog, "sglang")
    (note,) = [n for n in sketch.notes if n.startswith("Not written as flags")]
    assert "decode ep 16 / dp 16" in note and "weights in fp8" in note
    assert "deepseek-ai/DeepSeek-R1" in sketch.text()
    dense = launch_sketch(catalog.deployment("h100-disagg"), catalog, "sglang")
    assert not any(n.startswith("Not written as flags") for n in dense.notes)


def test_simulate_refuses_a_node_whose_weights_leave_no_room_for_kv(cli: Any) -> None:
    bf16 = cli("engine", "simulate", "-p", "deepseek-r1-h200-disagg", "--weight-dtype", "bf16")
    assert bf16.exit_code == 2
    assert "a prefill node (8 x h200) holds 1,581 GB of deepseek-r1 weights" in bf16.stderr
    assert "1,015 GB usable" in bf16.stderr
