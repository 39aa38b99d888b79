"""`pdnotes trace show` as text."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from notes_cli.render import escape, line

if TYPE_CHECKING:
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
