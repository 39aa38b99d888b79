"""One candidate's capacity, by simulation: the highest rate at which it meets the SLOs.

The search runs on a grid of rates whose neighbours are the tolerance apart
(bench.goodput.grid_search: bracket by stepping up or down from a start rate, then bisect to
neighbouring points), started at the roofline estimate of prune.py or near a capacity the plan
already knows (planner._searched). On the grid the answer does not depend on the start (given
that meeting the SLOs only gets harder as the rate rises), so where a search starts changes its
cost, never the plan. Every probe replays the plan's fixed request lengths at that rate with
arrivals from the plan's seed, long enough to reach steady state: a warm-up, then a judged part
spanning several request lifetimes (steady.py). A candidate's result depends only on the plan,
never on which process or machine ran it. A probe stops as soon as its verdict is certain to
be "misses" (slo.Judge), which makes overloaded probes cheap without changing any result; a
search probe (not a verification) also stops once its late warm-up presumes a miss
(slo.WarmupWatch), unless the plan is exhaustive (`presume` off: --no-prune).

A verification is one such simulation, VERIFY_FACTOR times longer, at the rate a report claims;
a refuted claim is searched again below it with verification-length probes (`lowered`).

Workers keep per-process state (`install`): the catalog and the roofline caches are built once
per process and shared by every candidate it evaluates.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from typing import Any, cast

from notes_cli.bench.goodput import grid_index, grid_rate, grid_search
from notes_cli.engine.core.profiles import Catalog, Deployment
from notes_cli.engine.core.simcore import SimRequest, simulate
from notes_cli.plan.prune import Bounds
from notes_cli.plan.slo import Judge, PlanSlo, WarmupWatch
from notes_cli.plan.space import Candidate
from notes_cli.plan.steady import VERIFY_FACTOR, ProbeShape, probe_shape
from notes_cli.plan.workload import PlanWorkload

DEFAULT_TOLERANCE = 0.05
DEFAULT_MAX_PROBES = 16
COARSE_WIDTH = 3  # a first search stops at 3 grid steps (14% at the 5% tolerance); only
# candidates that can still enter what the report shows are searched on to one (planner.py).
# 3, not 4 (measured as 3x against 4x the tolerance, before the grid): the closer first
# capacities tighten the bound's threshold, so fewer candidates are searched (Llama-3.1-8B's
# plan 10.7 -> 9.3 s of CPU, the article's case 22.0 -> 18.3 s, issue 37's four questions
# within the noise, every best the same; 2 searched more on two of them;
# docs/benchmarks/planner.md)


@dataclass(frozen=True)
class PlanContext:
    """Everything a worker needs besides the candidate; sent once per worker process."""

    catalog: Catalog
    model: str
    link: str
    slo: PlanSlo
    workload: PlanWorkload
    seed: int = 0
    tolerance: float = DEFAULT_TOLERANCE
    max_probes: int = DEFAULT_MAX_PROBES
    window_s: float = 10.0  # a probe's judged arrivals span at least this long (steady.py)
    base: Deployment | None = None  # engine settings every candidate keeps (PlanRequest.base)
    presume: bool = True  # search probes may stop on a presumed miss (slo.WarmupWatch)

    @property
    def key(self) -> tuple[Any, ...]:
        """Identifies the plan a worker's cached state belongs to: everything a probe's result
        depends on (a process that plans twice must not keep the first plan's settings)."""
        return (
            self.model, self.link, self.slo, self.seed, hash(self.workload.pairs),
            self.tolerance, self.max_probes, self.window_s, self.base, self.presume,
        )  # fmt: skip


@dataclass(frozen=True)
class Probe:
    rate: float
    met: bool
    binding: tuple[str, ...]
    simulated: int  # requests simulated before the verdict was certain (warm-up included)
    warmup: int = 0  # arrivals simulated first and not judged (steady.ProbeShape)
    measured: int = 0  # arrivals judged

    def to_json(self) -> dict[str, Any]:
        return {
            "rate": round(self.rate, 4),
            "met": self.met,
            "binding": list(self.binding),
            "simulated": self.simulated,
            "warmup": self.warmup,
            "measured": self.measured,
        }


@dataclass(frozen=True)
class LoadPoint:
    """A full simulation of one candidate at one rate: its judged part's verdict."""

    rate: float
    met: bool
    attainment: float  # share of requests meeting every objective
    latency: dict[str, float]  # the judged percentiles: ttft_ms, tpot_ms, tbt_ms
    requests: int = 0  # requests judged (after the warm-up)
    binding: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        def num(x: float) -> float | None:
            return None if math.isnan(x) else round(x, 3)

        return {
            "rate": round(self.rate, 4),
            "met": self.met,
            "attainment": num(self.attainment),
            "requests": self.requests,
            **{k: num(v) for k, v in self.latency.items()},
            "binding": list(self.binding),
        }


@dataclass(frozen=True)
class CandidateResult:
    candidate: Candidate
    capacity: float  # req/s for one instance; 0 when pruned or when no rate met the SLOs
    pruned: str | None = None  # why it was not simulated
    prune_kind: str = ""
    probes: tuple[Probe, ...] = ()
    capped: bool = False
    repeat: int = 1  # the passing probe at `capacity` judged the lengths this many times over
    verification: LoadPoint | None = None  # the longer simulation at `capacity`, once verified
    refuted: LoadPoint | None = None  # the verification that refuted an earlier, higher claim
    settled: bool = True  # False: a coarse search's capacity, below the true one (`refine`)

    @property
    def failed_rate(self) -> float | None:
        """The lowest rate a probe of the search failed at: the capacity is below it."""
        failed = [p.rate for p in self.probes if not p.met]
        return min(failed) if failed else None

    @property
    def simulated_requests(self) -> int:
        return sum(p.simulated for p in self.probes)

    @property
    def verified(self) -> bool:
        return self.verification is not None and self.verification.met

    @property
    def binding(self) -> tuple[str, ...]:
        """What stops it going faster: the misses at the lowest rate that failed."""
        if self.pruned:
            return (self.pruned,)
        failed = [p for p in self.probes if not p.met]
        if not failed:
            return ()
        return min(failed, key=lambda p: p.rate).binding

    def to_json(self) -> dict[str, Any]:
        return {
            **self.candidate.to_json(),
            "capacity_rps": round(self.capacity, 4),
            "capped": self.capped,
            "settled": self.settled,
            "repeat": None if self.pruned else self.repeat,
            "pruned": self.pruned,
            "prune_kind": self.prune_kind or None,
            "binding": list(self.binding),
            "verification": None if self.verification is None else self.verification.to_json(),
            "refuted": None if self.refuted is None else self.refuted.to_json(),
            "probes": [p.to_json() for p in self.probes],
        }


# ---- per-process state -------------------------------------------------------------------
_STATE: dict[str, Any] = {}


def install(context: PlanContext) -> None:
    """Make `context` this process's plan (a pool initializer; cheap when already installed)."""
    if _STATE.get("key") == context.key:
        return
    model = context.catalog.models[context.model]
    cache = Bounds(context.catalog, model, context.link, context.workload, context.seed)
    _STATE.update(key=context.key, context=context, bounds=cache)


def bounds() -> Bounds:
    """This process's roofline caches (after `install`)."""
    cached: Bounds = _STATE["bounds"]
    return cached


def run_task(task: tuple[Any, ...]) -> Any:
    """Evaluate one task in this process's plan: ("capacity", candidate, start_rate[, how]):
    its search, "coarse" (the default), or from a start expected near the capacity, stepping
    one grid point at first, to the tolerance ("near") or coarsely ("near-coarse"),
    ("refine", candidate, coarse_result): its bisection finished, ("entry", candidate, rate): one
    probe (the Probe), ("load", candidate, rate): a
    verification-length simulation, ("size", candidate, rate): a
    probe-length one, ("lower", candidate, refuted_rate): the capacity searched again with
    verification-length probes below a refuted claim, or ("sweep", candidate, rates)."""
    context: PlanContext = _STATE["context"]
    kind, candidate = task[0], task[1]
    if kind == "capacity":
        how = task[3] if len(task) > 3 else "coarse"
        coarse = how in ("coarse", "near-coarse")
        step = None if how == "coarse" else 1
        return capacity(context, candidate, task[2], coarse=coarse, step=step)
    if kind == "refine":
        return refine(context, task[2])
    if kind == "entry":
        probes: list[Probe] = []
        _prober(context, candidate, 1, probes, {})(task[2])
        return probes[0]
    if kind == "load":
        return load_point(context, candidate, task[2], VERIFY_FACTOR)
    if kind == "size":
        return load_point(context, candidate, task[2])
    if kind == "lower":
        return lowered(context, candidate, task[2])
    if kind == "sweep":
        return tuple(load_point(context, candidate, rate) for rate in task[2])
    raise ValueError(f"unknown plan task {kind!r}")


# ---- the evaluation ------------------------------------------------------------------------
def capacity(
    context: PlanContext,
    candidate: Candidate,
    start_rate: float,
    *,
    coarse: bool = False,
    step: int | None = None,
) -> CandidateResult:
    """Search the highest rate at which `candidate` meets the SLOs, from `start_rate`, on the
    grid of rates whose neighbours are the tolerance apart (bench.goodput.grid_search: the
    answer does not depend on the start); every probe runs to steady state
    (steady.probe_shape). `coarse` stops the bisection at COARSE_WIDTH grid steps (`refine`
    finishes it where the plan needs it); `step` is the bracket's first step in grid points
    (None: a doubling)."""
    probes: list[Probe] = []
    passed: dict[float, tuple[LoadPoint, int]] = {}
    meets = _on_grid(context, _prober(context, candidate, 1, probes, passed))
    tolerance = context.tolerance
    low, high = grid_search(
        meets,
        grid_index(start_rate, tolerance),
        tolerance=tolerance,
        width=COARSE_WIDTH if coarse else 1,
        step=step,
        max_probes=context.max_probes,
    )
    return _result(context, candidate, low, high, probes, passed)


def refine(context: PlanContext, result: CandidateResult) -> CandidateResult:
    """Finish a coarse search's bisection to the plan's tolerance. The probes are those the
    search to that tolerance would have run after the coarse ones (bisection halves the same
    bracket either way), so the result is exactly that search's."""
    if result.settled:
        return result
    assert result.failed_rate is not None
    probes = list(result.probes)
    passed: dict[float, tuple[LoadPoint, int]] = {}
    meets = _on_grid(context, _prober(context, result.candidate, 1, probes, passed))
    tolerance = context.tolerance
    low = grid_index(result.capacity, tolerance)
    high = grid_index(result.failed_rate, tolerance)
    found, top = grid_search(
        meets, low, tolerance=tolerance, low=low, high=high,
        max_probes=context.max_probes - len(result.probes),
    )  # fmt: skip
    refined = _result(context, result.candidate, found, top, probes, passed)
    repeat = refined.repeat if refined.capacity in passed else result.repeat
    return replace(refined, repeat=repeat, capped=result.capped)


def lowered(context: PlanContext, candidate: Candidate, refuted_rate: float) -> CandidateResult:
    """The capacity below a claim its verification refuted, searched on the grid with
    verification-length probes, so that the rate found is verified by its own probe. The
    refuted rate is the top of the bracket from the start; the first probe is the grid point
    below it, which settles the search when it passes: refutations are mostly by a few
    percent (a queue growing too slowly for the shorter probe to see). Otherwise the search
    steps down faster and faster and bisects back up to the tolerance. (It started 10% below
    the claim and bisected towards a bracket above the claim: three verification-length
    probes where one does, a tenth of the Llama-3.1-8B plan's CPU;
    docs/benchmarks/planner.md.)"""
    probes: list[Probe] = []
    passed: dict[float, tuple[LoadPoint, int]] = {}
    meets = _on_grid(context, _prober(context, candidate, VERIFY_FACTOR, probes, passed))
    top = grid_index(refuted_rate, context.tolerance)
    low, high = grid_search(
        meets, top - 1, tolerance=context.tolerance, step=1, high=top,
        max_probes=context.max_probes,
    )  # fmt: skip
    found = _result(context, candidate, low, high, probes, passed)
    return replace(found, verification=passed.get(found.capacity, (None, 1))[0], settled=True)


def _on_grid(context: PlanContext, meets: Callable[[float], bool]) -> Callable[[int], bool]:
    return lambda n: meets(grid_rate(n, context.tolerance))


def _result(
    context: PlanContext,
    candidate: Candidate,
    low: int | None,
    high: int | None,
    probes: list[Probe],
    passed: dict[float, tuple[LoadPoint, int]],
) -> CandidateResult:
    """A search's result from its bracket on the grid: capacity 0 when no rate met the SLOs,
    capped when none missed them."""
    tolerance = context.tolerance
    rate = grid_rate(low, tolerance) if low is not None else 0.0
    _, repeat = passed.get(rate, (None, 1))
    settled = low is None or high is None or high - low <= 1 or len(probes) >= context.max_probes
    return CandidateResult(
        candidate, rate, probes=tuple(probes), capped=high is None and low is not None,
        repeat=repeat, settled=settled,
    )  # fmt: skip


def _prober(
    context: PlanContext,
    candidate: Candidate,
    factor: int,
    probes: list[Probe],
    passed: dict[float, tuple[LoadPoint, int]],
) -> Callable[[float], bool]:
    """`meets(rate)` for the capacity search: one steady-state probe (`factor` x a probe's
    length: VERIFY_FACTOR makes it a verification), recorded in `probes` (and, when it passes,
    its point and repeat in `passed`)."""

    def meets(rate: float) -> bool:
        shape = _shape(context, candidate, rate, factor)
        presume = context.presume and factor == 1  # a verification-length probe: never
        judge, simulated, presumed = _run(
            context, candidate, shape, early_stop=True, presume=presume
        )
        stopped = judge.completed < shape.measured
        met = not stopped and judge.meets()
        binding = () if met else (judge.certain_misses() if stopped else judge.binding())
        binding = presumed or binding
        probes.append(Probe(rate, met, binding, simulated, shape.warmup, shape.measured))
        if met:
            passed[rate] = (_point(judge, rate, shape.measured), shape.repeat)
        return met

    return meets


def load_point(
    context: PlanContext, candidate: Candidate, rate: float, factor: int = 1
) -> LoadPoint:
    """Latency and attainment of `candidate` at `rate`, every judged request simulated."""
    shape = _shape(context, candidate, rate, factor)
    judge, _, _ = _run(context, candidate, shape, early_stop=False)
    return _point(judge, rate, shape.measured)


def _point(judge: Judge, rate: float, requests: int) -> LoadPoint:
    return LoadPoint(
        rate, judge.meets(), judge.attainment(), judge.latency(), requests, judge.binding()
    )


def _shape(context: PlanContext, candidate: Candidate, rate: float, factor: int) -> ProbeShape:
    dep = candidate.deployment(context.model, context.link, context.base)
    return probe_shape(candidate, dep, bounds(), context.slo, rate, context.window_s, factor)


def _run(
    context: PlanContext,
    candidate: Candidate,
    shape: ProbeShape,
    *,
    early_stop: bool,
    presume: bool = False,
) -> tuple[Judge, int, tuple[str, ...]]:
    """Simulate `shape` and judge its measured part: stops once every measured request has
    finished (the tail only keeps the load on until then) or, with `early_stop`, once the
    verdict is certain to be "misses", or with `presume` too, once the late warm-up presumes
    a miss (the objectives presumed missed are returned, else ())."""
    deployment = candidate.deployment(context.model, context.link, context.base)
    judge = Judge(context.slo, shape.measured)
    watch = WarmupWatch(context.slo, shape.warmup) if presume else None
    items = context.workload.steady_items(
        shape.rate, context.seed, shape.warmup, shape.repeat, shape.tail
    )
    simulated = 0
    # WorkItem has SimRequest's fields under the same names (as engine_simulator passes it).
    requests = cast("Iterable[SimRequest]", items)
    for record in simulate(deployment, requests, seed=context.seed, catalog=context.catalog):
        simulated += 1
        index = int(record.request_id)  # simcore numbers arrivals from 0
        if watch is not None and index < shape.warmup:
            watch.add(index, record)
            if presumed := watch.presumed_misses():
                return judge, simulated, presumed
        if not shape.judged(index):
            continue
        judge.add(record)
        if judge.completed >= shape.measured:
            break
        if early_stop and judge.certainly_fails():
            break
    return judge, simulated, ()
