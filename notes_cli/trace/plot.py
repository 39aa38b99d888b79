"""`trace show --plot FILE.svg|.html`: prompt length by turn, one line per session (the first
MAX_SESSIONS sessions, up to MAX_TURNS turns each), so growth and resets show at a glance.

Self-contained SVG (no scripts, no library), as engine/simulate/plot.py draws it.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from html import escape
from pathlib import Path

from notes_cli.errors import UsageError
from notes_cli.trace.format import TraceRow

MAX_SESSIONS = 12
MAX_TURNS = 500
_COLOURS = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000")
_W, _H, _LEFT, _RIGHT, _TOP, _BOTTOM = 720, 420, 72, 24, 24, 52


class SessionLengths:
    """Collects, while the rows stream past, the prompt lengths of the first sessions."""

    def __init__(self) -> None:
        self.sessions: dict[str, list[int]] = {}

    def watch(self, rows: Iterable[TraceRow]) -> Iterator[TraceRow]:
        for row in rows:
            key = row.session_id
            if key is not None:
                lengths = self.sessions.get(key)
                if lengths is None and len(self.sessions) < MAX_SESSIONS:
                    lengths = self.sessions[key] = []
                if lengths is not None and len(lengths) < MAX_TURNS:
                    lengths.append(row.input_length)
            yield row


def check_plot_path(path: Path) -> None:
    if path.suffix.lower() not in (".svg", ".html", ".htm"):
        raise UsageError(f"cannot plot to {path.name}: use a .svg or .html file")


def write_plot(sessions: dict[str, list[int]], path: Path, title: str) -> None:
    from notes_cli.fileio import atomic_write

    svg = growth_svg(sessions)
    if path.suffix.lower() != ".svg":
        svg = (
            f"<!doctype html><meta charset='utf-8'><title>{escape(title)}</title>"
            f"<h3 style='font-family:sans-serif'>{escape(title)}</h3>{svg}\n"
        )
    atomic_write(path, svg)


def growth_svg(sessions: dict[str, list[int]]) -> str:
    turns = max((len(v) for v in sessions.values()), default=1)
    top = max((max(v) for v in sessions.values() if v), default=1)
    plot_w, plot_h = _W - _LEFT - _RIGHT, _H - _TOP - _BOTTOM

    def sx(turn: int) -> float:
        return _LEFT + plot_w * (turn - 1) / max(1, turns - 1)

    def sy(tokens: int) -> float:
        return _TOP + plot_h * (1 - tokens / top)

    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{_W}" height="{_H}" '
        f'viewBox="0 0 {_W} {_H}" font-family="sans-serif" font-size="12">',
        '<rect width="100%" height="100%" fill="white"/>',
        f'<line x1="{_LEFT}" y1="{_TOP + plot_h}" x2="{_W - _RIGHT}" y2="{_TOP + plot_h}" '
        'stroke="#444"/>',
        f'<line x1="{_LEFT}" y1="{_TOP}" x2="{_LEFT}" y2="{_TOP + plot_h}" stroke="#444"/>',
        f'<text x="{_LEFT + plot_w / 2}" y="{_H - 12}" text-anchor="middle">turn (1 to '
        f"{turns})</text>",
        f'<text x="16" y="{_TOP + plot_h / 2}" transform="rotate(-90 16 {_TOP + plot_h / 2})" '
        f'text-anchor="middle">prompt tokens (up to {top:,})</text>',
    ]
    for index, lengths in enumerate(sessions.values()):
        points = " ".join(f"{sx(t + 1):.1f},{sy(n):.1f}" for t, n in enumerate(lengths))
        colour = _COLOURS[index % len(_COLOURS)]
        parts.append(
            f'<polyline fill="none" stroke="{colour}" stroke-width="1.5" points="{points}"/>'
        )
    parts.append("</svg>")
    return "\n".join(parts)
