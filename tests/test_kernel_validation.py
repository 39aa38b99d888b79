"""The kernel validation table of docs/validation.md ("Kernels: measured per-operation data").

pdnotes' step times against aiconfigurator 0.12.0's, computed by aiconfigurator from its
measured per-operation databases (tests/fixtures/aiconfigurator_steps.toml, written by
benchmarks/aiconfigurator/steps.py). pdnotes' kernel curves were fitted to single operations of
the TRT-LLM tables only, so every step here is a check the fit did not see; the Llama-3.1-70B
and Qwen3 rows also have attention shapes the fit held out, DeepSeek-R1 its MoE shape.
Tolerances against TRT-LLM's estimate (the tables fitted): prefill +-20%, decode +-25%, MoE
models and fp8 weights +-40%.
"""

from __future__ import annotations

import tomllib
from dataclasses import replace
from pathlib import Path

import pytest

from notes_cli.engine.core.costmodel import NodeCost
from notes_cli.engine.core.profiles import Catalog, load_catalog
from notes_cli.engine.core.simcore import SimRequest, simulate

ROOT = Path(__file__).resolve().parents[1]
CATALOG: Catalog = load_catalog(user=False)
STEPS = tomllib.loads((ROOT / "tests" / "fixtures" / "aiconfigurator_steps.toml").read_text())[
    "steps"
]
TOLERANCE = {"prefill": 0.20, "decode": 0.25}
# MoE layers and fp8 weights: the grouped-GEMM fit reaches its own tables within 24-36% only,
# and aiconfigurator's fp8 decode carries per-step quantisation the roofline does not model.
WIDER = 0.40


def tolerance(step: dict) -> float:
    moe = step["model"].startswith(("qwen3-30b", "qwen3-235b", "deepseek", "gpt-oss"))
    if moe or "weights" in step:
        return WIDER
    return TOLERANCE[step["kind"]]


def pdnotes_ms(step: dict) -> float:
    model, chip = CATALOG.models[step["model"]], CATALOG.chips[step["chip"]]
    cost = NodeCost(model, chip, step["tp"], weight_dtype=step.get("weights"))
    if step["kind"] == "prefill":
        return cost.prefill_time_ms(step["tokens"])
    return cost.decode_step_ms(step["batch"], step["batch"] * step["tokens"])


def _name(step: dict) -> str:
    what = f"{step['tokens']} tok" if step["kind"] == "prefill" else f"b{step['batch']}"
    weights = f" {step['weights']}" if "weights" in step else ""
    return f"{step['model']} {step['chip']} TP{step['tp']}{weights} {step['kind']} {what}"


@pytest.mark.parametrize("step", STEPS, ids=[_name(s) for s in STEPS])
def test_step_time_stays_near_aiconfigurator(step: dict) -> None:
    measured = step["trtllm_ms"]
    assert pdnotes_ms(step) == pytest.approx(measured, rel=tolerance(step))


BACKENDS = ("trtllm", "vllm", "sglang")
ALLREDUCE = tomllib.loads(
    (ROOT / "tests" / "fixtures" / "aiconfigurator_allreduce.toml").read_text()
)["allreduce"]


@pytest.mark.parametrize(
    "row", ALLREDUCE, ids=[f"{r['chip']} {r['gpus']} GPUs {r['elements']}" for r in ALLREDUCE]
)
def test_an_all_reduce_takes_what_the_engine_s_kernel_measured(row: dict) -> None:
    # Issue 37, round four: the engines all-reduce small messages one-shot, each GPU reading its
    # n-1 peers' whole message, and large ones two-shot. The ring's bytes alone (fitted on
    # messages >= 64 KiB) gave 8 GPUs a decode step's 0.5-2 MiB at 0.44-0.49x of TRT-LLM's
    # measured kernel, every 2-GPU decode message 1.3-1.6x and an 8-GPU prefill's 1.43x.
    model = CATALOG.models["llama-3.1-8b"]  # 4096 wide: a message of `elements` is that / 4096
    cost = NodeCost(model, CATALOG.chips[row["chip"]], row["gpus"])
    one_us = cost.allreduce_ms(row["elements"] / model.hidden) / (2 * model.layers) * 1000
    assert one_us == pytest.approx(row["latency_us"], rel=0.25)


@pytest.mark.parametrize(("model", "batch"), [("llama-3.1-8b", 8), ("qwen3-32b", 16)])
def test_dense_decode_keeps_pace_with_aiconfigurator_as_tp_grows(model: str, batch: int) -> None:
    # Issue 37, round four: measured dense TPOT was predicted ever faster as TP grew at a few
    # sequences. The kernel tables say where: at TP8 a step's GEMMs are bound by their small
    # shards, not by the weights they read, and each layer's attention kernel costs ~10 us
    # whatever it reads. pdnotes hid the attention under the GEMMs' compute and counted no
    # floor: Llama-3.1-8B at 8 sequences 1.01x of aiconfigurator's engines at TP1, 0.80x at TP8.
    steps = [
        s
        for s in STEPS
        if (s["model"], s["chip"], s["kind"], s["tokens"], s["batch"])
        == (model, "h100-sxm", "decode", 2000, batch)
    ]
    ratios = {s["tp"]: pdnotes_ms(s) / sorted(s[f"{b}_ms"] for b in BACKENDS)[1] for s in steps}
    assert len(ratios) >= 3
    assert max(ratios.values()) / min(ratios.values()) < 1.2, ratios


def test_the_issue_s_prefill_example_is_within_ten_percent_of_every_backend() -> None:
    # Issue 25: Llama-3.1-8B, 4,000 tokens on one H100 took 157 ms in pdnotes against 95 / 88 /
    # 92 ms in aiconfigurator (TRT-LLM / vLLM / SGLang).
    step = next(
        s
        for s in STEPS
        if (s["model"], s["chip"], s["kind"], s["tokens"])
        == ("llama-3.1-8b", "h100-sxm", "prefill", 4000)
    )
    ours = pdnotes_ms(step)
    for backend in BACKENDS:
        assert ours == pytest.approx(step[f"{backend}_ms"], rel=0.10), backend


def test_the_table_in_the_docs_lists_every_step() -> None:
    text = (ROOT / "docs" / "validation.md").read_text("utf-8")
    for step in STEPS:
        assert f"`{_name(step)}`" in text, _name(step)


def test_an_older_engine_keeps_its_measured_constant_speed() -> None:
    # DistServe's released vLLM profile of OPT-13B on one A100 (profiler-a100-80g.vllm.json):
    # 187 ms for a 1024-token prefill, slower than today's kernels (about 117 ms). The preset
    # carries that speed as prefill_mfu 0.48 and must keep it under the measured kernel curves.
    dep = CATALOG.deployment("distserve-13b-vllm")
    record = next(simulate(dep, [SimRequest(0.0, 1024, 2)], catalog=CATALOG))
    assert record.ttft_ms - dep.overhead_ms == pytest.approx(187, rel=0.10)
    # the same chip with the measured curves (DistServe's own engine) is much faster
    fast = replace(dep, prefill_mfu=None)
    record = next(simulate(fast, [SimRequest(0.0, 1024, 2)], catalog=CATALOG))
    assert record.ttft_ms - dep.overhead_ms < 140


def test_derived_data_carries_aiconfigurator_s_notice() -> None:
    for path in (
        "templates/engine/kernels.toml",
        "tests/fixtures/aiconfigurator_steps.toml",
        "tests/fixtures/aiconfigurator_allreduce.toml",
    ):
        head = (ROOT / path).read_text("utf-8")[:600]
        assert "NVIDIA CORPORATION & AFFILIATES" in head and "Apache-2.0" in head, path
        assert "LICENSES/aiconfigurator-Apache-2.0.txt" in (ROOT / path).read_text("utf-8")
    assert "Apache License" in (ROOT / "LICENSES" / "aiconfigurator-Apache-2.0.txt").read_text()
