"""pdnotes engine simulate: PD capacity planning offline, on the engine's own scheduler."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from notes_cli.cli import options
from notes_cli.cli.ranges import RATE, REQUESTS, in_range, require
from notes_cli.errors import UsageError

MAX_CONCURRENCY = 100_000  # closed-loop clients
MAX_RATES = 64  # rates in one --rates sweep
MAX_PD_RATIO = 64  # nodes per side of a --pd-ratio

if TYPE_CHECKING:
    from notes_cli.bench.stats import Slo
    from notes_cli.bench.workload import LengthSpec
    from notes_cli.engine.simulate.configs import SimConfig
    from notes_cli.trace.prefix_cache import CacheReplay


# The flags of `engine simulate` (those other commands share are in cli/options.py).
Preset = Annotated[
    list[str] | None,
    typer.Option(
        "--preset",
        "-p",
        help="Engine preset or deployment FILE.toml to simulate (repeatable). Default: the "
        "engine's.",
    ),
]
Mode = Annotated[
    list[str] | None,
    options.one_of(
        options.MODE,
        "--mode",
        help="Run each preset in this mode: disagg, colocated, chunked (repeatable).",
    ),
]
PdRatio = Annotated[
    str | None,
    typer.Option("--pd-ratio", help="Prefill:decode node ratios to compare, e.g. 1:1,2:1."),
]
WeightDtype = Annotated[
    str | None,
    options.one_of(
        options.WEIGHT_DTYPE,
        "--weight-dtype",
        help="Serve the weights in this precision: bf16, fp16, fp8, int4, fp4, nvfp4, mxfp4 "
        "(default: the preset's, else the model's).",
    ),
]
KvDtype = Annotated[
    str | None,
    options.one_of(
        options.KV_DTYPE,
        "--kv-dtype",
        help="KV cache precision: bf16, fp16 or fp8 (default: the preset's).",
    ),
]
Dist = Annotated[
    str,
    options.one_of(
        options.LENGTH_DIST,
        "--dist",
        help="Length distribution: fixed or lognormal.",
    ),
]
WorkloadName = Annotated[
    str | None,
    options.one_of(
        options.WORKLOAD,
        "--workload",
        help="Built-in lengths: sharegpt, longbench, arxiv-sum, azure-conv, azure-code.",
    ),
]
Trace = Annotated[
    Path | None,
    typer.Option(
        "--trace",
        help="Trace file: JSONL requests (input_tokens, output_tokens, arrival_ms), or a "
        "vLLM / SGLang benchmark result with input_lens and output_lens.",
    ),
]
Rate = Annotated[
    float | None,
    in_range("--rate", low=RATE[0], high=RATE[1], help="Poisson arrival rate (req/s)."),
]
Rates = Annotated[str | None, typer.Option("--rates", help="Several rates to sweep: 1,2,4.")]
Concurrency = Annotated[
    int | None,
    in_range(
        "--concurrency",
        "-c",
        low=1,
        high=MAX_CONCURRENCY,
        help="Closed loop: C clients, each sending on completion.",
    ),
]
CLIENTS = options.Names(
    lambda: ("together", "spread"), "unknown --clients {value}; choose from {choices}"
)
Clients = Annotated[
    str,
    typer.Option(
        "--clients",
        parser=CLIENTS,
        help="With --concurrency: together (every client in step, every round a burst) or "
        "spread (the first round at once, later rounds from clients spread over a request's "
        "cycle, as a measured closed loop drifts apart).",
    ),
]
Requests = Annotated[
    int,
    in_range("-n", "--requests", low=1, high=REQUESTS[1], help="Requests per simulated run."),
]
Goodput = Annotated[
    bool,
    typer.Option(
        "--goodput",
        help="Search the highest per-chip rate meeting the SLOs (--attainment, else percentiles).",
    ),
]
Plot = Annotated[
    Path | None,
    typer.Option("--plot", help="Write SLO attainment vs rate to FILE.html (or .svg)."),
]
AsJson = Annotated[bool, typer.Option("--json", help="Print one pdnotes.simulate/1 document.")]
PrefixCache = Annotated[
    bool,
    typer.Option(
        "--prefix-cache/--no-prefix-cache",
        help="With a --trace that has hash_ids: replay its blocks through an LRU prefix cache "
        "per node (the node's KV memory) and skip the cached share of prefill.",
    ),
]
KvRouting = Annotated[
    bool,
    typer.Option(
        "--kv-routing/--no-kv-routing",
        help="With --prefix-cache: send each request to the node holding its longest prefix "
        "(else round robin).",
    ),
]
SessionOrder = Annotated[
    bool,
    typer.Option(
        "--session-order/--no-session-order",
        help="With a --trace whose rows name their session: a turn arrives after its "
        "session's previous answer plus the recorded think time (delay), never before its "
        "timestamp.",
    ),
]


def simulate(
    ctx: typer.Context,
    *,
    preset: Preset = None,
    mode: Mode = None,
    pd_ratio: PdRatio = None,
    weight_dtype: WeightDtype = None,
    kv_dtype: KvDtype = None,
    input_len: options.InputLen = options.DEFAULT_INPUT_LEN,
    output_len: options.OutputLen = options.DEFAULT_OUTPUT_LEN,
    dist: Dist = "fixed",
    workload_name: WorkloadName = None,
    trace: Trace = None,
    rate: Rate = None,
    rates: Rates = None,
    burstiness: options.Burstiness = 1.0,
    concurrency: Concurrency = None,
    clients: Clients = "together",
    requests: Requests = 1000,
    slo_ttft_ms: options.SloTtftMsOrNone = None,
    slo_tpot_ms: options.SloTpotMs = None,
    slo_tbt_ms: options.SloTbtMs = None,
    slo_percentile: options.SloPercentile = options.DEFAULT_PERCENTILE,
    percentile_alias: options.PercentileAlias = None,
    attainment: options.Attainment = None,
    goodput: Goodput = False,
    seed: options.Seed = 0,
    plot: Plot = None,
    prefix_cache: PrefixCache = True,
    kv_routing: KvRouting = True,
    session_order: SessionOrder = True,
    as_json: AsJson = False,
) -> None:
    """Simulate presets, modes and P:D ratios on one workload: TTFT, TPOT, ITL (TBT), E2E,
    per-request SLO attainment and goodput per chip. Deterministic for a seed."""
    from notes_cli import render
    from notes_cli.bench.stats import Slo
    from notes_cli.engine.simulate.runner import WorkloadSpec, simulate_configs

    if plot is not None:
        from notes_cli.fileio import require_output_folder

        require_output_folder(plot, "--plot")
    judged_at = options.percentile(ctx, percentile_alias)
    slo = Slo(
        slo_ttft_ms,
        slo_tpot_ms,
        slo_tbt_ms,
        ttft_percentile=judged_at,
        tpot_percentile=judged_at,
        attainment=attainment,
    )
    sweep = _sweep(slo, rate, rates, goodput, concurrency, trace, plot)
    if clients != "together" and concurrency is None:
        raise UsageError("--clients spreads a closed loop's clients", fix="add --concurrency C")
    workload = WorkloadSpec(
        requests=requests,
        lengths=_lengths(ctx, input_len, output_len, dist, workload_name, trace),
        burstiness=burstiness,
        trace=trace,
        concurrency=concurrency,
        clients=clients,
        session_order=session_order and _has_sessions(trace),
    )
    from notes_cli.engine.simulate.runner import default_simulator

    simulator = default_simulator(exact_gaps=slo.tbt_ms is not None)
    configs = _configs(preset or [], mode or [], pd_ratio, (weight_dtype, kv_dtype))
    caches = _trace_caches(simulator, configs, trace, requests, prefix_cache, kv_routing)
    report = simulate_configs(
        [config for config, _ in caches] if caches else configs,
        workload,
        rates=sweep,
        slo=slo,
        goodput=goodput,
        seed=seed,
        simulator=simulator,
        on_progress=None if as_json else render.note,
    )
    for config, found in caches:
        if not as_json and not prefix_cache:
            render.note(f"prefix cache off on {config.preset}: every prompt fully prefilled")
        elif not as_json:
            render.note(
                f"prefix cache on {config.preset}: {found.hit_rate:.1%} of prompt tokens hit "
                f"({found.nodes} node(s) x {found.capacity_blocks:,} blocks of "
                f"{found.block_tokens} tokens, {'KV-aware' if found.kv_aware else 'round-robin'}"
                " routing)"
            )
    if plot is not None:
        from notes_cli.engine.simulate.plot import write_plot

        write_plot(report, plot)
        render.note(f"wrote {plot}")
    if as_json:
        document = report.to_json()
        for entry, (_, found) in zip(document["configurations"], caches, strict=False):
            entry["prefix_cache"] = found.to_json()
        render.emit_json(document)
        return
    from notes_cli.render.bench import simulate_report

    simulate_report(report)


def _has_sessions(trace: Path | None) -> bool:
    from notes_cli.trace.session_order import has_sessions

    return trace is not None and has_sessions(trace)


def _trace_caches(
    simulator: Any,
    configs: list[SimConfig],
    trace: Path | None,
    requests: int,
    enabled: bool,
    kv_aware: bool,
) -> list[tuple[SimConfig, CacheReplay]]:
    """With a trace that has hash_ids, each configuration with its measured prefix-cache hit
    rate (engine/simulate/trace_cache.py); otherwise none (the preset's own rate applies)."""
    if trace is None:
        return []
    from notes_cli.engine.simulate.trace_cache import with_trace_cache
    from notes_cli.trace.prefix_cache import has_hash_ids

    if not has_hash_ids(trace):
        return []
    return with_trace_cache(simulator, configs, trace, requests, kv_aware=kv_aware, enabled=enabled)


def _sweep(
    slo: Slo,
    rate: float | None,
    rates: str | None,
    goodput: bool,
    concurrency: int | None,
    trace: Path | None,
    plot: Path | None,
) -> list[float | None]:
    """The rates to run (None: the trace's times, a closed loop or one burst), refusing the
    combinations that would say nothing."""
    if (goodput or slo.attainment is not None) and not slo.any:
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
    return sweep


def _lengths(
    ctx: typer.Context,
    input_len: int,
    output_len: int,
    dist: str,
    workload_name: str | None,
    trace: Path | None,
) -> LengthSpec:
    """The request lengths: --input-len, --output-len and --dist, or a built-in --workload,
    which takes none of them (nor a --trace, which brings its own)."""
    from notes_cli.bench.workload import LengthSpec

    flags = (("--input-len", "input_len"), ("--output-len", "output_len"), ("--dist", "dist"))
    given = [flag for flag, name in flags if options.given(ctx, name)]
    if workload_name is not None and (given or trace is not None):
        clash = ", ".join(given + (["--trace"] if trace is not None else []))
        raise UsageError(f"--workload sets the lengths itself: drop {clash}")
    return LengthSpec(input_len, output_len, dist, workload=workload_name)  # type: ignore[arg-type]


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


def _configs(
    presets: list[str],
    modes: list[str],
    pd_ratio: str | None,
    dtypes: tuple[str | None, str | None] = (None, None),
) -> list[SimConfig]:
    from notes_cli.engine.core.config import EngineConfig
    from notes_cli.engine.simulate.configs import SimConfig

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
