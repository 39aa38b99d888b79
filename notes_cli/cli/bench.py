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

from notes_cli.errors import UsageError

if TYPE_CHECKING:
    from notes_cli.bench.client import BenchPlan, BenchReport
    from notes_cli.bench.prompts import PromptSpec
    from notes_cli.bench.workload import WorkItem
    from notes_cli.clients.endpoint import Endpoint

INTERRUPTED_EXIT = 130


def bench(
    base_url: str = typer.Option(
        ..., "--base-url", help="OpenAI-compatible base URL, e.g. http://127.0.0.1:8000/api."
    ),
    model: str | None = typer.Option(None, "--model", help="Model id (default: the first served)."),
    key_env: str | None = typer.Option(
        None, "--key-env", help="Environment variable holding the API key (never printed)."
    ),
    api: str = typer.Option("chat", "--api", help="chat (chat completions) or responses."),
    rate: float | None = typer.Option(None, "--rate", help="Poisson arrival rate (req/s)."),
    burstiness: float = typer.Option(1.0, "--burstiness", help="Gamma shape; 1 = Poisson."),
    concurrency: int | None = typer.Option(
        None, "--concurrency", "-c", help="At most this many requests in flight."
    ),
    requests: int = typer.Option(100, "-n", "--requests", help="Requests to send."),
    input_len: int = typer.Option(128, "--input-len", help="Prompt tokens (approximate)."),
    output_len: int = typer.Option(64, "--output-len", help="max_tokens asked for."),
    dist: str = typer.Option("fixed", "--dist", help="Length distribution: fixed or lognormal."),
    dataset: Path | None = typer.Option(
        None, "--dataset", help="JSONL: input_tokens and output_tokens per line (arrival_ms too)."
    ),
    slo_ttft_ms: float | None = typer.Option(None, "--slo-ttft-ms", help="TTFT objective (ms)."),
    slo_tpot_ms: float | None = typer.Option(None, "--slo-tpot-ms", help="TPOT objective (ms)."),
    slo_tbt_ms: float | None = typer.Option(
        None, "--slo-tbt-ms", help="Largest inter-chunk gap a good request may have (ms)."
    ),
    timeout: float = typer.Option(60.0, "--timeout", help="Per-request timeout (s)."),
    duration: float | None = typer.Option(
        None, "--duration", help="Stop sending, and cancel what is in flight, after S seconds."
    ),
    server_speed: float | None = typer.Option(
        None,
        "--server-speed",
        help="The engine's --speed, to convert usage.pd_timing to wall ms (default: the speed "
        "the server reports in pd_timing, else 1).",
    ),
    seed: int = typer.Option(0, "--seed", help="Seed for arrivals, lengths and prompt text."),
    shared_prefix: int = typer.Option(
        0,
        "--shared-prefix",
        help="Tokens every prompt of a group starts with, to measure prefix caching on purpose "
        "(default 0: every prompt is unique, so a prefix cache cannot hit).",
    ),
    prefix_groups: int = typer.Option(
        1, "--prefix-groups", help="Groups of requests sharing one prefix (request i: i mod G)."
    ),
    turns: int = typer.Option(
        1,
        "--turns",
        help="Turns per conversation: each turn resends the history with a new question "
        "(-n counts turns).",
    ),
    records: Path | None = typer.Option(
        None,
        "--records",
        help="Write one record per request to FILE (.jsonl or .csv; schema in "
        "docs/simulate-bench.md).",
    ),
    metrics_url: str | None = typer.Option(
        None,
        "--metrics-url",
        help="The server's Prometheus metrics, sampled during the run (default: /metrics at "
        "the base URL's host; 'off' to skip). A server without them only loses that section.",
    ),
    as_json: bool = typer.Option(False, "--json", help="Print one pdnotes.bench/1 document."),
) -> None:
    """Send a bounded load to an OpenAI-compatible endpoint and measure it (vLLM metrics)."""
    from notes_cli import render
    from notes_cli.bench.client import BenchPlan
    from notes_cli.bench.prompts import PromptSpec
    from notes_cli.bench.stats import Slo

    if api not in ("chat", "responses"):
        raise UsageError(f"--api must be chat or responses, not {api!r}")
    for flag, value in (("--timeout", timeout), ("--server-speed", server_speed)):
        if value is not None and not value > 0:
            raise UsageError(f"{flag} must be positive")
    if duration is not None and not duration > 0:
        raise UsageError("--duration must be positive")
    if concurrency is not None and concurrency < 1:
        raise UsageError("--concurrency must be at least 1")
    if records is not None:
        from notes_cli.bench.records import records_format

        records_format(records)
    prompts = PromptSpec(
        seed=seed, shared_prefix=shared_prefix, prefix_groups=prefix_groups, turns=turns
    )
    plan = BenchPlan(
        requests=requests,
        concurrency=concurrency,
        duration_s=duration,
        timeout_s=timeout,
        slo=Slo(slo_ttft_ms, slo_tpot_ms, slo_tbt_ms),
        server_speed=server_speed,
        keep_records=records is not None,
    )
    items = _workload(requests, input_len, output_len, dist, dataset, rate, burstiness, seed)
    endpoint = _endpoint(base_url, model, key_env, api)
    from notes_cli.bench.server_metrics import metrics_url as default_metrics_url

    scrape = metrics_url or default_metrics_url(base_url)
    report, served_model = _run(
        endpoint,
        items,
        plan,
        prompts,
        None if scrape == "off" else scrape,
        show_progress=not as_json,
    )
    if records is not None:
        from notes_cli.bench.records import write_records

        write_records(records, report.records or [])
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
    endpoint: Endpoint,
    items: Iterable[WorkItem],
    plan: BenchPlan,
    prompts: PromptSpec,
    metrics_url: str | None,
    *,
    show_progress: bool,
) -> tuple[BenchReport, str | None]:
    """Run the load in an event loop that turns Ctrl-C into a clean stop."""
    import asyncio
    import contextlib
    import signal
    from dataclasses import replace

    from notes_cli.bench.client import gateway_sender, run_bench
    from notes_cli.bench.server_metrics import MetricsSampler
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
        send, close = gateway_sender(
            chosen, timeout_s=plan.timeout_s, prompts=prompts, requests=plan.requests
        )
        try:
            bar = progress(plan.requests, "bench") if show_progress else contextlib.nullcontext()
            sampler = MetricsSampler(metrics_url) if metrics_url else None
            async with sampler or contextlib.nullcontext():
                with bar as update:
                    report = await run_bench(items, send, plan, stop=stop, on_progress=update)
        finally:
            await close()
        if sampler is not None:
            report = replace(
                report, server_metrics=sampler.view(), server_metrics_error=sampler.error
            )
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
