"""The plan: enumerate, prune and evaluate every candidate, rank them, size and compare them.

Phases (each a batch of tasks for the executor, results in task order):
1. capacity: every candidate of the space is pruned by the roofline (prune.py) or searched by
   simulation (more replicas of a node after it, from its capacity: `_searched`). Survivors
   run best bound first, in waves of a fixed size; after each wave, a candidate whose
   capacity bound ranks it (rank.py: per chip or per price, or with a target rate by what
   carrying it costs) behind the `shown`-th best found so far is skipped, since it cannot
   enter what the report shows of the ranking (the top table, the front's candidates, the
   curves): branch and bound. Waves have a fixed size and run in a fixed order, so the
   result does not depend on the executor;
2. verify: the top `top` candidates are each simulated once more at their capacity, for
   VERIFY_FACTOR times longer than a probe (steady.py); a claim the verification refutes is
   searched again below it with verification-length probes, so the capacity reported is one a
   verification met (or none). The ranking is redone, candidates the bound skipped are searched
   if they could now enter the shown set, and the new top is verified, until every candidate
   of the top table is verified;
3. load: the best `front_size` candidates by score are sized to the reference load (the target
   rate, else the best candidate's capacity) and simulated there by a probe-length simulation
   each, for the chips-vs-latency front; every row the front prints is then verified there by
   a verification-length simulation (repeated until the front's rows are all verifications);
   a candidate missing the SLOs there is left off the front (and listed in the JSON);
4. curves (only with a plot): the top candidates' attainment at rates around their capacity.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Protocol

from notes_cli.engine.core.profiles import Catalog, Deployment
from notes_cli.plan import evaluate
from notes_cli.plan.evaluate import (
    DEFAULT_TOLERANCE,
    CandidateResult,
    LoadPoint,
    PlanContext,
)
from notes_cli.plan.prune import Screen, rate_hint
from notes_cli.plan.rank import (
    FrontPoint,
    RankKey,
    Scored,
    pareto_front,
    rank_key,
    ranked,
    replicas,
    total_text,
    why_behind,
)
from notes_cli.plan.slo import PlanSlo
from notes_cli.plan.space import Candidate, SearchSpace, enumerate_candidates
from notes_cli.plan.workload import PlanWorkload

if TYPE_CHECKING:
    from notes_cli.plan.crosscheck import CrossCheck

SCHEMA = "pdnotes.plan/1"
WAVE = 8  # candidates per branch-and-bound wave (a constant: results must not depend on cores)
Skipped = tuple[RankKey, Candidate, float]  # (the bound's rank key, candidate, start rate)
CURVE_FRACTIONS = (0.25, 0.5, 0.75, 0.9, 1.0, 1.1, 1.25, 1.5, 2.0)  # of each one's capacity


class Executor(Protocol):
    @property
    def description(self) -> str: ...

    def start(self, context: PlanContext) -> None: ...
    def map(
        self, tasks: list[tuple[Any, ...]], on_done: Callable[[int], None] | None = None
    ) -> list[Any]: ...
    def close(self, abort: bool = False) -> None: ...


@dataclass(frozen=True)
class PlanRequest:
    model: str
    link: str
    space: SearchSpace
    slo: PlanSlo
    workload: PlanWorkload
    target_rate: float | None = None
    seed: int = 0
    tolerance: float = DEFAULT_TOLERANCE
    window_s: float = 10.0
    prune: bool = True
    top: int = 5
    front_size: int = 24  # the best candidates by rank that are sized for the front
    exhaustive_front: bool = False  # the bound keeps every candidate that can enter them too
    wave: int = WAVE
    curves: int = 0  # how many of the top candidates get an attainment-vs-rate curve
    # Engine settings every candidate keeps (a calibrated deployment file's overheads, batch
    # policy, prefix-cache hit); None: the defaults.
    base: Deployment | None = None

    @property
    def prices(self) -> dict[str, float | None]:
        return {c.name: c.price for c in self.space.chips}

    @property
    def per_price(self) -> bool:
        return all(c.price is not None for c in self.space.chips)

    def key(self, candidate: Candidate, rate: float) -> RankKey:
        """The rank key of `candidate` at capacity `rate` (rank.py: by score, or with a target
        rate by what carrying it costs)."""
        return rank_key(candidate, rate, self.prices, self.target_rate)

    def entry_rate(self, candidate: Candidate, threshold: RankKey) -> float | None:
        """The lowest capacity at which `candidate` would rank no worse than `threshold`; None
        when none would (rank.py's key, solved for the rate)."""
        price = candidate.price_per_hour(self.prices) if self.prices else None
        unit = price if price is not None and price > 0 else candidate.chips
        if len(threshold) == 1:  # by score: rate / unit
            return -threshold[0] * unit
        assert self.target_rate is not None
        total, negative_score = threshold
        n = math.floor(total / unit + 1e-9)  # replicas it may need at most
        if n < 1:
            return None
        rate = self.target_rate / n
        if math.isclose(n * unit, total):  # as costly: the score decides
            rate = max(rate, -negative_score * unit)
        return rate

    def bound_reason(self, bound: RankKey, threshold: RankKey) -> str:
        """Why the bound skipped a candidate: the best it could reach against the threshold."""
        if len(bound) == 1:
            unit = "req/s per $/h" if self.per_price else "req/s per chip"
            return (
                f"bound: at most {-bound[0]:.3g} {unit}, below the top {self.shown}'s "
                f"{-threshold[0]:.3g}"
            )
        return (
            f"bound: at least {total_text(bound[0], self.per_price)} for the target rate, above "
            f"the top {self.shown}'s {total_text(threshold[0], self.per_price)}"
        )

    @property
    def shown(self) -> int:
        """How many of the best candidates the bound must keep exact: the top table and the
        curves; with `exhaustive_front` the front's candidates too (else the front is drawn
        from the best candidates the search simulated, which costs far less: in a space of 77
        candidates the 24 the front is drawn from are most of it)."""
        front = self.front_size if self.exhaustive_front else 0
        return max(self.top, front, self.curves)


@dataclass(frozen=True)
class PlanReport:
    request: PlanRequest
    results: tuple[CandidateResult, ...]
    ranking: tuple[Scored, ...]
    front: tuple[FrontPoint, ...]
    loads: dict[str, FrontPoint]  # every sized candidate's verification at the reference load
    reference_rate: float
    curves: dict[str, tuple[LoadPoint, ...]] = field(default_factory=dict)
    executor: str = ""
    wall_s: float = 0.0
    checks: dict[str, CrossCheck] = field(default_factory=dict)  # aiconfigurator's, by id

    @property
    def best(self) -> Scored | None:
        return self.ranking[0] if self.ranking else None

    @property
    def pruned(self) -> dict[str, int]:
        counts = {"memory": 0, "slo": 0, "bound": 0, "entry": 0}
        for r in self.results:
            if r.pruned:
                counts[r.prune_kind] = counts.get(r.prune_kind, 0) + 1
        return counts

    @property
    def front_missed(self) -> tuple[FrontPoint, ...]:
        """Sized candidates that missed the SLOs at the reference load (in their sizing or in
        their verification)."""
        return tuple(p for p in self.loads.values() if not p.load.met)

    @property
    def lowered(self) -> tuple[CandidateResult, ...]:
        """Candidates whose first claim a verification refuted."""
        return tuple(r for r in self.results if r.refuted is not None)

    @property
    def simulated_candidates(self) -> int:
        return sum(1 for r in self.results if not r.pruned)

    @property
    def simulated_requests(self) -> int:
        return sum(r.simulated_requests for r in self.results)

    @property
    def rank_by(self) -> str:
        """What the ranking orders by (rank.py)."""
        req = self.request
        if req.target_rate is None:
            return "req/s per $/h" if req.per_price else "req/s per chip"
        return f"{'$/h' if req.per_price else 'chips'} for the target rate"

    def replicas_needed(self) -> int | None:
        best = self.best
        if best is None or self.request.target_rate is None:
            return None
        return replicas(best.result.capacity, self.request.target_rate)

    def best_deployment(self) -> Deployment | None:
        """The winner as an engine Deployment (what a deployment file would hold)."""
        best = self.best
        if best is None:
            return None
        request = self.request
        return best.result.candidate.deployment(request.model, request.link, request.base)

    def runner_ups(self) -> list[tuple[Scored, str]]:
        best = self.best
        if best is None:
            return []
        top = self.ranking[1 : self.request.top]
        return [(s, why_behind(best, s, self.request.per_price)) for s in top]

    def to_json(self) -> dict[str, Any]:
        req = self.request
        best = self.best
        scores = {s.candidate_id: s for s in self.ranking}
        table = []
        for r in self.results:
            row = r.to_json()
            s = scores.get(r.candidate.id)
            row["score"] = round(s.score, 6) if s else 0.0
            row["price_per_hour"] = r.candidate.price_per_hour(req.prices)
            load = self.loads.get(r.candidate.id)
            row["at_reference"] = load.to_json() if load else None
            row["checks"] = self.checks_json(r) if s else None
            table.append(row)
        return {
            "schema": SCHEMA,
            "model": req.model,
            "link": req.link,
            "seed": req.seed,
            "slo": req.slo.to_json(),
            "slo_text": req.slo.describe(),
            "workload": req.workload.to_json(),
            "space": req.space.to_json(),
            "score": "req/s per $/h" if req.per_price else "req/s per chip",
            "rank_by": self.rank_by,
            "target_rate": req.target_rate,
            "reference_rate": round(self.reference_rate, 4),
            "counts": {
                "candidates": len(self.results),
                "pruned": self.pruned,
                "simulated": self.simulated_candidates,
                "with_capacity": len(self.ranking),
                "simulated_requests": self.simulated_requests,
                "verified": sum(1 for r in self.results if r.verification is not None),
                "refuted": len(self.lowered),
                "front_missed": len(self.front_missed),
            },
            "best": None
            if best is None
            else {
                "id": best.candidate_id,
                "label": best.result.candidate.label,
                "capacity_rps": round(best.result.capacity, 4),
                "score": round(best.score, 6),
                "replicas": self.replicas_needed(),
                "total_for_target": best.total,
                "binding": list(best.result.binding),
                "verified": best.result.verified,
                "verification": _json_or_none(best.result.verification),
                "refuted": _json_or_none(best.result.refuted),
                "checks": self.checks_json(best.result),
            },
            "ranking": [s.candidate_id for s in self.ranking],
            "runner_ups": [{"id": s.candidate_id, "why": why} for s, why in self.runner_ups()],
            "front": [p.to_json() for p in self.front],
            "front_missed": [p.to_json() for p in self.front_missed],
            "curves": {k: [p.to_json() for p in v] for k, v in self.curves.items()},
            "candidates": table,
            "executor": self.executor,
            "wall_s": round(self.wall_s, 3),
        }

    def checks_json(self, result: CandidateResult) -> dict[str, Any]:
        """The checks a claim passed: its own steady-state simulation (the verification) and
        aiconfigurator's estimate of the same configuration (crosscheck.py), where it ran."""
        point = result.verification
        check = self.checks.get(result.candidate.id)
        return {
            "simulation": {
                "checked": point is not None,
                "passed": result.verified,
                "requests": point.requests if point is not None else 0,
            },
            "aiconfigurator": check.to_json() if check is not None else None,
        }


def _json_or_none(point: LoadPoint | None) -> dict[str, Any] | None:
    return None if point is None else point.to_json()


ProgressFn = Callable[[str, int, int], None]  # (phase, done, total)


def plan(
    request: PlanRequest,
    catalog: Catalog,
    executor: Executor,
    on_progress: ProgressFn | None = None,
) -> PlanReport:
    """Run the whole plan on `executor`. Deterministic for the request's seed."""
    started = time.perf_counter()
    model = catalog.models[request.model]
    candidates = enumerate_candidates(request.space, model)
    context = PlanContext(
        catalog=catalog,
        model=request.model,
        link=request.link,
        slo=request.slo,
        workload=request.workload,
        seed=request.seed,
        tolerance=request.tolerance,
        window_s=request.window_s,
        base=request.base,
        presume=request.prune,
    )
    try:
        executor.start(context)
        found, skipped = _capacities(request, executor, candidates, on_progress)
        ranking = _verified(request, executor, found, skipped, on_progress)
        results = [found[c.index] for c in candidates]
        reference = request.target_rate or (ranking[0].result.capacity if ranking else 0.0)
        loads = _loads(executor, ranking[: request.front_size], reference, on_progress)
        curves = _curves(executor, ranking[: request.curves], on_progress)
    except BaseException:  # interrupted (Ctrl-C, SIGTERM) or failed: stop the workers now
        executor.close(abort=True)
        raise
    executor.close()
    return PlanReport(
        request=request,
        results=tuple(results),
        ranking=tuple(ranking),
        front=tuple(pareto_front([p for p in loads.values() if p.load.met])),
        loads=loads,
        reference_rate=reference,
        curves=curves,
        executor=executor.description,
        wall_s=time.perf_counter() - started,
    )


def _capacities(
    request: PlanRequest,
    executor: Executor,
    candidates: list[Candidate],
    on_progress: ProgressFn | None,
) -> tuple[dict[int, CandidateResult], list[Skipped]]:
    """Every candidate's result by index, and the candidates the bound skipped (with their
    bound's score and start rate, in case the verification lowers the scores above them)."""
    screen = Screen(evaluate.bounds(), request.slo, request.window_s)
    total = len(candidates)
    results: dict[int, CandidateResult] = {}
    queue: list[Skipped] = []
    for c in candidates:
        dep = c.deployment(request.model, request.link, request.base)
        verdict, bound = screen(c, dep)
        if verdict.reason is not None and (request.prune or verdict.kind == "memory"):
            results[c.index] = CandidateResult(c, 0.0, verdict.reason, verdict.kind)
            continue
        if verdict.reason is not None:  # --no-prune: simulate it anyway
            hint = rate_hint(c, dep, screen.bounds)
            bound, verdict = math.inf, replace(verdict, rate_hint=hint)
        queue.append((request.key(c, bound), c, verdict.rate_hint))
    queue.sort(key=lambda item: (item[0], item[1].index))
    best: list[RankKey] = []  # rank keys found so far, best first
    skipped: list[Skipped] = []
    tpot_misses: dict[tuple[Any, ...], tuple[float, str]] = {}  # decode_key -> (rate, by whom)

    def progress() -> None:
        if on_progress:
            on_progress("capacity", len(results), total)

    progress()
    for start in range(0, len(queue), request.wave):
        wave = queue[start : start + request.wave]
        shown = request.shown
        threshold = best[shown - 1] if request.prune and len(best) >= shown else None
        todo = []
        for item in wave:
            bound_key, c, hint = item
            if threshold is not None and bound_key > threshold:
                reason = request.bound_reason(bound_key, threshold)
                results[c.index] = CandidateResult(c, 0.0, reason, "bound")
                skipped.append(item)
            else:
                todo.append(("capacity", c, hint))
        if threshold is not None and todo:
            todo = _entered(request, executor, todo, threshold, results, skipped, tpot_misses)
        done_before = len(results)

        def wave_done(n: int, base: int = done_before) -> None:
            if on_progress:
                on_progress("capacity", base + n, total)

        for result in _searched(executor, todo, results, wave_done):
            if result.capacity > 0:
                best.append(request.key(result.candidate, result.capacity))
        best.sort()
        for r in results.values():
            _note_tpot_misses(r.candidate, r.probes, tpot_misses)
        progress()
    return results, skipped


def _searched(
    executor: Executor,
    tasks: list[tuple[Any, ...]],
    results: dict[int, CandidateResult],
    on_done: Callable[[int], None] | None = None,
) -> list[CandidateResult]:
    """Run ("capacity", candidate, start) tasks; each result goes into `results` too.

    A candidate that is another one scaled (the same nodes, every count k times: k replicas'
    worth) starts from k x the middle of that one's bracket, one grid point at a time
    (`_prior`, evaluate's "near" searches): k least-latency-routed copies carry about k times
    one's load, so where TPOT alone binds that one (`_scales`) two probes near the capacity
    settle it, where a search from the roofline estimate takes five to seven; where TTFT binds
    it the search is coarse, like any first one. A smaller sibling among the tasks is
    searched first and, when TPOT binds it, refined to the tolerance (its bracket is the
    start). On the grid the start changes a search's cost, never its answer, and the rounds
    depend on the tasks alone, so the plan is the same on every executor and with or without
    pruning. (Llama-3.1-8B's plan: 151,000 simulated requests -> 91,000;
    docs/benchmarks/planner.md.)"""
    batch = [t[1] for t in tasks]
    later = [t for t in tasks if any((t[1].scale_of(o) or 0) > 1 for o in batch)]
    first = [t for t in tasks if t not in later]
    led = sorted({o.index for t in later for o in batch if (t[1].scale_of(o) or 0) > 1})
    done = 0  # candidates searched, for `on_done` (a refinement is not one more)

    def run(todo: list[tuple[Any, ...]], counted: bool = True) -> None:
        nonlocal done
        before = done

        def progress(n: int) -> None:
            if on_done and counted:
                on_done(before + n)

        for result in executor.map(todo, progress) if todo else []:
            results[result.candidate.index] = result
        done += len(todo) if counted else 0

    def search(task: tuple[Any, ...]) -> tuple[Any, ...]:
        prior = _prior(task[1], results)
        return ("capacity", task[1], *(prior or (task[2], "coarse")))

    run([search(t) for t in first])
    leads = [results[i] for i in led if i in results]
    run([("refine", r.candidate, r) for r in leads if not r.settled and _scales(r)], False)
    run([search(t) for t in later])
    return [results[t[1].index] for t in tasks]


def _scales(result: CandidateResult) -> bool:
    """Whether k copies of `result`'s candidate carry about k times its load: TPOT alone
    binds it, and TPOT follows each node's batch, so the rate per node. TTFT queues pool
    across copies (more servers, less waiting at the same load), so a TTFT-bound capacity
    grows faster than k, by little at many arrivals per node within the TTFT objective,
    by much at few (DeepSeek-R1's chunked TP8 at 4,000-token prompts: 1.4 req/s on one
    node, 3.6 on two)."""
    binding = result.binding
    return bool(binding) and all(b.startswith("TPOT ") for b in binding)


def _prior(candidate: Candidate, results: dict[int, CandidateResult]) -> tuple[float, str] | None:
    """Where `candidate`'s search starts, and how it steps, from the candidate it scales by
    k (the nearest in size, then the first): k x the middle of that one's bracket (it met
    the SLOs at its capacity and missed them at the bracket's top). Both step one grid point
    at first; from a settled TPOT-bound one (`_scales`) the search goes on to the tolerance
    ("near"), else it stops at the coarse width like any first search ("near-coarse": k
    copies carry at least about k times, how much more the search finds). None when no such
    candidate has a capacity."""
    known = []
    for r in results.values():
        k = candidate.scale_of(r.candidate)
        if k is None or r.capacity <= 0 or r.capped:
            continue
        tops = [r.failed_rate, r.refuted.rate if r.refuted is not None else None]
        top = min((t for t in tops if t is not None), default=r.capacity)
        how = "near" if r.settled and _scales(r) else "near-coarse"
        known.append((abs(math.log(k)), r.candidate.index, k * (r.capacity + top) / 2, how))
    return min(known)[2:] if known else None


def decode_key(candidate: Candidate) -> tuple[Any, ...] | None:
    """What a disaggregated candidate's TPOT depends on: its decode group and the settings it
    decodes with (its prefill group only sets when requests reach decode). None: not disagg."""
    decode = candidate.group("decode")
    if candidate.mode != "disagg" or decode is None:
        return None
    c = candidate
    return (decode, c.max_batch, c.weight_dtype, c.kv_dtype, c.prefix_cache_hit)


def _note_tpot_misses(
    candidate: Candidate, probes: tuple[Any, ...], misses: dict[tuple[Any, ...], tuple[float, str]]
) -> None:
    """Record the lowest rate at which `candidate`'s decode group missed the TPOT objective."""
    key = decode_key(candidate)
    if key is None:
        return
    for p in probes:
        tpot = not p.met and any(b.startswith("TPOT ") for b in p.binding)
        if tpot and (key not in misses or p.rate < misses[key][0]):
            misses[key] = (p.rate, candidate.id)


def _dominated(
    request: PlanRequest,
    candidate: Candidate,
    rate: float,
    misses: dict[tuple[Any, ...], tuple[float, str]],
) -> str | None:
    """Why `candidate` cannot meet the SLOs at `rate`, known from another candidate: one with
    the same decode group (another prefill group) missed the TPOT objective at a rate no higher.
    A decode group sees the requests the prefill side hands it; a prefill side that hands them
    over sooner only leaves the decode batch as full or fuller, so its TPOT is no better at
    the same rate, and worse at a higher one. (--no-prune simulates it anyway.)"""
    key = decode_key(candidate)
    if not request.prune or key is None or key not in misses:
        return None
    missed_at, by = misses[key]
    if missed_at > rate:
        return None
    return (
        f"entry: {by}, with the same decode group, missed the TPOT objective at "
        f"{missed_at:.3g} req/s, at most the {rate:.3g} req/s it needed to rank with the top "
        f"{request.shown}"
    )


def _entered(
    request: PlanRequest,
    executor: Executor,
    todo: list[tuple[Any, ...]],
    threshold: RankKey,
    results: dict[int, CandidateResult],
    skipped: list[Skipped],
    tpot_misses: dict[tuple[Any, ...], tuple[float, str]],
) -> list[tuple[Any, ...]]:
    """The capacity tasks worth running: each candidate is first probed once at the lowest
    capacity that would rank it with the `shown` best so far (`entry_rate`). A probe that
    misses there means a capacity below it (the search's own assumption: meeting the SLOs
    only gets harder as the rate rises), so the candidate cannot enter and its search is
    skipped; a probe above the capacity mostly stops early, so this costs a fraction of a
    search. It is kept among the skipped, in case lowered claims make room later. A candidate
    whose decode group already missed the TPOT objective at a rate no higher than its entry
    rate is skipped without a probe (`_dominated`)."""
    out = []
    probing: list[tuple[tuple[Any, ...], float]] = []
    kept = []  # the tasks not dominated
    for task in todo:
        c, hint = task[1], task[2]
        rate = request.entry_rate(c, threshold)
        reason = None if rate is None else _dominated(request, c, rate, tpot_misses)
        if reason is None:
            kept.append(task)
            if rate is not None:
                probing.append((task, rate))
            continue
        assert rate is not None
        results[c.index] = CandidateResult(c, 0.0, reason, "entry")
        skipped.append(((*threshold, math.inf), c, hint))
    todo = kept
    probes = executor.map([("entry", task[1], rate) for task, rate in probing])
    missed = {task[1].index: (rate, p) for (task, rate), p in zip(probing, probes, strict=True)}
    missed = {i: v for i, v in missed.items() if not v[1].met}
    for task in todo:
        c, hint = task[1], task[2]
        if c.index not in missed:
            out.append(task)
            continue
        rate, probe = missed[c.index]
        why = "; ".join(probe.binding) or "SLOs missed"
        reason = (
            f"entry: missed the SLOs at {rate:.3g} req/s, the least it needed to rank with the "
            f"top {request.shown} ({why})"
        )
        results[c.index] = CandidateResult(c, 0.0, reason, "entry", probes=(probe,))
        # Its capacity is below `rate`, the least that ranks no worse than `threshold`, so it
        # ranks worse than the threshold: (inf,) after it makes an equal threshold not revive
        # it, a looser one does. The threshold itself, not the key recomputed at `rate`:
        # that one can round below it (9.534348562255822 x 7 / 7 = 9.534348562255824), which
        # revived seven candidates at once in a plan whose threshold never moved.
        skipped.append(((*threshold, math.inf), c, hint))
    return out


def _verified(
    request: PlanRequest,
    executor: Executor,
    results: dict[int, CandidateResult],
    skipped: list[Skipped],
    on_progress: ProgressFn | None,
) -> list[Scored]:
    """The ranking once every candidate of the top table is verified (phase 2 above);
    `results` is updated in place. Each round verifies new entries or searches skipped
    candidates, each at most once, so it ends."""
    while True:
        ranking = ranked([results[i] for i in sorted(results)], request.prices, request.target_rate)
        shown = request.shown
        threshold = ranking[shown - 1].key if len(ranking) >= shown else (math.inf, math.inf)
        revived = [item for item in skipped if item[0] <= threshold]
        if revived:  # a lowered claim made room above candidates the bound skipped
            skipped[:] = [item for item in skipped if item[0] > threshold]
            tasks: list[tuple[Any, ...]] = [("capacity", c, hint) for _, c, hint in revived]
            if len(ranking) >= shown:  # each probed at the new threshold first, as in a wave
                tasks = _entered(request, executor, tasks, threshold, results, skipped, {})
            _searched(executor, tasks, results, _progress(on_progress, "capacity", len(tasks)))
            continue
        # A coarse capacity is below the true one, which is below its lowest failed rate:
        # search on every candidate that could enter the shown set at that rate.
        unsettled = [
            r
            for r in (results[i] for i in sorted(results))
            if not r.settled
            and (not request.prune or request.key(r.candidate, _upper(r)) <= threshold)
        ]
        if unsettled:
            tasks = [("refine", r.candidate, r) for r in unsettled]
            for result in _phase(executor, "refine", tasks, on_progress):
                results[result.candidate.index] = result
            continue
        todo = [s.result for s in ranking[: request.top] if s.result.verification is None]
        if not todo:
            return ranking
        tasks = [("load", r.candidate, r.capacity) for r in todo]
        points: list[LoadPoint] = _phase(executor, "verify", tasks, on_progress)
        refuted = []
        for r, point in zip(todo, points, strict=True):
            if point.met:
                results[r.candidate.index] = replace(r, verification=point)
            else:
                refuted.append((r, point))
        if not refuted:
            continue
        tasks = [("lower", r.candidate, r.capacity) for r, _ in refuted]
        for (r, point), low in zip(
            refuted, _phase(executor, "lower", tasks, on_progress), strict=True
        ):
            results[r.candidate.index] = replace(low, probes=r.probes + low.probes, refuted=point)


def _upper(result: CandidateResult) -> float:
    """Above any capacity `result`'s search can still reach."""
    return result.failed_rate or math.inf


def _phase(
    executor: Executor, name: str, tasks: list[tuple[Any, ...]], on_progress: ProgressFn | None
) -> list[Any]:
    done = _progress(on_progress, name, len(tasks))
    return executor.map(tasks, done) if tasks else []


def _progress(on_progress: ProgressFn | None, name: str, total: int) -> Callable[[int], None]:
    """Report phase `name` started, and a callback for its tasks done."""
    if on_progress:
        on_progress(name, 0, total)

    def done(n: int) -> None:
        if on_progress:
            on_progress(name, n, total)

    return done


def _loads(
    executor: Executor, ranking: list[Scored], reference: float, on_progress: ProgressFn | None
) -> dict[str, FrontPoint]:
    """Each candidate of `ranking` sized to the reference load and simulated there. Only the
    rows the front prints are claims: every candidate is sized by a probe-length simulation,
    the front is drawn from those, and each of its rows is simulated again at verification
    length, its point replaced by that one; a row the verification moves (or makes miss) can
    change the front, so this repeats until every row of the front is a verification."""
    if reference <= 0:
        return {}
    sized = {s.candidate_id: (s.result, replicas(s.result.capacity, reference)) for s in ranking}
    # A candidate sized to one replica at its own capacity was verified there already.
    verified = {
        cid: r.verification
        for cid, (r, n) in sized.items()
        if r.verification is not None and r.verification.rate == reference / n
    }

    def row(cid: str, point: LoadPoint) -> FrontPoint:
        r, n = sized[cid]
        return FrontPoint(cid, r.candidate.label, n, n * r.candidate.chips, point)

    todo = [cid for cid in sized if cid not in verified]
    tasks: list[tuple[Any, ...]] = [
        ("size", sized[c][0].candidate, reference / sized[c][1]) for c in todo
    ]
    points = {
        c: row(c, p)
        for c, p in zip(todo, _phase(executor, "front", tasks, on_progress), strict=True)
    }
    points.update({c: row(c, p) for c, p in verified.items() if p is not None})
    while True:
        front = pareto_front([p for p in points.values() if p.load.met])
        todo = [p.candidate_id for p in front if p.candidate_id not in verified]
        if not todo:
            return {cid: points[cid] for cid in sized}
        tasks = [("load", sized[c][0].candidate, reference / sized[c][1]) for c in todo]
        for cid, point in zip(
            todo, _phase(executor, "verify-front", tasks, on_progress), strict=True
        ):
            verified[cid] = point
            points[cid] = row(cid, point)


def _curves(
    executor: Executor, top: list[Scored], on_progress: ProgressFn | None
) -> dict[str, tuple[LoadPoint, ...]]:
    tasks: list[tuple[Any, ...]] = [
        ("sweep", s.result.candidate, tuple(s.result.capacity * f for f in CURVE_FRACTIONS))
        for s in top
    ]
    sweeps = _phase(executor, "curves", tasks, on_progress) if tasks else []
    return {s.candidate_id: sweep for s, sweep in zip(top, sweeps, strict=True)}


def candidate_by_id(report: PlanReport, candidate_id: str) -> Candidate:
    return next(r.candidate for r in report.results if r.candidate.id == candidate_id)
