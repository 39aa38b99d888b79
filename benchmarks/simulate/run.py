"""Simulator speed and memory: `python benchmarks/simulate/run.py [--requests N]`.

1. Speed: simulated requests per wall-clock second for the 1P1D preset `h100-disagg` with
   512-token prompts and 64-token outputs (Poisson at 20 req/s, a loaded but stable point),
   through the whole `engine simulate` path (workload, engine scheduler, streaming stats), and
   the engine's simcore alone. Target: >= 10,000/s on one core.
2. Memory: tracemalloc peak of the same run at 10k and 100k requests; flat means the peak does
   not grow with the trace.
3. Linearity: CPU time per simulated request of the simcore at n / 10 and n requests (CPU time,
   so that other jobs on a shared machine disturb it less than wall time); linear means the
   two agree.
Prints a Markdown section for docs/benchmarks/simulate-bench.md.
"""

from __future__ import annotations

import argparse
import platform
import time
import tracemalloc

from notes_cli.bench.stats import Slo
from notes_cli.bench.workload import ArrivalSpec, LengthSpec, synthetic
from notes_cli.engine.simulate.configs import SimConfig
from notes_cli.engine.simulate.engine_simulator import EngineSimulator
from notes_cli.engine.simulate.runner import WorkloadSpec, simulate_configs

CONFIG = SimConfig("h100-disagg")
LENGTHS = LengthSpec(512, 64)
RATE = 20.0


def full_path(simulator: EngineSimulator, n: int) -> float:
    """Seconds for `engine simulate` on n requests (stats and SLO attainment included)."""
    started = time.perf_counter()
    report = simulate_configs(
        [CONFIG],
        WorkloadSpec(requests=n, lengths=LENGTHS),
        rates=[RATE],
        slo=Slo(400, 40),
        simulator=simulator,
    )
    assert report.results[0].points[0].completed == n
    return time.perf_counter() - started


def tbt_path(n: int) -> float:
    """Seconds for the same run judged by a TBT SLO: every inter-token gap is kept (exact)."""
    started = time.perf_counter()
    report = simulate_configs(
        [CONFIG],
        WorkloadSpec(requests=n, lengths=LENGTHS),
        rates=[RATE],
        slo=Slo(400, 40, 60, attainment=0.9),
        simulator=EngineSimulator(exact_gaps=True),
    )
    assert report.results[0].points[0].completed == n
    return time.perf_counter() - started


def simcore_only(simulator: EngineSimulator, n: int) -> float:
    started = time.perf_counter()
    count = sum(1 for _ in simulator.run(CONFIG, synthetic(n, LENGTHS, ArrivalSpec(RATE)), 0))
    assert count == n
    return time.perf_counter() - started


def cpu_us_per_request(simulator: EngineSimulator, n: int) -> float:
    """CPU microseconds per request of the simcore alone on n requests."""
    started = time.process_time()
    count = sum(1 for _ in simulator.run(CONFIG, synthetic(n, LENGTHS, ArrivalSpec(RATE)), 0))
    assert count == n
    return (time.process_time() - started) / n * 1e6


def peak_kib(simulator: EngineSimulator, n: int) -> float:
    tracemalloc.start()
    full_path(simulator, n)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return peak / 1024


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--requests", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    simulator = EngineSimulator()
    full_path(simulator, 2000)  # warm up: imports, catalog, caches
    n = args.requests
    full = min(full_path(simulator, n) for _ in range(args.repeat))
    core = min(simcore_only(simulator, n) for _ in range(args.repeat))
    tbt = min(tbt_path(n) for _ in range(args.repeat))
    small, large = peak_kib(simulator, n // 10), peak_kib(simulator, n)
    cpu_small = min(cpu_us_per_request(simulator, n // 10) for _ in range(args.repeat))
    cpu_large = min(cpu_us_per_request(simulator, n) for _ in range(args.repeat))
    print(
        f"machine: {platform.processor() or platform.machine()}, Python "
        f"{platform.python_version()}, one process (one core)\n"
    )
    print("| measurement | value |\n|---|---|")
    print(
        f"| `engine simulate` path, {n:,} requests | {n / full:,.0f} simulated requests/s "
        f"({full:.2f} s) |"
    )
    print(
        f"| engine simcore alone, {n:,} requests | {n / core:,.0f} simulated requests/s "
        f"({core:.2f} s) |"
    )
    print(
        f"| `engine simulate` path with a TBT SLO (every gap kept), {n:,} requests | "
        f"{n / tbt:,.0f} simulated requests/s ({tbt:.2f} s) |"
    )
    print(f"| tracemalloc peak, {n // 10:,} requests | {small:,.0f} KiB |")
    print(f"| tracemalloc peak, {n:,} requests | {large:,.0f} KiB |")
    print(f"| simcore CPU time per request, {n // 10:,} requests | {cpu_small:.1f} µs |")
    print(f"| simcore CPU time per request, {n:,} requests | {cpu_large:.1f} µs |")


if __name__ == "__main__":
    main()
