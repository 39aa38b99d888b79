"""Planner speed: `python benchmarks/planner/run.py [--jobs N]`.

One planning run of the article's case, the whole default search space: Qwen3-8B on H800 and
H20 chips (either for either phase) over RoCE 200G, modes disagg / colocated / chunked, TP 1-8
per phase, 1-4 nodes per group, up to 16 chips per instance; ShareGPT-like log-normal lengths
(median 1024 in, 128 out), P90 TTFT <= 1 s and P90 TPOT <= 50 ms. Target: >= 500 candidates in
< 60 s on this 2-core machine. Records wall time, CPU time and the load average before and
after (the machine may be shared), and prints a Markdown section for
docs/benchmarks/planner.md. The same run from the command line:

    pdnotes engine plan --model qwen3-8b --chip h800 --chip h20 --link roce-200g \\
        --input-len 1024 --output-len 128 --dist lognormal \\
        --slo-ttft-ms 1000 --slo-tpot-ms 50 --rate 200
"""

from __future__ import annotations

import argparse
import os
import platform
import resource
import time

from notes_cli.bench.workload import LengthSpec
from notes_cli.engine.core.profiles import load_catalog
from notes_cli.plan.planner import PlanRequest, plan
from notes_cli.plan.run_local import LocalExecutor, available_cores
from notes_cli.plan.slo import PlanSlo
from notes_cli.plan.space import ChipOption, SearchSpace
from notes_cli.plan.workload import drawn

TTFT_MS = 1000.0


def request() -> PlanRequest:
    return PlanRequest(
        model="qwen3-8b",
        link="roce-200g",
        space=SearchSpace(chips=(ChipOption("h800"), ChipOption("h20"))),
        slo=PlanSlo(ttft_ms=TTFT_MS, tpot_ms=50.0),
        workload=drawn(LengthSpec(1024, 128, "lognormal"), 300, seed=0),
        target_rate=200.0,
        window_s=max(10.0, TTFT_MS / 100),  # the CLI's default: 10 x the TTFT objective
        seed=0,
    )


def cpu_seconds() -> float:
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--jobs", type=int, default=None, help="default: all cores")
    args = parser.parse_args()
    catalog = load_catalog()
    load_before = os.getloadavg()
    cpu_before = cpu_seconds()
    started = time.perf_counter()
    report = plan(request(), catalog, LocalExecutor(args.jobs))
    wall = time.perf_counter() - started
    cpu = cpu_seconds() - cpu_before
    load_after = os.getloadavg()
    best = report.best
    pruned = report.pruned
    print(f"### {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}\n")
    print(f"- machine: {platform.processor() or platform.machine()}, {available_cores()} cores")
    print(f"- executor: {report.executor}")
    print(
        f"- load average before: {load_before[0]:.2f} / {load_before[1]:.2f} / "
        f"{load_before[2]:.2f}; after: {load_after[0]:.2f} / {load_after[1]:.2f} / "
        f"{load_after[2]:.2f}"
    )
    print(f"- candidates: **{len(report.results)}**")
    print(
        f"- pruned by the roofline: {pruned['memory']} memory, {pruned['slo']} SLO; skipped by "
        f"the capacity bound: {pruned['bound']}; simulated: {report.simulated_candidates}"
    )
    print(f"- simulated requests: {report.simulated_requests:,}")
    print(
        f"- verified: {len([r for r in report.results if r.verification is not None])} "
        f"claims; lowered by their verification: {len(report.lowered)}; front rows missing "
        f"the SLOs: {len(report.front_missed)}"
    )
    print(f"- wall time: **{wall:.1f} s**; CPU time (all processes): {cpu:.1f} s")
    if best is not None:
        c = best.result.candidate
        print(
            f"- best: {c.label}, {best.result.capacity:.3g} req/s on {c.chips} chips "
            f"({best.score:.3g} req/s per chip); {report.replicas_needed()} replicas for "
            f"{report.request.target_rate:g} req/s"
        )


if __name__ == "__main__":
    main()
