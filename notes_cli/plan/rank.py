"""Ranking, the chips-vs-latency Pareto front, and why the runner-ups lose.

- Score: capacity per chip (req/s per chip), or capacity per price (req/s per $/hour of the
  instance's chips) when every chip kind has a price. Ties go to fewer chips, then to the
  earlier candidate, so the order is total and deterministic.
- Replicas: to carry a target rate R, ceil(R / capacity) instances of a candidate.
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


@dataclass(frozen=True)
class Scored:
    result: CandidateResult
    score: float
    price_per_hour: float | None

    @property
    def candidate_id(self) -> str:
        return self.result.candidate.id


def score_of(candidate: Candidate, rate: float, prices: dict[str, float | None]) -> float:
    """`rate` per chip, or per $/h when every chip of the candidate has a price."""
    price = candidate.price_per_hour(prices) if prices else None
    if price is not None and price > 0:
        return rate / price
    return rate / candidate.chips


def score(result: CandidateResult, prices: dict[str, float | None]) -> Scored:
    cand = result.candidate
    price = cand.price_per_hour(prices) if prices else None
    return Scored(result, score_of(cand, result.capacity, prices), price)


def ranked(results: Sequence[CandidateResult], prices: dict[str, float | None]) -> list[Scored]:
    """Candidates with a positive capacity, best first."""
    scored = [score(r, prices) for r in results if r.capacity > 0]
    return sorted(scored, key=lambda s: (-s.score, s.result.candidate.chips, s.candidate_id))


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
    gap = 1 - other.score / best.score if best.score > 0 else 0.0
    binding = "; ".join(other.result.binding) or "no SLO missed within the search"
    return f"{other.score:.3g} {unit}, {gap:.0%} below the best; at higher load: {binding}"
