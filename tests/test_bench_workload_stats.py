"""Workloads are lazy and reproducible; statistics are accurate in flat memory; goodput search
finds the boundary."""

from __future__ import annotations

import json
import math
import random
import statistics
from itertools import islice
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from notes_cli.bench.goodput import grid_index, grid_rate, grid_search, search_goodput
from notes_cli.bench.stats import ExactSample, LatencyStats, LogHistogram, Slo
from notes_cli.bench.workload import ArrivalSpec, LengthSpec, WorkItem, read_trace, synthetic
from notes_cli.errors import InputError, UsageError


def test_same_seed_same_workload_and_other_seed_differs() -> None:
    spec, rate = LengthSpec(512, 64, "lognormal"), ArrivalSpec(rate=10.0)
    first = list(synthetic(200, spec, rate, seed=7))
    assert first == list(synthetic(200, spec, rate, seed=7))
    assert first != list(synthetic(200, spec, rate, seed=8))


def test_changing_the_rate_keeps_the_drawn_lengths() -> None:
    spec = LengthSpec(512, 64, "lognormal")
    slow = [(w.input_tokens, w.output_tokens) for w in synthetic(50, spec, ArrivalSpec(1.0))]
    fast = [(w.input_tokens, w.output_tokens) for w in synthetic(50, spec, ArrivalSpec(100.0))]
    assert slow == fast


def test_poisson_arrivals_have_the_requested_mean_rate() -> None:
    items = list(synthetic(20_000, LengthSpec(), ArrivalSpec(rate=50.0), seed=1))
    observed_rate = len(items) / (items[-1].arrival_ms / 1000)
    assert observed_rate == pytest.approx(50.0, rel=0.03)
    assert all(a.arrival_ms <= b.arrival_ms for a, b in zip(items, items[1:], strict=False))


@pytest.mark.parametrize("burstiness", [0.25, 4.0])
def test_burstiness_keeps_the_rate_but_changes_the_spread(burstiness: float) -> None:
    items = list(synthetic(20_000, LengthSpec(), ArrivalSpec(50.0, burstiness), seed=2))
    gaps = [b.arrival_ms - a.arrival_ms for a, b in zip(items, items[1:], strict=False)]
    assert statistics.fmean(gaps) == pytest.approx(20.0, rel=0.05)
    # gamma gaps: coefficient of variation = 1 / sqrt(shape); Poisson has 1
    cv = statistics.pstdev(gaps) / statistics.fmean(gaps)
    assert cv == pytest.approx(1 / math.sqrt(burstiness), rel=0.1)


def test_no_rate_means_everything_arrives_at_once() -> None:
    assert {w.arrival_ms for w in synthetic(10, LengthSpec(), ArrivalSpec())} == {0.0}


def test_lognormal_lengths_centre_on_the_given_median() -> None:
    items = list(synthetic(5000, LengthSpec(1000, 100, "lognormal"), ArrivalSpec(), seed=3))
    assert statistics.median(w.input_tokens for w in items) == pytest.approx(1000, rel=0.05)
    assert statistics.median(w.output_tokens for w in items) == pytest.approx(100, rel=0.05)
    assert max(w.input_tokens for w in items) > 2500  # a real tail


def test_workloads_are_lazy() -> None:
    endless = synthetic(10**12, LengthSpec(), ArrivalSpec(rate=1.0))
    assert len(list(islice(endless, 3))) == 3


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [({"input_tokens": 0}, "--input-len"), ({"dist": "zipf"}, "distribution")],
)
def test_bad_length_specs_are_usage_errors(kwargs: dict, message: str) -> None:
    with pytest.raises(UsageError, match=message):
        LengthSpec(**kwargs)


def test_trace_is_read_with_its_times_and_aliases(tmp_path: Path) -> None:
    trace = tmp_path / "t.jsonl"
    rows = [
        {"arrival_ms": 0, "input_tokens": 100, "output_tokens": 10},
        {"arrival_ms": 5.5, "prompt_tokens": 200, "completion_tokens": 20},
    ]
    trace.write_text("\n".join(json.dumps(r) for r in rows) + "\n\n")
    assert list(read_trace(trace)) == [WorkItem(0.0, 100, 10), WorkItem(5.5, 200, 20)]


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("not json", "t.jsonl:2: not JSON"),
        ('{"input_tokens": 5}', "t.jsonl:2: missing output_tokens"),
        ('{"input_tokens": -5, "output_tokens": 1}', "positive integer"),
        ('{"arrival_ms": 1, "input_tokens": 5, "output_tokens": 1}', "goes backwards"),
    ],
)
def test_bad_trace_lines_name_file_and_line(tmp_path: Path, line: str, message: str) -> None:
    trace = tmp_path / "t.jsonl"
    trace.write_text('{"arrival_ms": 9, "input_tokens": 1, "output_tokens": 1}\n' + line)
    with pytest.raises(InputError, match=message):
        list(read_trace(trace))


def test_missing_trace_is_an_input_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="cannot read trace"):
        list(read_trace(tmp_path / "nope.jsonl"))


# Fixtures where a "lower"-rank or nearest-rank percentile differs from numpy's interpolation.
PERCENTILE_FIXTURES = [
    [1.0, 2.0],
    [3.0, 1.0, 2.0, 10.0],
    [12.5, 7.25, 30.0, 8.0, 9.5, 11.0, 41.0, 6.0, 7.0, 15.0],
    [float(x) for x in range(1, 101)],
    [5.0] * 7 + [500.0],
]


@pytest.mark.parametrize("values", PERCENTILE_FIXTURES)
def test_exact_percentiles_are_numpys(values: list[float]) -> None:
    sample = ExactSample()
    for v in values:
        sample.add(v)
    for q in (0.0, 0.25, 0.5, 0.9, 0.99, 1.0):
        assert sample.quantile(q) == pytest.approx(float(np.percentile(values, q * 100)), abs=1e-9)
    assert sample.mean == pytest.approx(float(np.mean(values)))


@given(st.lists(st.floats(0, 1e6, allow_nan=False), min_size=1, max_size=60), st.floats(0, 1))
def test_exact_percentiles_are_numpys_for_any_sample(values: list[float], q: float) -> None:
    sample = ExactSample()
    for v in values:
        sample.add(v)
    expected = float(np.percentile(values, q * 100))
    assert sample.quantile(q) == pytest.approx(expected, rel=1e-9, abs=1e-9)


def test_bench_statistics_report_numpys_percentiles() -> None:
    stats = LatencyStats(exact=True)
    ttfts = [40.0, 41.0, 60.0, 42.0, 300.0, 43.0, 44.0, 45.0, 46.0, 47.0]
    for ttft in ttfts:
        stats.add(ttft, 5.0, ttft + 100, 10)
    ttft = stats.summaries()["ttft_ms"]
    assert ttft.median == pytest.approx(float(np.percentile(ttfts, 50)))  # 44.5, not 44
    assert ttft.p90 == pytest.approx(float(np.percentile(ttfts, 90)))
    assert ttft.p99 == pytest.approx(float(np.percentile(ttfts, 99)))


@pytest.mark.parametrize("n", [10, 100, 50_000])
def test_histogram_percentiles_within_one_percent_of_numpys(n: int) -> None:
    rng = random.Random(4)
    values = [rng.lognormvariate(3, 1.2) for _ in range(n)]
    hist = LogHistogram()
    for v in values:
        hist.add(v)
    for q in (0.5, 0.9, 0.99):
        assert hist.quantile(q) == pytest.approx(float(np.percentile(values, q * 100)), rel=0.01)
    assert hist.mean == pytest.approx(statistics.fmean(values), rel=1e-9)
    assert hist.max == max(values) and hist.min == min(values)


def test_histogram_memory_is_bounded_by_buckets_not_samples() -> None:
    hist = LogHistogram()
    rng = random.Random(5)
    for _ in range(100_000):
        hist.add(rng.uniform(1, 1000))
    assert hist.count == 100_000
    assert len(hist._buckets) < 400  # log(1000)/log(1.0202) ≈ 345


def test_small_samples_and_zeros() -> None:
    hist = LogHistogram()
    assert math.isnan(hist.quantile(0.5))
    for v in (0.0, 0.0, 10.0):
        hist.add(v)
    assert hist.quantile(0.5) == 0.0
    assert hist.quantile(0.75) == pytest.approx(5.0, rel=0.01)  # halfway between 0 and 10
    assert hist.quantile(1.0) == pytest.approx(10.0, rel=0.01)


def test_slo_attainment_counts_requests_meeting_each_objective() -> None:
    stats = LatencyStats(Slo(ttft_ms=100, tpot_ms=10))
    stats.add(50, 5, 500, 64)  # meets both
    stats.add(150, 5, 500, 64)  # misses TTFT
    stats.add(50, 20, 500, 64)  # misses TPOT
    stats.add(50, None, 50, 1)  # one token: no TPOT, meets it
    att = stats.attainment()
    assert (att.ttft, att.tpot, att.both) == (0.75, 0.75, 0.5)
    assert stats.met_all_slos == 2


def test_p90_criterion() -> None:
    stats = LatencyStats(Slo(ttft_ms=100, tpot_ms=10))
    for i in range(100):
        stats.add(50 if i < 95 else 500, 5, 100, 10)
    assert stats.meets_p90()
    stats.add(500, 5, 100, 10)
    for _ in range(10):
        stats.add(500, 5, 100, 10)
    assert not stats.meets_p90()


def test_goodput_search_finds_the_boundary_per_chip() -> None:
    result = search_goodput(lambda rate: rate <= 13.7, chips=2, start_rate=1.0)
    assert result.rate == pytest.approx(13.7, rel=0.02)
    assert result.rate <= 13.7
    assert result.per_chip == pytest.approx(result.rate / 2)
    assert len(result.probes) <= 40


def test_goodput_search_from_above_and_when_nothing_meets() -> None:
    assert search_goodput(lambda r: r <= 0.3, chips=1, start_rate=100).rate == pytest.approx(
        0.3, rel=0.02
    )
    assert search_goodput(lambda r: False, chips=1).rate == 0.0


@pytest.mark.parametrize("start", [-40, 0, 44, 45, 46, 60, 150])
@pytest.mark.parametrize("step", [None, 1, 3])
def test_the_grid_search_finds_the_same_rate_wherever_it_starts(
    start: int, step: int | None
) -> None:
    # The planner starts some searches near a capacity it already knows (issue 37); on the
    # grid the answer must not depend on where it started or how it stepped.
    boundary = grid_rate(45, 0.05) * 1.01  # between two grid points
    calls: list[int] = []

    def meets(n: int) -> bool:
        calls.append(n)
        return grid_rate(n, 0.05) <= boundary

    low, high = grid_search(meets, start, tolerance=0.05, step=step)
    assert (low, high) == (45, 46)
    assert len(calls) == len(set(calls)) <= 16  # no point probed twice
    coarse = grid_search(meets, start, tolerance=0.05, step=step, width=3)
    assert coarse[0] is not None and coarse[1] is not None
    assert coarse[0] <= 45 < coarse[1] and coarse[1] - coarse[0] <= 3
    # what a finished coarse search knows, bisected on: the same answer
    assert grid_search(meets, 0, tolerance=0.05, low=coarse[0], high=coarse[1]) == (45, 46)


def test_the_grid_search_says_when_nothing_or_everything_meets() -> None:
    assert grid_search(lambda n: False, 10, tolerance=0.05)[0] is None
    assert grid_search(lambda n: True, 10, tolerance=0.05, max_probes=100)[1] is None
    assert grid_rate(0, 0.05) == 1.0 and grid_index(grid_rate(-7, 0.05), 0.05) == -7
