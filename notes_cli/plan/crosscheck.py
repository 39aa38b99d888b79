"""A second opinion on the planner's claims: NVIDIA's aiconfigurator, where it is installed.

Each claim shown (the top table) is posed to aiconfigurator as the same configuration: model,
chip, mode, parallelism per phase (TP, attention DP, expert parallelism), worker counts, ISL/OSL
(the workload's mean lengths) and the decode batch the claim runs at. That batch is Little's law
on the claim: sequences per decode node = its share of the capacity x (mean output - 1) x the
verified TPOT (colocated: x the verified TTFT + that), per attention-DP rank, at most the batch
limit. aiconfigurator's estimate comes back as tokens/s per GPU, TTFT and TPOT, and the
disagreement is the ratio pdnotes / aiconfigurator of each.

A ratio outside the band pdnotes' own model spans against measurement (docs/validation.md,
"Round six: validation part (half)", the model as is: the P10-P90 of the signed ratio
predicted / measured for the claim's class and mode) marks the claim uncertain: the two tools
then disagree by more than pdnotes is known to miss by. Tokens/s per GPU goes as 1 / TPOT at a
batch, so its band is the TPOT band inverted.

aiconfigurator is never imported here: it runs as a subprocess (aiconfigurator_estimate.py) of
the Python $PDNOTES_AICONFIGURATOR_PYTHON names, or of this one where it imports aiconfigurator
(the `pdnotes[aiconfigurator]` extra). `PDNOTES_AICONFIGURATOR_PYTHON=off` turns the check off.
"""

from __future__ import annotations

import importlib.util
import json
import math
import os
import resource
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from notes_cli.engine.core.profiles import Catalog
    from notes_cli.plan.planner import PlanReport
    from notes_cli.plan.rank import Scored

ENV = "PDNOTES_AICONFIGURATOR_PYTHON"
SCRIPT = Path(__file__).with_name("aiconfigurator_estimate.py")
TIMEOUT_S = 900.0  # aiconfigurator loads its databases once (~10 s), then ~1 s per estimate

# pdnotes' model rows and chips as aiconfigurator names them (its Hugging Face ids and systems).
AIC_MODELS = {
    "llama-3.1-8b": "meta-llama/Meta-Llama-3.1-8B",
    "llama-3.1-70b": "meta-llama/Meta-Llama-3.1-70B",
    "qwen3-8b": "Qwen/Qwen3-8B",
    "qwen3-32b": "Qwen/Qwen3-32B",
    "qwen3-30b-a3b": "Qwen/Qwen3-30B-A3B",
    "qwen3-235b-a22b": "Qwen/Qwen3-235B-A22B",
    "deepseek-v3": "deepseek-ai/DeepSeek-V3",
    "deepseek-r1": "deepseek-ai/DeepSeek-R1",
    "kimi-k2": "moonshotai/Kimi-K2-Instruct",
    "gpt-oss-120b": "openai/gpt-oss-120b",
}
AIC_SYSTEMS = {
    "a100-80g": "a100_sxm",
    "h100-sxm": "h100_sxm",
    "h200": "h200_sxm",
    "b200": "b200_sxm",
    "gb200": "gb200_sxm",
}

# P10-P90 of pdnotes' signed ratio predicted / measured, docs/validation.md "Round six:
# validation part (half), the frozen model as is" (the model the planner runs: no tuning; the
# split without twins; experts unbalanced without EPLB), by class and mode: (TTFT low, TTFT
# high, TPOT low, TPOT high). Dense disaggregated runs were not measured there: the all-runs
# row stands in.
BANDS: dict[tuple[str, str], tuple[float, float, float, float]] = {
    ("MoE", "agg"): (0.35, 1.88, 0.64, 1.22),
    ("MoE", "disagg"): (0.03, 0.69, 0.64, 2.01),
    ("dense bf16", "agg"): (0.19, 1.63, 0.68, 1.17),
    ("dense fp8", "agg"): (0.55, 4.31, 0.79, 1.13),
    ("all", "all"): (0.17, 2.11, 0.67, 1.28),
}
FP8 = ("fp8",)


@dataclass(frozen=True)
class Claim:
    """What pdnotes claims for one candidate, in aiconfigurator's units."""

    tokens_per_s_per_gpu: float
    ttft_ms: float
    tpot_ms: float


@dataclass(frozen=True)
class CrossCheck:
    """aiconfigurator's verdict on one claim: `reason` alone when it was not checked."""

    claim: Claim
    reason: str = ""  # why not checked
    estimate: Claim | None = None
    ratios: dict[str, float] | None = None  # pdnotes / aiconfigurator
    band_group: str = ""
    outside: tuple[str, ...] = ()  # the ratios outside their band, each said in words
    batch: int | None = None  # the decode batch per attention-DP rank posed
    source: str = ""  # "aiconfigurator 0.12.0 (trtllm 1.3.0rc20)"
    cpu_s: float = 0.0  # CPU time of the one aiconfigurator run that checked all the claims

    @property
    def checked(self) -> bool:
        return self.estimate is not None

    @property
    def uncertain(self) -> bool:
        return bool(self.outside)

    def summary(self) -> str:
        if not self.checked:
            return f"not checked: {self.reason}"
        assert self.ratios is not None
        ratios = ", ".join(f"{k} {v:.2f}x" for k, v in self.ratios.items())
        verdict = (
            "UNCERTAIN: " + "; ".join(self.outside)
            if self.outside
            else f"within the {self.band_group} spread"
        )
        return f"{self.source} at batch {self.batch}: pdnotes / it {ratios}; {verdict}"

    def to_json(self) -> dict[str, Any]:
        def figures(c: Claim | None) -> dict[str, float | None] | None:
            if c is None:
                return None
            return {
                "tokens_per_s_per_gpu": _round(c.tokens_per_s_per_gpu),
                "ttft_ms": _round(c.ttft_ms),
                "tpot_ms": _round(c.tpot_ms),
            }

        return {
            "checked": self.checked,
            "reason": self.reason or None,
            "source": self.source or None,
            "pdnotes": figures(self.claim),
            "aiconfigurator": figures(self.estimate),
            "ratios": {k: _round(v) for k, v in (self.ratios or {}).items()} or None,
            "band_group": self.band_group or None,
            "uncertain": self.uncertain,
            "why_uncertain": list(self.outside),
            "batch": self.batch,
            "cpu_s": round(self.cpu_s, 2),
        }


def _round(x: float) -> float | None:
    return None if math.isnan(x) else round(x, 3)


def checker_python() -> tuple[str | None, str]:
    """The Python that runs aiconfigurator: $PDNOTES_AICONFIGURATOR_PYTHON, else this one when
    aiconfigurator is installed beside pdnotes; or None and why not."""
    named = os.environ.get(ENV, "").strip()
    if named.lower() == "off":
        return None, f"turned off ({ENV}=off)"
    if named:
        return named, ""
    if importlib.util.find_spec("aiconfigurator") is not None:
        return sys.executable, ""
    return None, (
        "aiconfigurator is not installed (pip install 'pdnotes[aiconfigurator]', or name the "
        f"Python that has it in {ENV})"
    )


def band_group(model_experts: int, weight_dtype: str | None, mode: str) -> tuple[str, str]:
    kind = "MoE" if model_experts > 0 else ("dense fp8" if weight_dtype in FP8 else "dense bf16")
    phase = "disagg" if mode == "disagg" else "agg"
    return (kind, phase) if (kind, phase) in BANDS else ("all", "all")


def group_name(group: tuple[str, str]) -> str:
    return "all-runs" if group == ("all", "all") else " ".join(group)


def judge(
    claim: Claim, estimate: Claim, group: tuple[str, str]
) -> tuple[dict[str, float], tuple[str, ...]]:
    """The ratios pdnotes / aiconfigurator and those outside the group's band, in words."""
    ttft_low, ttft_high, tpot_low, tpot_high = BANDS[group]
    bands = {
        "tokens/s/GPU": (1 / tpot_high, 1 / tpot_low),
        "TTFT": (ttft_low, ttft_high),
        "TPOT": (tpot_low, tpot_high),
    }
    mine = {
        "tokens/s/GPU": claim.tokens_per_s_per_gpu,
        "TTFT": claim.ttft_ms,
        "TPOT": claim.tpot_ms,
    }
    theirs = {
        "tokens/s/GPU": estimate.tokens_per_s_per_gpu,
        "TTFT": estimate.ttft_ms,
        "TPOT": estimate.tpot_ms,
    }
    ratios: dict[str, float] = {}
    outside: list[str] = []
    for name, (low, high) in bands.items():
        if not (theirs[name] > 0 and mine[name] > 0):
            continue
        ratio = mine[name] / theirs[name]
        ratios[name] = ratio
        if not low <= ratio <= high:
            spread = f"{group_name(group)} spread {low:.2f}-{high:.2f}x"
            outside.append(f"{name} {ratio:.2f}x is outside the {spread}")
    return ratios, tuple(outside)


def claim_of(
    scored: Scored, mean_out: float, ttft_objective: float | None, tpot_objective: float | None
) -> Claim:
    """A claim's tokens/s per GPU (output tokens) and its verified TTFT and TPOT (the search's
    SLO percentile; the objective where the claim has no verification)."""
    result = scored.result
    point = result.verification
    latency = point.latency if point is not None else {}
    ttft = latency.get("ttft_ms", math.nan)
    tpot = latency.get("tpot_ms", math.nan)
    if math.isnan(ttft):
        ttft = ttft_objective or math.nan
    if math.isnan(tpot):
        tpot = tpot_objective or math.nan
    return Claim(result.capacity * mean_out / result.candidate.chips, ttft, tpot)


def pose(
    report: PlanReport, scored: Scored, catalog: Catalog, claim: Claim
) -> dict[str, Any] | str:
    """aiconfigurator's `cli_estimate` arguments for one claim, or why it cannot be posed."""
    request = report.request
    candidate = scored.result.candidate
    model = AIC_MODELS.get(request.model)
    if model is None:
        return f"aiconfigurator has no model for {request.model} here"
    chips = {g.chip for _, g in candidate.groups}
    if len(chips) > 1:
        return "aiconfigurator poses one chip kind per estimate; this candidate mixes " + ", ".join(
            sorted(chips)
        )
    (chip,) = chips
    system = AIC_SYSTEMS.get(chip)
    if system is None:
        return f"aiconfigurator has no system for the chip {chip}"
    shape = catalog.models[request.model]
    moe = shape.experts > 0
    mean_in, mean_out = request.workload.mean_lengths()
    kwargs: dict[str, Any] = {
        "model_path": model,
        "system_name": system,
        "isl": max(1, round(mean_in)),
        "osl": max(2, round(mean_out)),
    }
    weights = candidate.weight_dtype
    if weights is not None and weights != shape.weight_dtype:
        if weights not in FP8:
            return f"pdnotes poses {weights} weights; only fp8 is mapped to aiconfigurator"
        kwargs["gemm_quant_mode"] = "fp8"
        if moe:
            kwargs["moe_quant_mode"] = "fp8"
    if candidate.kv_dtype in FP8:
        kwargs["kvcache_quant_mode"] = "fp8"
    per_node = scored.result.capacity
    if math.isnan(claim.tpot_ms) or math.isnan(claim.ttft_ms):
        return "the claim has no verified TTFT and TPOT to size its batch by"
    tpot_s = claim.tpot_ms / 1000.0
    if candidate.mode == "disagg":
        p, d = candidate.group("prefill"), candidate.group("decode")
        assert p is not None and d is not None
        batch = per_node / d.count * max(1.0, mean_out - 1) * tpot_s / d.dp
        batch = max(1, min(candidate.max_batch // d.dp, round(batch)))
        kwargs.update(
            mode="disagg",
            tp_size=p.tp,
            prefill_tp_size=p.tp,
            prefill_batch_size=1,
            prefill_num_workers=p.count,
            decode_tp_size=d.tp,
            decode_batch_size=batch,
            decode_num_workers=d.count,
        )
        if moe:
            kwargs.update(_moe("prefill_", p.tp, p.dp, p.ep), **_moe("decode_", d.tp, d.dp, d.ep))
    else:
        g = candidate.group("colocated")
        assert g is not None
        life_s = claim.ttft_ms / 1000.0 + max(1.0, mean_out - 1) * tpot_s
        batch = max(1, min(candidate.max_batch // g.dp, round(per_node / g.count * life_s / g.dp)))
        kwargs.update(mode="agg", tp_size=g.tp, batch_size=batch)
        if candidate.mode == "chunked":
            kwargs["ctx_tokens"] = candidate.chunk_tokens
        if moe:
            kwargs.update(_moe("", g.tp, g.dp, g.ep))
    return kwargs


def _moe(prefix: str, tp: int, dp: int, ep: int) -> dict[str, int]:
    """pdnotes' tp x dp GPUs with experts over ep of them, in aiconfigurator's terms."""
    return {
        f"{prefix}attention_dp_size": dp,
        f"{prefix}moe_ep_size": ep,
        f"{prefix}moe_tp_size": max(1, tp * dp // ep),
    }


def run_checker(python: str, queries: list[dict[str, Any]]) -> dict[str, Any]:
    """aiconfigurator_estimate.py under `python`, bounded in time, killed with its process group
    on a timeout. Raises RuntimeError with the reason when it gives no answer."""
    try:
        child = subprocess.Popen(
            [python, str(SCRIPT)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
    except OSError as exc:
        raise RuntimeError(f"cannot run {python}: {exc.strerror or exc}") from exc
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    try:
        out, err = child.communicate(json.dumps({"queries": queries}), timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        os.killpg(child.pid, signal.SIGKILL)
        child.communicate()
        raise RuntimeError(f"aiconfigurator gave no answer within {TIMEOUT_S:g} s") from None
    if child.returncode != 0:
        last = (err.strip().splitlines() or [f"exit {child.returncode}"])[-1]
        raise RuntimeError(f"aiconfigurator failed under {python}: {last[:300]}")
    try:
        doc = json.loads(out)
        results = {r["id"]: r for r in doc["results"]}
    except (ValueError, KeyError, TypeError) as exc:
        raise RuntimeError(f"aiconfigurator's answer under {python} was not understood") from exc
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    return {"version": str(doc["version"]), "results": results, "cpu_s": cpu}


def crosscheck(report: PlanReport, catalog: Catalog) -> dict[str, CrossCheck]:
    """aiconfigurator's verdict on every claim shown (the top table), by candidate id."""
    request = report.request
    shown = report.ranking[: request.top]
    if not shown:
        return {}
    _, mean_out = request.workload.mean_lengths()
    claims = {
        s.candidate_id: claim_of(s, mean_out, request.slo.ttft_ms, request.slo.tpot_ms)
        for s in shown
    }
    python, why = checker_python()
    if python is None:
        return {cid: CrossCheck(claim, reason=why) for cid, claim in claims.items()}
    posed = {s.candidate_id: pose(report, s, catalog, claims[s.candidate_id]) for s in shown}
    queries = [{"id": cid, "kwargs": kw} for cid, kw in posed.items() if isinstance(kw, dict)]
    answers: dict[str, Any] = {}
    version = ""
    failure = ""
    cpu = 0.0
    if queries:
        try:
            done = run_checker(python, queries)
            answers, version, cpu = done["results"], done["version"], done["cpu_s"]
        except RuntimeError as exc:
            failure = str(exc)
    shape = catalog.models[request.model]
    checks = {}
    for s in shown:
        cid = s.candidate_id
        claim, kw = claims[cid], posed[cid]
        answer = answers.get(cid) if isinstance(kw, dict) else None
        if isinstance(kw, str) or answer is None or answer.get("error"):
            reason = (
                kw if isinstance(kw, str) else failure or (answer or {}).get("error") or "no answer"
            )
            checks[cid] = CrossCheck(claim, reason=str(reason))
            continue
        estimate = Claim(
            float(answer["tokens_per_s_per_gpu"]),
            float(answer["ttft_ms"]),
            float(answer["tpot_ms"]),
        )
        candidate = s.result.candidate
        group = band_group(
            shape.experts, candidate.weight_dtype or shape.weight_dtype, candidate.mode
        )
        ratios, outside = judge(claim, estimate, group)
        backend = f" ({answer['backend']})" if answer.get("backend") else ""
        checks[cid] = CrossCheck(
            claim,
            estimate=estimate,
            ratios=ratios,
            band_group=group_name(group),
            outside=outside,
            batch=answer.get("batch"),
            source=f"aiconfigurator {version}{backend}",
            cpu_s=cpu,
        )
    return checks
