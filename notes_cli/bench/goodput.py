"""Capacity and goodput search: the highest request rate at which a deployment still meets its
SLOs.

DistServe's definition: goodput is the highest per-chip request rate at which the SLO
attainment stays at its target (90% of requests meeting TTFT and TPOT), or, as pdnotes judged it
before attainment targets, at which P90 TTFT and P90 TPOT both meet their objectives; the
criterion is the caller's `meets(rate)`, usually `LatencyStats.meets` of a run at that rate.
Attainment falls as the rate rises, so the search brackets the boundary by doubling (or
halving) from a start rate, then bisects until the bracket is within a relative tolerance. Each
probe is a whole simulation at that rate, with the same seed, so the answer is deterministic.

`grid_search` is the same search on a grid of rates whose neighbours are the tolerance apart,
for the planner: there the answer is a grid point whatever the start rate, so a search may
start from a guess without the guess changing the answer.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

DEFAULT_TOLERANCE = 0.02  # stop when (high - low) / high is below this
MIN_RATE = 1e-3  # req/s: below this the deployment "sustains nothing" under the SLOs
MAX_RATE = 1e6


@dataclass(frozen=True)
class GoodputResult:
    """`rate` is the highest total rate (req/s) found meeting the SLOs; 0 if none did."""

    rate: float
    chips: int
    probes: tuple[tuple[float, bool], ...]
    capped: bool = False  # the search hit MAX_RATE without failing
    failed_rate: float | None = None  # the lowest rate probed that failed (None: none did)

    @property
    def per_chip(self) -> float:
        return self.rate / self.chips

    def to_json(self) -> dict[str, object]:
        return {
            "rate": round(self.rate, 4),
            "per_chip": round(self.per_chip, 4),
            "chips": self.chips,
            "capped": self.capped,
            "failed_rate": None if self.failed_rate is None else round(self.failed_rate, 4),
            "probes": [{"rate": round(r, 4), "met": ok} for r, ok in self.probes],
        }


def capacity(
    meets: Callable[[float], bool],
    *,
    chips: int = 1,
    start_rate: float = 1.0,
    tolerance: float = DEFAULT_TOLERANCE,
    max_probes: int = 40,
) -> GoodputResult:
    """Find the highest rate r (req/s) with `meets(r)` true, assuming it is true below some
    bound and false above it: double or halve from `start_rate` to bracket the bound, then
    bisect until the bracket is within `tolerance` of its top. At most `max_probes` calls of
    `meets`; `chips` only scales `per_chip`."""
    if chips < 1:
        raise ValueError("chips must be at least 1")
    if not start_rate > 0:
        raise ValueError("start_rate must be positive")
    probes: list[tuple[float, bool]] = []

    def probe(rate: float) -> bool:
        ok = bool(meets(rate))
        probes.append((rate, ok))
        return ok

    low, high = _bracket(probe, start_rate, max_probes)
    if low is None:
        return GoodputResult(0.0, chips, tuple(probes), failed_rate=high)
    if high is None:
        return GoodputResult(low, chips, tuple(probes), capped=True)
    while (high - low) / high > tolerance and len(probes) < max_probes:
        middle = (low + high) / 2
        if probe(middle):
            low = middle
        else:
            high = middle
    return GoodputResult(low, chips, tuple(probes), failed_rate=high)


def search_goodput(
    meets_slo: Callable[[float], bool],
    *,
    chips: int,
    start_rate: float = 1.0,
    tolerance: float = DEFAULT_TOLERANCE,
    max_probes: int = 40,
) -> GoodputResult:
    """`capacity` under its first name (kept for callers of the P90 goodput search)."""
    return capacity(
        meets_slo, chips=chips, start_rate=start_rate, tolerance=tolerance, max_probes=max_probes
    )


def _bracket(
    probe: Callable[[float], bool], start: float, max_probes: int
) -> tuple[float | None, float | None]:
    """(low, high) with probe(low) true and probe(high) false; None where no such rate exists
    within [MIN_RATE, MAX_RATE] or the probe budget."""
    rate = start
    if probe(rate):
        for _ in range(max_probes):
            if rate * 2 > MAX_RATE:
                return rate, None
            if not probe(rate * 2):
                return rate, rate * 2
            rate *= 2
        return rate, None
    for _ in range(max_probes):
        if rate / 2 < MIN_RATE:
            return None, rate
        if probe(rate / 2):
            return rate / 2, rate
        rate /= 2
    return None, rate


# ---- on a grid of rates -------------------------------------------------------------------
def grid_ratio(tolerance: float) -> float:
    """The ratio of neighbouring rates of the grid: two neighbours are a bracket exactly
    `tolerance` wide ((high - low) / high)."""
    return 1.0 / (1.0 - tolerance)


def grid_rate(n: int, tolerance: float) -> float:
    """The grid's n-th rate (req/s): grid_ratio(tolerance) ** n, the same float every time."""
    return grid_ratio(tolerance) ** n


def grid_index(rate: float, tolerance: float) -> int:
    """The grid point nearest `rate`."""
    return round(math.log(rate) / math.log(grid_ratio(tolerance)))


def grid_search(
    meets: Callable[[int], bool],
    start: int,
    *,
    tolerance: float,
    width: int = 1,
    step: int | None = None,
    low: int | None = None,
    high: int | None = None,
    max_probes: int = 40,
) -> tuple[int | None, int | None]:
    """`capacity` on the grid: every probe at a grid point n (rate grid_rate(n)), so that the
    answer, the highest point meeting the SLOs below the lowest one missing them, is the same
    wherever the search starts and whatever it knew already (given `meets` falls as the rate
    rises): the planner starts a search from a guess near the capacity where it has one, and
    its answers must not depend on it. From `start` it steps up after a pass and down after a
    miss, by `step` points (default: a doubling of the rate) and twice as many each time up to
    a doubling, until a pass and a miss bracket the boundary; then bisects until the bracket
    is `width` points. `low` (met) and `high` (missed) are brackets known already. Returns
    (low, high): None where no point met (low) or none missed (high) within
    [MIN_RATE, MAX_RATE] and `max_probes` calls."""
    doubling = max(1, round(math.log(2.0) / math.log(grid_ratio(tolerance))))
    step = doubling if step is None else max(1, step)
    n, calls = start, 0
    lowest, highest = grid_index(MIN_RATE, tolerance), grid_index(MAX_RATE, tolerance)
    while (low is None or high is None) and calls < max_probes:
        if low is not None and n <= low or high is not None and n >= high:
            break  # known already: bisect what lies between
        if n < lowest or n > highest:
            break
        met = meets(n)
        calls += 1
        if met:
            low, n = n, n + step
        else:
            high, n = n, n - step
        step = min(doubling, step * 2)
    while low is not None and high is not None and high - low > width and calls < max_probes:
        middle = (low + high) // 2
        if meets(middle):
            low = middle
        else:
            high = middle
        calls += 1
    return low, high
