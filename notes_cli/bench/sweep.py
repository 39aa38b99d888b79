"""`pdnotes bench --concurrency 1,4,16,64` / `--rates 1,2,4`: several load points in one command,
the same seeded workload at each, a table and a self-contained SVG / HTML plot.

The plot has two panels, TTFT and TPOT (median and P99) against output throughput, one point per
load level, so the knee where latency climbs shows directly; with `--gpus N` a third panel is
the Pareto front of output tokens/s per GPU against tokens/s per user (1000 / median TPOT), the
trade-off `vllm bench sweep` and inference-perf chart. No plotting library, no scripts, no
network: it opens anywhere and diffs cleanly (like notes_cli/engine/simulate/plot.py).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from html import escape
from pathlib import Path
from typing import TYPE_CHECKING, Any

from notes_cli.errors import UsageError

if TYPE_CHECKING:
    from notes_cli.bench.client import BenchReport

_COLOURS = ("#0072B2", "#D55E00", "#009E73", "#CC79A7")  # Okabe–Ito, colour-blind safe
_PANEL_W, _H = 400, 320
_LEFT, _RIGHT, _TOP, _BOTTOM = 64, 16, 40, 52
MAX_POINTS = 32


def parse_points(text: str, flag: str, *, integer: bool) -> list[float]:
    """ "1,4,16" → [1, 4, 16]: positive, at most MAX_POINTS, each once, in the order given."""
    values: list[float] = []
    for part in text.split(","):
        part = part.strip()
        try:
            value = float(int(part)) if integer else float(part)
        except ValueError:
            kind = "whole numbers" if integer else "numbers"
            raise UsageError(f"{flag} takes {kind} separated by commas, not {text!r}") from None
        if not value > 0 or math.isinf(value):
            raise UsageError(f"{flag} values must be positive, not {part}")
        if value in values:
            raise UsageError(f"{flag} lists {part} twice")
        values.append(value)
    if len(values) > MAX_POINTS:
        raise UsageError(f"{flag} takes at most {MAX_POINTS} values")
    return values


@dataclass(frozen=True)
class SweepPoint:
    kind: str  # "concurrency" or "rate"
    value: float
    report: BenchReport

    @property
    def label(self) -> str:
        return f"c={self.value:g}" if self.kind == "concurrency" else f"{self.value:g} req/s"

    @property
    def tokens_per_user(self) -> float | None:
        """Decode speed one user sees: 1000 / median TPOT (tokens/s)."""
        tpot = self.report.stats.summaries()["tpot_ms"].median
        return 1000 / tpot if tpot > 0 and not math.isnan(tpot) else None

    def to_json(self) -> dict[str, Any]:
        return {self.kind: self.value, **self.report.to_json()}


def sweep_json(points: list[SweepPoint], gpus: int | None) -> dict[str, Any]:
    return {
        "schema": "pdnotes.bench.sweep/1",
        "ok": all(p.report.ok for p in points),
        "gpus": gpus,
        "points": [p.to_json() for p in points],
    }


def point_file(path: Path, point: SweepPoint) -> Path:
    """`run.jsonl` → `run.c16.jsonl` / `run.r2.5.jsonl`: one records file per point."""
    tag = f"c{point.value:g}" if point.kind == "concurrency" else f"r{point.value:g}"
    return path.with_name(f"{path.stem}.{tag}{path.suffix}")


def check_plot_path(path: Path) -> None:
    if path.suffix.lower() not in (".svg", ".html", ".htm"):
        raise UsageError(f"cannot plot to {path.name}: use a .svg or .html file")


def write_sweep_plot(points: list[SweepPoint], path: Path, title: str, gpus: int | None) -> Path:
    from notes_cli import fileio

    check_plot_path(path)
    svg = sweep_svg(points, gpus)
    if path.suffix.lower() == ".svg":
        return fileio.atomic_write(path, svg)
    page = (
        '<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>pdnotes bench sweep</title></head><body>\n<h1>pdnotes bench sweep</h1>\n"
        f"<p>{escape(title)}</p>\n{svg}\n</body></html>\n"
    )
    return fileio.atomic_write(path, page)


def sweep_svg(points: list[SweepPoint], gpus: int | None) -> str:
    throughput = [p.report.output_throughput for p in points]
    summaries = [p.report.stats.summaries() for p in points]
    labels = [p.label for p in points]

    pairs = list(zip(throughput, summaries, strict=True))  # (x, summaries) per point

    def series(metric: str) -> list[tuple[str, list[tuple[float, float]]]]:
        return [
            (
                name,
                [(x, getattr(s[metric], key)) for x, s in pairs],
            )
            for name, key in (("median", "median"), ("P99", "p99"))
        ]

    panels = [
        _panel("TTFT vs throughput", "output tokens/s", "TTFT (ms)", series("ttft_ms"), labels),
        _panel("TPOT vs throughput", "output tokens/s", "TPOT (ms)", series("tpot_ms"), labels),
    ]
    if gpus:
        pareto = [
            (p.report.output_throughput / gpus, user)
            for p in points
            if (user := p.tokens_per_user) is not None
        ]
        panels.append(
            _panel(
                f"Pareto front ({gpus} GPU{'s' if gpus != 1 else ''})",
                "output tokens/s per GPU",
                "tokens/s per user",
                [("points", pareto), ("front", pareto_front(pareto))],
                [p.label for p in points if p.tokens_per_user is not None],
                lines=(False, True),
            )
        )
    width = _PANEL_W * len(panels)
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{_H}" '
        f'viewBox="0 0 {width} {_H}" font-family="sans-serif" font-size="12">',
        '<rect width="100%" height="100%" fill="white"/>',
    ]
    for index, panel in enumerate(panels):
        parts.append(f'<g transform="translate({index * _PANEL_W} 0)">{panel}</g>')
    parts.append("</svg>")
    return "\n".join(parts)


def pareto_front(points: list[tuple[float, float]]) -> list[tuple[float, float]]:
    """The points no other point beats on both axes (more per GPU and more per user), by x."""
    front = [
        (x, y)
        for x, y in points
        if not any(ox >= x and oy >= y and (ox, oy) != (x, y) for ox, oy in points)
    ]
    return sorted(set(front))


def _panel(
    title: str,
    x_label: str,
    y_label: str,
    series: list[tuple[str, list[tuple[float, float]]]],
    point_labels: list[str],
    lines: tuple[bool, ...] = (True, True),
) -> str:
    finite = [(x, y) for _, pts in series for x, y in pts if _finite(x) and _finite(y)]
    x_max = _nice_ceiling(max((x for x, _ in finite), default=1.0))
    y_max = _nice_ceiling(max((y for _, y in finite), default=1.0))
    plot_w, plot_h = _PANEL_W - _LEFT - _RIGHT, _H - _TOP - _BOTTOM

    def sx(x: float) -> float:
        return _LEFT + plot_w * x / x_max

    def sy(y: float) -> float:
        return _TOP + plot_h * (1 - y / y_max)

    parts = [
        f'<text x="{_LEFT}" y="{_TOP - 16}" font-weight="bold">{escape(title)}</text>',
        f'<line x1="{sx(0)}" y1="{sy(0)}" x2="{sx(x_max)}" y2="{sy(0)}" stroke="black"/>',
        f'<line x1="{sx(0)}" y1="{sy(0)}" x2="{sx(0)}" y2="{sy(y_max)}" stroke="black"/>',
        f'<text x="{_LEFT + plot_w / 2}" y="{_H - 12}" text-anchor="middle">'
        f"{escape(x_label)}</text>",
        f'<text transform="translate(14 {_TOP + plot_h / 2}) rotate(-90)" '
        f'text-anchor="middle">{escape(y_label)}</text>',
    ]
    for k in range(6):
        x, y = x_max * k / 5, y_max * k / 5
        parts.append(f'<text x="{sx(x):.1f}" y="{sy(0) + 16}" text-anchor="middle">{x:g}</text>')
        parts.append(f'<text x="{sx(0) - 6}" y="{sy(y) + 4:.1f}" text-anchor="end">{y:g}</text>')
    for index, (name, pts) in enumerate(series):
        colour = _COLOURS[index % len(_COLOURS)]
        xy = [(sx(x), sy(y)) for x, y in pts if _finite(x) and _finite(y)]
        if len(xy) > 1 and lines[index % len(lines)]:
            coords = " ".join(f"{x:.1f},{y:.1f}" for x, y in xy)
            parts.append(
                f'<polyline points="{coords}" fill="none" stroke="{colour}" stroke-width="2"/>'
            )
        parts += [f'<circle cx="{x:.1f}" cy="{y:.1f}" r="3" fill="{colour}"/>' for x, y in xy]
        if index == 0:  # name each load level once, beside its first series' point
            parts += [
                f'<text x="{x + 5:.1f}" y="{y - 5:.1f}" font-size="10">{escape(label)}</text>'
                for (x, y), label in zip(xy, point_labels, strict=False)
            ]
        ly = _TOP + 4 + 16 * index
        box = f'x="{_PANEL_W - 90}" y="{ly - 8}" width="12" height="4"'
        parts.append(f'<rect {box} fill="{colour}"/>')
        parts.append(f'<text x="{_PANEL_W - 74}" y="{ly - 2}">{escape(name)}</text>')
    return "\n".join(parts)


def _finite(value: float | None) -> bool:
    return value is not None and not math.isnan(value) and not math.isinf(value)


def _nice_ceiling(value: float) -> float:
    """The smallest 1, 2 or 5 × 10^k at or above `value`, so axis ticks are round numbers."""
    if value <= 0:
        return 1.0
    scale = 10.0 ** math.floor(math.log10(value))
    for step in (1, 2, 5, 10):
        if step * scale >= value:
            return float(step * scale)
    return float(10 * scale)
