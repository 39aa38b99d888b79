"""`pdnotes engine simulate`: several deployments, one workload, the engine's own scheduler on a
virtual clock.

For each configuration (preset × mode × P:D ratio) and each offered rate, the workload is
replayed through the simulator and folded into flat-memory statistics as records stream out, so
memory stays flat however long the run. With SLOs, each point reports per-request attainment
and whether it meets the SLO (`LatencyStats.meets`: the attainment target when one is set, else
each objective's percentile), and `goodput=True` searches for the highest rate that meets it
(DistServe's goodput), reported per chip. Everything derives from one seed: the same command
prints the same numbers.

The simulator is injected (`configs.Simulator`), so this module knows nothing of the cost
model; the default one (`engine_simulator.EngineSimulator`) drives `notes_cli.engine.core.simcore`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field, replace
from itertools import islice
from pathlib import Path
from typing import Any, cast

from notes_cli.bench.closed_loop import ClosedLoop, spread_starts
from notes_cli.bench.goodput import GoodputResult, capacity
from notes_cli.bench.stats import Attainment, LatencyStats, Slo, Summary
from notes_cli.bench.workload import ArrivalSpec, LengthSpec, WorkItem, read_trace, synthetic
from notes_cli.engine.simulate.configs import Resolved, SimConfig, Simulator
from notes_cli.trace.format import read_rows
from notes_cli.trace.session_order import SessionOrder


@dataclass(frozen=True)
class WorkloadSpec:
    """What to replay: `requests` items of drawn lengths, or a JSONL trace. A trace keeps its
    own arrival times unless a rate is imposed (sweeps and goodput search impose one)."""

    requests: int = 1000
    lengths: LengthSpec = field(default_factory=LengthSpec)
    burstiness: float = 1.0
    trace: Path | None = None
    concurrency: int | None = None  # a closed loop of this many clients instead of arrivals
    # "together": every client starts at t = 0 and the loop stays in step; "spread": the first
    # round all at once, the later rounds from clients spread over a request's cycle
    clients: str = "together"
    # A trace with session_id: at its own times, each turn waits for its session's previous
    # answer plus the recorded think time (trace/session_order.py).
    session_order: bool = False

    def items(self, rate: float | None, seed: int) -> Iterator[WorkItem]:
        arrivals = ArrivalSpec(rate=rate, burstiness=self.burstiness)
        if self.trace is not None:
            return read_trace(
                self.trace,
                arrivals=arrivals,
                seed=seed,
                limit=self.requests,
                keep_times=rate is None,
            )
        return synthetic(self.requests, self.lengths, arrivals, seed=seed)

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "requests": self.requests,
            "burstiness": self.burstiness,
            "concurrency": self.concurrency,
        }
        if self.concurrency is not None:
            data["clients"] = self.clients
        if self.trace is not None:
            data["trace"] = str(self.trace)
            data["session_order"] = self.session_order
        elif self.lengths.workload is not None:
            from notes_cli.bench.length_tables import named_workload

            data["workload"] = named_workload(self.lengths.workload).to_json()
        else:
            data.update(
                input_tokens=self.lengths.input_tokens,
                output_tokens=self.lengths.output_tokens,
                dist=self.lengths.dist,
            )
        return data


@dataclass(frozen=True)
class RatePoint:
    """One configuration at one offered rate (None: the trace's own timing / all at once)."""

    rate: float | None
    chips: int
    completed: int
    summaries: dict[str, Summary]
    attainment: Attainment
    meets_p90: bool  # the percentile rule (P90 TTFT and TPOT unless other percentiles are set)
    meets: bool = False  # LatencyStats.meets: the attainment target when set, else the rule
    binding: str | None = None  # LatencyStats.binding: the objective failing most / first
    good: int = 0  # requests meeting every objective

    @property
    def rate_per_chip(self) -> float | None:
        return None if self.rate is None else self.rate / self.chips

    def to_json(self) -> dict[str, Any]:
        return {
            "rate": self.rate,
            "rate_per_chip": None if self.rate is None else round(self.rate / self.chips, 4),
            "completed": self.completed,
            "metrics": {name: s.to_json() for name, s in self.summaries.items()},
            "attainment": self.attainment.to_json(),
            "meets_p90_slo": self.meets_p90,
            "meets_slo": self.meets,
            "binding": self.binding,
            "good": self.good,
        }


@dataclass(frozen=True)
class ConfigResult:
    config: SimConfig
    resolved: Resolved
    points: tuple[RatePoint, ...]
    goodput: GoodputResult | None = None

    @property
    def label(self) -> str:
        return self.resolved.label

    def to_json(self) -> dict[str, Any]:
        return {
            "preset": self.config.preset,
            **self.resolved.to_json(),
            "prefix_cache_hit": self.config.prefix_cache_hit,
            "points": [p.to_json() for p in self.points],
            "goodput": None if self.goodput is None else self.goodput.to_json(),
        }


@dataclass(frozen=True)
class SimulateReport:
    workload: WorkloadSpec
    slo: Slo
    seed: int
    results: tuple[ConfigResult, ...]
    simulated_requests: int
    wall_s: float

    def to_json(self) -> dict[str, Any]:
        return {
            "schema": "pdnotes.simulate/1",
            "seed": self.seed,
            "workload": self.workload.to_json(),
            "slo": self.slo.to_json(),
            "configurations": [r.to_json() for r in self.results],
            "simulated_requests": self.simulated_requests,
            "wall_s": round(self.wall_s, 3),
        }


ProgressFn = Callable[[str], None]


class _Runner:
    """Runs points and counts simulated requests (for the speed line of the report)."""

    def __init__(self, simulator: Simulator, workload: WorkloadSpec, slo: Slo, seed: int):
        self.simulator, self.workload, self.slo, self.seed = simulator, workload, slo, seed
        self.simulated = 0

    def point(self, config: SimConfig, chips: int, rate: float | None) -> RatePoint:
        point = measure(self.simulator, config, self.workload, self.slo, rate, self.seed, chips)
        self.simulated += point.completed
        return point


def measure(
    simulator: Simulator,
    config: SimConfig,
    workload: WorkloadSpec,
    slo: Slo,
    rate: float | None,
    seed: int = 0,
    chips: int | None = None,
) -> RatePoint:
    """One simulated run of `config` on `workload` at `rate` (None: the trace's times or all at
    once), folded into flat-memory statistics judged by `slo`. `chips` defaults to the
    configuration's (resolving it costs a catalog lookup; pass it when known)."""
    if chips is None:
        chips = simulator.resolve(config).chips
    stats = LatencyStats(slo)
    if workload.concurrency is not None and workload.clients == "spread":
        _spread_loop(stats, simulator, config, workload, seed)
        return _point(stats, slo, rate, chips)
    items: Iterable[Any] = workload.items(rate, seed)
    loop: ClosedLoop | SessionOrder | None = None
    if workload.concurrency is not None:
        loop = ClosedLoop(items, workload.concurrency)
        items = loop.requests()
    elif workload.session_order and workload.trace is not None and rate is None:
        loop = SessionOrder(islice(read_rows(workload.trace), workload.requests))
        items = loop.requests()
    for record in simulator.run(config, items, seed):
        if loop is not None:
            loop.finished(record)
        fold_record(stats, record)
    return _point(stats, slo, rate, chips)


def _spread_loop(
    stats: LatencyStats, simulator: Simulator, config: SimConfig, workload: WorkloadSpec, seed: int
) -> None:
    """A closed loop as a load generator measures one: its first round every client at once,
    its later rounds those of a second run whose clients start spread evenly over one request's
    cycle (the first run's mean arrival-to-last-token time). Flat memory: the first run keeps
    its first round's records and a sum, the second skips its first `concurrency` requests."""
    clients = cast(int, workload.concurrency)
    cycle_ms, count = 0.0, 0
    burst = ClosedLoop(workload.items(None, seed), clients)
    for record in _closed(simulator, config, burst, seed):
        cycle_ms, count = cycle_ms + record.e2e_ms, count + 1
        if record.arrival_ms == 0.0:
            fold_record(stats, record)
    if count <= clients:
        return  # one round: nothing after the burst
    spread = ClosedLoop(
        workload.items(None, seed), clients, spread_starts(cycle_ms / count, clients)
    )
    for record in _closed(simulator, config, spread, seed):
        # the simulator numbers requests in the order it admits them (engine/core/simcore.py)
        if int(record.request_id) >= clients:
            fold_record(stats, record)


def _closed(simulator: Simulator, config: SimConfig, loop: ClosedLoop, seed: int) -> Iterator[Any]:
    """The records of `loop`'s requests, each slot freed as its record comes back."""
    requests: Iterable[Any] = loop.requests()  # PendingRequests stand in for WorkItems
    for record in simulator.run(config, requests, seed):
        loop.finished(record)
        yield record


def _point(stats: LatencyStats, slo: Slo, rate: float | None, chips: int) -> RatePoint:
    completed = stats.completed
    percentile_slo = replace(slo, attainment=None)
    return RatePoint(
        rate=rate,
        chips=chips,
        completed=completed,
        summaries=stats.summaries(),
        attainment=stats.attainment(),
        meets_p90=completed > 0 and stats.meets(percentile_slo),
        meets=stats.meets(),
        binding=stats.binding(),
        good=stats.good,
    )


def fold_record(stats: LatencyStats, record: Any) -> None:
    """Add one simulator record to `stats` (vLLM definitions: TPOT only when out > 1).

    Pooled ITL: a record listing every gap (`itl_ms`) adds them all. The engine's simulator
    keeps no per-token objects and sums them up instead (`itl_sum_ms`, `itl_count`,
    `max_itl_ms`), so its largest gap is added exactly and the others at their mean: sum and
    maximum are exact, and the one stall a colocated prefill causes is not averaged away."""
    out = int(record.output_tokens)
    tpot = record.tpot_ms if out > 1 else None
    gaps = getattr(record, "itl_ms", None)
    if gaps:
        stats.add(record.ttft_ms, tpot, record.e2e_ms, out, max(gaps))
        stats.add_itls(gaps)
        return
    count = getattr(record, "itl_count", None)
    if not count:
        stats.add(record.ttft_ms, tpot, record.e2e_ms, out)
        if count is None and tpot is not None:
            stats.add_itl(tpot, out - 1)  # only a mean is known
        return
    largest = record.max_itl_ms
    stats.add(record.ttft_ms, tpot, record.e2e_ms, out, largest)
    itl = stats.itl
    itl.add(largest)
    if count > 1:
        itl.add(max(0.0, (record.itl_sum_ms - largest) / (count - 1)), count - 1)


def simulate_configs(
    configs: Iterable[SimConfig],
    workload: WorkloadSpec,
    *,
    rates: Iterable[float | None] = (None,),
    slo: Slo | None = None,
    goodput: bool = False,
    seed: int = 0,
    simulator: Simulator | None = None,
    on_progress: ProgressFn | None = None,
) -> SimulateReport:
    """Simulate every configuration at every rate; with `goodput`, also search each one's
    goodput (needs a TTFT or TPOT SLO). Deterministic for `seed`."""
    slo = slo or Slo()
    # A TBT objective is judged on the pooled gaps' P99: keep every gap then (exact, slower).
    simulator = simulator or default_simulator(exact_gaps=slo.tbt_ms is not None)
    runner = _Runner(simulator, workload, slo, seed)
    started = time.perf_counter()
    results = []
    for config in configs:
        resolved = runner.simulator.resolve(config)
        chips = resolved.chips
        if on_progress:
            on_progress(f"simulating {resolved.label} on {chips} chip(s)")
        points = tuple(runner.point(config, chips, rate) for rate in rates)
        found = None
        if goodput:
            found = _search(runner, config, chips)
        results.append(ConfigResult(config, resolved, points, found))
    return SimulateReport(
        workload=workload,
        slo=slo,
        seed=seed,
        results=tuple(results),
        simulated_requests=runner.simulated,
        wall_s=time.perf_counter() - started,
    )


def _search(runner: _Runner, config: SimConfig, chips: int) -> GoodputResult:
    def meets(rate: float) -> bool:
        return runner.point(config, chips, rate).meets

    return capacity(meets, chips=chips, start_rate=float(chips))


def default_simulator(*, exact_gaps: bool = False) -> Simulator:
    """The engine's scheduler on a virtual clock (notes_cli.engine.core.simcore); with
    `exact_gaps`, every inter-token gap reaches the statistics (see EngineSimulator)."""
    from notes_cli.engine.simulate.engine_simulator import EngineSimulator

    return EngineSimulator(exact_gaps=exact_gaps)
