"""Drawing for `pdnotes engine plan`: the summary, the top candidates, why the runner-ups lose,
the chips-vs-latency front, and progress lines on stderr."""

from __future__ import annotations

import math
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from rich.table import Table

from notes_cli.render import err, escape, out

if TYPE_CHECKING:
    from rich.progress import TaskID

    from notes_cli.plan.evaluate import LoadPoint
    from notes_cli.plan.planner import PlanReport
    from notes_cli.plan.slo import PlanSlo
    from notes_cli.plan.trace_check import TraceCheck

_PHASES = {
    "capacity": "candidates searched",
    "refine": "capacities searched on to the tolerance",
    "front": "candidates sized to the reference load",
    "verify-front": "front rows verified by a longer simulation",
    "verify": "claims verified by a longer simulation",
    "lower": "refuted claims searched again below",
    "curves": "attainment curves",
}


@contextmanager
def progress() -> Iterator[Callable[[str, int, int], None] | None]:
    """A `(phase, done, total)` callback drawing one bar per phase on stderr while the plan
    runs, removed when it ends; None (nothing drawn) when stderr is not a terminal, so that
    logs, pipes and `--json` consumers get no progress noise."""
    if not sys.stderr.isatty():
        yield None
        return
    from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn
    from rich.progress import Progress as Bars

    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn())
    with Bars(*columns, TimeElapsedColumn(), console=err(), transient=True) as bars:
        tasks: dict[str, TaskID] = {}

        def update(phase: str, done: int, total: int) -> None:
            if phase not in tasks:
                tasks[phase] = bars.add_task(f"{phase}: {_PHASES.get(phase, phase)}")
            bars.update(tasks[phase], completed=done, total=total)

        yield update


def _n(x: float) -> str:
    if x is None or math.isnan(x):
        return "-"
    return f"{x:,.1f}" if abs(x) < 10_000 else f"{x:,.0f}"


def trace_check_line(check: TraceCheck, slo: PlanSlo) -> None:
    """The best replayed on the trace itself (plan/trace_check.py), in one line."""
    q = f"P{slo.percentile * 100:g}"

    def ms(value: float | None) -> str:
        return "-" if value is None else f"{value:,.1f} ms"

    how = "in session order" if check.session_order else "at its times"
    verdict = "meets the SLOs" if check.met else f"misses the SLOs ({check.binding or 'n/a'})"
    out().print(
        escape(
            f"on the trace itself ({check.requests:,} requests {how}, prefix cache "
            f"{check.prefix_cache_hit:.1%} hit): {q} TTFT {ms(check.ttft_ms)}, "
            f"{q} TPOT {ms(check.tpot_ms)}; the best {verdict}"
        )
    )


def plan_report(report: PlanReport) -> None:
    """Human output of `pdnotes engine plan` (stdout)."""
    console = out()
    req = report.request
    counts = report.pruned
    console.print(
        f"[bold]Plan[/] {escape(req.model)} over {escape(req.link)}; "
        f"SLO {escape(req.slo.describe())}; workload {escape(req.workload.source)}, "
        f"{req.workload.requests} requests per probe, seed {req.seed}"
    )
    console.print(
        f"Searched {len(report.results)} candidates: pruned by the roofline "
        f"{counts.get('memory', 0)} (memory) + {counts.get('slo', 0)} (SLO), skipped by the "
        f"capacity bound {counts.get('bound', 0)} and by one probe at the rate needed to enter "
        f"the top {req.shown} {counts.get('entry', 0)}, simulated "
        f"{report.simulated_candidates}, {len(report.ranking)} meet the SLOs at some rate. "
        f"{report.simulated_requests:,} requests simulated in {report.wall_s:.1f} s on "
        f"{escape(report.executor)}."
    )
    best = report.best
    if best is None:
        console.print("[bold red]No candidate meets the SLOs[/] at any rate; the closest misses:")
        for r in report.results[:5]:
            console.print(f"  {escape(r.candidate.label)}: {escape('; '.join(r.binding))}")
        return
    unit = "req/s per $/h" if req.per_price else "req/s per chip"
    cand = best.result.candidate
    console.print()
    console.print(
        f"[bold green]Best[/] {escape(cand.label)} ({cand.id}): "
        f"{best.result.capacity:.3g} req/s on {cand.chips} chip{'s' if cand.chips > 1 else ''}"
        f" = [bold]{best.score:.3g} {unit}[/]"
    )
    check = best.result.verification
    if check is not None:
        console.print(f"  verified: {escape(_verification(report, check))}")
    if best.result.refuted is not None:
        console.print(f"  lowered: {escape(_refutation(best.result.refuted))}")
    second = report.checks.get(cand.id)
    if second is not None:
        style = "bold yellow" if second.uncertain else ""
        text = escape(second.summary())
        console.print(
            f"  second opinion: [{style}]{text}[/]" if style else f"  second opinion: {text}"
        )
    if best.result.binding:
        console.print(f"  at higher load: {escape('; '.join(best.result.binding))}")
    replicas = report.replicas_needed()
    if replicas is not None and req.target_rate is not None:
        cost = f", ${best.total:,.4g}/h" if req.per_price and best.total is not None else ""
        console.print(
            f"  target {req.target_rate:g} req/s: [bold]{replicas} replica"
            f"{'s' if replicas > 1 else ''}[/] ({replicas * cand.chips} chips{cost}), the "
            "cheapest of the candidates for that rate"
        )
    console.print()
    console.print(_top_table(report, unit))
    runner_ups = report.runner_ups()
    if runner_ups:
        console.print()
        console.print("[bold]Why the runner-ups lose[/]")
        for scored, why in runner_ups:
            console.print(f"  {scored.candidate_id} {escape(why)}")
    lowered = [r for r in report.lowered if r.candidate.id != cand.id]
    if lowered:
        console.print()
        console.print("[bold]Claims lowered by their verification[/]")
        for r in lowered:
            assert r.refuted is not None
            console.print(
                f"  {r.candidate.id} {escape(r.candidate.label)}: {escape(_refutation(r.refuted))}"
                f"; verified {r.capacity:.3g} req/s"
            )
    if report.front:
        console.print()
        console.print(_front_table(report))
        console.print(f"  {_front_checks(report)}")
    missed = report.front_missed
    if missed:
        ids = ", ".join(p.candidate_id for p in missed)
        console.print(f"  left off: {escape(ids)} missed the SLOs at the reference load")


def _front_checks(report: PlanReport) -> str:
    """One line on the front's verifications (per row in --json): the table has no room."""
    shares = [p.load.attainment for p in report.front]
    counts = [p.load.requests for p in report.front]

    def span(low: str, high: str) -> str:
        return low if low == high else f"{low}–{high}"

    return (
        "each row verified by one simulation of a replica at its load: attainment "
        f"{span(f'{min(shares):.0%}', f'{max(shares):.0%}')} of "
        f"{span(f'{min(counts):,}', f'{max(counts):,}')} requests judged after a warm-up"
    )


def _verification(report: PlanReport, point: LoadPoint) -> str:
    q = f"P{report.request.slo.percentile * 100:g}"
    latency = ", ".join(
        f"{name} {q} {_n(point.latency[key])} ms"
        for name, key in (("TTFT", "ttft_ms"), ("TPOT", "tpot_ms"))
        if not math.isnan(point.latency[key])
    )
    return (
        f"{point.requests:,} requests at {point.rate:.3g} req/s after a warm-up: "
        f"{latency}; attainment {point.attainment:.1%}; SLOs met"
    )


def _refutation(point: LoadPoint) -> str:
    why = "; ".join(point.binding) or "SLOs missed"
    return (
        f"the search's {point.rate:.3g} req/s was refuted by a {point.requests:,}-request "
        f"verification ({why})"
    )


def _top_table(report: PlanReport, unit: str) -> Table:
    req = report.request
    n = min(req.top, len(report.ranking))
    target = req.target_rate
    total = "total $/h" if req.per_price else "total chips"
    by = unit if target is None else f"{total} for {target:g} req/s"
    table = Table(title=f"Top {n} by {by}", title_justify="left", show_edge=False, pad_edge=False)
    columns = [("#", "right"), ("id", "left"), ("candidate", "left"), ("chips", "right")]
    columns += [("$/h", "right"), ("req/s", "right"), (unit, "right")]
    if target is not None:
        columns += [("replicas", "right"), (total, "right")]
    checked = bool(report.checks)
    extra = [("verified", "right")] + ([("vs aiconfigurator", "right")] if checked else [])
    for name, justify in (*columns, *extra):
        table.add_column(name, justify=justify)  # type: ignore[arg-type]
    for i, s in enumerate(report.ranking[: req.top], 1):
        c = s.result.candidate
        price = "-" if s.price_per_hour is None else f"{s.price_per_hour:g}"
        check = s.result.verification
        verified = "-" if check is None else f"{check.attainment:.0%} of {check.requests:,}"
        cells = [str(i), c.id, escape(c.label), str(c.chips), price]
        cells += [f"{s.result.capacity:.3g}", f"{s.score:.3g}"]
        if target is not None:
            cells += [str(s.replicas), "-" if s.total is None else f"{s.total:g}"]
        cells.append(verified)
        if checked:
            cells.append(_second_opinion(report, c.id))
        table.add_row(*cells)
    return table


def _second_opinion(report: PlanReport, candidate_id: str) -> str:
    """A top-table cell: pdnotes / aiconfigurator tokens/s per GPU, and whether uncertain."""
    check = report.checks.get(candidate_id)
    if check is None or not check.checked or check.ratios is None:
        return "not checked"
    ratio = check.ratios.get("tokens/s/GPU")
    cell = "-" if ratio is None else f"{ratio:.2f}x"
    return f"{cell} uncertain" if check.uncertain else cell


def _front_table(report: PlanReport) -> Table:
    q = f"P{report.request.slo.percentile * 100:g}"
    table = Table(
        title=f"Chips vs latency at {report.reference_rate:.3g} req/s (Pareto front)",
        title_justify="left",
        show_edge=False,
        pad_edge=False,
    )
    for name in ("chips", "replicas", "id", "candidate", f"TTFT {q} ms", f"TPOT {q} ms"):
        table.add_column(name, justify="left" if name in ("id", "candidate") else "right")
    for p in report.front:
        table.add_row(
            str(p.chips),
            str(p.replicas),
            p.candidate_id,
            escape(p.label),
            _n(p.load.latency["ttft_ms"]),
            _n(p.load.latency["tpot_ms"]),
        )
    return table


def sketch_text(text: str) -> None:
    """A launch sketch as plain text (stdout), exactly as written: it is meant to be copied."""
    out().print(text, markup=False, highlight=False, end="")
