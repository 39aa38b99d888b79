"""The default search's two shortcuts (issue 37) leave the answer that of the exhaustive search:
a search probe stops on a miss its late warm-up presumes (slo.WarmupWatch), and a disaggregated
candidate is not probed at all where another one with the same decode group already missed the
TPOT objective at a rate no higher (planner._dominated). On a small question where both fire,
the best, the top table's capacities and the front are those of --no-prune, which takes
neither shortcut."""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

import pytest

from notes_cli.bench.workload import LengthSpec
from notes_cli.engine.core.profiles import NodeGroup, load_catalog
from notes_cli.plan.evaluate import CandidateResult, LoadPoint, Probe
from notes_cli.plan.planner import PlanReport, PlanRequest, _entered, _verified, plan
from notes_cli.plan.run_local import LocalExecutor
from notes_cli.plan.slo import PlanSlo
from notes_cli.plan.space import Candidate, ChipOption, SearchSpace
from notes_cli.plan.workload import drawn

TOP = 3


def request(prune: bool) -> PlanRequest:
    # Long outputs under a tight TPOT objective: decode binds, and a request lives long
    # enough that the warm-up's late requests finish well before the judged ones.
    return PlanRequest(
        model="qwen3-8b",
        link="roce-200g",
        space=SearchSpace(
            chips=(ChipOption("h800"),),
            modes=("disagg",),
            max_tp=2,
            max_chips=4,
            max_instances=3,  # one decode group behind several prefill groups
        ),
        slo=PlanSlo(ttft_ms=1000.0, tpot_ms=12.0),
        workload=drawn(LengthSpec(512, 512), 40, seed=1),
        window_s=2.0,
        seed=1,
        tolerance=0.1,
        prune=prune,
        top=TOP,
        front_size=TOP,
        wave=2,  # small waves, so that the entry probes and their shortcut run
    )


@pytest.fixture(scope="module")
def plans() -> tuple[PlanReport, PlanReport]:
    catalog = load_catalog()
    return (
        plan(request(True), catalog, LocalExecutor(1)),
        plan(request(False), catalog, LocalExecutor(1)),
    )


def test_both_shortcuts_fire_on_this_question(plans: tuple[PlanReport, PlanReport]) -> None:
    default, exhaustive = plans
    presumed = [
        p for r in default.results for p in r.probes if any("presumed" in b for b in p.binding)
    ]
    dominated = [r for r in default.results if r.pruned and "same decode group" in r.pruned]
    assert presumed and dominated
    assert default.simulated_requests < exhaustive.simulated_requests
    # --no-prune takes neither
    assert not any("presumed" in b for r in exhaustive.results for p in r.probes for b in p.binding)
    assert exhaustive.pruned["entry"] == 0


def test_the_shortcuts_keep_the_exhaustive_answer(plans: tuple[PlanReport, PlanReport]) -> None:
    default, exhaustive = plans

    def top(report: PlanReport) -> list[tuple[str, float, bool]]:
        return [
            (s.candidate_id, s.result.capacity, s.result.verified) for s in report.ranking[:TOP]
        ]

    assert top(default) == top(exhaustive)
    assert all(verified for _, _, verified in top(default))
    assert [p.candidate_id for p in default.front] == [p.candidate_id for p in exhaustive.front]


class _EveryProbeMisses:
    """An executor whose entry probes all miss the SLOs."""

    description = "fake"

    def map(self, tasks: list[Any], on_done: Any = None) -> list[Probe]:
        return [Probe(task[2], False, ("TPOT P90 > 12 ms",), 1) for task in tasks]


@pytest.mark.parametrize("counts", [(3, 4), (1, 1), (2, 5)])
def test_a_candidate_that_missed_its_entry_stays_out_until_the_threshold_loosens(
    counts: tuple[int, int],
) -> None:
    # A threshold whose entry rate for a 7-chip candidate, 9.534348562255822 x 7, divided back
    # by 7 rounds below it: the candidate came back as if the threshold had loosened.
    threshold = (-9.534348562255822,)
    prefill, decode = counts
    groups = (("prefill", NodeGroup(prefill, "h800")), ("decode", NodeGroup(decode, "h800")))
    candidate = Candidate(0, "disagg", groups, 256)
    results: dict[int, Any] = {}
    skipped: list[Any] = []
    task = ("capacity", candidate, 1.0)
    assert (
        _entered(request(True), _EveryProbeMisses(), [task], threshold, results, skipped, {}) == []
    )
    assert results[0].prune_kind == "entry"
    [(key, _, _)] = skipped
    assert not key <= threshold  # what planner._verified revives on
    assert key <= (-9.5,)  # a looser threshold revives it


class _Recorder(_EveryProbeMisses):
    """Entry probes miss; records every task it is given."""

    def __init__(self) -> None:
        self.tasks: list[Any] = []

    def map(self, tasks: list[Any], on_done: Any = None) -> list[Probe]:
        self.tasks += tasks
        return super().map(tasks)


def test_a_candidate_revived_by_a_looser_threshold_is_probed_there_before_a_search() -> None:
    # A lowered claim loosened the top table's threshold from 10 to 9 req/s per chip: a
    # candidate that missed its entry at 10 may now enter, and is probed at 9 first (as in
    # a wave) instead of being searched in full, which cost DeepSeek-R1's plan seven
    # searches of candidates that could not enter.
    def node(count: int) -> Candidate:
        return Candidate(count, "colocated", (("colocated", NodeGroup(count, "h800")),), 256)

    point = LoadPoint(1.0, True, 1.0, {})
    results = {
        c.index: CandidateResult(c, 9.0 * c.chips, verification=replace(point, rate=9.0 * c.chips))
        for c in map(node, range(1, 6))
    }
    revived = node(7)
    results[revived.index] = CandidateResult(revived, 0.0, "entry: missed", "entry")
    skipped = [((-10.0, math.inf), revived, 50.0)]
    executor = _Recorder()
    ranking = _verified(replace(request(True), top=5), executor, results, skipped, None)
    assert [t[0] for t in executor.tasks] == ["entry"]
    assert executor.tasks[0][2] == pytest.approx(9.0 * 7)
    assert results[revived.index].prune_kind == "entry"
    assert len(ranking) == 5
