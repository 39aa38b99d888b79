"""Ranking, the chips-vs-latency Pareto front, and why the runner-ups lose.

- Score: capacity per chip (req/s per chip), or capacity per price (req/s per $/hour of the
  instance's chips) when every chip kind has a price.
- Replicas: to carry a target rate R, ceil(R / capacity) instances of a candidate.
- Rank: without a target rate, by score. With one, by what carrying it costs: replicas x the
  instance's $/h (its chips when unpriced), then by score; the best is the cheapest way to
  serve R, not the best instance rounded up to whole replicas (142 req/s on 6 chips needs 12
  chips for 200 req/s, 70 req/s on 3 chips needs 9). Remaining ties go to fewer chips, then to
  the earlier candidate, so the order is total and deterministic.
- Front: every candidate is sized to the same reference load (the target rate, or the best
  candidate's capacity when none was given) and simulated there; a candidate is on the front
  when no other one needs no more chips in total and has no higher judged TTFT and TPOT, with
  one of them strictly better.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from notes_cli.plan.evaluate import CandidateResult, LoadPoint
from notes_cli.plan.space import Candidate

RankKey = tuple[float, ...]  # smaller ranks first


@dataclass(frozen=True)
class Scored:
    result: CandidateResult
    score: float
    price_per_hour: float | None
    replicas: int | None = None  # to carry the target rate, when there is one
    total: float | None = None  # replicas x $/h (or x chips when unpriced) for the target rate

    @property
    def candidate_id(self) -> str:
        return self.result.candidate.id

    @property
    def key(self) -> RankKey:
        return (self.total, -self.score) if self.total is not None else (-self.score,)


def score_of(candidate: Candidate, rate: float, prices: dict[str, float | None]) -> float:
    """`rate` per chip, or per $/h when every chip of the candidate has a price."""
    price = candidate.price_per_hour(prices) if prices else None
    if price is not None and price > 0:
        return rate / price
    return rate / candidate.chips


def total_at(
    candidate: Candidate, rate: float, prices: dict[str, float | None], target_rate: float
) -> tuple[int, float]:
    """Replicas of `candidate` (serving `rate` each) for `target_rate`, and what they cost:
    $/h when every chip has a price, chips otherwise."""
    price = candidate.price_per_hour(prices) if prices else None
    unit = price if price is not None and price > 0 else candidate.chips
    n = replicas(rate, target_rate)
    return n, round(n * unit, 9)  # rounded: 3 x 6.0 and 2 x 9.0 must tie


def rank_key(
    candidate: Candidate,
    rate: float,
    prices: dict[str, float | None],
    target_rate: float | None,
) -> RankKey:
    """The ranking's key (smaller first) of `candidate` at capacity `rate`. Both parts only
    get worse as `rate` falls, so a capacity bound gives the best key a candidate can reach."""
    score = score_of(candidate, rate, prices)
    if target_rate is None:
        return (-score,)
    if rate <= 0:
        return (math.inf, -score)
    return (total_at(candidate, rate, prices, target_rate)[1], -score)


def score(
    result: CandidateResult, prices: dict[str, float | None], target_rate: float | None = None
) -> Scored:
    cand = result.candidate
    price = cand.price_per_hour(prices) if prices else None
    value = score_of(cand, result.capacity, prices)
    if target_rate is None:
        return Scored(result, value, price)
    n, total = total_at(cand, result.capacity, prices, target_rate)
    return Scored(result, value, price, n, total)


def ranked(
    results: Sequence[CandidateResult],
    prices: dict[str, float | None],
    target_rate: float | None = None,
) -> list[Scored]:
    """Candidates with a positive capacity, best first (the rank rule above)."""
    scored = [score(r, prices, target_rate) for r in results if r.capacity > 0]
    return sorted(scored, key=lambda s: (*s.key, s.result.candidate.chips, s.candidate_id))


def replicas(capacity: float, target_rate: float) -> int:
    """Instances needed to carry `target_rate` (at least one)."""
    if capacity <= 0:
        return 0
    return max(1, math.ceil(target_rate / capacity - 1e-9))


@dataclass(frozen=True)
class FrontPoint:
    candidate_id: str
    label: str
    replicas: int
    chips: int  # replicas x chips per instance
    load: LoadPoint  # one instance at reference_rate / replicas

    def to_json(self) -> dict[str, object]:
        return {
            "id": self.candidate_id,
            "label": self.label,
            "replicas": self.replicas,
            "chips": self.chips,
            **self.load.to_json(),
        }


def pareto_front(points: Sequence[FrontPoint]) -> list[FrontPoint]:
    """The non-dominated points over (chips, TTFT, TPOT), fewest chips first."""

    def key(p: FrontPoint) -> tuple[float, float, float]:
        lat = p.load.latency
        return (p.chips, _num(lat.get("ttft_ms")), _num(lat.get("tpot_ms")))

    front = []
    for p in points:
        kp = key(p)
        dominated = any(
            all(a <= b for a, b in zip(key(o), kp, strict=True)) and key(o) != kp for o in points
        )
        if not dominated:
            front.append(p)
    return sorted(front, key=lambda p: (*key(p), p.candidate_id))


def _num(x: float | None) -> float:
    return math.inf if x is None or math.isnan(x) else x


def why_behind(best: Scored, other: Scored, per_price: bool) -> str:
    """One line on why `other` ranks below `best`."""
    unit = "req/s per $/h" if per_price else "req/s per chip"
    binding = "; ".join(other.result.binding) or "no SLO missed within the search"
    if best.total is not None and other.total is not None and other.total != best.total:
        return (
            f"{other.replicas} replica{'s' if other.replicas != 1 else ''} = "
            f"{total_text(other.total, per_price)} for the target rate, "
            f"{total_text(other.total - best.total, per_price)} more than the best; at higher "
            f"load: {binding}"
        )
    gap = 1 - other.score / best.score if best.score > 0 else 0.0
    return f"{other.score:.3g} {unit}, {gap:.0%} below the best; at higher load: {binding}"


def total_text(total: float, per_price: bool) -> str:
    return f"${total:,.4g}/h" if per_price else f"{total:g} chips"
