"""`--plot FILE.html`: SLO attainment against per-chip rate, one line per configuration.

A self-contained HTML page with an inline SVG (no scripts, no network, no plotting library), so
it opens anywhere and diffs cleanly. The dashed line is the run's `--attainment` target, else
90% (DistServe's).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from html import escape
from pathlib import Path

from notes_cli.engine.simulate.runner import SimulateReport
from notes_cli.errors import InputError, UsageError

# Colour-blind-safe palette (Okabe–Ito).
_COLOURS = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000")
_W, _H = 720, 420
_LEFT, _RIGHT, _TOP, _BOTTOM = 64, 200, 24, 52
_TARGET = 0.9


def write_plot(report: SimulateReport, path: Path) -> Path:
    """Write the attainment plot of `report` to `path` (.html or .svg)."""
    suffix = path.suffix.lower()
    if suffix not in (".html", ".htm", ".svg"):
        raise UsageError(
            f"cannot plot to {path.name}: use a .html or .svg file",
            fix="PNG would need a plotting library; open the HTML in a browser and save it",
        )
    svg = attainment_svg(report)
    text = svg if suffix == ".svg" else _page(report, svg)
    try:
        path.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise InputError(f"cannot write plot {path}: {exc.strerror}") from exc
    return path


def attainment_svg(report: SimulateReport) -> str:
    """The chart as one <svg> element."""
    series = [
        (r.label, [(p.rate_per_chip, p.attainment.both) for p in r.points]) for r in report.results
    ]
    points = [(x, y) for _, pts in series for x, y in pts if x is not None and y is not None]
    x_max = _nice_ceiling(max((x for x, _ in points), default=1.0))
    plot_w, plot_h = _W - _LEFT - _RIGHT, _H - _TOP - _BOTTOM

    def sx(x: float) -> float:
        return _LEFT + plot_w * x / x_max

    def sy(y: float) -> float:
        return _TOP + plot_h * (1 - y)

    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{_W}" height="{_H}" '
        f'viewBox="0 0 {_W} {_H}" font-family="sans-serif" font-size="12">',
        '<rect width="100%" height="100%" fill="white"/>',
    ]
    parts += _axes(sx, sy, x_max, plot_w, plot_h)
    target = report.slo.attainment or _TARGET  # the run's own target when it set one
    parts.append(
        f'<line x1="{sx(0):.1f}" y1="{sy(target):.1f}" x2="{sx(x_max):.1f}" '
        f'y2="{sy(target):.1f}" stroke="#888" stroke-dasharray="4 4"/>'
    )
    for i, (label, pts) in enumerate(series):
        colour = _COLOURS[i % len(_COLOURS)]
        xy = [(sx(x), sy(y)) for x, y in pts if x is not None and y is not None]
        if len(xy) > 1:
            coords = " ".join(f"{x:.1f},{y:.1f}" for x, y in xy)
            parts.append(
                f'<polyline points="{coords}" fill="none" stroke="{colour}" stroke-width="2"/>'
            )
        parts += [f'<circle cx="{x:.1f}" cy="{y:.1f}" r="3" fill="{colour}"/>' for x, y in xy]
        ly = _TOP + 16 + 20 * i
        lx = _W - _RIGHT + 16
        parts.append(f'<rect x="{lx}" y="{ly - 9}" width="14" height="4" fill="{colour}"/>')
        parts.append(f'<text x="{lx + 20}" y="{ly - 3}">{escape(label)}</text>')
    parts.append("</svg>")
    return "\n".join(parts)


def _axes(
    sx: Callable[[float], float],
    sy: Callable[[float], float],
    x_max: float,
    plot_w: float,
    plot_h: float,
) -> list[str]:
    parts = [
        f'<line x1="{sx(0)}" y1="{sy(0)}" x2="{sx(x_max)}" y2="{sy(0)}" stroke="black"/>',
        f'<line x1="{sx(0)}" y1="{sy(0)}" x2="{sx(0)}" y2="{sy(1)}" stroke="black"/>',
    ]
    for k in range(6):
        y = k / 5
        parts.append(f'<text x="{sx(0) - 6}" y="{sy(y) + 4:.1f}" text-anchor="end">{y:.0%}</text>')
    for k in range(6):
        x = x_max * k / 5
        parts.append(f'<text x="{sx(x):.1f}" y="{sy(0) + 18}" text-anchor="middle">{x:g}</text>')
    parts.append(
        f'<text x="{_LEFT + plot_w / 2}" y="{_H - 12}" text-anchor="middle">'
        "request rate per chip (req/s)</text>"
    )
    parts.append(
        f'<text transform="translate(16 {_TOP + plot_h / 2}) rotate(-90)" '
        'text-anchor="middle">SLO attainment</text>'
    )
    return parts


def _nice_ceiling(value: float) -> float:
    """The smallest 1, 2 or 5 × 10^k at or above `value`, so axis ticks are round numbers."""
    if value <= 0:
        return 1.0
    scale = 10.0 ** math.floor(math.log10(value))
    for step in (1, 2, 5, 10):
        if step * scale >= value:
            return float(step * scale)
    return float(10 * scale)


def _page(report: SimulateReport, svg: str) -> str:
    slo = report.slo
    objectives = (
        ", ".join(
            f"{name} ≤ {value:g} ms"
            for name, value in (("TTFT", slo.ttft_ms), ("TPOT", slo.tpot_ms))
            if value is not None
        )
        or "none"
    )
    w = report.workload.to_json()
    return (
        '<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
        "<title>pdnotes simulate: SLO attainment</title></head><body>\n"
        "<h1>SLO attainment against request rate</h1>\n"
        f"<p>SLOs: {escape(objectives)}. Workload: {escape(str(w))}. Seed {report.seed}.</p>\n"
        f"{svg}\n</body></html>\n"
    )
