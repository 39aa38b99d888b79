"""Drawing for `pdnotes engine simulate` and `pdnotes bench`: metric tables, the goodput
summary, the server-vs-client view and the live progress bar (stderr)."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from rich.markup import escape
from rich.table import Table

from notes_cli.render import err, out

if TYPE_CHECKING:
    from notes_cli.bench.client import BenchReport, ServerView
    from notes_cli.bench.server_metrics import MetricsView
    from notes_cli.bench.stats import Attainment, Slo, Summary
    from notes_cli.bench.sweep import SweepPoint
    from notes_cli.engine.simulate.runner import (
        ConfigResult,
        RatePoint,
        SimulateReport,
        WorkloadSpec,
    )

_SOURCES = {"timings": "llama.cpp timings"}
_METRIC_NAMES = {"ttft_ms": "TTFT", "tpot_ms": "TPOT", "itl_ms": "ITL", "e2e_ms": "E2E"}


def _ms(value: float) -> str:
    if math.isnan(value):
        return "-"
    return f"{value:,.1f}" if value < 10_000 else f"{value:,.0f}"


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value:.1%}"


def metrics_table(summaries: dict[str, Summary], title: str | None = None) -> Table:
    """TTFT / TPOT / ITL / E2E rows; mean, median, p90, p99 columns (ms)."""
    table = Table(title=title, title_justify="left", show_edge=False, pad_edge=False)
    table.add_column("ms", style="bold")
    for name in ("mean", "median", "p90", "p99"):
        table.add_column(name, justify="right")
    table.add_column("n", justify="right", style="dim")
    for key, label in _METRIC_NAMES.items():
        s = summaries[key]
        table.add_row(label, _ms(s.mean), _ms(s.median), _ms(s.p90), _ms(s.p99), str(s.count))
    return table


def _attainment_line(att: Attainment) -> str:
    """Per-request attainment: all objectives, then each one set."""
    parts = [f"SLO attainment {_pct(att.both)}"]
    each = (("TTFT", att.ttft), ("TPOT", att.tpot), ("TBT", att.tbt))
    detail = [f"{name} {_pct(v)}" for name, v in each if v is not None]
    if detail:
        parts.append(f"({', '.join(detail)})")
    return " ".join(parts)


def slo_rule(slo: Slo) -> str:
    """How a run is judged, in words: "≥90% of requests meet every SLO" or the percentiles."""
    if slo.attainment is not None:
        return f"≥{slo.attainment:.0%} of requests within every SLO"
    rules = [f"P{getattr(slo, name + '_percentile'):g} {name.upper()}" for name in slo.objectives]
    return f"{' and '.join(rules)} within SLO"


def _verdict_line(point: RatePoint, slo: Slo) -> str:
    if point.meets:
        return f"  [green]meets:[/] {slo_rule(slo)}"
    binding = f" ({point.binding.upper()} binds)" if point.binding else ""
    return f"  [red]misses:[/] {slo_rule(slo)}{binding}"


# -- simulate -------------------------------------------------------------------------------


def simulate_report(report: SimulateReport) -> None:
    """Human output of `pdnotes engine simulate`."""
    console = out()
    for result in report.results:
        chips = result.resolved.chips
        console.print(f"[bold]{result.label}[/]  [dim]{chips} chip{'s' if chips != 1 else ''}[/]")
        if result.resolved.provenance:
            console.print(f"  [dim]calibrated: {escape(result.resolved.provenance)}[/]")
        for point in result.points:
            title = _point_title(point, report.workload)
            console.print(metrics_table(point.summaries, title=title))
            if report.slo.any:
                console.print(f"  {_attainment_line(point.attainment)}")
                if point.completed:
                    console.print(_verdict_line(point, report.slo))
        if result.goodput is not None:
            console.print(f"  {_goodput_line(result, report.slo)}")
        console.print()
    if any(r.goodput is not None for r in report.results) and len(report.results) > 1:
        console.print(goodput_table(report))
    speed = report.simulated_requests / report.wall_s if report.wall_s > 0 else 0.0
    err().print(
        f"[dim]simulated {report.simulated_requests:,} requests in {report.wall_s:.2f}s "
        f"({speed:,.0f}/s), seed {report.seed}[/]"
    )


def _point_title(point: RatePoint, workload: WorkloadSpec) -> str:
    if point.rate is None:
        if workload.concurrency is not None:
            when = f"{workload.concurrency} clients in a closed loop"
        elif workload.trace is not None and workload.session_order:
            when = "in session order (each turn after its previous answer and think time)"
        elif workload.trace is not None:
            when = "at the trace's arrival times"
        else:
            when = "all sent at t=0 (no --rate)"
        return f"  {point.completed:,} requests, {when}"
    return f"  {point.rate:g} req/s ({point.rate_per_chip:.3g}/chip), {point.completed:,} requests"


def _goodput_line(result: ConfigResult, slo: Slo) -> str:
    g = result.goodput
    assert g is not None
    if g.rate == 0:
        return f"[red]goodput: no rate meets {slo_rule(slo)}[/]"
    if g.capped:
        return (
            "[yellow]goodput: every rate up to the search cap met the SLOs; the workload is too "
            "short to load the deployment (use more requests, or add a TTFT SLO)[/]"
        )
    return (
        f"[bold]goodput[/] {g.rate:.3g} req/s = [bold]{g.per_chip:.3g} req/s per chip[/] "
        f"with {slo_rule(slo)}"
    )


def goodput_table(report: SimulateReport) -> Table:
    """One row per configuration: chips, goodput, goodput per chip, relative to the best."""
    table = Table(title=f"goodput ({slo_rule(report.slo)})", title_justify="left")
    for name, justify in (
        ("configuration", "left"),
        ("chips", "right"),
        ("req/s", "right"),
        ("req/s/chip", "right"),
        ("vs best", "right"),
    ):
        table.add_column(name, justify=justify)  # type: ignore[arg-type]
    best = max((r.goodput.per_chip for r in report.results if r.goodput), default=0.0)
    for r in report.results:
        if r.goodput is None:
            continue
        share = f"{r.goodput.per_chip / best:.2f}x" if best > 0 else "-"
        table.add_row(
            r.label,
            str(r.resolved.chips),
            f"{r.goodput.rate:.3g}",
            f"{r.goodput.per_chip:.3g}",
            share,
        )
    return table


# -- bench ----------------------------------------------------------------------------------


def bench_report(report: BenchReport, target: str) -> None:
    """Human output of `pdnotes bench`."""
    from notes_cli.bench.client import TTFT_RULE

    console = out()
    status = " [yellow](interrupted: results so far)[/]" if report.interrupted else ""
    console.print(f"[bold]bench[/] {target}{status}")
    console.print(
        f"  {report.completed} completed, {report.failed} failed, {report.cancelled} cancelled "
        f"of {report.sent} sent in {report.duration_s:.2f}s"
    )
    console.print(metrics_table(report.stats.summaries()))
    console.print(
        f"  throughput {report.request_throughput:.3g} req/s, "
        f"{report.output_throughput:,.1f} output tok/s"
    )
    if report.plan.slo.any:
        console.print(
            f"  goodput {report.goodput:.3g} req/s; {_attainment_line(report.stats.attainment())}"
        )
    console.print(f"  [dim]TTFT: {TTFT_RULE}; TPOT = (E2E - TTFT) / (tokens - 1)[/]")
    if report.counted_requests:
        console.print(
            f"  [yellow]output tokens counted from chunks for {report.counted_requests} "
            "request(s): the server sent no usage[/]"
        )
    for message, count in report.errors.items():
        console.print(f"  [red]{count} x {message}[/]")
    if report.cache is not None:
        cache = report.cache
        console.print(
            f"  prompt cache: {cache.cached_tokens:,} of {cache.prompt_tokens:,} prompt tokens "
            f"served from the server's cache ({cache.hit_rate:.1%}, {cache.source}, "
            f"{cache.requests} requests)"
        )
    if report.server_metrics is not None:
        console.print(f"  {server_metrics_line(report.server_metrics)}")
    elif report.server_metrics_error:
        console.print(f"  [dim]server metrics: none ({report.server_metrics_error})[/]")
    if report.server is None:
        if (line := queue_line(report)) is not None:  # the server's /metrics saw a queue
            console.print(f"  {line}")
    else:
        console.print(server_table(report))
        console.print(f"  {queue_line(report) or NO_QUEUE}")
        if report.server.overhead_negative:
            console.print(
                f"[yellow]{report.server.overhead_negative} request(s) took longer by the "
                "server's account than by the client's (counted as 0 overhead): is "
                "--server-speed the engine's --speed?[/]"
            )


def prefix_cache_hit_rate(report: BenchReport) -> tuple[float | None, str]:
    """The share of prompt tokens the server served from its prefix cache, and who said so:
    its per-response count (exact, this run's requests only), else its /metrics counters."""
    if report.cache is not None:
        return report.cache.hit_rate, report.cache.source
    if report.server_metrics is not None and report.server_metrics.hit_rate is not None:
        return report.server_metrics.hit_rate, "/metrics"
    return None, ""


def server_metrics_line(view: MetricsView) -> str:
    """The server's Prometheus gauges (mean / peak over the samples) and cache hit rate."""
    labels = {
        "waiting": "waiting in its queue",
        "running": "running",
        "kv_usage": "KV cache used",
    }
    parts = []
    for key, label in labels.items():
        if key in view.gauges:
            mean, peak = view.gauges[key]
            if key == "kv_usage":
                parts.append(f"{label} {mean:.0%} (peak {peak:.0%})")
            else:
                parts.append(f"{label} {mean:.1f} (peak {peak:g})")
    if view.hit_rate is not None:
        parts.append(f"prefix-cache hit rate {view.hit_rate:.1%}")
    shown = ", ".join(parts) or "none of the known metrics"
    return f"server metrics ({view.samples} samples of {escape(view.url)}): {shown}"


NO_QUEUE = "[dim]no request waited in the server's queue[/]"


def queue_line(report: BenchReport) -> str | None:
    """How many requests waited in the server's queue, and how we know: the server's own
    queue time, or (llama.cpp) a prompt that started only when another request freed a slot;
    when neither, the queue the server's /metrics showed; None when nothing showed one."""
    view = report.server
    if view is not None and view.queued:
        how = (
            "each began its prompt only when another request of the run finished and freed a slot"
            if view.queue_source == "slot freed"
            else "by the server's own account"
        )
        each = view.queue_ms.mean * view.queue_ms.count / view.queued  # over those that waited
        return (
            f"[yellow]{view.queued} of {view.requests} requests waited in the server's queue, "
            f"{_ms(each)} ms each on average; {how}: time on the server's side, not the "
            "client's[/]"
        )
    metrics = report.server_metrics
    waiting = None if metrics is None else metrics.gauges.get("waiting")
    if waiting is not None and waiting[1] > 0:
        part = "the client + network overhead" if view is not None else "the client's TTFT"
        return (
            f"[yellow]requests waited in the server's queue: its /metrics showed up to "
            f"{waiting[1]:g} waiting; part of {part} is that wait, time on the server's side[/]"
        )
    return None


def server_table(report: BenchReport) -> Table:
    """The server's own timing (the engine's `usage.pd_timing`, llama.cpp's `timings`) beside
    the client's measurement, and the difference; rows the server does not report are left
    out."""
    view: ServerView | None = report.server
    assert view is not None
    client = report.stats.summaries()
    table = Table(
        title=f"server view ({_SOURCES.get(view.source, view.source)}, {view.requests} "
        "requests) vs client",
        title_justify="left",
        show_edge=False,
        pad_edge=False,
    )
    table.add_column("ms", style="bold")
    for name in ("mean", "median", "p90", "p99"):
        table.add_column(name, justify="right")
    rows = (
        ("TTFT client", client["ttft_ms"]),
        ("TTFT server", view.ttft_ms),
        ("waited in the server's queue", view.queue_ms),
        ("client + network overhead", view.overhead_ms),
        ("TPOT client", client["tpot_ms"]),
        ("TPOT server", view.tpot_ms),
        ("KV transfer (server)", view.transfer_ms),
        ("admission (server)", view.admission_ms),
    )
    for label, s in rows:
        if not s.count:
            continue
        table.add_row(label, _ms(s.mean), _ms(s.median), _ms(s.p90), _ms(s.p99))
    return table


def sweep_report(points: list[SweepPoint], target: str, plot: Path | None) -> None:
    """Human output of a `pdnotes bench` sweep: one row per load point."""
    console = out()
    console.print(f"[bold]bench sweep[/] {target}")
    table = Table(show_edge=False, pad_edge=False)
    for name in ("point", "done", "req/s", "out tok/s"):
        table.add_column(name, justify="right")
    for name in ("TTFT p50", "TTFT p99", "TPOT p50", "TPOT p99", "tok/s/user"):
        table.add_column(f"{name}", justify="right")
    hit_rates = [prefix_cache_hit_rate(p.report) for p in points]
    reported = any(rate is not None for rate, _source in hit_rates)
    if reported:
        table.add_column("cache hit", justify="right")
    for point, (hit_rate, _source) in zip(points, hit_rates, strict=True):
        report = point.report
        s = report.stats.summaries()
        user = point.tokens_per_user
        hit = [_pct(hit_rate)] if reported else []
        table.add_row(
            point.label,
            f"{report.completed}/{report.sent}",
            f"{report.request_throughput:.3g}",
            f"{report.output_throughput:,.1f}",
            _ms(s["ttft_ms"].median),
            _ms(s["ttft_ms"].p99),
            _ms(s["tpot_ms"].median),
            _ms(s["tpot_ms"].p99),
            "-" if user is None else f"{user:,.1f}",
            *hit,
        )
    console.print(table)
    console.print("  [dim]times in ms; tok/s/user = 1000 / median TPOT[/]")
    if reported:
        sources = sorted({source for rate, source in hit_rates if rate is not None})
        console.print(
            "  [dim]cache hit: the share of prompt tokens the server served from its prefix "
            f"cache ({', '.join(sources)})[/]"
        )
    failed = [p.label for p in points if not p.report.ok]
    if failed:
        console.print(f"  [red]not every request completed at: {', '.join(failed)}[/]")
    if plot is not None:
        console.print(f"  plot: {escape(str(plot))}")


@contextmanager
def progress(total: int, description: str) -> Iterator[Callable[[int, int], None]]:
    """A live progress bar on stderr (hidden when stderr is not a terminal); yields the
    `(finished, total)` callback the load generator calls."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn

    console = err()
    bar = Progress(
        "[progress.description]{task.description}",
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
        transient=True,
        disable=not console.is_terminal,
    )
    task = bar.add_task(description, total=total)

    def update(finished: int, _total: int) -> None:
        bar.update(task, completed=finished)

    with bar:
        yield update
