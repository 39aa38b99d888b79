"""Drawing for `pdnotes engine calibrate`: the fitted numbers, predicted against measured on the
points fitted and on those held back, and the signed error of each."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from rich.markup import escape
from rich.table import Table

from notes_cli.render import out

if TYPE_CHECKING:
    from notes_cli.engine.simulate.calibrate import Calibration, Comparison


def _signed(value: float) -> str:
    return f"{value * 100:+.0f} %"


def _table(title: str, comparisons: tuple[Comparison, ...]) -> Table:
    table = Table(title=title, title_justify="left")
    for column in ("records", "point", "n", "TTFT meas", "TTFT pred", "TPOT meas", "TPOT pred"):
        table.add_column(column, justify="left" if column == "records" else "right")
    for c in comparisons:
        p = c.point
        table.add_row(
            escape(p.path.name),
            escape(p.label),
            str(len(p.ttfts)),
            f"{p.ttft_ms:,.1f}",
            f"{c.ttft_ms:,.1f} ({_signed(c.ttft_ms / p.ttft_ms - 1)})",
            f"{p.tpot_ms:,.1f}",
            f"{c.tpot_ms:,.1f} ({_signed(c.tpot_ms / p.tpot_ms - 1)})",
        )
    return table


def _errors(label: str, comparisons: tuple[Comparison, ...]) -> str:
    from notes_cli.engine.simulate.calibrate import error_summary

    parts = []
    for metric, summary in error_summary(comparisons).items():
        if summary is None:
            continue
        parts.append(
            f"{metric.upper()} median {_signed(summary['median'])} "
            f"(P10 {_signed(summary['p10'])}, P90 {_signed(summary['p90'])})"
        )
    return f"{label}: " + ("; ".join(parts) or "no points")


def calibration_report(result: Calibration, path: Path) -> None:
    console = out()
    f = result.fitted
    dep = result.deployment
    chip = dep.colocated.chip if dep.colocated else "?"
    console.print(f"[bold]calibrated[/] {escape(dep.name)}: {escape(result.provenance)}")
    console.print(
        f"  chip {escape(chip)}: {f.tflops:.4g} TFLOP/s and {f.hbm_tbps * 1e3:.4g} GB/s at "
        f"mfu = bw_eff = 1 (what the prefill and decode speeds come to, not a datasheet); "
        f"{f.seq_overhead_us:,.0f} us x c^{f.seq_exponent:g} for the c sequences in a step; "
        "request overhead "
        f"{f.request_overhead_ms:,.1f} ms; batch up to {f.max_batch}; prefix-cache hit "
        f"{f.prefix_cache_hit:.0%}"
    )
    console.print(_table("fitted points (medians, ms; predicted vs measured)", result.fit))
    if result.held_out:
        console.print(_table("held-back points (not fitted)", result.held_out))
    console.print("signed error (predicted median / measured request - 1), over every request:")
    console.print("  " + _errors("fit", result.fit))
    console.print("  " + _errors("held back", result.held_out))
    for warning in result.warnings:
        console.print(f"[yellow]warning:[/] {escape(warning)}")
    console.print(
        f"wrote {escape(str(path))}: pdnotes engine simulate -p {escape(str(path))}; "
        f"pdnotes engine plan --model {escape(dep.model)} --chip {escape(str(path))} ..."
    )
