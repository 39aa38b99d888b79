"""pdnotes engine simulate: PD capacity planning offline, on the engine's own scheduler."""

from __future__ import annotations

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
    ranged,
    require,
)
from notes_cli.errors import UsageError

MAX_CONCURRENCY = 100_000  # closed-loop clients
MAX_RATES = 64  # rates in one --rates sweep
MAX_PD_RATIO = 64  # nodes per side of a --pd-ratio

if TYPE_CHECKING:
    from notes_cli.engine.simulate.configs import SimConfig


def simulate(
    preset: list[str] = typer.Option(
        [],
        "--preset",
        "-p",
        help="Engine preset or deployment FILE.toml to simulate (repeatable). Default: the "
        "engine's.",
    ),
    mode: list[str] = typer.Option(
        [], "--mode", help="Run each preset in this mode: disagg, colocated, chunked (repeatable)."
    ),
    pd_ratio: str | None = typer.Option(
        None, "--pd-ratio", help="Prefill:decode node ratios to compare, e.g. 1:1,2:1."
    ),
    weight_dtype: str | None = typer.Option(
        None,
        "--weight-dtype",
        help="Serve the weights in this precision: bf16, fp16, fp8, int4, fp4, nvfp4, mxfp4 "
        "(default: the preset's, else the model's).",
    ),
    kv_dtype: str | None = typer.Option(
        None, "--kv-dtype", help="KV cache precision: bf16, fp16 or fp8 (default: the preset's)."
    ),
    input_len: int | None = ranged(
        None,
        "--input-len",
        low=INPUT_LEN[0],
        high=INPUT_LEN[1],
        help="Prompt tokens (median if lognormal). Default 512.",
    ),
    output_len: int | None = ranged(
        None,
        "--output-len",
        low=OUTPUT_LEN[0],
        high=OUTPUT_LEN[1],
        help="Output tokens (median if lognormal). Default 64.",
    ),
    dist: str | None = typer.Option(
        None, "--dist", help="Length distribution: fixed (default) or lognormal."
    ),
    workload_name: str | None = typer.Option(
        None,
        "--workload",
        help="Built-in lengths: sharegpt, longbench, arxiv-sum, azure-conv, azure-code.",
    ),
    trace: Path | None = typer.Option(
        None,
        "--trace",
        help="Trace file: JSONL requests (input_tokens, output_tokens, arrival_ms), or a vLLM / "
        "SGLang benchmark result with input_lens and output_lens.",
    ),
    rate: float | None = ranged(
        None, "--rate", low=RATE[0], high=RATE[1], help="Poisson arrival rate (req/s)."
    ),
    rates: str | None = typer.Option(None, "--rates", help="Several rates to sweep: 1,2,4."),
    burstiness: float = ranged(
        1.0,
        "--burstiness",
        low=BURSTINESS[0],
        high=BURSTINESS[1],
        help="Gamma shape of arrival gaps: 1 = Poisson, <1 burstier.",
    ),
    concurrency: int | None = ranged(
        None,
        "--concurrency",
        "-c",
        low=1,
        high=MAX_CONCURRENCY,
        help="Closed loop: C clients, each sending on completion.",
    ),
    requests: int = ranged(
        1000, "-n", "--requests", low=1, high=REQUESTS[1], help="Requests per simulated run."
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
        help="Inter-token gap objective (ms), judged at P99 (TBT).",
    ),
    slo_percentile: float = ranged(
        90.0,
        "--slo-percentile",
        low=1.0,
        high=99.99,
        help="Percentile judging TTFT and TPOT: 90 (DistServe) or 99.",
    ),
    attainment: float | None = ranged(
        None,
        "--attainment",
        low=0.01,
        high=1.0,
        help="Target share of good requests (each meeting every SLO), e.g. 0.9 (DistServe).",
    ),
    goodput: bool = typer.Option(
        False,
        "--goodput",
        help="Search the highest per-chip rate meeting the SLOs (--attainment, else percentiles).",
    ),
    seed: int = ranged(
        0, "--seed", low=SEED[0], high=SEED[1], help="Seed for arrivals and lengths."
    ),
    plot: Path | None = typer.Option(
        None, "--plot", help="Write SLO attainment vs rate to FILE.html (or .svg)."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print one pdnotes.simulate/1 document."),
) -> None:
    """Simulate presets, modes and P:D ratios on one workload: TTFT, TPOT, ITL (TBT), E2E,
    per-request SLO attainment and goodput per chip. Deterministic for a seed."""
    from notes_cli import render
    from notes_cli.bench.stats import Slo
    from notes_cli.bench.workload import LengthSpec
    from notes_cli.engine.simulate.runner import WorkloadSpec, simulate_configs

    if plot is not None:
        from notes_cli.fileio import require_output_folder

        require_output_folder(plot, "--plot")
    slo = Slo(
        slo_ttft_ms,
        slo_tpot_ms,
        slo_tbt_ms,
        ttft_percentile=slo_percentile,
        tpot_percentile=slo_percentile,
        attainment=attainment,
    )
    if (goodput or attainment is not None) and not slo.any:
        raise UsageError(
            f"{'--goodput' if goodput else '--attainment'} needs an objective",
            fix="add --slo-ttft-ms, --slo-tpot-ms and/or --slo-tbt-ms",
        )
    sweep = _rates(rate, rates)
    if goodput and sweep == [None] and trace is None:
        sweep = []  # only the search: a burst of every request at t=0 would say nothing
    if concurrency is not None and (sweep != [None] or goodput or trace is not None):
        raise UsageError(
            "--concurrency is a closed loop: it takes no --rate / --rates / --goodput / --trace"
        )
    if plot is not None and (not slo.any or len(sweep) < 2):
        raise UsageError(
            "--plot draws SLO attainment against rate",
            fix="give an SLO (--slo-ttft-ms, --slo-tpot-ms or --slo-tbt-ms) and two or more "
            "--rates",
        )
    lengths_given = [
        flag
        for flag, value in (
            ("--input-len", input_len),
            ("--output-len", output_len),
            ("--dist", dist),
        )
        if value is not None
    ]
    if workload_name is not None and (lengths_given or trace is not None):
        clash = ", ".join(lengths_given + (["--trace"] if trace is not None else []))
        raise UsageError(f"--workload sets the lengths itself: drop {clash}")
    lengths = LengthSpec(
        512 if input_len is None else input_len,
        64 if output_len is None else output_len,
        dist or "fixed",  # type: ignore[arg-type]
        workload=workload_name,
    )
    workload = WorkloadSpec(
        requests=requests,
        lengths=lengths,
        burstiness=burstiness,
        trace=trace,
        concurrency=concurrency,
    )
    report = simulate_configs(
        _configs(preset, mode, pd_ratio, precision(weight_dtype, kv_dtype)),
        workload,
        rates=sweep,
        slo=slo,
        goodput=goodput,
        seed=seed,
        on_progress=None if as_json else render.note,
    )
    if plot is not None:
        from notes_cli.engine.simulate.plot import write_plot

        write_plot(report, plot)
        render.note(f"wrote {plot}")
    if as_json:
        render.emit_json(report.to_json())
        return
    from notes_cli.render.bench import simulate_report

    simulate_report(report)


def _rates(rate: float | None, rates: str | None) -> list[float | None]:
    if rate is not None and rates is not None:
        raise UsageError("give --rate or --rates, not both")
    if rates is not None:
        values = [_rate(part) for part in rates.split(",") if part.strip()]
        if not values:
            raise UsageError("--rates needs at least one rate, e.g. --rates 1,2,4")
        if len(values) > MAX_RATES:
            raise UsageError(f"--rates: {len(values)} rates, at most {MAX_RATES}")
        return sorted(set(values))  # type: ignore[return-value]
    if rate is not None:
        return [rate]
    return [None]


def _rate(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise UsageError(f"--rates: {text.strip()!r} is not a number") from None
    require(value, *RATE, flag="--rates")
    return value


def precision(weight_dtype: str | None, kv_dtype: str | None) -> tuple[str | None, str | None]:
    """--weight-dtype and --kv-dtype, checked against the precisions the cost model knows."""
    from notes_cli.engine.core.profiles import KV_DTYPES, WEIGHT_DTYPES

    for flag, value, known in (
        ("--weight-dtype", weight_dtype, WEIGHT_DTYPES),
        ("--kv-dtype", kv_dtype, KV_DTYPES),
    ):
        if value is not None and value not in known:
            raise UsageError(f"{flag}: unknown precision {value!r}; choose from {', '.join(known)}")
    return weight_dtype, kv_dtype


def _configs(
    presets: list[str],
    modes: list[str],
    pd_ratio: str | None,
    dtypes: tuple[str | None, str | None] = (None, None),
) -> list[SimConfig]:
    from notes_cli.engine.core.config import MODES, EngineConfig
    from notes_cli.engine.simulate.configs import SimConfig

    for m in modes:
        if m not in MODES:
            raise UsageError(f"unknown --mode {m!r}; choose from {', '.join(MODES)}")
    ratios: list[tuple[int, int] | None] = [*_ratios(pd_ratio)] if pd_ratio else [None]
    chosen_modes: list[str | None] = [*modes] if modes else [None]
    return [
        SimConfig(p, m, r, *dtypes)
        for p in (presets or [EngineConfig().preset])
        for m in chosen_modes
        for r in ratios
    ]


def _ratios(text: str) -> list[tuple[int, int]]:
    ratios = []
    for part in text.split(","):
        p, sep, d = part.strip().partition(":")
        if not (sep and p.isdigit() and d.isdigit()) or not (
            1 <= int(p) <= MAX_PD_RATIO and 1 <= int(d) <= MAX_PD_RATIO
        ):
            raise UsageError(
                f"--pd-ratio: {part.strip()!r} is not PREFILL:DECODE, each 1 to {MAX_PD_RATIO}",
                fix="e.g. --pd-ratio 1:1,2:1",
            )
        ratios.append((int(p), int(d)))
    return ratios
