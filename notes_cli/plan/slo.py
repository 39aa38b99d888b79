"""The planner's SLO judgement: notes_cli.bench.stats' SLOs, plus an early verdict.

A candidate meets its SLOs at a rate when, over the simulated requests (bench.stats.Slo):
- percentile mode (default): P{q} TTFT <= ttft_ms and P{q} TPOT <= tpot_ms (q = `percentile`,
  0.9 as DistServe) and P99 of the pooled inter-token gaps <= tbt_ms;
- attainment mode (`attainment` set): the share of requests that meet every objective (TTFT,
  TPOT and, with tbt_ms, their largest inter-token gap) is >= `attainment` (DistServe's
  per-request attainment).

`Judge.certainly_fails` lets a probe stop early: it is true only once the verdict can no longer
become "meets", whatever the remaining requests do, so stopping never changes a result.

`WarmupWatch` is the one presumption (a search probe's, never a verification's): a probe whose
late warm-up requests already miss an objective by far is presumed to miss it (see there).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from notes_cli.bench.stats import DEFAULT_RELATIVE_ERROR, LatencyStats, Slo
from notes_cli.engine.simulate.runner import fold_record

TBT_QUANTILE = 0.99  # inter-token gaps are judged at P99 (Sarathi-Serve, DistServe's TBT)


@dataclass(frozen=True)
class PlanSlo:
    """Latency objectives in ms (None: no objective) and how they are judged."""

    ttft_ms: float | None = None
    tpot_ms: float | None = None
    tbt_ms: float | None = None
    percentile: float = 0.9
    attainment: float | None = None

    @property
    def any(self) -> bool:
        return any(v is not None for v in (self.ttft_ms, self.tpot_ms, self.tbt_ms))

    def describe(self) -> str:
        q = f"P{self.percentile * 100:g}"
        parts = [
            f"{name} <= {value:g} ms"
            for name, value in (
                ("TTFT", self.ttft_ms),
                ("TPOT", self.tpot_ms),
                ("TBT", self.tbt_ms),
            )
            if value is not None
        ]
        if self.attainment is not None:
            return f"{self.attainment:.0%} of requests meet " + ", ".join(parts)
        judged = [p.replace("TBT", "P99 TBT") if p.startswith("TBT") else f"{q} {p}" for p in parts]
        return ", ".join(judged)

    def bench(self) -> Slo:
        """The same objectives as bench.stats judges them."""
        percent = self.percentile * 100
        return Slo(
            self.ttft_ms,
            self.tpot_ms,
            self.tbt_ms,
            ttft_percentile=percent,
            tpot_percentile=percent,
            tbt_percentile=TBT_QUANTILE * 100,
            attainment=self.attainment,
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "ttft_ms": self.ttft_ms,
            "tpot_ms": self.tpot_ms,
            "tbt_ms": self.tbt_ms,
            "percentile": self.percentile,
            "attainment": self.attainment,
        }


class Judge:
    """Folds one probe's records and says whether it met the SLOs, and if not, which binds."""

    __slots__ = ("_expected", "_fail_tpot", "_fail_ttft", "slo", "stats")

    def __init__(self, slo: PlanSlo, expected_requests: int) -> None:
        self.slo = slo
        self.stats = LatencyStats(slo.bench())
        self._expected = expected_requests
        self._fail_ttft = 0  # requests whose TTFT is over the objective even after rounding
        self._fail_tpot = 0

    @property
    def completed(self) -> int:
        return self.stats.completed

    def add(self, record: Any) -> None:
        fold_record(self.stats, record)
        slo = self.slo
        ttft, out = record.ttft_ms, int(record.output_tokens)
        tpot = record.tpot_ms if out > 1 else None
        # A value this far over the objective lands in a histogram bucket whose estimate is
        # over it too (estimates are within the relative error), so it counts against the
        # percentile for sure.
        margin = 1 - DEFAULT_RELATIVE_ERROR
        if slo.ttft_ms is not None and ttft * margin > slo.ttft_ms:
            self._fail_ttft += 1
        if slo.tpot_ms is not None and tpot is not None and tpot * margin > slo.tpot_ms:
            self._fail_tpot += 1

    def certainly_fails(self) -> bool:
        """True once no remaining request can rescue the verdict."""
        n = self._expected
        slo = self.slo
        if slo.attainment is not None:
            return self.completed - self.stats.good > n * (1 - slo.attainment) + 1e-9
        # The q-quantile interpolates between the samples of rank floor(q (n-1)) and the next:
        # when the `k` largest are all over the objective and floor(q (n-1)) >= n - k, it is over.
        limit = n - math.floor(slo.percentile * (n - 1))
        return self._fail_ttft >= limit or self._fail_tpot >= limit

    def certain_misses(self) -> tuple[str, ...]:
        """What made `certainly_fails` true, for a probe stopped early."""
        slo, n = self.slo, self._expected
        if slo.attainment is not None:
            bad = self.completed - self.stats.good
            return (f"attainment < {slo.attainment:.0%}: {bad} of {n} requests miss",)
        q = f"P{slo.percentile * 100:g}"
        limit = n - math.floor(slo.percentile * (n - 1))
        out = []
        for name, fails, objective in (
            ("TTFT", self._fail_ttft, slo.ttft_ms),
            ("TPOT", self._fail_tpot, slo.tpot_ms),
        ):
            if objective is not None and fails >= limit:
                out.append(f"{name} {q} > {objective:g} ms ({fails} of {n} requests over)")
        return tuple(out)

    def meets(self) -> bool:
        return self.stats.meets()

    def binding(self) -> tuple[str, ...]:
        """The objectives this probe missed, e.g. ("TTFT P90 412 ms > 300 ms",); with an
        attainment target, the share and the objective fewest requests met."""
        slo, stats = self.slo, self.stats
        n = stats.completed
        if not n:
            return ("no request completed",)
        if stats.meets():
            return ()
        if slo.attainment is not None:
            share = stats.good / n
            worst = stats.binding() or ""
            return (
                f"attainment {share:.1%} < {slo.attainment:.0%}{self._attainment_detail()}; "
                f"binding: {worst.upper()}",
            )
        q = slo.percentile
        label = f"P{q * 100:g}"
        missed = []
        for name, sample, objective, quantile in (
            ("TTFT", stats.ttft, slo.ttft_ms, q),
            ("TPOT", stats.tpot, slo.tpot_ms, q),
            ("TBT", stats.itl, slo.tbt_ms, TBT_QUANTILE),
        ):
            if objective is None or not sample.count:
                continue
            value = sample.quantile(quantile)
            if not value <= objective:
                shown = label if quantile == q else f"P{quantile * 100:g}"
                missed.append(f"{name} {shown} {value:,.1f} ms > {objective:g} ms")
        return tuple(missed)

    def _attainment_detail(self) -> str:
        att = self.stats.attainment()
        parts = [
            f"{name.upper()} met by {share:.0%}"
            for name in self.slo.bench().objectives
            if (share := att.of(name)) is not None and share < 1
        ]
        return f" ({', '.join(parts)})" if parts else ""

    def latency(self) -> dict[str, float]:
        """The judged percentiles of this probe, ms (NaN where there is no sample)."""
        q = self.slo.percentile
        return {
            "ttft_ms": self.stats.ttft.quantile(q),
            "tpot_ms": self.stats.tpot.quantile(q),
            "tbt_ms": self.stats.itl.quantile(TBT_QUANTILE),
        }

    def attainment(self) -> float:
        """Share of completed requests meeting every objective."""
        return self.stats.good / self.completed if self.completed else math.nan


PRESUME_SHARE = 0.5  # a miss is presumed once this share of the late warm-up is over ...
PRESUME_MIN = 40  # ... among at least this many of its finished requests


class WarmupWatch:
    """Presumes a probe misses before any judged request has finished: with long outputs a
    request lives ~20 s, so the first judged verdicts come a whole lifetime after the warm-up,
    which is most of an overloaded probe's cost. The deployment fills from empty during the
    warm-up, so its second half sees no more load than the judged part will (queues and
    batches only grow towards steady state); when at least PRESUME_MIN of those requests have
    finished and PRESUME_SHARE of them (five times the 10% a P90 allows) are over an objective
    by more than the stats' rounding, the judged part is presumed to miss it too. It never
    makes a probe pass, so a wrong presumption can only lower a capacity; claims are verified
    by full simulations without it. Percentile mode only (attainment: no presumption)."""

    __slots__ = ("_fail_tpot", "_fail_ttft", "_seen", "slo", "start", "end")

    def __init__(self, slo: PlanSlo, warmup: int) -> None:
        self.slo = slo
        self.start, self.end = warmup // 2, warmup  # arrival indices watched
        self._seen = self._fail_ttft = self._fail_tpot = 0

    def add(self, index: int, record: Any) -> None:
        if not self.start <= index < self.end:
            return
        self._seen += 1
        margin = 1 - DEFAULT_RELATIVE_ERROR
        slo = self.slo
        if slo.ttft_ms is not None and record.ttft_ms * margin > slo.ttft_ms:
            self._fail_ttft += 1
        out = int(record.output_tokens)
        if slo.tpot_ms is not None and out > 1 and record.tpot_ms * margin > slo.tpot_ms:
            self._fail_tpot += 1

    def presumed_misses(self) -> tuple[str, ...]:
        """The objectives presumed missed (empty: no presumption yet)."""
        slo, seen = self.slo, self._seen
        if slo.attainment is not None or seen < PRESUME_MIN:
            return ()
        q = f"P{slo.percentile * 100:g}"
        return tuple(
            f"{name} {q} > {objective:g} ms (presumed: {fails} of the late warm-up's first "
            f"{seen} requests over)"
            for name, fails, objective in (
                ("TTFT", self._fail_ttft, slo.ttft_ms),
                ("TPOT", self._fail_tpot, slo.tpot_ms),
            )
            if objective is not None and fails >= PRESUME_SHARE * seen
        )
