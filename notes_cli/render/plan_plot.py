"""`engine plan --plot FILE`: the top candidates' attainment against per-chip rate, and the
chips-vs-latency front, as one self-contained HTML page (or the charts alone as SVG).

Drawn the way engine/simulate/plot.py draws `engine simulate --plot`: inline SVG, no scripts,
nothing fetched, the same colour-blind-safe palette and round axis ticks.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from html import escape
from pathlib import Path
from typing import TYPE_CHECKING

from notes_cli.engine.simulate.plot import _COLOURS, _nice_ceiling
from notes_cli.fileio import atomic_write

if TYPE_CHECKING:
    from notes_cli.plan.planner import PlanReport

_W, _H = 720, 400
_LEFT, _RIGHT, _TOP, _BOTTOM = 64, 240, 28, 52

Series = tuple[str, Sequence[tuple[float, float]]]


def write_plan_plot(report: PlanReport, path: Path) -> Path:
    curves, front = attainment_svg(report), front_svg(report)
    if path.suffix.lower() == ".svg":
        # One file, two charts: the front below the curves.
        body = curves.replace("<svg ", '<svg y="0" ', 1) + front.replace(
            "<svg ", f'<svg y="{_H}" ', 1
        )
        text = (
            f'<svg xmlns="http://www.w3.org/2000/svg" width="{_W}" height="{2 * _H}" '
            f'viewBox="0 0 {_W} {2 * _H}">\n{body}\n</svg>\n'
        )
    else:
        text = _page(report, curves, front)
    return atomic_write(path, text)


def attainment_svg(report: PlanReport) -> str:
    """Share of requests meeting every objective against rate per chip, one line per top
    candidate; the dashed line is the target (the attainment, else the percentile)."""
    series: list[Series] = []
    for cid, points in report.curves.items():
        chips = next(r.candidate.chips for r in report.results if r.candidate.id == cid)
        series.append(
            (cid, [(p.rate / chips, p.attainment) for p in points if not math.isnan(p.attainment)])
        )
    slo = report.request.slo
    target = slo.attainment if slo.attainment is not None else slo.percentile
    return _chart(
        series,
        x_label="request rate per chip (req/s)",
        y_label="requests meeting every SLO",
        y_max=1.0,
        y_percent=True,
        target=target,
        title="Attainment vs rate (top candidates)",
    )


def front_svg(report: PlanReport) -> str:
    """Judged TTFT against total chips at the reference load: every sized candidate as a dot,
    the Pareto front as a line."""
    q = f"P{report.request.slo.percentile * 100:g}"
    others = [
        (float(p.chips), p.load.latency["ttft_ms"])
        for p in report.loads.values()
        if not math.isnan(p.load.latency["ttft_ms"])
    ]
    front = [
        (float(p.chips), p.load.latency["ttft_ms"])
        for p in report.front
        if not math.isnan(p.load.latency["ttft_ms"])
    ]
    y_max = _nice_ceiling(max((y for _, y in others), default=1.0))
    return _chart(
        [("front", front)],
        x_label=f"chips to carry {report.reference_rate:.3g} req/s",
        y_label=f"TTFT {q} (ms)",
        y_max=y_max,
        y_percent=False,
        target=report.request.slo.ttft_ms,
        title="Chips vs latency (Pareto front)",
        background=others,
    )


def _chart(
    series: list[Series],
    *,
    x_label: str,
    y_label: str,
    y_max: float,
    y_percent: bool,
    target: float | None,
    title: str,
    background: Sequence[tuple[float, float]] = (),
) -> str:
    xs = [x for _, pts in series for x, _ in pts] + [x for x, _ in background]
    x_max = _nice_ceiling(max(xs, default=1.0))
    plot_w, plot_h = _W - _LEFT - _RIGHT, _H - _TOP - _BOTTOM

    def sx(x: float) -> float:
        return _LEFT + plot_w * x / x_max

    def sy(y: float) -> float:
        return _TOP + plot_h * (1 - min(y, y_max) / y_max)

    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{_W}" height="{_H}" '
        f'viewBox="0 0 {_W} {_H}" font-family="sans-serif" font-size="12">',
        '<rect width="100%" height="100%" fill="white"/>',
        f'<text x="{_LEFT}" y="16" font-weight="bold">{escape(title)}</text>',
        f'<line x1="{sx(0)}" y1="{sy(0)}" x2="{sx(x_max)}" y2="{sy(0)}" stroke="black"/>',
        f'<line x1="{sx(0)}" y1="{sy(0)}" x2="{sx(0)}" y2="{sy(y_max)}" stroke="black"/>',
    ]
    for k in range(6):
        y = y_max * k / 5
        text = f"{y:.0%}" if y_percent else f"{y:g}"
        parts.append(f'<text x="{sx(0) - 6}" y="{sy(y) + 4:.1f}" text-anchor="end">{text}</text>')
        x = x_max * k / 5
        parts.append(f'<text x="{sx(x):.1f}" y="{sy(0) + 18}" text-anchor="middle">{x:g}</text>')
    parts.append(
        f'<text x="{_LEFT + plot_w / 2}" y="{_H - 12}" text-anchor="middle">'
        f"{escape(x_label)}</text>"
    )
    parts.append(
        f'<text transform="translate(16 {_TOP + plot_h / 2}) rotate(-90)" '
        f'text-anchor="middle">{escape(y_label)}</text>'
    )
    if target is not None and target <= y_max:
        parts.append(
            f'<line x1="{sx(0):.1f}" y1="{sy(target):.1f}" x2="{sx(x_max):.1f}" '
            f'y2="{sy(target):.1f}" stroke="#888" stroke-dasharray="4 4"/>'
        )
    parts += [
        f'<circle cx="{sx(x):.1f}" cy="{sy(y):.1f}" r="2.5" fill="#bbb"/>' for x, y in background
    ]
    for i, (label, pts) in enumerate(series):
        colour = _COLOURS[i % len(_COLOURS)]
        xy = [(sx(x), sy(y)) for x, y in sorted(pts)]
        if len(xy) > 1:
            coords = " ".join(f"{x:.1f},{y:.1f}" for x, y in xy)
            parts.append(
                f'<polyline points="{coords}" fill="none" stroke="{colour}" stroke-width="2"/>'
            )
        parts += [f'<circle cx="{x:.1f}" cy="{y:.1f}" r="3.5" fill="{colour}"/>' for x, y in xy]
        ly, lx = _TOP + 16 + 20 * i, _W - _RIGHT + 16
        parts.append(f'<rect x="{lx}" y="{ly - 9}" width="14" height="4" fill="{colour}"/>')
        parts.append(f'<text x="{lx + 20}" y="{ly - 3}">{escape(label)}</text>')
    parts.append("</svg>")
    return "\n".join(parts)


def _page(report: PlanReport, curves: str, front: str) -> str:
    req = report.request
    labels = "".join(
        f"<li><b>{escape(cid)}</b> {escape(r.candidate.label)}</li>"
        for cid in report.curves
        for r in report.results
        if r.candidate.id == cid
    )
    return (
        '<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
        "<title>pdnotes engine plan</title></head><body>\n"
        f"<h1>Plan: {escape(req.model)} over {escape(req.link)}</h1>\n"
        f"<p>SLO: {escape(req.slo.describe())}. Workload: {escape(req.workload.source)}, "
        f"{req.workload.requests} requests per probe. Seed {req.seed}. "
        f"{len(report.results)} candidates searched.</p>\n"
        f"<ul>{labels}</ul>\n{curves}\n{front}\n</body></html>\n"
    )
