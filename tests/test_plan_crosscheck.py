"""`engine plan`'s second opinion (issue 37, point 6): each claim shown is posed to aiconfigurator
as the same configuration, the disagreement shown as pdnotes / aiconfigurator ratios, and a claim
outside the validation's spread marked uncertain with the reason named.

aiconfigurator is an optional extra and heavy, so these tests run the real module boundary (a
subprocess of a Python, reading the configuration on stdin) against a stand-in package,
tests/fake_aiconfigurator, whose answers are computed from what it is asked. One test runs the
real aiconfigurator where it is installed."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from notes_cli.bench.workload import LengthSpec
from notes_cli.engine.core.profiles import NodeGroup, load_catalog
from notes_cli.plan.crosscheck import ENV, CrossCheck, crosscheck
from notes_cli.plan.evaluate import CandidateResult, LoadPoint
from notes_cli.plan.planner import PlanReport, PlanRequest
from notes_cli.plan.rank import Scored
from notes_cli.plan.slo import PlanSlo
from notes_cli.plan.space import Candidate, ChipOption, SearchSpace
from notes_cli.plan.workload import drawn
from tests.conftest import CliResult

FAKE = Path(__file__).with_name("fake_aiconfigurator")
ISL, OSL = 4000, 500


@pytest.fixture
def fake_aic(monkeypatch: pytest.MonkeyPatch) -> None:
    """This Python, with the stand-in aiconfigurator first on its path, as the checker."""
    monkeypatch.setenv(ENV, sys.executable)
    path = os.environ.get("PYTHONPATH", "")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(p for p in (str(FAKE), path) if p))


def report_of(
    model: str, chip: str, capacity: float, ttft_ms: float, tpot_ms: float, disagg: bool = True
) -> PlanReport:
    """A plan's report holding one verified claim: P 1 x TP2 + D 2 x TP2 (or 2 colocated TP2
    nodes), `capacity` req/s at the verified percentiles given."""
    if disagg:
        groups = (("prefill", NodeGroup(1, chip, 2)), ("decode", NodeGroup(2, chip, 2)))
    else:
        groups = (("colocated", NodeGroup(2, chip, 2)),)
    candidate = Candidate(0, "disagg" if disagg else "colocated", groups, max_batch=256)
    point = LoadPoint(capacity, True, 0.95, {"ttft_ms": ttft_ms, "tpot_ms": tpot_ms}, 900)
    result = CandidateResult(candidate, capacity, verification=point)
    request = PlanRequest(
        model=model,
        link="nvlink4",
        space=SearchSpace(chips=(ChipOption(chip),)),
        slo=PlanSlo(ttft_ms=1000.0, tpot_ms=50.0),
        workload=drawn(LengthSpec(ISL, OSL), 20, seed=0),
    )
    scored = Scored(result, capacity / candidate.chips, None)
    return PlanReport(request, (result,), (scored,), (), {}, 0.0)


def check_of(report: PlanReport) -> CrossCheck:
    (check,) = crosscheck(report, load_catalog(user=False)).values()
    return check


def fake_estimate(batch: int, disagg: bool = True) -> tuple[float, float, float]:
    """What the stand-in answers for report_of's shapes (its docstring's formulas)."""
    tpot = 5.0 + batch
    if disagg:  # 2 decode workers x batch, over 2 + 4 GPUs; prefill TP2
        return 2 * batch * 1000 / tpot / 6, ISL / 20, tpot
    return batch * 1000 / tpot / 2, ISL / 20, tpot


def test_a_claim_is_posed_as_the_same_configuration_and_shown_as_ratios(fake_aic: None) -> None:
    # 2 req/s on 6 GPUs, verified TTFT 400 ms / TPOT 16 ms: a decode node holds
    # 1 req/s x 499 tokens x 16 ms = 8 sequences (Little's law).
    check = check_of(report_of("qwen3-32b", "h200", 2.0, 400.0, 16.0))
    assert check.checked and check.batch == 8
    tokens, ttft, tpot = fake_estimate(8)
    assert check.estimate is not None
    assert check.estimate.tokens_per_s_per_gpu == pytest.approx(tokens)
    mine = 2.0 * OSL / 6
    assert check.claim.tokens_per_s_per_gpu == pytest.approx(mine)
    assert check.ratios == pytest.approx(
        {"tokens/s/GPU": mine / tokens, "TTFT": 400.0 / ttft, "TPOT": 16.0 / tpot}
    )
    # 0.81x, 2.0x, 1.23x: inside the dense disaggregated (all-runs) spread.
    assert not check.uncertain and check.band_group == "all-runs"
    assert "aiconfigurator 0.0.1 (fake 1.0) at batch 8" in check.summary()
    assert "within the all-runs spread" in check.summary()


def test_a_colocated_claim_sizes_its_batch_by_the_whole_request_lifetime(fake_aic: None) -> None:
    # per node 1 req/s x (0.4 s + 499 x 20 ms) = 10.4 sequences
    check = check_of(report_of("qwen3-32b", "h200", 2.0, 400.0, 20.0, disagg=False))
    assert check.batch == 10
    tokens, _, _ = fake_estimate(10, disagg=False)
    assert check.ratios is not None
    assert check.ratios["tokens/s/GPU"] == pytest.approx((2.0 * OSL / 4) / tokens)


def test_a_disagreement_beyond_the_validation_spread_is_uncertain_and_says_why(
    fake_aic: None,
) -> None:
    # TTFT 1000 ms against the stand-in's 200 ms: 5x, above the all-runs P90 of 2.11.
    check = check_of(report_of("qwen3-32b", "h200", 2.0, 1000.0, 16.0))
    assert check.uncertain
    assert check.outside == ("TTFT 5.00x is outside the all-runs spread 0.17-2.11x",)
    assert "UNCERTAIN: TTFT 5.00x" in check.summary()


def test_a_batch_aiconfigurator_finds_out_of_memory_is_halved(fake_aic: None) -> None:
    # 20 req/s: 10 req/s per decode node x 499 x 20 ms = 100 sequences, above the stand-in's 64
    check = check_of(report_of("qwen3-32b", "h200", 20.0, 500.0, 20.0))
    assert check.batch == 50


def test_what_aiconfigurator_cannot_pose_is_not_checked_with_its_reason(fake_aic: None) -> None:
    refused = check_of(report_of("qwen3-235b-a22b", "h200", 2.0, 500.0, 20.0))
    assert not refused.checked
    assert refused.summary() == (
        "not checked: model Qwen/Qwen3-235B-A22B is not supported on h200_sxm"
    )
    unmapped = check_of(report_of("qwen3-32b", "h800", 2.0, 500.0, 20.0))
    assert unmapped.summary() == "not checked: aiconfigurator has no system for the chip h800"


def test_without_aiconfigurator_every_claim_says_it_was_not_checked(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import importlib.util

    monkeypatch.delenv(ENV)
    if importlib.util.find_spec("aiconfigurator") is not None:
        pytest.skip("aiconfigurator is installed in this Python: it is then the checker")
    check = check_of(report_of("qwen3-32b", "h200", 2.0, 500.0, 20.0))
    assert check.summary().startswith("not checked: aiconfigurator is not installed")
    monkeypatch.setenv(ENV, str(FAKE / "no-such-python"))
    broken = check_of(report_of("qwen3-32b", "h200", 2.0, 500.0, 20.0))
    assert broken.summary().startswith("not checked: cannot run")


PLAN = (
    "engine", "plan", "--model", "qwen3-8b", "--chip", "h200", "--link", "nvlink4",
    "--max-chips", "2", "--max-instances", "1", "--max-tp", "1", "--modes", "disagg,colocated",
    "--input-len", "1024", "--output-len", "32", "-n", "40", "--window-s", "2",
    "--tolerance", "0.1", "--jobs", "1", "--slo-ttft-ms", "600", "--slo-tpot-ms", "40",
)  # fmt: skip


def test_engine_plan_shows_each_claims_checks_in_text_and_json(
    fake_aic: None, cli: Callable[..., CliResult]
) -> None:
    planned = cli(*PLAN, "--json")
    assert planned.exit_code == 0, planned.stderr
    doc = planned.json()
    checks = doc["best"]["checks"]
    assert checks["simulation"]["passed"] and checks["simulation"]["requests"] > 0
    second = checks["aiconfigurator"]
    assert second["checked"] and second["source"] == "aiconfigurator 0.0.1 (fake 1.0)"
    ours, theirs = second["pdnotes"], second["aiconfigurator"]
    for name, key in (("tokens/s/GPU", "tokens_per_s_per_gpu"), ("TTFT", "ttft_ms")):
        assert second["ratios"][name] == pytest.approx(ours[key] / theirs[key], rel=1e-2)
    assert theirs["ttft_ms"] == pytest.approx(1024 / 10)  # TP1 prefill of the 1024 tokens
    ranked = [c for c in doc["candidates"] if c["id"] in doc["ranking"]]
    assert all(c["checks"]["aiconfigurator"] is not None for c in ranked)
    text = cli(*PLAN)
    assert text.exit_code == 0, text.stderr
    words = " ".join(text.stdout.split())  # the terminal's width wraps lines
    assert "second opinion: aiconfigurator 0.0.1 (fake 1.0) at batch" in words
    # the same claim (deterministic for a seed), its ratio in the top table's column too
    ratio = f"{second['ratios']['tokens/s/GPU']:.2f}x"
    assert words.count(ratio) >= 2


AIC_PYTHON = Path(os.environ.get("AIC_PYTHON", "~/.venvs/aic/bin/python")).expanduser()


def test_the_real_aiconfigurator_checks_a_claim(monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib.util

    here = importlib.util.find_spec("aiconfigurator") is not None
    python = sys.executable if here else str(AIC_PYTHON)
    if not here and not AIC_PYTHON.exists():
        pytest.skip("aiconfigurator (the optional pdnotes[aiconfigurator] extra) is not installed")
    monkeypatch.setenv(ENV, python)
    check = check_of(report_of("qwen3-32b", "h200", 2.0, 500.0, 20.0))
    assert check.checked, check.reason
    assert check.source.startswith("aiconfigurator 0.12")
    assert check.estimate is not None and check.estimate.tokens_per_s_per_gpu > 0
