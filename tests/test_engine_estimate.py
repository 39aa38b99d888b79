"""`pdnotes engine estimate`: one step of a deployment, statically, in the cost model's own
numbers (issue 37). A user holds it against a published saturated-prefill or decode figure."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from notes_cli.engine.core.costmodel import NodeCost
from notes_cli.engine.core.profiles import Catalog


def strict(text: str) -> Any:
    """JSON as a strict parser reads it: NaN and Infinity are refused."""

    def refuse(name: str) -> None:
        raise ValueError(f"not strict JSON: {name}")

    return json.loads(text, parse_constant=refuse)


def run(cli: Any, *args: str) -> dict[str, Any]:
    result = cli("engine", "estimate", *args, "--json")
    assert result.exit_code == 0, result.stderr
    doc: dict[str, Any] = strict(result.stdout)
    assert doc["schema"] == "pdnotes.engine.estimate/1"
    return doc


def test_decode_estimate_is_the_cost_models_step(cli: Any, catalog: Catalog) -> None:
    doc = run(cli, "-p", "deepseek-r1-h200-disagg", "--phase", "decode", "-b", "128",
              "--context", "4000")  # fmt: skip
    dep = catalog.deployments["deepseek-r1-h200-disagg"]
    assert dep.decode is not None
    cost = NodeCost.for_group(catalog.models["deepseek-r1"], catalog.chips["h200"], dep.decode, dep)
    sequences = 128 * 16
    step = cost.decode_step_ms(sequences, sequences * 4000.0)  # no backend: no CPU time
    assert doc["gpus"] == 16 and doc["sequences"] == sequences
    assert doc["step_ms"] == pytest.approx(step, abs=1e-4)
    assert doc["tokens_per_s"]["per_gpu"] == pytest.approx(128 / step * 1000, rel=1e-4)
    assert doc["tokens_per_s"]["per_node"] == pytest.approx(8 * 128 / step * 1000, rel=1e-4)
    assert doc["tokens_per_s"]["per_user"] == pytest.approx(1000 / step, rel=1e-4)
    parts = doc["breakdown_ms"]
    # a decode step's attention kernels run after its GEMMs, not under their roofline
    gemms = parts["compute"] - parts["attention"]
    kernels = max(gemms, parts["weights"]) + max(parts["attention"], parts["kv"])
    total = kernels + parts["communication"] - parts["hidden_by_overlap"] + parts["overheads"]
    assert total == pytest.approx(doc["step_ms"], abs=1e-3)
    assert doc["kv"]["fits"] and doc["kv"]["need_tokens"] == sequences * 4000


def test_prefill_estimate_spreads_prompts_over_the_attention_replicas(
    cli: Any, catalog: Catalog
) -> None:
    # 8,000 prompt tokens per GPU of 2,000-token prompts on the 8-GPU DP8 prefill node:
    # 32 prompts, 4 on each replica.
    doc = run(cli, "-p", "deepseek-r1-h200-disagg", "--phase", "prefill", "-b", "8000",
              "--context", "2000")  # fmt: skip
    dep = catalog.deployments["deepseek-r1-h200-disagg"]
    assert dep.prefill is not None
    cost = NodeCost.for_group(
        catalog.models["deepseek-r1"], catalog.chips["h200"], dep.prefill, dep
    )
    step = cost.prefill_batch_ms([2000] * 32)
    assert doc["role"] == "prefill" and doc["sequences"] == 32
    assert doc["step_ms"] == pytest.approx(step, abs=1e-4)
    assert doc["tokens_per_s"]["per_gpu"] == pytest.approx(8000 / step * 1000, rel=1e-4)


def test_the_engines_cpu_time_and_settings_are_in_the_step(cli: Any, tmp_path: Path) -> None:
    path = tmp_path / "mine.toml"
    path.write_text(
        '[deployments.mine]\nmode = "colocated"\nmodel = "llama-3.1-8b"\nlink = "nvlink4"\n'
        'backend = "sglang"\nstep_overhead_ms = 2.0\nseq_overhead_us = 50.0\n'
        'colocated = { count = 1, chip = "h100-sxm" }\n',
        encoding="utf-8",
    )
    doc = run(cli, "-p", str(path), "--phase", "decode", "-b", "100", "--context", "1000")
    assert doc["breakdown_ms"]["cpu"] == pytest.approx(2.0 + 100 * 0.050)
    bent = tmp_path / "bent.toml"
    bent.write_text(path.read_text() + "seq_overhead_exponent = 0.5\n", encoding="utf-8")
    doc_bent = run(cli, "-p", str(bent), "--phase", "decode", "-b", "100", "--context", "1000")
    assert doc_bent["breakdown_ms"]["cpu"] == pytest.approx(2.0 + 10 * 0.050)
    bent.write_text(path.read_text() + "seq_overhead_exponent = -1.0\n", encoding="utf-8")
    wrong = cli("engine", "estimate", "-p", str(bent), "--phase", "decode", "-b", "100",
                "--context", "1000")  # fmt: skip
    assert wrong.exit_code == 2 and "seq_overhead_exponent -1.0 must be above 0" in wrong.stderr
    fast = run(cli, "-p", str(path), "--phase", "decode", "-b", "100", "--context", "1000",
               "--mtp-acceptance", "0.7")  # fmt: skip
    assert fast["tokens_per_step"] == pytest.approx(1.7)
    assert fast["tokens_per_s"]["per_gpu"] > 1.3 * doc["tokens_per_s"]["per_gpu"]
    warm = run(cli, "-p", str(path), "--phase", "prefill", "-b", "8000", "--context", "8000",
               "--prefix-hit", "0.56")  # fmt: skip
    cold = run(cli, "-p", str(path), "--phase", "prefill", "-b", "8000", "--context", "8000")
    assert warm["breakdown_ms"]["compute"] < 0.6 * cold["breakdown_ms"]["compute"]


def test_a_batch_whose_kv_does_not_fit_is_said_so(cli: Any) -> None:
    doc = run(cli, "-p", "h100-colocated", "--phase", "decode", "-b", "512", "--context", "8192")
    assert not doc["kv"]["fits"]
    assert doc["kv"]["need_tokens"] > doc["kv"]["capacity_tokens"]
    table = cli("engine", "estimate", "-p", "h100-colocated", "--phase", "decode", "-b", "512",
                "--context", "8192")  # fmt: skip
    assert table.exit_code == 0 and "does NOT fit" in table.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--phase", "train", "-b", "1", "--context", "1"), "unknown --phase 'train'"),
        (("--phase", "decode", "-b", "0", "--context", "1"), "--batch"),
        (("--phase", "decode", "-b", "1", "--context", "1", "-p", "nope"), "unknown engine preset"),
    ],
)
def test_bad_estimate_requests_are_usage_errors(
    cli: Any, args: tuple[str, ...], message: str
) -> None:
    result = cli("engine", "estimate", *args)
    assert result.exit_code == 2 and message in result.stderr


@pytest.mark.parametrize(
    ("model", "chip", "shape"),
    [
        ("llama-3.1-70b", "h100-sxm", {"tp": 8}),
        ("deepseek-r1", "h200", {"dp": 16, "ep": 16, "two_batch_overlap": True}),
        ("gpt-oss-120b", "b200", {"tp": 2}),
    ],
)
@pytest.mark.parametrize("eager", [True, False])
def test_the_estimates_parts_add_up_to_the_simulators_step(
    catalog: Catalog, model: str, chip: str, shape: dict[str, Any], eager: bool
) -> None:
    cost = NodeCost(catalog.models[model], catalog.chips[chip], **shape)
    for tokens, pairs, kv in ((1, 900, 900), (256, 256 * 3000, 256 * 3000), (8192, 8192**2 / 2, 0)):
        parts = cost.step_parts(tokens, pairs, kv, eager=eager)
        assert parts.total == pytest.approx(cost.step_ms(tokens, pairs, kv, eager=eager))


def test_the_documented_worked_example_is_what_the_tool_says(tmp_path: Path) -> None:
    # docs/engine-model.md, "One step, statically": TensorRT-LLM v0.6.1's static-batch H100
    # figure for LLaMA 7B (batch 112, 128 in / 2048 out), from the page's own deployment file.
    from notes_cli.engine.core.deployment_file import resolve_preset
    from notes_cli.engine.core.estimate import estimate

    docs = (Path(__file__).parent.parent / "docs" / "engine-model.md").read_text(encoding="utf-8")
    start = docs.index("[deployments.trtllm06-llama7b]")
    path = tmp_path / "trtllm06-llama7b.toml"
    path.write_text(docs[start : docs.index("```", start)], encoding="utf-8")
    dep, catalog = resolve_preset(str(path))
    decode = estimate(dep, catalog, "decode", 112, 128 + 2048 // 2)
    prefill = estimate(dep, catalog, "prefill", 112 * 128, 128)
    per_gpu = 112 * 2048 / (prefill.step_ms + 2048 * decode.step_ms) * 1000
    assert f"**{per_gpu:,.0f}**" in docs
    assert f"**{per_gpu / 6818:.2f}×**" in docs


def test_without_eplb_the_busiest_gpu_does_the_documented_share_more_expert_work(
    cli: Any,
) -> None:
    # The DeepSeek preset runs EPLB (LMSYS's recipe); the engines ship with it off, where the
    # busiest GPU's routed experts and all-to-all cost 1.5x the balanced ones.
    args = ("-p", "deepseek-r1-h200-disagg", "--phase", "prefill", "-b", "4000", "--context",
            "4000")  # fmt: skip
    balanced = run(cli, *args)
    assert balanced["settings"]["eplb"] and balanced["settings"]["expert_imbalance"] == 1.0
    unbalanced = run(cli, *args, "--no-eplb")
    assert not unbalanced["settings"]["eplb"]
    assert unbalanced["settings"]["expert_imbalance"] == 1.5
    assert unbalanced["step_ms"] > 1.1 * balanced["step_ms"]
    # with ep = 1 the experts are split by tensor parallelism, not routed: nothing to balance
    dense = ("-p", "h100-chunked", "--phase", "prefill", "-b", "4000", "--context", "4000")
    with_eplb, without = run(cli, *dense, "--eplb"), run(cli, *dense, "--no-eplb")
    assert without["settings"]["expert_imbalance"] == 1.0
    assert without["step_ms"] == with_eplb["step_ms"]


def test_an_explicit_expert_imbalance_outranks_the_eplb_default(catalog: Catalog) -> None:
    from dataclasses import replace

    dep = catalog.deployments["deepseek-r1-h200-disagg"]
    assert dep.eplb and dep.expert_load == 1.0
    assert replace(dep, eplb=None).expert_load == 1.5  # unset: off, as the engines ship
    assert replace(dep, eplb=None, expert_imbalance=1.2).expert_load == 1.2
    assert replace(dep, expert_imbalance=2.0).expert_load == 2.0


def test_the_table_says_how_balanced_the_experts_are_where_they_are_routed(cli: Any) -> None:
    args = ("engine", "estimate", "-p", "deepseek-r1-h200-disagg", "--phase", "prefill", "-b",
            "4000", "--context", "4000")  # fmt: skip
    unbalanced = cli(*args, "--no-eplb")  # type: ignore[operator]
    assert unbalanced.exit_code == 0 and "1.5x the mean (no EPLB)" in unbalanced.stdout
    assert "1x the mean (EPLB)" in cli(*args).stdout  # type: ignore[operator]
    dense = cli("engine", "estimate", "-p", "h100-chunked", "--phase", "prefill", "-b", "4000",
                "--context", "4000")  # type: ignore[operator]  # fmt: skip
    assert dense.exit_code == 0 and "expert work" not in dense.stdout
