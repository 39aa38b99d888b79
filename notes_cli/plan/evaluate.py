"""One candidate's capacity, by simulation: the highest rate at which it meets the SLOs.

The search is the simulator's goodput search (bench.goodput: bracket by doubling or halving from
a start rate, then bisect to a relative tolerance), started at the roofline estimate of
prune.py. Every probe replays the plan's fixed request lengths at that rate with arrivals from
the plan's seed, long enough to reach steady state: a warm-up, then a judged part spanning
several request lifetimes (steady.py). A candidate's result depends only on the plan, never on
which process or machine ran it. A probe stops as soon as its verdict is certain to be "misses"
(slo.Judge), which makes overloaded probes cheap without changing any result; a search probe
(not a verification) also stops once its late warm-up presumes a miss (slo.WarmupWatch), unless
the plan is exhaustive (`presume` off: --no-prune).

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

from notes_cli.bench.goodput import MIN_RATE, search_goodput
from notes_cli.engine.core.profiles import Catalog, Deployment
from notes_cli.engine.core.simcore import SimRequest, simulate
from notes_cli.plan.prune import Bounds
from notes_cli.plan.slo import Judge, PlanSlo, WarmupWatch
from notes_cli.plan.space import Candidate
from notes_cli.plan.steady import VERIFY_FACTOR, ProbeShape, probe_shape
from notes_cli.plan.workload import PlanWorkload

DEFAULT_TOLERANCE = 0.05
DEFAULT_MAX_PROBES = 16
COARSE_FACTOR = 3  # a first search stops at 3x the tolerance; only candidates that can still
# enter what the report shows are searched on to the tolerance (planner.py). 3, not 4: the
# closer first capacities tighten the bound's threshold, so fewer candidates are searched
# (Llama-3.1-8B's plan 10.7 -> 9.3 s of CPU, the article's case 22.0 -> 18.3 s, issue 37's
# four questions within the noise, every best the same; 2 searched more on two of them;
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
    """Evaluate one task in this process's plan: ("capacity", candidate, start_rate),
    ("refine", candidate, coarse_result): its bisection finished, ("entry", candidate, rate): one
    probe (the Probe), ("load", candidate, rate): a
    verification-length simulation, ("size", candidate, rate): a
    probe-length one, ("lower", candidate, refuted_rate): the capacity searched again with
    verification-length probes below a refuted claim, or ("sweep", candidate, rates)."""
    context: PlanContext = _STATE["context"]
    kind, candidate = task[0], task[1]
    if kind == "capacity":
        return capacity(context, candidate, task[2], coarse=True)
    if kind == "refine":
        return refine(context, task[2])
    if kind == "entry":
        probes: list[Probe] = []
        _prober(context, candidate, 1, math.inf, probes, {})(task[2])
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
    factor: int = 1,
    ceiling: float = math.inf,
    coarse: bool = False,
) -> CandidateResult:
    """Search the highest rate below `ceiling` at which `candidate` meets the SLOs, from
    `start_rate`; every probe runs to steady state (steady.probe_shape; `factor` lengthens
    it, VERIFY_FACTOR making each passing probe a verification). `coarse` stops the bisection
    at COARSE_FACTOR x the tolerance (`refine` finishes it where the plan needs it)."""
    probes: list[Probe] = []
    passed: dict[float, tuple[LoadPoint, int]] = {}
    meets = _prober(context, candidate, factor, ceiling, probes, passed)
    tolerance = context.tolerance * (COARSE_FACTOR if coarse else 1)
    found = search_goodput(
        meets,
        chips=candidate.chips,
        start_rate=start_rate,
        tolerance=tolerance,
        max_probes=context.max_probes,
    )
    point, repeat = passed.get(found.rate, (None, 1))
    high = found.failed_rate
    settled = (
        found.rate <= 0
        or found.capped
        or high is None
        or (high - found.rate) / high <= context.tolerance
    )
    return CandidateResult(
        candidate,
        found.rate,
        probes=tuple(probes),
        capped=found.capped,
        repeat=repeat,
        verification=point if factor >= VERIFY_FACTOR else None,
        settled=settled or len(probes) >= context.max_probes,
    )


def refine(context: PlanContext, result: CandidateResult) -> CandidateResult:
    """Finish a coarse search's bisection to the plan's tolerance. The probes are those the
    search to that tolerance would have run after the coarse ones (bisection halves the same
    bracket either way), so the result is exactly that search's."""
    if result.settled:
        return result
    probes = list(result.probes)
    passed: dict[float, tuple[LoadPoint, int]] = {}
    meets = _prober(context, result.candidate, 1, math.inf, probes, passed)
    assert result.failed_rate is not None
    low = _bisect(meets, result.capacity, result.failed_rate, context.tolerance, probes, context)
    repeat = passed[low][1] if low in passed else result.repeat
    return replace(result, capacity=low, probes=tuple(probes), repeat=repeat, settled=True)


def _prober(
    context: PlanContext,
    candidate: Candidate,
    factor: int,
    ceiling: float,
    probes: list[Probe],
    passed: dict[float, tuple[LoadPoint, int]],
) -> Callable[[float], bool]:
    """`meets(rate)` for the goodput search: one steady-state probe, recorded in `probes`
    (and, when it passes, its point and repeat in `passed`)."""

    def meets(rate: float) -> bool:
        if rate >= ceiling:  # refuted there already: not simulated again
            return False
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


def _bisect(
    meets: Callable[[float], bool],
    low: float,
    high: float,
    tolerance: float,
    probes: list[Probe],
    context: PlanContext,
) -> float:
    """Halve [low, high] (low met the SLOs, high did not) until it is within `tolerance` of its
    top or the plan's probes are spent; the highest rate found meeting them."""
    while (high - low) / high > tolerance and len(probes) < context.max_probes:
        middle = (low + high) / 2
        if meets(middle):
            low = middle
        else:
            high = middle
    return low


def lowered(context: PlanContext, candidate: Candidate, refuted_rate: float) -> CandidateResult:
    """The capacity below a claim its verification refuted, searched with verification-length
    probes, so that the rate found is verified by its own probe. The refuted rate is the top
    of the bracket from the start. The first probe sits one tolerance below it, which settles
    the search when it passes: refutations are mostly by a few percent (a queue growing too
    slowly for the shorter probe to see). Otherwise the search halves until a probe passes and
    bisects back up to the tolerance. (It started 10% below the claim and bisected towards a
    bracket above the claim: three verification-length probes where one does, a tenth of the
    Llama-3.1-8B plan's CPU; docs/benchmarks/planner.md.)"""
    probes: list[Probe] = []
    passed: dict[float, tuple[LoadPoint, int]] = {}
    meets = _prober(context, candidate, VERIFY_FACTOR, math.inf, probes, passed)
    low, high = 0.0, refuted_rate
    rate = refuted_rate * (1.0 - context.tolerance)
    while len(probes) < context.max_probes and rate >= MIN_RATE:
        if meets(rate):
            low = rate
            break
        high, rate = rate, rate / 2
    if low > 0:  # the first probe's bracket is the tolerance itself, up to rounding
        low = _bisect(meets, low, high, context.tolerance * (1 + 1e-9), probes, context)
    point, repeat = passed.get(low, (None, 1))
    return CandidateResult(
        candidate, low, probes=tuple(probes), repeat=repeat, verification=point, settled=True
    )


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
