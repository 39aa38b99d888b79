"""pdnotes bench: load any OpenAI-compatible endpoint and report TTFT, TPOT, ITL, E2E and
goodput with vLLM's definitions.

Exit codes: 0 every request completed; 1 some failed, timed out or were cancelled by
--duration; 2 bad flags or dataset; 130 interrupted by Ctrl-C (the results so far are printed
first, JSON included).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
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
    from notes_cli.bench.prompts import PromptSpec
    from notes_cli.bench.workload import WorkItem
    from notes_cli.clients.endpoint import Endpoint

INTERRUPTED_EXIT = 130
MAX_IN_FLIGHT = 10_000  # requests in flight: each is a connection
MAX_SECONDS = 86_400.0  # a day, for --timeout and --duration
MAX_GPUS = 100_000  # --gpus: larger than any cluster one endpoint fronts
MAX_TURNS = 1_000  # --turns: a conversation's turns


def bench(
    base_url: str = typer.Option(
        ..., "--base-url", help="OpenAI-compatible base URL, e.g. http://127.0.0.1:8000/api."
    ),
    model: str | None = typer.Option(None, "--model", help="Model id (default: the first served)."),
    key_env: str | None = typer.Option(
        None, "--key-env", help="Environment variable holding the API key (never printed)."
    ),
    api: str = typer.Option(
        "chat", "--api", help="chat (chat completions), responses or anthropic (Messages)."
    ),
    rate: float | None = ranged(
        None, "--rate", low=RATE[0], high=RATE[1], help="Poisson arrival rate (req/s)."
    ),
    burstiness: float = ranged(
        1.0, "--burstiness", low=BURSTINESS[0], high=BURSTINESS[1], help="Gamma shape; 1 = Poisson."
    ),
    concurrency: str | None = typer.Option(
        None,
        "--concurrency",
        "-c",
        help="At most this many requests in flight; a list (1,4,16,64) runs one point each.",
    ),
    rates: str | None = typer.Option(
        None, "--rates", help="Run one point per Poisson rate (req/s), e.g. 1,2,4,8."
    ),
    plot: Path | None = typer.Option(
        None, "--plot", help="With a sweep: write TTFT / TPOT vs throughput to FILE.svg|.html."
    ),
    gpus: int | None = ranged(
        None,
        "--gpus",
        low=1,
        high=MAX_GPUS,
        help="GPUs behind the endpoint: adds the tokens/s per GPU Pareto front.",
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
    trace: Path | None = typer.Option(
        None,
        "--trace",
        help="Replay an agent trace (docs/trace.md) at its own times: prompts share text "
        "exactly where its requests share hash_ids, so the server's prefix cache sees its reuse.",
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
    seed: int | None = ranged(
        None,
        "--seed",
        low=SEED[0],
        high=SEED[1],
        help="Seed for arrivals, lengths and prompt text (default 0 for arrivals and lengths, "
        "and prompts no earlier run sent). With a seed, a run sends the same prompts again; "
        "either way every request and every sweep point has its own.",
    ),
    shared_prefix: int = ranged(
        0,
        "--shared-prefix",
        low=0,
        high=INPUT_LEN[1],
        help="Tokens every prompt of a group starts with, to measure prefix caching on purpose "
        "(default 0: every prompt is unique, in this run and against earlier runs, so a prefix "
        "cache cannot hit).",
    ),
    prefix_groups: int = ranged(
        1,
        "--prefix-groups",
        low=1,
        high=REQUESTS[1],
        help="Groups of requests sharing one prefix (request i: i mod G).",
    ),
    turns: int = ranged(
        1,
        "--turns",
        low=1,
        high=MAX_TURNS,
        help="Turns per conversation: each turn resends the history with a new question "
        "(-n counts turns).",
    ),
    input_lens: str | None = typer.Option(
        None,
        "--input-lens",
        help="A grid for `pdnotes engine calibrate`: one --concurrency sweep per prompt length "
        "(e.g. --input-lens 128,512 --concurrency 1,2,4 --records run.jsonl writes "
        "run.i128.c1.jsonl ...). Points run one after another, each about -n x its median E2E "
        "/ concurrency; after each point bench says how long the rest will take from the "
        "engine's answers so far. A slow engine (a CPU): -n 8 --output-len 16.",
    ),
    records: Path | None = typer.Option(
        None,
        "--records",
        help="Write one record per request to FILE (.jsonl or .csv; schema in "
        "docs/simulate-bench.md).",
    ),
    ignore_eos: bool = typer.Option(
        False,
        "--ignore-eos",
        help="Ask the server to generate all --output-len tokens (ignore_eos; vLLM, SGLang, "
        "llama.cpp), so every request has the same output length.",
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

    if api not in ("chat", "responses", "anthropic"):
        raise UsageError(f"--api must be chat, responses or anthropic, not {api!r}")
    from notes_cli.bench.sweep import check_plot_path, parse_points

    levels = parse_points(concurrency, "--concurrency", integer=True) if concurrency else []
    rate_points = parse_points(rates, "--rates", integer=False) if rates else []
    _within(levels, "--concurrency", 1, MAX_IN_FLIGHT)
    _within(rate_points, "--rates", *RATE)
    if rate_points and rate is not None:
        raise UsageError("--rate and --rates: give one rate, or the list to sweep")
    if rate_points and len(levels) > 1:
        raise UsageError("sweep --concurrency or --rates, not both at once")
    sweeping = len(levels) > 1 or bool(rate_points)
    if plot is not None:
        if not sweeping:
            raise UsageError("--plot draws a sweep: give --concurrency 1,4,16 or --rates 1,2,4")
        check_plot_path(plot)
    if records is not None:
        from notes_cli.bench.records import records_format

        records_format(records)
    from notes_cli.bench.prompts import new_salt

    lengths = (
        [int(v) for v in parse_points(input_lens, "--input-lens", integer=True)]
        if (input_lens)
        else []
    )
    _within([float(v) for v in lengths], "--input-lens", *INPUT_LEN)
    if lengths and (not levels or rate_points or dataset is not None or plot is not None):
        raise UsageError(
            "--input-lens runs a grid of prompt lengths x --concurrency levels",
            fix="give --concurrency (e.g. 1,2,4), and no --rates, --dataset or --plot",
        )
    if trace is not None:
        clash = [flag for flag, given in (("--dataset", dataset is not None),
                 ("--shared-prefix", shared_prefix > 0), ("--turns", turns > 1),
                 ("--input-lens", bool(lengths))) if given]  # fmt: skip
        if clash:
            raise UsageError(f"--trace brings its own prompts and lengths: drop {clash[0]}")
    prompts = PromptSpec(
        seed=seed or 0,
        shared_prefix=shared_prefix,
        prefix_groups=prefix_groups,
        turns=turns,
        # A server keeps earlier runs' prompts in its prefix cache: without --seed, this run's
        # prompts are its own (a fixed seed asks for the same prompts again).
        salt=new_salt() if seed is None else "",
    )
    plan = BenchPlan(
        requests=requests,
        concurrency=int(levels[0]) if len(levels) == 1 else None,
        duration_s=duration,
        timeout_s=timeout,
        slo=Slo(slo_ttft_ms, slo_tpot_ms, slo_tbt_ms),
        server_speed=server_speed,
        keep_records=records is not None,
    )

    if trace is not None:
        from dataclasses import replace

        from notes_cli.bench.trace_replay import trace_workload

        traced = trace_workload(trace, limit=requests, rate=None, burstiness=burstiness, seed=0)
        prompts = replace(prompts, blocks=traced.blocks, block_words=traced.block_words)
        plan = replace(plan, requests=len(traced.items))

    def workload(at_rate: float | None, length: int = input_len) -> Iterable[WorkItem]:
        if trace is not None:
            return trace_workload(
                trace, limit=requests, rate=at_rate, burstiness=burstiness, seed=seed or 0
            ).items
        return _workload(
            requests, length, output_len, dist, dataset, at_rate, burstiness, seed or 0
        )

    endpoint = _endpoint(base_url, model, key_env, api)
    from notes_cli.bench.server_metrics import metrics_url as default_metrics_url
    from notes_cli.clients.urls import require_url

    if metrics_url not in (None, "off"):
        metrics_url = require_url(metrics_url, flag="--metrics-url")

    scrape = metrics_url or default_metrics_url(base_url)
    extra: dict[str, object] | None = {"ignore_eos": True} if ignore_eos else None
    run = _Runner(endpoint, prompts, None if scrape == "off" else scrape, not as_json, extra)
    meta = {"api": api, "output_len": output_len, "requests": requests, "seed": seed,
            "ignore_eos": ignore_eos}  # fmt: skip
    if lengths:
        _grid(run, plan, workload, levels, lengths, records, meta, as_json, base_url)
        return
    meta["input_len"] = input_len
    if sweeping:
        _sweep(
            run, plan, workload, levels, rate_points, records, plot, gpus, as_json, base_url, meta
        )
        return
    started = _now()
    report = run(workload(rate), plan, "bench")
    if records is not None:
        from notes_cli.bench.records import write_records

        write_records(records, report.records or [])
        point = {"concurrency": plan.concurrency, "rate": rate}
        _write_meta(records, run, base_url, started, {**meta, **point}, report)
    if as_json:
        render.emit_json({**report.to_json(), "target": run.target_json(base_url, api)})
    else:
        from notes_cli.render.bench import bench_report

        bench_report(report, run.target)
    _exit(report.ok, report.interrupted)


def _within(values: list[float], flag: str, low: float, high: float) -> None:
    """Each value of a swept list within the flag's range (ranged() checks single values)."""
    for value in values:
        if not low <= value <= high:
            raise UsageError(f"{flag}: {value:g} is outside the range {low:g} to {high:g}")


def _exit(ok: bool, interrupted: bool) -> None:
    # SystemExit, not typer.Exit: cli.main runs Typer with standalone_mode=False, where
    # typer.Exit becomes a return value that main drops (see cli/doctor.py).
    if interrupted:
        raise SystemExit(INTERRUPTED_EXIT)
    if not ok:
        raise SystemExit(1)


class _Runner:
    """Runs one load point; remembers the model the first point resolved."""

    def __init__(
        self,
        endpoint: Endpoint,
        prompts: PromptSpec,
        metrics_url: str | None,
        progress: bool,
        extra_body: dict[str, object] | None,
    ) -> None:
        self.endpoint, self.prompts, self.metrics_url = endpoint, prompts, metrics_url
        self.progress, self.extra_body = progress, extra_body

    def __call__(
        self, items: Iterable[WorkItem], plan: BenchPlan, label: str, point: int = 0
    ) -> BenchReport:
        from dataclasses import replace

        report, served = _run(
            self.endpoint,
            items,
            plan,
            # Each sweep point its own prompts: the point before would have them in its cache.
            replace(self.prompts, point=point),
            self.metrics_url,
            show_progress=self.progress,
            description=label,
            extra_body=self.extra_body,
        )
        self.endpoint = replace(self.endpoint, model=served)
        return report

    @property
    def target(self) -> str:
        from notes_cli.secrets import mask_url

        return f"{mask_url(self.endpoint.request_url())} model={self.endpoint.model}"

    def target_json(self, base_url: str, api: str) -> dict[str, object]:
        from notes_cli.secrets import mask_url

        return {
            "base_url": mask_url(base_url),
            "api": api,
            "model": self.endpoint.model,
            "key": self.endpoint.masked_key if self.endpoint.key else None,
        }


def _now() -> str:
    from datetime import UTC, datetime

    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _write_meta(
    records: Path,
    run: _Runner,
    base_url: str,
    started: str,
    meta: dict[str, object],
    report: BenchReport,
) -> None:
    """The records' provenance, and the server's own metrics (its running requests: the batch
    it really ran) where it published them."""
    from notes_cli.bench.records import write_meta
    from notes_cli.secrets import mask_url

    target = {"base_url": mask_url(base_url), "model": run.endpoint.model, "started": started}
    view = report.server_metrics
    server = {"server_metrics": view.to_json() if view is not None else None}
    write_meta(records, {**target, **meta, **server})


def _grid(
    run: _Runner,
    plan: BenchPlan,
    workload: Callable[..., Iterable[WorkItem]],
    levels: list[float],
    lengths: list[int],
    records: Path | None,
    meta: dict[str, object],
    as_json: bool,
    base_url: str,
) -> None:
    """--input-lens: one concurrency sweep per prompt length (`run.i128.c2.jsonl` ...), the
    grid `pdnotes engine calibrate` fits; one table per length, or one JSON document."""
    import functools

    from notes_cli import render

    clock = _Remaining(plan.requests, [c for _ in lengths for c in levels])
    documents: list[dict[str, object]] = []
    ok, interrupted = True, False
    for length in lengths:
        if not as_json:
            render.note(f"prompt length {length} tokens")
        where = (
            None
            if records is None
            else records.with_name(f"{records.stem}.i{length}{records.suffix}")
        )
        at_length = functools.partial(workload, length=length)
        done = _sweep(
            run, plan, at_length, levels, [], where, None, None,
            as_json, base_url, {**meta, "input_len": length}, clock=clock, finish=False,
        )  # fmt: skip
        documents.append(done[0])
        ok, interrupted = ok and done[1], interrupted or done[2]
        if interrupted:
            break
    if as_json:
        render.emit_json({"schema": "pdnotes.bench.grid/1", "ok": ok, "sweeps": documents})
    _exit(ok, interrupted)


class _Remaining:
    """How long the points still to run will take, from the median E2E measured so far: each
    point of n requests at concurrency c takes about n x E2E / c."""

    def __init__(self, requests: int, levels: list[float]) -> None:
        self.requests, self.levels, self.done = requests, levels, 0
        self.ms_per_request_slot: list[float] = []

    def point_done(self, report: BenchReport) -> str | None:
        import math

        e2e = report.stats.summaries()["e2e_ms"].median
        self.done += 1
        if not math.isnan(e2e) and e2e > 0:
            self.ms_per_request_slot.append(e2e)
        left = self.levels[self.done :]
        if not left or not self.ms_per_request_slot:
            return None
        e2e_now = max(self.ms_per_request_slot)
        seconds = sum(self.requests * e2e_now / c for c in left) / 1000.0
        return (
            f"{len(left)} point(s) left, about {seconds:,.0f} s at the slowest median E2E so far "
            f"({e2e_now:,.0f} ms)"
        )


def _sweep(
    run: _Runner,
    plan: BenchPlan,
    workload: Callable[[float | None], Iterable[WorkItem]],
    levels: list[float],
    rate_points: list[float],
    records: Path | None,
    plot: Path | None,
    gpus: int | None,
    as_json: bool,
    base_url: str,
    meta: dict[str, object],
    *,
    clock: _Remaining | None = None,
    finish: bool = True,
) -> tuple[dict[str, object], bool, bool]:
    """One run per load point, the same seeded lengths and arrivals each time (fresh prompts
    at each point, numbered across a grid's sweeps); then the table and plot. `finish`: print
    the JSON document and exit; else return (document, ok, interrupted)."""
    from dataclasses import replace

    from notes_cli import render
    from notes_cli.bench.sweep import SweepPoint, point_file, sweep_json, write_sweep_plot

    kind, values = ("rate", rate_points) if rate_points else ("concurrency", levels)
    clock = clock or _Remaining(plan.requests, values)
    points: list[SweepPoint] = []
    for index, value in enumerate(values, 1):
        if kind == "rate":
            point_plan, items = plan, workload(value)
        else:
            point_plan, items = replace(plan, concurrency=int(value)), workload(None)
        label = f"{'c=' if kind == 'concurrency' else 'rate '}{value:g} ({index}/{len(values)})"
        started = _now()
        report = run(items, point_plan, label, point=clock.done)
        point = SweepPoint(kind, value, report)
        points.append(point)
        if records is not None:
            from notes_cli.bench.records import write_records

            where = write_records(point_file(records, point), report.records or [])
            load = {"concurrency": int(value), "rate": None} if kind == "concurrency" else {
                "concurrency": None, "rate": value}  # fmt: skip
            load["prompt_point"] = clock.done
            _write_meta(where, run, base_url, started, {**meta, **load}, report)
        if report.interrupted:
            break
        left = clock.point_done(report)
        if left and not as_json:
            render.note(left)
    if plot is not None:
        write_sweep_plot(points, plot, run.target, gpus)
    document = sweep_json(points, gpus)
    document["target"] = run.target_json(base_url, run.endpoint.protocol)
    ok, interrupted = all(p.report.ok for p in points), any(p.report.interrupted for p in points)
    if as_json and finish:
        render.emit_json(document)
    elif not as_json:
        from notes_cli.render.bench import sweep_report

        sweep_report(points, run.target, plot)
    if finish:
        _exit(ok, interrupted)
    return document, ok, interrupted


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
    description: str = "bench",
    extra_body: dict[str, object] | None = None,
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
            chosen,
            timeout_s=plan.timeout_s,
            prompts=prompts,
            requests=plan.requests,
            extra_body=extra_body,
        )
        try:
            bar = (
                progress(plan.requests, description) if show_progress else contextlib.nullcontext()
            )
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
