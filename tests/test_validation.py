"""The validation table of docs/validation.md: published numbers the model must stay near.

Tolerances (issue 13.6): transfer times and bandwidths +-30%, TTFT and TPOT +-50%, comparisons
in the right direction and (where the source gives a magnitude) within 2x. Each case computes
pdnotes' figure from the shipped profiles; docs/validation.md lists the same rows with sources.
Capacity comparisons use a fixed-rate check (one side meets the SLOs, the other does not) to
keep the file fast; their capacity ratios are measured offline and given in the doc.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

import pytest

from notes_cli.engine.core.costmodel import NodeCost, effective_bandwidth_gbps, transfer_ms
from notes_cli.engine.core.profiles import Catalog, load_catalog
from notes_cli.engine.core.simcore import SimRequest, simulate

CATALOG: Catalog = load_catalog()
MIB = 1024 * 1024


def _one(preset: str, prompt: int, output: int = 2, **changes: object) -> float:
    dep = replace(CATALOG.deployment(preset), **changes)  # type: ignore[arg-type]
    record = next(simulate(dep, [SimRequest(0.0, prompt, output)], catalog=CATALOG))
    return record.ttft_ms


def _tp8_rate_gbps(link: str, nics: int | None = None) -> float:
    """Aggregate KV rate of one 32k-token Llama-3-70B request, H800 TP8 1P1D, simulated."""
    profile = CATALOG.links[link]
    if nics is not None:
        profile = replace(profile, nics=nics)
    catalog = replace(CATALOG, links={**CATALOG.links, "under-test": profile})
    dep = replace(CATALOG.deployment("mooncake-h800-tp8"), link="under-test")
    record = next(simulate(dep, [SimRequest(0.0, 32768, 2)], catalog=catalog))
    return record.transfer_bytes / 1e9 / ((record.transfer_ms - profile.alpha_ms) / 1e3)


def _decode_floor_ms() -> float:
    return NodeCost(
        CATALOG.models["llama-2-7b"], CATALOG.chips["h100-sxm"]
    ).roofline_decode_floor_ms()


def _flat_short_ttft() -> float:
    return _one("h100-colocated", 256) / _one("h100-colocated", 32)


def _slow_link_ttft() -> float:
    dep = "mooncake-h800-tp8"
    return _one(dep, 8192, link="tcp-100g") / _one(dep, 8192)


def _node(
    model: str, chip: str, tp: int, decode_exec: str = "graph", preset: str | None = None
) -> NodeCost:
    """A node of `chip`; with `preset`, running that preset's engine (its fitted prefill_mfu)."""
    profile = CATALOG.chips[chip]
    engine_mfu = CATALOG.deployment(preset).prefill_mfu if preset else None
    if engine_mfu is not None:
        profile = profile.with_constant_mfu(engine_mfu)
    return NodeCost(CATALOG.models[model], profile, tp, decode_exec)


def _prefill_ms(
    model: str, chip: str, tp: int, tokens: int, preset: str | None = None
) -> Callable[[], float]:
    return lambda: _node(model, chip, tp, preset=preset).prefill_time_ms(tokens)


def _decode_ms(
    model: str, chip: str, tp: int, batch: int, context: int, decode_exec: str = "graph"
) -> Callable[[], float]:
    return lambda: _node(model, chip, tp, decode_exec).decode_step_ms(batch, batch * context)


def _splitwise_prompt_ratio() -> float:
    """H100 / A100 prompt time, BLOOM-176B TP8, 2048 tokens."""
    return (
        _prefill_ms("bloom-176b", "h100-sxm", 8, 2048, "splitwise-h100")()
        / _prefill_ms("bloom-176b", "a100-80g", 8, 2048)()
    )


def _splitwise_tbt_ratio() -> float:
    """H100 / A100 time between tokens, Llama-2-70B TP2, batch 1, eager (Splitwise's vLLM)."""
    h100 = _decode_ms("llama-2-70b", "h100-sxm", 2, 1, 2112, "eager")()
    return h100 / _decode_ms("llama-2-70b", "a100-80g", 2, 1, 2112, "eager")()


@dataclass(frozen=True)
class Case:
    name: str
    published: float
    pdnotes: Callable[[], float]
    tolerance: float  # relative, for kind "value"
    kind: str = "value"  # "value"; "above" / "below": a bound; "ratio": a comparison's
    # direction (same side of 1 as published) and magnitude (within 2x of it)


def _kv_kib(model: str) -> Callable[[], float]:
    return lambda: CATALOG.models[model].kv_bytes_per_token / 1024


def _dlslime_1mib_ms() -> float:
    link = CATALOG.links["roce-200g"]
    return transfer_ms(link, MIB) - link.alpha_ms


def _hccs_gbps(nbytes: int) -> Callable[[], float]:
    return lambda: effective_bandwidth_gbps(CATALOG.links["hccs"], nbytes)


CASES = [
    Case("llama-3-8b KV KiB/token", 128, _kv_kib("llama-3-8b"), 0.0),
    Case("llama-3-70b KV KiB/token", 320, _kv_kib("llama-3-70b"), 0.0),
    Case("mooncake 8x400G GB/s", 190, lambda: _tp8_rate_gbps("rdma-8x400g"), 0.30),
    Case("mooncake 4x200G GB/s", 87, lambda: _tp8_rate_gbps("roce-200g", nics=4), 0.30),
    Case("dlslime 1 MiB on CX-7 200G, ms", 0.06, _dlslime_1mib_ms, 0.30),
    Case("ascend direct 64 KB GB/s", 6.0, _hccs_gbps(64 * 1024), 0.30),
    Case("ascend direct 16 MB GB/s", 21.0, _hccs_gbps(16 * MIB), 0.30),
    Case("7B fp16 H100 decode floor ms", 5.0, _decode_floor_ms, 0.50),
    Case("short-prompt TTFT is flat: TTFT(256)/TTFT(32)", 1.5, _flat_short_ttft, 0.0, "below"),
    Case("slow link raises TTFT: TTFT(TCP 100G)/TTFT(8x400G)", 1.3, _slow_link_ttft, 0.0, "above"),
    # DistServe's released A100 profile of OPT-13B (prefill a + b*n + c*n^2 ms, decode fits).
    Case(
        "distserve OPT-13B A100 TP1 prefill 1024 tok, ms",
        118.1,
        _prefill_ms("llama-2-13b", "a100-80g", 1, 1024),
        0.50,
    ),
    Case(
        "distserve OPT-13B A100 TP2 prefill 1024 tok, ms",
        79.6,
        _prefill_ms("llama-2-13b", "a100-80g", 2, 1024),
        0.50,
    ),
    Case(
        "distserve OPT-13B A100 TP1 decode batch 1, ms",
        20.3,
        _decode_ms("llama-2-13b", "a100-80g", 1, 1, 512),
        0.50,
    ),
    Case(
        "distserve OPT-13B A100 TP2 decode batch 64, ms",
        30.4,
        _decode_ms("llama-2-13b", "a100-80g", 2, 64, 600),
        0.50,
    ),
    # Splitwise's released DGX-A100 / DGX-H100 profiles (vLLM, fp16).
    Case(
        "splitwise BLOOM-176B H100 TP8 prompt 2048 tok, ms",
        252.0,
        _prefill_ms("bloom-176b", "h100-sxm", 8, 2048, "splitwise-h100"),
        0.50,
    ),
    Case(
        "splitwise BLOOM-176B A100 TP8 prompt 2048 tok, ms",
        540.0,
        _prefill_ms("bloom-176b", "a100-80g", 8, 2048),
        0.50,
    ),
    Case(
        "splitwise Llama-2-70B H100 TP2 TBT batch 1, ms",
        37.4,
        _decode_ms("llama-2-70b", "h100-sxm", 2, 1, 2112, "eager"),
        0.50,
    ),
    Case(
        "splitwise Llama-2-70B A100 TP2 TBT batch 1, ms",
        54.9,
        _decode_ms("llama-2-70b", "a100-80g", 2, 1, 2112, "eager"),
        0.50,
    ),
    Case("splitwise prompt time H100/A100 (BLOOM TP8)", 0.47, _splitwise_prompt_ratio, 0, "ratio"),
    Case("splitwise TBT H100/A100 (Llama-2-70B TP2)", 0.68, _splitwise_tbt_ratio, 0, "ratio"),
]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_published_number_holds(case: Case) -> None:
    figure = case.pdnotes()
    if case.kind == "above":
        assert figure > case.published
    elif case.kind == "below":
        assert figure < case.published
    elif case.kind == "ratio":
        assert (figure > 1) == (case.published > 1), "the comparison's direction"
        assert case.published / 2 <= figure <= case.published * 2, "magnitude within 2x"
    else:
        assert figure == pytest.approx(case.published, rel=case.tolerance, abs=1e-9)


def test_the_table_in_the_docs_lists_every_case() -> None:
    from pathlib import Path

    text = (Path(__file__).resolve().parents[1] / "docs" / "validation.md").read_text("utf-8")
    assert len(CASES) >= 10
    for case in CASES:
        assert f"`{case.name}`" in text, case.name


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[int(q * (len(ordered) - 1))]


def _poisson_lognormal(
    rate_per_s: float, n: int, prompt_mu: float, output: tuple[float, float] | int, seed: int
) -> list[SimRequest]:
    """n Poisson arrivals; lognormal prompts (median e^prompt_mu, sigma 0.6 or 0.8), outputs
    fixed or lognormal (median e^mu, sigma 0.8)."""
    import random

    rng = random.Random(seed)
    arrivals, t = [], 0.0
    for _ in range(n):
        t += rng.expovariate(rate_per_s) * 1000
        prompt = int(rng.lognormvariate(prompt_mu, 0.6 if isinstance(output, int) else 0.8))
        out = output if isinstance(output, int) else int(rng.lognormvariate(*output))
        arrivals.append(SimRequest(t, max(16, min(8192, prompt)), max(2, min(2048, out))))
    return arrivals


def _chatbot(rate_per_s: float) -> list[SimRequest]:
    """300 requests with ShareGPT-like lognormal prompts (median ~490 tokens), 128-token answers."""
    return _poisson_lognormal(rate_per_s, 300, 6.2, 128, seed=7)


def _synthetic_512_64(rate_per_s: float) -> list[SimRequest]:
    """DistServe §2's synthetic workload: 512-token prompts, 64-token answers, Poisson."""
    import random

    rng, t, arrivals = random.Random(7), 0.0, []
    for _ in range(300):
        t += rng.expovariate(rate_per_s) * 1000
        arrivals.append(SimRequest(t, 512, 64))
    return arrivals


def _meets_p90_slo(preset: str, arrivals: list[SimRequest], ttft_ms: float, tpot_ms: float) -> bool:
    """P90 TTFT and P90 TPOT within the SLO (DistServe's attainment target)."""
    records = list(simulate(CATALOG.deployment(preset), arrivals, catalog=CATALOG))
    ttft = _percentile([r.ttft_ms for r in records], 0.9)
    tpot = _percentile([r.tpot_ms for r in records], 0.9)
    return ttft <= ttft_ms and tpot <= tpot_ms


def test_distserve_placement_serves_more_per_gpu_than_one_vllm_gpu() -> None:
    # DistServe (OSDI'24) §6, chatbot OPT-13B on A100, SLOs TTFT 0.25 s and TPOT 0.1 s: its
    # placement (prefill TP2 + decode TP1, 3 GPUs) serves more per GPU than vLLM on one GPU.
    # At 2.5 req/s per GPU the 3-GPU placement meets both P90 SLOs and one vLLM GPU does not
    # (goodput measured offline: 3.0 against 1.9 req/s per GPU, docs/validation.md).
    assert _meets_p90_slo("distserve-13b-disagg", _chatbot(3 * 2.5), 250, 100)
    assert not _meets_p90_slo("distserve-13b-vllm", _chatbot(2.5), 250, 100)


def test_the_old_equal_gpu_pair_now_favours_disaggregation() -> None:
    # a100-13b-disagg (1P1D) against a100-13b-colocated (2 vLLM replicas), 2 GPUs each, at
    # DistServe's §2 SLOs (TTFT 0.4 s, TPOT 0.04 s): before issue 13 it gave 0.23x.
    assert _meets_p90_slo("a100-13b-disagg", _synthetic_512_64(2 * 4.5), 400, 40)
    assert not _meets_p90_slo("a100-13b-colocated", _synthetic_512_64(2 * 4.5), 400, 40)


def _p99_tbt_ms(preset: str, rate_per_s: float) -> float:
    """P99 of every inter-token gap (Sarathi-Serve's TBT), 300 requests, prompts ~1k tokens
    and answers ~245 tokens (lognormal, sigma 0.8)."""
    arrivals = _poisson_lognormal(rate_per_s, 300, 6.9, (5.5, 0.8), seed=3)
    records = simulate(CATALOG.deployment(preset), arrivals, catalog=CATALOG, keep_gaps=True)
    return _percentile([gap for r in records for gap in r.itl_ms], 0.99)


def test_sarathi_chunking_keeps_p99_tbt_where_vllm_stalls() -> None:
    # Sarathi-Serve (OSDI'24): chunked prefills give Mistral-7B on one A100 2.6x vLLM's
    # capacity; its capacity search (sarathi/benchmark/capacity_search/main.py) holds P99 TBT
    # under 0.2 s. At 6 req/s chunking keeps P99 TBT under 200 ms and vLLM's whole-prompt
    # prefills do not (capacities measured offline: 9.6 against 3.6 req/s, docs/validation.md).
    assert _p99_tbt_ms("sarathi-mistral-7b-a100", 6.0) < 200
    assert _p99_tbt_ms("sarathi-mistral-7b-a100-vllm", 6.0) > 200


def test_engine_simulate_shows_distserve_ahead_at_its_chatbot_slos(cli) -> None:
    # Issue 13's "done when": the command a user runs shows disaggregation ahead per GPU.
    import json

    result = cli(
        "engine",
        "simulate",
        "-p",
        "distserve-13b-disagg",
        "-p",
        "distserve-13b-vllm",
        "--dist",
        "lognormal",
        "--input-len",
        "512",
        "--output-len",
        "128",
        "--slo-ttft-ms",
        "250",
        "--slo-tpot-ms",
        "100",
        "--goodput",
        "-n",
        "300",
        "--json",
    )
    assert result.exit_code == 0, result.stderr
    configs = {c["preset"]: c for c in json.loads(result.stdout)["configurations"]}
    disagg, vllm = configs["distserve-13b-disagg"], configs["distserve-13b-vllm"]
    assert (disagg["chips"], vllm["chips"]) == (3, 1)
    assert disagg["goodput"]["per_chip"] > vllm["goodput"]["per_chip"]


# Prompt and output lengths of DistServe's released OPT-13B ShareGPT runs (quantiles of the 900
# requests in simdistserve/benchmarks/alignment/data-ground-truth/opt-13b-sharegpt/
# distserve-c21d11-900-9.exp; OPT-13B's context is 2048 tokens, so prompt + output <= 2048).
_QUANTILES = (0.0, 0.1, 0.25, 0.5, 0.75, 0.9, 0.99, 1.0)
_DISTSERVE_PROMPTS = (2, 88, 322, 668, 1153, 1526, 1904, 2003)
_DISTSERVE_OUTPUTS = (1, 9, 18, 76, 309, 491, 950, 1809)


def _from_quantiles(values: tuple[int, ...], u: float) -> float:
    import bisect

    i = min(bisect.bisect_right(_QUANTILES, u) - 1, len(_QUANTILES) - 2)
    share = (u - _QUANTILES[i]) / (_QUANTILES[i + 1] - _QUANTILES[i])
    return values[i] + share * (values[i + 1] - values[i])


def _distserve_sharegpt(rate_per_s: float, n: int, seed: int = 7) -> list[SimRequest]:
    import random

    rng, t, arrivals = random.Random(seed), 0.0, []
    for _ in range(n):
        t += rng.expovariate(rate_per_s) * 1000
        prompt = max(2, int(_from_quantiles(_DISTSERVE_PROMPTS, rng.random())))
        output = max(2, min(2048 - prompt, int(_from_quantiles(_DISTSERVE_OUTPUTS, rng.random()))))
        arrivals.append(SimRequest(t, prompt, output))
    return arrivals


def _attainment(preset: str, arrivals: list[SimRequest], ttft_ms: float, tpot_ms: float) -> float:
    """Share of requests whose own TTFT and TPOT both meet the SLO (DistServe's definition)."""
    records = list(simulate(CATALOG.deployment(preset), arrivals, catalog=CATALOG))
    return sum(r.ttft_ms <= ttft_ms and r.tpot_ms <= tpot_ms for r in records) / len(records)


def test_distserves_measured_runs_fall_on_the_same_side_of_90_percent() -> None:
    # DistServe's released measurements (OPT-13B, ShareGPT, A100, TTFT <= 0.25 s and TPOT <=
    # 0.1 s per request): its placement, 300 requests at 4.5 req/s (1.5 per GPU), attains 96.7%;
    # vLLM on one GPU, 100 requests at 1 req/s, attains 86.0%, under DistServe's 90% target.
    disagg = _attainment("distserve-13b-disagg", _distserve_sharegpt(4.5, 300), 250, 100)
    vllm = _attainment("distserve-13b-vllm", _distserve_sharegpt(1.0, 100), 250, 100)
    assert disagg >= 0.9 > vllm
