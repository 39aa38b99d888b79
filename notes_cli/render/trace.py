"""`pdnotes trace show` as text."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from notes_cli.render import escape, line

if TYPE_CHECKING:
    from notes_cli.trace.cost import CostReport
    from notes_cli.trace.summary import TraceSummary


def summary_report(path: Path, summary: TraceSummary) -> None:
    data = summary.to_json()
    line(f"[bold]{escape(str(path))}[/bold]")
    rows = [
        ("requests", f"{summary.requests:,} over {data['duration_s']:,} s"),
        ("sessions", _sessions(summary)),
        (
            "mean input / output",
            f"{data['mean_input_tokens']:,} / {data['mean_output_tokens']:,} tokens",
        ),
        ("prompt growth per turn", _optional(data["mean_prompt_growth_per_turn"], " tokens")),
        (
            "prefix reuse",
            f"{summary.prefix_reuse:.1%} of {summary.blocks:,} blocks seen before",
        ),
        ("upstream cached tokens", _optional(summary.cached_tokens, "")),
        ("arrival gaps CV", _burstiness(summary.gap_cv)),
    ]
    width = max(len(name) for name, _ in rows)
    for name, value in rows:
        line(f"  {name:<{width}}  {escape(value)}")


def _sessions(summary: TraceSummary) -> str:
    if not summary.sessions:
        return "none recorded"
    return (
        f"{summary.sessions:,}, {summary.turns_per_session:.1f} turns each on average, "
        f"at most {summary.max_turns}"
    )


def _optional(value: float | int | None, unit: str) -> str:
    return "not recorded" if value is None else f"{value:,}{unit}"


def _burstiness(cv: float | None) -> str:
    if cv is None:
        return "too few arrivals"
    shape = "bursty" if cv > 1.2 else "Poisson-like" if cv > 0.8 else "regular"
    return f"{cv:.2f} ({shape}; 1 = Poisson)"


def cost_report(path: Path, model: str, report: CostReport, named_volume: bool) -> None:
    """`pdnotes trace cost` as text: the volume, the cluster, then a row per gateway model."""
    volume, cluster = report.volume, report.cluster
    cached = {
        "recorded": "the upstream's recorded cache hits",
        "hash_ids": "an unbounded prefix cache over hash_ids",
        "none": "no cache (the trace records neither hits nor hash_ids)",
    }[volume.cached_from]
    where = "named with --per-day" if named_volume else "the trace's own volume"
    line(f"[bold]{escape(str(path))}[/bold]")
    line(
        f"  {volume.requests:,} requests over {volume.span_s:,.3f} s: "
        f"{report.requests_per_day:,.0f} requests a day ({where})"
    )
    share = volume.cached_tokens / volume.input_tokens if volume.input_tokens else 0.0
    line(f"  prompt tokens cached {share:.1%} ({escape(cached)})")
    line(
        f"  self-hosted: {escape(model)} on {escape(cluster.label)}, "
        f"{cluster.capacity_rps:,.2f} req/s per replica at the SLOs, "
        f"${cluster.per_hour:,.2f}/h; {report.replicas} replica(s): "
        f"${report.self_hosted_per_day:,.2f} a day"
    )
    rows = [
        (
            g.price.model,
            f"${g.per_request:,.5f}",
            f"${g.per_day:,.2f}",
            "never (a full replica costs more per request)"
            if g.break_even_per_day is None
            else f"{g.break_even_per_day:,.0f} requests a day",
        )
        for g in report.gateways
    ]
    head = ("gateway model", "per request", "per day", "self-hosting breaks even at")
    widths = [max(len(r[i]) for r in [head, *rows]) for i in range(3)]
    for row in [head, *rows]:
        cells = [f"{row[i]:<{widths[i]}}" for i in range(3)]
        line(escape(f"  {'  '.join(cells)}  {row[3]}"))
    for g in report.gateways:
        line(escape(f"  {g.price.model}: {g.price.source}, {g.price.date}"))
