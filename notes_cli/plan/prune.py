"""Roofline bounds: rule candidates out before simulating them, and guess where to start.

Every simulated time is at least its roofline time alone on an idle deployment: a request's
TTFT is at least the fixed overhead + its prompt's prefill alone (+ its KV transfer alone on an
idle link, in disagg mode), and each of its inter-token gaps at least one decode step of batch
1 over its own context. (Batching, queueing, chunking and link sharing only add time: every
step cost is increasing in tokens, context and KV read, and a prompt split into chunks pays
the weights and launch overhead once per chunk.) So the SLOs are judged on these per-request
lower bounds with the very judge a probe uses; if even the bounds miss, every simulation would
miss at every rate and the candidate is dropped ("pruned"). Because quantiles and attainment
only get worse when every value grows, pruning never drops a candidate that could meet the
SLOs (tests/test_plan_search.py compares against the exhaustive search).

A candidate is also dropped when a node cannot hold the model's weights beside the KV of the
workload's largest request: the simulator would run it anyway (an empty node admits anything
so that it cannot deadlock), but no real engine could.

`capacity_bound` is a rate no simulation of the candidate can pass above (work conservation,
below), which lets the planner skip candidates that cannot reach the top of the ranking
(branch and bound).
"""

from __future__ import annotations

import bisect
import itertools
import math
import sys
from dataclasses import dataclass
from typing import NamedTuple

from notes_cli.bench.stats import DEFAULT_RELATIVE_ERROR
from notes_cli.engine.core.costmodel import (
    NodeCost,
    kv_bytes,
    kv_streams,
    layerwise_split_ms,
    transfer_ms,
)
from notes_cli.engine.core.profiles import Catalog, Deployment, ModelShape, NodeGroup
from notes_cli.plan.slo import Judge, PlanSlo
from notes_cli.plan.space import Candidate
from notes_cli.plan.steady import probe_shape
from notes_cli.plan.workload import PlanWorkload


class BoundRecord(NamedTuple):
    """A request's best case, shaped like a simulator record for the judge."""

    ttft_ms: float
    tpot_ms: float
    e2e_ms: float
    output_tokens: int
    max_itl_ms: float
    itl_sum_ms: float
    itl_count: int


@dataclass(frozen=True)
class Verdict:
    """None reason: keep the candidate. `rate_hint` is where the capacity search starts."""

    reason: str | None
    kind: str = ""  # "memory" | "slo" when pruned
    rate_hint: float = 1.0
    repeat: int = 1


class Bounds:
    """Per-process cache of roofline times for one plan's model, link and workload: each
    (chip, tp) pair's per-request prefill and decode-step bounds are computed once and shared
    by every candidate using that node shape."""

    def __init__(
        self, catalog: Catalog, model: ModelShape, link: str, workload: PlanWorkload, seed: int
    ):
        self.catalog, self.model, self.workload, self.seed = catalog, model, workload, seed
        self.link = catalog.links[link]
        self._prefill: dict[tuple[object, ...], list[float]] = {}
        self._decode: dict[tuple[object, ...], list[float]] = {}
        self._costs: dict[tuple[object, ...], NodeCost] = {}
        self.max_input = max(p[0] for p in workload.pairs)
        self.max_need = max(p[0] + p[1] for p in workload.pairs)
        self.min_need = min(p[0] + p[1] for p in workload.pairs)
        self._work_sorted: dict[tuple[object, ...], tuple[list[float], list[float]]] = {}
        # Decode tokens (output - 1) of the requests, smallest first, as prefix sums.
        self.decode_tokens_prefix = _prefix(sorted(p[1] - 1 for p in workload.pairs))
        self.max_decode_tokens = max(p[1] - 1 for p in workload.pairs)
        endless = workload.items(1.0, seed, repeat=sys.maxsize)  # lazy: drawn as far as asked
        self._arrival_stream = (item.arrival_ms for item in endless)
        self._replay_ends: list[float] = []  # the last arrival of 1, 2, ... replays
        self._decode_values = sorted(p[1] - 1 for p in workload.pairs)

    def last_arrival_ms(self, repeat: int) -> float:
        """When the last of `repeat` x the requests arrives at 1 req/s. The arrival times are
        one increasing stream, read once as far as asked, keeping each replay's last arrival
        only (the bounds ask for every repeat up to _MAX_REPEAT; replaying the stream for each
        cost 3 % of a plan's CPU)."""
        ends = self._replay_ends
        while len(ends) < repeat:
            replay = itertools.islice(self._arrival_stream, self.workload.requests)
            ends.append(max(replay, default=ends[-1] if ends else 0.0))
        return ends[repeat - 1] if repeat > 0 else 0.0

    def smallest_prefill_ms(self, cost: NodeCost, m: int, repeat: int) -> float:
        """Compute time (weights' GEMMs and causal attention, no overhead) of the m smallest
        prefills among `repeat` copies of the requests on `cost`'s node: batching and chunking
        never do less work than this."""
        key = (cost,)
        if key not in self._work_sorted:
            values = sorted(cost.prefill_compute_ms(n) for n, _ in self.workload.pairs)
            self._work_sorted[key] = (values, _prefix(values))
        values, prefix = self._work_sorted[key]
        return _smallest(prefix, values, m, repeat)

    def decode_cutoffs(self) -> list[tuple[int, int]]:
        """(L, how many requests have more than L decode tokens) for L at the deciles of
        the requests' decode tokens."""
        values = self._decode_values
        n = len(values)
        out: list[tuple[int, int]] = []
        for k in range(5, 11):
            index = min(n - 1, max(0, math.ceil(k / 10 * n) - 1))
            longest = values[index]
            longer = n - bisect.bisect_right(values, longest)
            if not out or out[-1][0] != longest:
                out.append((longest, longer))
        return out

    def smallest_decode_tokens(self, m: int, repeat: int) -> float:
        return _smallest(self.decode_tokens_prefix, self._decode_values, m, repeat)

    def cost(self, group: NodeGroup, dep: Deployment) -> NodeCost:
        key = _shape_key(group, dep)
        cost = self._costs.get(key)
        if cost is None:
            chip = self.catalog.chips[group.chip]
            cost = NodeCost.for_group(self.model, chip, group, dep)
            self._costs[key] = cost
        return cost

    def prefill_ms(self, group: NodeGroup, dep: Deployment) -> list[float]:
        key = _shape_key(group, dep)
        times = self._prefill.get(key)
        if times is None:
            cost = self.cost(group, dep)
            times = [cost.prefill_time_ms(n_in) for n_in, _ in self.workload.pairs]
            self._prefill[key] = times
        return times

    def step_ms(self, group: NodeGroup, dep: Deployment) -> list[float]:
        """Batch-1 decode step over each request's prompt plus its first token."""
        key = _shape_key(group, dep)
        times = self._decode.get(key)
        if times is None:
            cost = self.cost(group, dep)
            times = [cost.decode_step_ms(1, n_in + 1) for n_in, _ in self.workload.pairs]
            self._decode[key] = times
        return times

    def transfer_ms(self, dep: Deployment, prefill: NodeGroup, decode: NodeGroup) -> list[float]:
        streams = kv_streams(prefill, decode, self.model, self.link.nics)
        out = []
        prefill_times = self.prefill_ms(prefill, dep)
        for (n_in, _), p_ms in zip(self.workload.pairs, prefill_times, strict=True):
            nbytes = kv_bytes(self.model, n_in, dep.kv_dtype)
            if dep.layerwise_transfer:
                visible, _ = layerwise_split_ms(self.link, nbytes, streams, self.model.layers, p_ms)
                out.append(self.link.alpha_ms + visible)
            else:
                out.append(transfer_ms(self.link, nbytes, streams))
        return out


def check(candidate: Candidate, dep: Deployment, bounds: Bounds, slo: PlanSlo) -> Verdict:
    """Whether `candidate` can possibly meet `slo`, and a starting rate for its search."""
    memory = _memory_problem(candidate, dep, bounds)
    if memory:
        return Verdict(memory, "memory")
    pairs = bounds.workload.pairs
    first = candidate.group("prefill") or candidate.group("colocated")
    last = candidate.group("decode") or candidate.group("colocated")
    assert first is not None and last is not None
    prefill = bounds.prefill_ms(first, dep)
    steps = bounds.step_ms(last, dep)
    transfers = (
        bounds.transfer_ms(dep, first, last) if candidate.mode == "disagg" else [0.0] * len(pairs)
    )
    judge = Judge(slo, len(pairs))
    overhead = dep.overhead_ms
    for (_, n_out), p_ms, t_ms, step in zip(pairs, prefill, transfers, steps, strict=True):
        ttft = overhead + p_ms + t_ms
        gaps = n_out - 1
        judge.add(BoundRecord(ttft, step, ttft + gaps * step, n_out, step, gaps * step, gaps))
    # certainly_fails, not binding(): its counting rule still holds when a probe replays the
    # lengths several times (prune.py's docstring), so the verdict is valid at every rate.
    if judge.certainly_fails():
        return Verdict("even alone on idle nodes: " + "; ".join(judge.certain_misses()), "slo")
    return Verdict(None)


def _memory_problem(candidate: Candidate, dep: Deployment, bounds: Bounds) -> str | None:
    for role, group in candidate.groups:
        cost = bounds.cost(group, dep)
        capacity = cost.kv_capacity_tokens(dep.gpu_memory_utilization)
        need = bounds.max_input if role == "prefill" else bounds.max_need
        shape = f"{role} {group.chip} " + "-".join(
            f"{k}{v}"
            for k, v in (("tp", group.tp), ("dp", group.dp), ("ep", group.ep))
            if k == "tp" or v > 1
        )
        if capacity <= 0:
            return f"{shape}: the weights do not fit in HBM"
        if capacity < need:
            return f"{shape}: KV room for {capacity:,} tokens, the largest request needs {need:,}"
    return None


def rate_hint(candidate: Candidate, dep: Deployment, bounds: Bounds) -> float:
    """A roofline estimate of the capacity (req/s): each pool's throughput with a full batch.
    Only where the search starts; it brackets from here."""
    first = candidate.group("prefill") or candidate.group("colocated")
    last = candidate.group("decode") or candidate.group("colocated")
    assert first is not None and last is not None
    prefill = bounds.prefill_ms(first, dep)
    n = len(prefill)
    mean_in, mean_out = bounds.workload.mean_lengths()
    mean_prefill_s = sum(prefill) / n / 1000.0
    cost = bounds.cost(last, dep)
    room = cost.kv_capacity_tokens(dep.gpu_memory_utilization)
    batch = max(1, min(dep.max_batch, int(room / max(1.0, mean_in + mean_out))))
    step_s = cost.decode_step_ms(batch, batch * (mean_in + mean_out / 2)) / 1000.0
    decode_s = mean_out * step_s / batch  # decode time per request at a full batch
    if candidate.mode == "disagg":
        p, d = candidate.group("prefill"), candidate.group("decode")
        assert p is not None and d is not None
        return max(1e-3, min(p.count / mean_prefill_s, d.count / decode_s))
    return max(1e-3, last.count / (mean_prefill_s + decode_s))


def _smallest(prefix: list[float], values: list[float] | list[int], m: int, repeat: int) -> float:
    """Sum of the m smallest of `values` (sorted) each taken `repeat` times."""
    whole, part = divmod(m, repeat)
    total = repeat * prefix[whole]
    if part:
        total += part * values[whole]
    return total


def _prefix(values: list[float] | list[int]) -> list[float]:
    out = [0.0]
    for v in values:
        out.append(out[-1] + v)
    return out


_MAX_REPEAT = 200  # replays a search bound looks at, at most (far beyond any probe's)
_BOUND_MARGIN = 1.01  # float rounding in arrival times scaled by 1 / rate


def capacity_bound(
    candidate: Candidate, dep: Deployment, bounds: Bounds, slo: PlanSlo, repeat: int = 1
) -> float:
    """A rate (req/s) above which no probe of `candidate` can meet `slo` (math.inf if none).

    Arrivals at rate r are the seed's arrivals at 1 req/s divided by r, so the last one comes
    at A / r. A passing probe has at least m requests within the TTFT objective S (percentile
    mode: all but fewer than the quantile's limit, allowing for histogram rounding; attainment
    mode: the target share), and each of those finished its prefill by A / r + S. The prefill
    nodes do at least the FLOPs of the m smallest prompts in that time:
        W_m <= P * (A / r + S) * FLOP/ms   =>   r <= P * A / (W_m / (FLOP/ms) - P * S).
    Likewise the requests meeting both TTFT and TPOT (at least m_ttft + m_tpot - n of them)
    decode all their tokens by A / r + S + (longest output) * TPOT, at most `tau` tokens per ms
    per decode node: a step of B sequences costs at least max(weights read, B x per-token
    FLOPs) + the step overhead, with B limited by max_batch and by KV room. Both bounds hold
    separately; the smaller is returned. In colocated and chunked modes the same nodes do both,
    so their sum must fit too."""
    n = bounds.workload.requests * repeat
    alpha = DEFAULT_RELATIVE_ERROR
    if slo.ttft_ms is None:
        return math.inf
    ttft = slo.ttft_ms / (1 - alpha)
    if slo.attainment is not None:
        m_ttft = m_both = math.ceil(slo.attainment * n - 1e-9)
    else:
        limit = n - math.floor(slo.percentile * (n - 1))
        m_ttft = n - limit + 1
        m_tpot = n - limit + 1 if slo.tpot_ms is not None else n
        m_both = max(0, m_ttft + m_tpot - n)
    a = bounds.last_arrival_ms(repeat)
    first = candidate.group("prefill") or candidate.group("colocated")
    last = candidate.group("decode") or candidate.group("colocated")
    assert first is not None and last is not None
    best = math.inf
    work_ms = bounds.smallest_prefill_ms(bounds.cost(first, dep), m_ttft, repeat)
    if work_ms > first.count * ttft:
        best = first.count * a / (work_ms - first.count * ttft)
    if slo.tpot_ms is not None and m_both > 0:
        tpot = slo.tpot_ms / (1 - alpha)
        rate = last.count * _tokens_per_ms(last, dep, bounds)
        # Of the requests meeting both, those with at most `longest` decode tokens finish by
        # A / r + S + longest x TPOT: try a few cut-offs and keep the tightest bound.
        for longest, longer in bounds.decode_cutoffs():
            m = m_both - longer * repeat
            if m <= 0:
                continue
            tokens = bounds.smallest_decode_tokens(m, repeat)
            window = ttft + longest * tpot
            if tokens > rate * window:
                best = min(best, rate * a / (tokens - rate * window))
            if candidate.mode != "disagg":
                # One node does both: by that time it also finished those prefills. A
                # colocated node runs separate steps (each decode token costs >= 1 / tau); a
                # chunked step shares its weight reads, so a decode token costs its FLOPs only.
                per_token = (
                    1 / _tokens_per_ms(last, dep, bounds)
                    if candidate.mode == "colocated"
                    else bounds.cost(last, dep).linear_ms_per_token()
                )
                busy = work_ms + tokens * per_token
                if busy > last.count * window:
                    best = min(best, last.count * a / (busy - last.count * window))
    # `a` is in ms at 1 req/s, so a / r is the last arrival in ms at r req/s: r is in req/s.
    return best * _BOUND_MARGIN


def _tokens_per_ms(group: NodeGroup, dep: Deployment, bounds: Bounds) -> float:
    cost = bounds.cost(group, dep)
    per_token_ms = cost.linear_ms_per_token()
    overhead = min(cost.decode_overhead_ms, cost.eager_overhead_ms)
    room = cost.kv_capacity_tokens(dep.gpu_memory_utilization) // max(1, bounds.min_need)
    batch = max(1, min(dep.max_batch, room))
    return batch / (max(cost.weights_read_ms(batch), batch * per_token_ms) + overhead)


class Screen:
    """The driver's pass over the candidates before any simulation: memory and SLO pruning
    (cached per node shape: they do not depend on node counts or batch limits), the start rate
    and the capacity bound of each survivor."""

    def __init__(self, bounds: Bounds, slo: PlanSlo, window_s: float) -> None:
        self.bounds, self.slo, self.window_s = bounds, slo, window_s
        self._checked: dict[tuple[object, ...], Verdict] = {}

    def __call__(self, candidate: Candidate, dep: Deployment) -> tuple[Verdict, float]:
        """(verdict, capacity bound in req/s). A kept verdict carries the start rate of the
        search and how many times its probes replay the lengths (`repeat`)."""
        # Memory and best-case latency depend on the node shapes only, not on node counts
        # or the batch limit.
        shape = tuple((role, g.chip, g.tp, g.pp, g.ep, g.dp) for role, g in candidate.groups)
        key = (candidate.mode, shape, dep.overhead_ms)
        verdict = self._checked.get(key)
        if verdict is None:
            verdict = self._checked[key] = check(candidate, dep, self.bounds, self.slo)
        if verdict.reason is not None:
            return verdict, 0.0
        hint = rate_hint(candidate, dep, self.bounds)
        bound = self.search_bound(candidate, dep)
        hint = min(hint, bound)
        probe = probe_shape(candidate, dep, self.bounds, self.slo, hint, self.window_s)
        return Verdict(None, rate_hint=hint, repeat=probe.repeat), bound

    def search_bound(self, candidate: Candidate, dep: Deployment) -> float:
        """A rate no probe of the search can pass above. A probe at rate r judges the lengths
        replayed R(r) times (steady.probe_shape, R growing with r) and cannot pass above
        f(R) = capacity_bound(..., R); so no probe passes above the largest r <= f(R(r)),
        found by bisection (f falls as R grows: more requests leave less slack)."""
        bounds, slo, window = self.bounds, self.slo, self.window_s
        cached: dict[int, float] = {}

        def f(repeat: int) -> float:
            if repeat not in cached:
                cached[repeat] = capacity_bound(candidate, dep, bounds, slo, repeat)
            return cached[repeat]

        def feasible(rate: float) -> bool:
            probe = probe_shape(candidate, dep, bounds, slo, rate, window)
            return rate <= f(min(probe.repeat, _MAX_REPEAT))

        high = f(1)
        if not math.isfinite(high) or feasible(high):
            return high
        low = 0.0
        for _ in range(40):
            middle = (low + high) / 2
            if feasible(middle):
                low = middle
            else:
                high = middle
            if high - low <= 1e-3 * high:
                break
        return high


def _shape_key(group: NodeGroup, dep: Deployment) -> tuple[object, ...]:
    """What a node's step times depend on (not its count)."""
    return (
        group.chip,
        group.tp,
        group.pp,
        group.ep,
        group.dp,
        dep.decode_exec,
        dep.tp_efficiency,
        dep.weight_dtype,
        dep.kv_dtype,
    )
