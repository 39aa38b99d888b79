"""Latency statistics and SLOs: mean, median, p90, p99, per-request attainment, as `vllm bench
serve` and the PD papers report them.

Interface for the planner (and anything else judging a run against SLOs)
-------------------------------------------------------------------------
- `Slo(ttft_ms=None, tpot_ms=None, tbt_ms=None, *, ttft_percentile=90, tpot_percentile=90,
  tbt_percentile=99, attainment=None)`: objectives in ms (None = none on that metric). TTFT and
  TPOT are judged at their percentile (P90 default, as DistServe; P99 as Splitwise), TBT (the
  gap between two consecutive tokens of a request; Sarathi-Serve's P99 TBT, vLLM's ITL) at P99.
  `attainment` (e.g. 0.9) switches the criterion to DistServe's per-request one: a request is
  *good* when its TTFT, its TPOT and (with `tbt_ms`) its largest inter-token gap all meet
  their objectives, and a run meets the SLO when good / completed ≥ `attainment`.
  `Slo.objectives` names the objectives set, in the order "ttft", "tpot", "tbt".
- `LatencyStats(slo, exact=False)`: fold requests in with
  `add(ttft_ms, tpot_ms, e2e_ms, output_tokens, max_itl_ms=None) -> bool` (whether it was good)
  and `add_itl(gap_ms, times=1)` (pooled gaps), or with
  `notes_cli.engine.simulate.runner.fold_record` for a simulator record. Then:
  - `good` (exact count of good requests), `completed`, `attainment() -> Attainment`
    (fractions per objective and `both` = all of them);
  - `meets(slo=None) -> bool`: with an attainment target, good / completed ≥ target; without,
    every objective's percentile within it (today's P90 rule when only TTFT/TPOT are set);
  - `binding(slo=None) -> str | None`: the objective that fails most (on a run that fails) or
    would fail first (on one that meets): the lowest per-objective attainment with a target,
    else the highest percentile / objective ratio. None without objectives or requests.
  `slo=None` means the SLO the stats were built with; another SLO is accepted only when its
  per-request thresholds are the same (the counts were made against them).
- `notes_cli.bench.goodput.capacity(meets, *, chips=1, start_rate=1.0, tolerance=0.02,
  max_probes=40) -> GoodputResult`: the highest rate (req/s) at which `meets(rate)` holds,
  assuming it holds below a boundary and fails above; `.rate`, `.per_chip`, `.failed_rate`
  (lowest rate seen failing), `.capped`, `.probes`. `search_goodput` is the same search.
- `notes_cli.engine.simulate.runner.measure(simulator, config, workload, slo, rate, seed=0,
  chips=None) -> RatePoint`: one simulated run folded into these statistics;
  `RatePoint.meets` / `.binding` / `.good` / `.attainment` / `.summaries`. With a TBT SLO,
  build the simulator as `EngineSimulator(exact_gaps=True)` (what `simulate_configs` does) so
  pooled P99 TBT counts every gap.
- Lengths: `LengthSpec(workload="sharegpt")` etc. (notes_cli.bench.length_tables), traces via
  `WorkloadSpec(trace=path)` (pdnotes JSONL, Mooncake rows, vLLM / SGLang results).

Percentiles follow vLLM, which calls `numpy.percentile` with its default linear interpolation:
for quantile q of n sorted samples x, h = q·(n−1) and the value is
x[floor h] + (h − floor h)·(x[floor h + 1] − x[floor h]). So the median of [1, 2] is 1.5.

Two keepers, one interface:
- `ExactSample` (the bench client) keeps every value (8 bytes each, in an `array`), so its
  percentiles are numpy's exactly. A bench run is bounded in requests, and its largest sample,
  the pooled inter-token gaps, is one value per streamed chunk: 1 M chunks cost 8 MB.
- `LogHistogram` (the simulator, millions of requests) is a log-bucketed histogram in the style
  of DDSketch: a value x lands in bucket ceil(log_γ x) with γ = (1+α)/(1−α), and each bucket
  stands for a value within relative error α of anything in it. The same interpolation between
  the estimates of the two neighbouring ranks is then within α (1% by default) of
  `numpy.percentile`, since a weighted mean of values each within α is within α of the weighted
  mean. Memory is bounded by the number of distinct buckets (about 1,200 between 1 µs and
  3 hours), never by the number of samples.
Mean, min, max, counts and SLO attainment are exact in both.
"""

from __future__ import annotations

import math
from array import array
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import repeat
from operator import mul
from typing import Any, Protocol

from notes_cli.errors import UsageError

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

    def add_all(self, values: Sequence[float]) -> None:
        """Record each of `values` once. The simulator's exact-gap mode adds every token's gap
        through here: bucket indices are computed and counted in C (map, Counter) rather than
        one `add` call per value, which measured about 3x faster on 64-gap records."""
        if not values:
            return
        low = min(values)
        if low <= _ZERO:
            for value in values:
                self.add(value)
            return
        self.count += len(values)
        self.total += sum(values)
        self.min = min(self.min, low)
        self.max = max(self.max, max(values))
        indices = map(math.ceil, map(mul, map(math.log, values), repeat(self._inv_log_gamma)))
        buckets = self._buckets
        for index, n in Counter(indices).items():
            buckets[index] = buckets.get(index, 0) + n

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
        return _interpolate(q, self.count, self._at_rank)

    def _at_rank(self, rank: int) -> float:
        """The estimate of the sample of 0-based `rank` (within α of it)."""
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
        return _summary(self)


class ExactSample:
    """Every value kept: `quantile()` is `numpy.percentile`'s linear interpolation, exactly."""

    __slots__ = ("_sorted", "_values", "max", "min", "total")

    def __init__(self) -> None:
        self._values = array("d")
        self._sorted = True
        self.total = 0.0
        self.min = math.inf
        self.max = -math.inf

    @property
    def count(self) -> int:
        return len(self._values)

    def add(self, value: float, times: int = 1) -> None:
        """Record `value` `times` times."""
        if self._values and value < self._values[-1]:
            self._sorted = False
        self._values.extend([value] * times)
        self.total += value * times
        self.min = min(self.min, value)
        self.max = max(self.max, value)

    def add_all(self, values: Sequence[float]) -> None:
        """Record each of `values` once."""
        for value in values:
            self.add(value)

    @property
    def mean(self) -> float:
        return self.total / self.count if self.count else math.nan

    def quantile(self, q: float) -> float:
        """The value at quantile `q` in [0, 1]; NaN when empty."""
        if not self._values:
            return math.nan
        if not self._sorted:
            self._values = array("d", sorted(self._values))
            self._sorted = True
        values = self._values
        return _interpolate(q, len(values), values.__getitem__)

    def summary(self) -> Summary:
        return _summary(self)


class _Sample(Protocol):
    @property
    def count(self) -> int: ...
    @property
    def mean(self) -> float: ...
    def quantile(self, q: float) -> float: ...


def _interpolate(q: float, n: int, at_rank: Callable[[int], float]) -> float:
    """numpy.percentile's default ("linear"): between the samples of rank floor and ceil."""
    h = q * (n - 1)
    low = math.floor(h)
    lower = at_rank(low)
    if h == low:
        return float(lower)
    return float(lower + (h - low) * (at_rank(low + 1) - lower))


def _summary(sample: _Sample) -> Summary:
    return Summary(
        count=sample.count,
        mean=sample.mean,
        median=sample.quantile(0.5),
        p90=sample.quantile(0.9),
        p99=sample.quantile(0.99),
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


OBJECTIVES = ("ttft", "tpot", "tbt")


@dataclass(frozen=True)
class Slo:
    """Latency objectives in ms; None means "no objective on this metric".

    Percentiles are in percent (90 = P90) and say where the percentile rule judges each metric;
    `attainment` (a fraction in (0, 1]) replaces that rule by DistServe's per-request one. The
    first two fields stay positional: `Slo(400, 40)` is TTFT 400 ms and TPOT 40 ms at P90."""

    ttft_ms: float | None = None
    tpot_ms: float | None = None
    tbt_ms: float | None = None
    ttft_percentile: float = 90.0
    tpot_percentile: float = 90.0
    tbt_percentile: float = 99.0
    attainment: float | None = None

    def __post_init__(self) -> None:
        for name in OBJECTIVES:
            value = getattr(self, f"{name}_ms")
            if value is not None and not value > 0:
                raise UsageError(f"the {name.upper()} SLO must be a positive number of ms")
            if not 0 < getattr(self, f"{name}_percentile") < 100:
                raise UsageError(f"the {name.upper()} percentile must be between 0 and 100")
        if self.attainment is not None and not 0 < self.attainment <= 1:
            raise UsageError("the attainment target must be a fraction in (0, 1], e.g. 0.9")

    @property
    def any(self) -> bool:
        return bool(self.objectives)

    @property
    def objectives(self) -> tuple[str, ...]:
        """The objectives set, of "ttft", "tpot", "tbt", in that order."""
        return tuple(name for name in OBJECTIVES if getattr(self, f"{name}_ms") is not None)

    def same_thresholds(self, other: Slo) -> bool:
        """Whether `other` judges single requests the same way (percentiles and target aside)."""
        return (self.ttft_ms, self.tpot_ms, self.tbt_ms) == (
            other.ttft_ms,
            other.tpot_ms,
            other.tbt_ms,
        )

    def to_json(self) -> dict[str, float | None]:
        return {
            "ttft_ms": self.ttft_ms,
            "tpot_ms": self.tpot_ms,
            "tbt_ms": self.tbt_ms,
            "ttft_percentile": self.ttft_percentile,
            "tpot_percentile": self.tpot_percentile,
            "tbt_percentile": self.tbt_percentile,
            "attainment": self.attainment,
        }


@dataclass(frozen=True)
class Attainment:
    """Fractions of completed requests meeting each SLO and all of them (DistServe's metric).
    None for an objective that is not set (or when nothing completed)."""

    ttft: float | None
    tpot: float | None
    both: float | None
    tbt: float | None = None

    def of(self, objective: str) -> float | None:
        value: float | None = getattr(self, objective)
        return value

    def to_json(self) -> dict[str, float | None]:
        return {
            "ttft": _round(self.ttft),
            "tpot": _round(self.tpot),
            "tbt": _round(self.tbt),
            "all": _round(self.both),
        }


def _round(x: float | None) -> float | None:
    return None if x is None else round(x, 4)


class LatencyStats:
    """Accumulates per-request latencies (ms) for one run: every value with `exact=True` (the
    bench client), else in flat memory (the simulator).

    TPOT is only defined for requests with more than one output token (vLLM); a request without
    one meets any TPOT objective, as in vLLM's goodput, and any TBT objective (it has no gap).
    TBT is judged per request on its largest gap (`max_itl_ms`), so a request is good only if
    no gap of it breaks the objective; without `max_itl_ms`, its TPOT stands in."""

    __slots__ = (
        "_limits",
        "_ok_both",
        "_ok_tbt",
        "_ok_tpot",
        "_ok_ttft",
        "e2e",
        "itl",
        "output_tokens",
        "slo",
        "tpot",
        "ttft",
    )

    def __init__(self, slo: Slo | None = None, *, exact: bool = False) -> None:
        self.slo = slo or Slo()
        keeper: type[ExactSample] | type[LogHistogram] = ExactSample if exact else LogHistogram
        self.ttft = keeper()
        self.tpot = keeper()
        self.itl = keeper()
        self.e2e = keeper()
        self.output_tokens = 0
        self._ok_ttft = self._ok_tpot = self._ok_tbt = self._ok_both = 0
        # No objective = an infinite one; read once here, not per request (the simulator's
        # hot path adds one request per simulated request).
        slo = self.slo
        self._limits = tuple(
            math.inf if limit is None else limit for limit in (slo.ttft_ms, slo.tpot_ms, slo.tbt_ms)
        )

    @property
    def completed(self) -> int:
        return self.e2e.count

    def add(
        self,
        ttft_ms: float,
        tpot_ms: float | None,
        e2e_ms: float,
        output_tokens: int,
        max_itl_ms: float | None = None,
    ) -> bool:
        """Record one completed request; returns whether it met every SLO (it is good)."""
        self.ttft.add(ttft_ms)
        self.e2e.add(e2e_ms)
        if tpot_ms is not None:
            self.tpot.add(tpot_ms)
        self.output_tokens += output_tokens
        ttft_limit, tpot_limit, tbt_limit = self._limits
        ttft_ok = ttft_ms <= ttft_limit
        tpot_ok = tpot_ms is None or tpot_ms <= tpot_limit
        gap = max_itl_ms if max_itl_ms is not None else tpot_ms
        tbt_ok = gap is None or gap <= tbt_limit
        good = ttft_ok and tpot_ok and tbt_ok
        self._ok_ttft += ttft_ok
        self._ok_tpot += tpot_ok
        self._ok_tbt += tbt_ok
        self._ok_both += good
        return good

    def add_itl(self, gap_ms: float, times: int = 1) -> None:
        """Record inter-token gaps (pooled over all requests, as vLLM does)."""
        self.itl.add(gap_ms, times)

    def add_itls(self, gaps_ms: Sequence[float]) -> None:
        """Record one request's inter-token gaps, each once."""
        self.itl.add_all(gaps_ms)

    @property
    def good(self) -> int:
        """Requests that met every objective (exact)."""
        return self._ok_both

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
            tbt=self._ok_tbt / n if slo.tbt_ms is not None else None,
        )

    def meets(self, slo: Slo | None = None) -> bool:
        """Whether the run meets `slo` (default: its own): with an attainment target, the share
        of good requests reaches it (DistServe); else every objective's percentile is within
        it. A run with no completed request meets nothing."""
        slo = self._judged_by(slo)
        if not self.completed:
            return False
        if slo.attainment is not None:
            return self._ok_both >= slo.attainment * self.completed - 1e-9
        return all(ratio <= 1.0 for ratio in self._percentile_ratios(slo).values())

    def binding(self, slo: Slo | None = None) -> str | None:
        """The objective ("ttft", "tpot" or "tbt") that fails most, or, on a run that meets
        every objective, the one closest to failing. With an attainment target, the one fewest
        requests meet; else the one whose percentile is largest against its objective. Ties go
        to the earlier of ttft, tpot, tbt. None without objectives or completed requests."""
        slo = self._judged_by(slo)
        if not slo.any or not self.completed:
            return None
        if slo.attainment is not None:
            att = self.attainment()
            shares = {name: att.of(name) for name in slo.objectives}
            return min(slo.objectives, key=lambda name: shares[name] or 0.0)
        ratios = self._percentile_ratios(slo)
        return max(slo.objectives, key=lambda name: ratios[name])

    def meets_p90(self) -> bool:
        """DistServe's goodput criterion: P90 TTFT and P90 TPOT within their SLOs."""
        slo = self.slo
        if slo.ttft_ms is not None and not self.ttft.quantile(0.9) <= slo.ttft_ms:
            return False
        return slo.tpot_ms is None or not self.tpot.count or self.tpot.quantile(0.9) <= slo.tpot_ms

    def _judged_by(self, slo: Slo | None) -> Slo:
        if slo is None:
            return self.slo
        if slo.attainment is not None and not slo.same_thresholds(self.slo):
            raise ValueError(
                "per-request attainment was counted against another SLO; build the "
                "LatencyStats with the SLO it is judged by"
            )
        return slo

    def _percentile_ratios(self, slo: Slo) -> dict[str, float]:
        """observed percentile / objective per objective set; 0 for a metric with no sample
        (TPOT and TBT of one-token requests), NaN-free."""
        samples = {"ttft": self.ttft, "tpot": self.tpot, "tbt": self.itl}
        ratios = {}
        for name in slo.objectives:
            sample = samples[name]
            if not sample.count:
                ratios[name] = 0.0
                continue
            q = getattr(slo, f"{name}_percentile") / 100
            ratios[name] = sample.quantile(q) / getattr(slo, f"{name}_ms")
        return ratios

    def summaries(self) -> dict[str, Summary]:
        return {
            "ttft_ms": self.ttft.summary(),
            "tpot_ms": self.tpot.summary(),
            "itl_ms": self.itl.summary(),
            "e2e_ms": self.e2e.summary(),
        }
