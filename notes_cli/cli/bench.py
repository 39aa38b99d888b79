"""pdnotes bench: load any OpenAI-compatible endpoint and report TTFT, TPOT, ITL, E2E and
goodput with vLLM's definitions.

Exit codes: 0 every request completed; 1 some failed, timed out or were cancelled by
--duration; 2 bad flags or dataset; 130 interrupted by Ctrl-C (the results so far are printed
first, JSON included).
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from notes_cli.cli.ranges import (
    BURSTINESS,
    INPUT_LEN,
    OUTPUT_LEN,
    RATE,
    REQUESTS,
    SEED,
    SLO_MS,
    SPEED,
    ranged,
)
from notes_cli.errors import UsageError

if TYPE_CHECKING:
    from notes_cli.bench.client import BenchPlan, BenchReport
    from notes_cli.bench.workload import WorkItem
    from notes_cli.clients.endpoint import Endpoint

INTERRUPTED_EXIT = 130
MAX_IN_FLIGHT = 10_000  # requests in flight: each is a connection
MAX_SECONDS = 86_400.0  # a day, for --timeout and --duration


def bench(
    base_url: str = typer.Option(
        ..., "--base-url", help="OpenAI-compatible base URL, e.g. http://127.0.0.1:8000/api."
    ),
    model: str | None = typer.Option(None, "--model", help="Model id (default: the first served)."),
    key_env: str | None = typer.Option(
        None, "--key-env", help="Environment variable holding the API key (never printed)."
    ),
    api: str = typer.Option("chat", "--api", help="chat (chat completions) or responses."),
    rate: float | None = ranged(
        None, "--rate", low=RATE[0], high=RATE[1], help="Poisson arrival rate (req/s)."
    ),
    burstiness: float = ranged(
        1.0, "--burstiness", low=BURSTINESS[0], high=BURSTINESS[1], help="Gamma shape; 1 = Poisson."
    ),
    concurrency: int | None = ranged(
        None,
        "--concurrency",
        "-c",
        low=1,
        high=MAX_IN_FLIGHT,
        help="At most this many requests in flight.",
    ),
    requests: int = ranged(
        100, "-n", "--requests", low=1, high=REQUESTS[1], help="Requests to send."
    ),
    input_len: int = ranged(
        128, "--input-len", low=INPUT_LEN[0], high=INPUT_LEN[1], help="Prompt tokens (approximate)."
    ),
    output_len: int = ranged(
        64, "--output-len", low=OUTPUT_LEN[0], high=OUTPUT_LEN[1], help="max_tokens asked for."
    ),
    dist: str = typer.Option("fixed", "--dist", help="Length distribution: fixed or lognormal."),
    dataset: Path | None = typer.Option(
        None, "--dataset", help="JSONL: input_tokens and output_tokens per line (arrival_ms too)."
    ),
    slo_ttft_ms: float | None = ranged(
        None, "--slo-ttft-ms", low=SLO_MS[0], high=SLO_MS[1], help="TTFT objective (ms)."
    ),
    slo_tpot_ms: float | None = ranged(
        None, "--slo-tpot-ms", low=SLO_MS[0], high=SLO_MS[1], help="TPOT objective (ms)."
    ),
    slo_tbt_ms: float | None = ranged(
        None,
        "--slo-tbt-ms",
        low=SLO_MS[0],
        high=SLO_MS[1],
        help="Largest inter-chunk gap a good request may have (ms).",
    ),
    timeout: float = ranged(
        60.0, "--timeout", low=0.1, high=MAX_SECONDS, help="Per-request timeout (s)."
    ),
    duration: float | None = ranged(
        None,
        "--duration",
        low=0.1,
        high=MAX_SECONDS,
        help="Stop sending, and cancel what is in flight, after S seconds.",
    ),
    server_speed: float | None = ranged(
        None,
        "--server-speed",
        low=SPEED[0],
        high=SPEED[1],
        help="The engine's --speed, to convert usage.pd_timing to wall ms (default: the speed "
        "the server reports in pd_timing, else 1).",
    ),
    seed: int = ranged(
        0, "--seed", low=SEED[0], high=SEED[1], help="Seed for arrivals and lengths."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print one pdnotes.bench/1 document."),
) -> None:
    """Send a bounded load to an OpenAI-compatible endpoint and measure it (vLLM metrics)."""
    from notes_cli import render
    from notes_cli.bench.client import BenchPlan
    from notes_cli.bench.stats import Slo

    if api not in ("chat", "responses"):
        raise UsageError(f"--api must be chat or responses, not {api!r}")
    plan = BenchPlan(
        requests=requests,
        concurrency=concurrency,
        duration_s=duration,
        timeout_s=timeout,
        slo=Slo(slo_ttft_ms, slo_tpot_ms, slo_tbt_ms),
        server_speed=server_speed,
    )
    items = _workload(requests, input_len, output_len, dist, dataset, rate, burstiness, seed)
    endpoint = _endpoint(base_url, model, key_env, api)
    report, served_model = _run(endpoint, items, plan, show_progress=not as_json)
    from notes_cli.secrets import mask_url

    target = f"{mask_url(endpoint.request_url())} model={served_model}"
    if as_json:
        document = report.to_json()
        document["target"] = {
            "base_url": mask_url(base_url),
            "api": api,
            "model": served_model,
            "key": endpoint.masked_key if endpoint.key else None,
        }
        render.emit_json(document)
    else:
        from notes_cli.render.bench import bench_report

        bench_report(report, target)
    # SystemExit, not typer.Exit: cli.main runs Typer with standalone_mode=False, where
    # typer.Exit becomes a return value that main drops (see cli/doctor.py).
    if report.interrupted:
        raise SystemExit(INTERRUPTED_EXIT)
    if not report.ok:
        raise SystemExit(1)


def _workload(
    requests: int,
    input_len: int,
    output_len: int,
    dist: str,
    dataset: Path | None,
    rate: float | None,
    burstiness: float,
    seed: int,
) -> Iterable[WorkItem]:
    from notes_cli.bench.workload import ArrivalSpec, LengthSpec, read_trace, synthetic

    arrivals = ArrivalSpec(rate=rate, burstiness=burstiness)
    if dataset is not None:
        items = list(
            read_trace(
                dataset, arrivals=arrivals, seed=seed, limit=requests, keep_times=rate is None
            )
        )
        if not items:
            raise UsageError(f"{dataset} has no requests")
        return items
    lengths = LengthSpec(input_len, output_len, dist)  # type: ignore[arg-type]
    return synthetic(requests, lengths, arrivals, seed=seed)


def _endpoint(base_url: str, model: str | None, key_env: str | None, api: str) -> Endpoint:
    from notes_cli.clients.endpoint import endpoint_from_flags

    return endpoint_from_flags(base_url, protocol=api, model=model, key_env=key_env)  # type: ignore[arg-type]


def _run(
    endpoint: Endpoint, items: Iterable[WorkItem], plan: BenchPlan, *, show_progress: bool
) -> tuple[BenchReport, str | None]:
    """Run the load in an event loop that turns Ctrl-C into a clean stop."""
    import asyncio
    import contextlib
    import signal
    from dataclasses import replace

    from notes_cli.bench.client import gateway_sender, run_bench
    from notes_cli.render.bench import progress

    async def main() -> tuple[BenchReport, str | None]:
        stop = asyncio.Event()
        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
            asyncio.get_running_loop().add_signal_handler(signal.SIGINT, stop.set)
        chosen = (
            endpoint
            if endpoint.model
            else replace(endpoint, model=await _first_model(endpoint, plan.timeout_s))
        )
        send, close = gateway_sender(chosen, timeout_s=plan.timeout_s)
        try:
            bar = progress(plan.requests, "bench") if show_progress else contextlib.nullcontext()
            with bar as update:
                report = await run_bench(items, send, plan, stop=stop, on_progress=update)
        finally:
            await close()
        return report, chosen.model

    return asyncio.run(main())


async def _first_model(endpoint: Endpoint, timeout_s: float) -> str:
    from notes_cli.gateway.client import AsyncGatewayClient

    seconds = min(10.0, timeout_s)  # a wall clock: an endless or trickling list cannot hang
    async with AsyncGatewayClient(endpoint, timeout=seconds, total_timeout=seconds) as client:
        models = await client.list_models()
    if not models.ids:
        raise UsageError(f"{endpoint.models_url()} lists no models", fix="pass --model ID")
    return models.ids[0]
