"""Capacity and goodput search: the highest request rate at which a deployment still meets its
SLOs.

DistServe's definition: goodput is the highest per-chip request rate at which the SLO
attainment stays at its target (90% of requests meeting TTFT and TPOT), or, as pdnotes judged it
before attainment targets, at which P90 TTFT and P90 TPOT both meet their objectives; the
criterion is the caller's `meets(rate)`, usually `LatencyStats.meets` of a run at that rate.
Attainment falls as the rate rises, so the search brackets the boundary by doubling (or
halving) from a start rate, then bisects until the bracket is within a relative tolerance. Each
probe is a whole simulation at that rate, with the same seed, so the answer is deterministic.
"""

from __future__ import annotations

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
