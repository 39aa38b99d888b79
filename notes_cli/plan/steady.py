"""How long a planner simulation runs at a rate: long enough to reach steady state.

A probe that sends its requests into an empty deployment within a few seconds measures an
idle start, not the load: at 80 req/s, 300 requests arrive in 4 s while each of them lives
20 s (1,024 output tokens at 20 ms), so none of them ever waits behind a full batch. The
length of a probe therefore follows from the probed rate r and the requests' lifetime L there:

    L(r)     = overhead + TTFT objective + mean output tokens x TPOT(r): an estimate of how
               long a request meeting the objectives lives there
    TPOT(r)  = the roofline decode step at the batch Little's law gives a decode node
               (r / nodes x output tokens x TPOT sequences), stretched by the share of time a
               colocated or chunked node spends prefilling; but the TPOT objective where the
               estimate is above it, or where that batch would pass the batch limit or what the
               KV room holds (decode saturated: requests wait for a slot, and a request meeting
               the objectives may still live up to TTFT + output x TPOT objective)
    warm-up  = the arrivals of the first L(r): simulated, not judged
    measured = the next max(N, r x max(--window-s, 3 x L(r))) arrivals, rounded up to whole
               replays of the N lengths (so each length counts equally): judged
    tail     = arrivals keep coming, not judged, until every measured request has finished, so
               the last measured requests do not finish in an emptying deployment (at most
               2 x warm-up + N of them, so that every run ends)

A verification runs the same rule with the window and the request count multiplied by
VERIFY_FACTOR. Everything is a function of the plan and the rate, so results stay deterministic.

The measured part is exactly the probe the capacity bound reasons about (prune.capacity_bound
with `repeat` = the measured replays): the seed's arrivals at 1 req/s scaled by 1 / r, after the
warm-up. Warm-up and tail only add work, so the bound still holds.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from notes_cli.engine.core.profiles import Deployment
    from notes_cli.plan.prune import Bounds
    from notes_cli.plan.slo import PlanSlo
    from notes_cli.plan.space import Candidate

LIFETIMES_MEASURED = 3  # the measured window spans at least this many request lifetimes
VERIFY_FACTOR = 3  # a verification measures this many times the window and requests of a probe
_MAX_BUSY = 0.9  # a colocated node prefilling more than this is overloaded anyway


@dataclass(frozen=True)
class ProbeShape:
    """Which arrivals of a simulation at `rate` are judged: [warmup, warmup + measured)."""

    rate: float
    lifetime_ms: float  # the estimated request lifetime the shape follows from
    warmup: int  # arrivals simulated first and not judged
    repeat: int  # the measured part replays the plan's lengths this many times
    measured: int  # = repeat x the plan's distinct lengths
    tail: int  # at most this many arrivals after the measured ones (not judged)

    def judged(self, index: int) -> bool:
        return self.warmup <= index < self.warmup + self.measured

    def to_json(self) -> dict[str, Any]:
        return {
            "lifetime_ms": round(self.lifetime_ms, 1),
            "warmup": self.warmup,
            "measured": self.measured,
        }


def tpot_estimate_ms(
    candidate: Candidate, dep: Deployment, bounds: Bounds, rate: float
) -> tuple[float, bool]:
    """A decode node's step time at `rate` (Little's law on the roofline step, see above), and
    whether the batch it needs reaches the batch limit (decode saturated: requests then wait
    for a slot, which a step time does not show)."""
    last = candidate.group("decode") or candidate.group("colocated")
    assert last is not None
    cost = bounds.cost(last, dep)
    mean_in, mean_out = bounds.workload.mean_lengths()
    per_node = rate / last.count
    room = cost.kv_capacity_tokens(dep.gpu_memory_utilization)
    limit = max(1.0, min(dep.max_batch, room / max(1.0, mean_in + mean_out)))
    busy = 0.0
    if candidate.mode != "disagg":
        prefill = bounds.prefill_ms(last, dep)
        busy = min(_MAX_BUSY, per_node * sum(prefill) / len(prefill) / 1000.0)
    batch, step = 1.0, 0.0
    for _ in range(50):  # increasing from batch 1: converges or reaches the limit
        step = cost.decode_step_ms(max(1, round(batch)), batch * (mean_in + mean_out / 2))
        step /= 1.0 - busy
        wanted = per_node * max(0.0, mean_out - 1) * step / 1000.0
        if wanted >= limit:
            return step, True
        grown = max(1.0, wanted)
        if abs(grown - batch) < 0.5:
            break
        batch = grown
    return step, False


def lifetime_ms(
    candidate: Candidate, dep: Deployment, bounds: Bounds, slo: PlanSlo, rate: float
) -> float:
    _, mean_out = bounds.workload.mean_lengths()
    tpot, saturated = tpot_estimate_ms(candidate, dep, bounds, rate)
    if slo.tpot_ms is not None and (saturated or tpot > slo.tpot_ms):
        tpot = slo.tpot_ms
    return (slo.ttft_ms or 0.0) + dep.overhead_ms + mean_out * tpot


def probe_shape(
    candidate: Candidate,
    dep: Deployment,
    bounds: Bounds,
    slo: PlanSlo,
    rate: float,
    window_s: float,
    factor: int = 1,
) -> ProbeShape:
    """The shape of a probe (factor 1) or a verification (VERIFY_FACTOR) at `rate`."""
    life = lifetime_ms(candidate, dep, bounds, slo, rate)
    distinct = bounds.workload.requests
    window_ms = factor * max(window_s * 1000.0, LIFETIMES_MEASURED * life)
    wanted = max(factor * distinct, rate * window_ms / 1000.0)
    repeat = max(1, math.ceil(wanted / distinct - 1e-9))
    warmup = math.ceil(rate * life / 1000.0)
    return ProbeShape(rate, life, warmup, repeat, repeat * distinct, 2 * warmup + distinct)
