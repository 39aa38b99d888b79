"""Streaming latency statistics in flat memory: mean, median, p90, p99, SLO attainment.

Both the simulator (millions of requests) and the bench client feed one `LatencyStats` per run.
Percentiles come from `LogHistogram`, a log-bucketed histogram in the style of DDSketch: a value
x lands in bucket ceil(log_γ x) with γ = (1+α)/(1−α), and every bucket is reported by a value
within a relative error α of anything in it. With the default α = 0.01 a reported percentile is
within 1% of the true sample at that rank, and memory is bounded by the number of distinct
buckets (about 1,200 between 1 µs and 3 hours), never by the number of samples. Mean, min,
max, counts and SLO attainment are exact.

Percentile rule: the sample of 0-based rank floor(q·(n−1)) (numpy's "lower" method), so the
median of [1, 2] is 1 and p99 of 100 samples is the 99th smallest.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

DEFAULT_RELATIVE_ERROR = 0.01
_ZERO = 1e-9  # values at or below this (in ms) count as exactly zero


class LogHistogram:
    """Counts of values in log-spaced buckets; `quantile()` is within `relative_error`."""

    __slots__ = ("_buckets", "_gamma", "_inv_log_gamma", "_zeros", "count", "max", "min", "total")

    def __init__(self, relative_error: float = DEFAULT_RELATIVE_ERROR) -> None:
        if not 0 < relative_error < 1:
            raise ValueError("relative_error must be in (0, 1)")
        self._gamma = (1 + relative_error) / (1 - relative_error)
        self._inv_log_gamma = 1.0 / math.log(self._gamma)
        self._buckets: dict[int, int] = {}
        self._zeros = 0
        self.count = 0
        self.total = 0.0
        self.min = math.inf
        self.max = -math.inf

    def add(self, value: float, times: int = 1) -> None:
        """Record `value` (a non-negative latency) `times` times."""
        self.count += times
        self.total += value * times
        if value < self.min:
            self.min = value
        if value > self.max:
            self.max = value
        if value <= _ZERO:
            self._zeros += times
            return
        index = math.ceil(math.log(value) * self._inv_log_gamma)
        buckets = self._buckets
        buckets[index] = buckets.get(index, 0) + times

    def merge(self, other: LogHistogram) -> None:
        """Add every sample of `other` (same relative error) to this histogram."""
        if other._gamma != self._gamma:
            raise ValueError("cannot merge histograms with different relative errors")
        for index, n in other._buckets.items():
            self._buckets[index] = self._buckets.get(index, 0) + n
        self._zeros += other._zeros
        self.count += other.count
        self.total += other.total
        self.min = min(self.min, other.min)
        self.max = max(self.max, other.max)

    @property
    def mean(self) -> float:
        return self.total / self.count if self.count else math.nan

    def quantile(self, q: float) -> float:
        """The value at quantile `q` in [0, 1]; NaN when empty."""
        if not self.count:
            return math.nan
        rank = math.floor(q * (self.count - 1))  # 0-based
        if rank < self._zeros:
            return 0.0
        seen = self._zeros
        for index in sorted(self._buckets):
            seen += self._buckets[index]
            if seen > rank:
                estimate = 2 * self._gamma**index / (self._gamma + 1)
                return min(max(estimate, self.min), self.max)
        return self.max  # unreachable with consistent counts

    def summary(self) -> Summary:
        return Summary(
            count=self.count,
            mean=self.mean,
            median=self.quantile(0.5),
            p90=self.quantile(0.9),
            p99=self.quantile(0.99),
        )


@dataclass(frozen=True)
class Summary:
    """The four numbers every report shows for one metric, in ms."""

    count: int
    mean: float
    median: float
    p90: float
    p99: float

    def to_json(self) -> dict[str, Any]:
        def num(x: float) -> float | None:
            return None if math.isnan(x) else round(x, 3)

        return {
            "count": self.count,
            "mean": num(self.mean),
            "median": num(self.median),
            "p90": num(self.p90),
            "p99": num(self.p99),
        }


@dataclass(frozen=True)
class Slo:
    """Latency objectives in ms; None means "no objective on this metric"."""

    ttft_ms: float | None = None
    tpot_ms: float | None = None

    @property
    def any(self) -> bool:
        return self.ttft_ms is not None or self.tpot_ms is not None

    def to_json(self) -> dict[str, float | None]:
        return {"ttft_ms": self.ttft_ms, "tpot_ms": self.tpot_ms}


@dataclass(frozen=True)
class Attainment:
    """Fractions of completed requests meeting each SLO and all of them (DistServe's metric)."""

    ttft: float | None
    tpot: float | None
    both: float | None

    def to_json(self) -> dict[str, float | None]:
        return {"ttft": _round(self.ttft), "tpot": _round(self.tpot), "all": _round(self.both)}


def _round(x: float | None) -> float | None:
    return None if x is None else round(x, 4)


class LatencyStats:
    """Accumulates per-request latencies (ms) for one run in flat memory.

    TPOT is only defined for requests with more than one output token (vLLM); a request without
    one meets any TPOT objective, as in vLLM's goodput."""

    __slots__ = (
        "_ok_both",
        "_ok_tpot",
        "_ok_ttft",
        "e2e",
        "itl",
        "output_tokens",
        "slo",
        "tpot",
        "ttft",
    )

    def __init__(self, slo: Slo | None = None) -> None:
        self.slo = slo or Slo()
        self.ttft = LogHistogram()
        self.tpot = LogHistogram()
        self.itl = LogHistogram()
        self.e2e = LogHistogram()
        self.output_tokens = 0
        self._ok_ttft = self._ok_tpot = self._ok_both = 0

    @property
    def completed(self) -> int:
        return self.e2e.count

    def add(self, ttft_ms: float, tpot_ms: float | None, e2e_ms: float, output_tokens: int) -> bool:
        """Record one completed request; returns whether it met every SLO."""
        self.ttft.add(ttft_ms)
        self.e2e.add(e2e_ms)
        if tpot_ms is not None:
            self.tpot.add(tpot_ms)
        self.output_tokens += output_tokens
        slo = self.slo
        ttft_ok = slo.ttft_ms is None or ttft_ms <= slo.ttft_ms
        tpot_ok = slo.tpot_ms is None or tpot_ms is None or tpot_ms <= slo.tpot_ms
        self._ok_ttft += ttft_ok
        self._ok_tpot += tpot_ok
        self._ok_both += ttft_ok and tpot_ok
        return ttft_ok and tpot_ok

    def add_itl(self, gap_ms: float, times: int = 1) -> None:
        """Record inter-token gaps (pooled over all requests, as vLLM does)."""
        self.itl.add(gap_ms, times)

    @property
    def met_all_slos(self) -> int:
        return self._ok_both

    def attainment(self) -> Attainment:
        n = self.completed
        if not n:
            return Attainment(None, None, None)
        slo = self.slo
        return Attainment(
            ttft=self._ok_ttft / n if slo.ttft_ms is not None else None,
            tpot=self._ok_tpot / n if slo.tpot_ms is not None else None,
            both=self._ok_both / n,
        )

    def meets_p90(self) -> bool:
        """DistServe's goodput criterion: P90 TTFT and P90 TPOT within their SLOs."""
        slo = self.slo
        if slo.ttft_ms is not None and not self.ttft.quantile(0.9) <= slo.ttft_ms:
            return False
        return slo.tpot_ms is None or not self.tpot.count or self.tpot.quantile(0.9) <= slo.tpot_ms

    def summaries(self) -> dict[str, Summary]:
        return {
            "ttft_ms": self.ttft.summary(),
            "tpot_ms": self.tpot.summary(),
            "itl_ms": self.itl.summary(),
            "e2e_ms": self.e2e.summary(),
        }
