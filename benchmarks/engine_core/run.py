"""Engine-core benchmarks: simulator speed and the live driver's pacing and CPU cost.

    python benchmarks/engine_core/run.py            # print the results as Markdown
    python benchmarks/engine_core/run.py --write    # also write docs/benchmarks/engine-core.md

1. simulate(): simulated requests per wall second for 1P1D presets (512-token prompts, 64-token
   outputs, Poisson arrivals at ~70% of the prefill node's capacity), and the process's peak RSS
   for two trace lengths (flat memory means records are streamed, not kept).
2. The live service without HTTP: 256 concurrent streaming requests at --speed 1; per-request
   client-measured TPOT against pd_timing's modelled TPOT, the p99 inter-token gap against the
   modelled gaps, CPU time per wall second, and streamed tokens per second.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import random
import resource
import statistics
import sys
import time
from collections.abc import Iterator
from pathlib import Path

from notes_cli.engine.core.api import (
    ChatMessage,
    Completion,
    GenerationRequest,
    RequestRecord,
    TokenChunk,
)
from notes_cli.engine.core.config import EngineConfig
from notes_cli.engine.core.costmodel import NodeCost
from notes_cli.engine.core.profiles import load_catalog
from notes_cli.engine.core.simcore import SimRequest, simulate
from notes_cli.engine.live.service import create_service

DOC = Path(__file__).resolve().parents[2] / "docs" / "benchmarks" / "engine-core.md"
_NOTES = "## Notes"  # --write keeps this section (and what follows) of the existing page


def poisson_trace(n: int, rate_per_s: float, seed: int = 0) -> Iterator[SimRequest]:
    rng = random.Random(seed)
    t = 0.0
    for _ in range(n):
        t += rng.expovariate(rate_per_s) * 1000.0
        yield SimRequest(t, 512, 64)


def prefill_capacity_per_s(preset: str) -> float:
    catalog = load_catalog()
    dep = catalog.deployment(preset)
    group = dep.prefill or dep.colocated
    assert group is not None
    cost = NodeCost(catalog.models[dep.model], catalog.chips[group.chip], group.tp)
    per_batch = dep.prefill_token_budget // 512
    return per_batch / cost.prefill_ms(per_batch * 512, per_batch * 512.0**2) * 1000.0


def bench_simulate(preset: str, n: int) -> dict[str, float]:
    # a colocated node also decodes, so it is loaded to half the disaggregated prefill share
    share = 0.7 if load_catalog().deployment(preset).mode == "disagg" else 0.35
    rate = share * prefill_capacity_per_s(preset)
    start = time.process_time()
    wall = time.perf_counter()
    count = 0
    ttft: list[float] = []
    for record in simulate(preset, poisson_trace(n, rate)):
        count += 1
        if count % 100 == 0:
            ttft.append(record.ttft_ms)
    cpu = time.process_time() - start
    return {
        "requests": count,
        "rate": rate,
        "cpu_s": cpu,
        "wall_s": time.perf_counter() - wall,
        "per_s": count / cpu,
        "ttft_p50": statistics.median(ttft),
        "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }


async def live_run(
    preset: str, concurrency: int, output_tokens: int, prompt_repeat: int
) -> dict[str, float]:
    service = create_service(EngineConfig(preset=preset, speed=1.0))
    await service.start()
    records: dict[str, RequestRecord] = {}
    service.add_observer(
        lambda item: (
            records.update({item.request_id: item}) if isinstance(item, RequestRecord) else None
        )
    )
    prompt = "Explain the KV cache transfer between prefill and decode nodes. " * prompt_repeat

    async def one(i: int) -> tuple[list[float], Completion]:
        message = ChatMessage("user", f"{i} {prompt}")
        req = GenerationRequest("pd-mock-1", (message,), output_tokens, request_id=f"r{i}")
        times: list[float] = []
        done = None
        async for item in service.generate(req):
            if isinstance(item, TokenChunk):
                times.append(time.perf_counter())
            else:
                done = item
        assert done is not None
        return times, done

    cpu0, wall0 = time.process_time(), time.perf_counter()
    results = await asyncio.gather(*(one(i) for i in range(concurrency)))
    cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
    await service.stop()
    ratios, gaps, modelled_gaps, excess = [], [], [], []
    modelled_tpot = []
    for i, (times, done) in enumerate(results):
        measured = (times[-1] - times[0]) * 1000 / (len(times) - 1)
        ratios.append(measured / done.pd_timing.tpot_ms)
        modelled_tpot.append(done.pd_timing.tpot_ms)
        mine = [(b - a) * 1000 for a, b in zip(times, times[1:], strict=False)]
        model = records[f"r{i}"].itl_ms
        gaps += mine
        modelled_gaps += model
        excess += [g - m for g, m in zip(mine, model, strict=True)]
    gaps.sort()
    modelled_gaps.sort()
    excess.sort()
    tokens = sum(len(t) for t, _ in results)
    return {
        "itl_model_p99": modelled_gaps[int(0.99 * len(modelled_gaps))],
        "tpot_model_p50": statistics.median(modelled_tpot),
        "tpot_ratio_p50": statistics.median(ratios),
        "itl_p99": gaps[int(0.99 * len(gaps))],
        "excess_p99": excess[int(0.99 * len(excess))],
        "itl_p50": statistics.median(gaps),
        "cpu_per_wall": cpu / wall,
        "tokens_per_s": tokens / wall,
        "wall_s": wall,
    }


def bench_live(
    preset: str, concurrency: int, output_tokens: int, prompt_repeat: int
) -> dict[str, float]:
    """The modelled gaps come from the scheduler's own records, through an observer."""
    return asyncio.run(live_run(preset, concurrency, output_tokens, prompt_repeat))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help=f"write {DOC.name}")
    parser.add_argument("--requests", type=int, default=100_000)
    args = parser.parse_args()
    lines = [
        "# Engine core benchmarks",
        "",
        f"Machine: {platform.processor() or platform.machine()}, Python "
        f"{platform.python_version()}, {os.cpu_count()} cores, load average "
        f"{os.getloadavg()[0]:.1f} at the start (other work was running). The simulator is "
        "single-threaded; throughput is per CPU second. Reproduce with "
        "`python benchmarks/engine_core/run.py --write`.",
        "",
        "## Simulator speed (`notes_cli.engine.core.simcore.simulate`)",
        "",
        "512-token prompts, 64-token outputs, Poisson arrivals at 70% of the prefill node's "
        "capacity (35% for colocated / chunked nodes, which also decode). Target: at least "
        "10,000 simulated requests per CPU second for a 1P1D preset. Peak RSS is the whole "
        "process so far: equal values for 25k and 100k requests mean memory stays flat.",
        "",
        "| preset | requests | arrival rate (req/s) | CPU s | simulated req / CPU s | "
        "TTFT p50 (ms) | peak RSS (MB) |",
        "|---|---|---|---|---|---|---|",
    ]
    for preset, n in (
        ("h100-disagg", args.requests // 4),
        ("h100-disagg", args.requests),
        ("h800-h20-rdma", args.requests),
        ("h100-colocated", args.requests),
        ("h100-chunked", args.requests),
    ):
        r = bench_simulate(preset, n)
        lines.append(
            f"| {preset} | {r['requests']:,} | {r['rate']:.0f} | {r['cpu_s']:.2f} | "
            f"{r['per_s']:,.0f} | {r['ttft_p50']:.1f} | {r['rss_mb']:.0f} |"
        )
        print(lines[-1], file=sys.stderr)
    lines += [
        "",
        "## Live service pacing, no HTTP (`create_service`, speed 1)",
        "",
        "256 concurrent streams on `h800-h20-rdma`, consumed in-process: short prompts (~12 "
        "tokens, all 256 decode together) and ~400-token prompts (prefill-bound, streams "
        "overlap partly). "
        "`TPOT measured / modelled` is each request's client-side (last - first token) / (n - 1) "
        "over its `pd_timing.tpot_ms`. `gap excess` is each measured gap minus the same gap in "
        "the request's modelled `itl_ms`: what live pacing adds, whatever the model's own "
        "spread. The HTTP path (`docs/benchmarks/engine.md`) adds SSE encoding on top.",
        "",
        "| prompt tokens / max_tokens | modelled TPOT p50 (ms) | measured/modelled TPOT p50 | "
        "ITL p50 (ms) | ITL p99 measured / modelled (ms) | gap excess p99 (ms) | "
        "CPU s per wall s | streamed tokens/s | wall s |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for repeat, output in ((1, 128), (40, 64)):
        r = bench_live("h800-h20-rdma", 256, output, repeat)
        lines.append(
            f"| {12 if repeat == 1 else 400} / {output} | {r['tpot_model_p50']:.2f} | "
            f"{r['tpot_ratio_p50']:.3f} | {r['itl_p50']:.2f} | "
            f"{r['itl_p99']:.2f} / {r['itl_model_p99']:.2f} | {r['excess_p99']:.2f} | "
            f"{r['cpu_per_wall']:.2f} | "
            f"{r['tokens_per_s']:,.0f} | {r['wall_s']:.1f} |"
        )
    text = "\n".join(lines) + "\n"
    print(text)
    if args.write:  # keep the hand-written notes at the end of the page
        old = DOC.read_text(encoding="utf-8") if DOC.exists() else ""
        notes = old[old.find(_NOTES) :] if _NOTES in old else ""
        DOC.write_text(text + ("\n" + notes if notes else ""), encoding="utf-8")


if __name__ == "__main__":
    main()
