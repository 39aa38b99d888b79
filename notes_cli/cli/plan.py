"""pdnotes engine plan: search PD deployments for the fewest chips (or dollars) per request at
the SLOs, on all local cores or a Ray cluster."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from notes_cli.cli import options
from notes_cli.cli.ranges import RATE, REQUESTS, in_range
from notes_cli.errors import UsageError

# The planner's documented limits (docs/planner.md): each is more than a real deployment needs,
# and together they keep one plan within hours on a laptop rather than unbounded.
MAX_TP = 64  # tensor parallelism beyond one 64-chip scale-up domain is not used in practice
MAX_CHIPS = 4096  # chips per instance
MAX_INSTANCES = 64  # nodes per group
MAX_BATCH = 16384  # decode batch limit (vLLM's max_num_seqs defaults to 256)
MAX_CHUNK_TOKENS = 131072  # chunked-prefill chunk size
MAX_CANDIDATES = 5000  # the default space has 596; each candidate is several simulations
MAX_WINDOW_S = 600.0  # a probe's arrivals span at most ten minutes of simulated time
MAX_PLAN_REQUESTS = REQUESTS[1] // 10  # 100,000 distinct lengths per probe
MAX_PRICE = 1_000_000.0  # $ per chip-hour: any real price, and no sum or ratio overflows

if TYPE_CHECKING:
    from notes_cli.engine.core.profiles import Catalog, Deployment, ModelShape
    from notes_cli.plan.launch import LaunchSketch
    from notes_cli.plan.planner import Executor, PlanReport
    from notes_cli.plan.slo import PlanSlo
    from notes_cli.plan.space import ChipOption, SearchSpace
    from notes_cli.plan.trace_check import TraceCheck
    from notes_cli.plan.workload import PlanWorkload


# The flags of `engine plan` (those other commands share are in cli/options.py).
Model = Annotated[str, typer.Option("--model", help="Model shape (see templates/engine/models).")]
Chip = Annotated[
    list[str],
    typer.Option(
        "--chip",
        help="A chip kind you can deploy, NAME or NAME:PRICE per chip-hour (repeatable); or a "
        "deployment FILE.toml (`engine calibrate --out`): its chip, with its engine's overheads.",
    ),
]
Link = Annotated[str, typer.Option("--link", help="KV-transfer link between nodes.")]
Rate = Annotated[
    float | None,
    in_range(
        "--rate",
        low=RATE[0],
        high=RATE[1],
        help="Target request rate (req/s): also report the replicas it needs.",
    ),
]
Dist = Annotated[
    str,
    options.one_of(
        options.DIST_OR_WORKLOAD,
        "--dist",
        "--workload",
        help="Length distribution: fixed, lognormal, or a built-in one `engine simulate` knows.",
    ),
]
Trace = Annotated[
    Path | None,
    typer.Option("--trace", help="JSONL trace whose lengths are replayed (its times are not)."),
]
Requests = Annotated[
    int,
    in_range(
        "-n",
        "--requests",
        low=1,
        high=MAX_PLAN_REQUESTS,
        help="Distinct requests (lengths) per probe, at least.",
    ),
]
WindowS = Annotated[
    float | None,
    in_range(
        "--window-s",
        low=1.0,
        high=MAX_WINDOW_S,
        help="A probe's arrivals span at least this long, replaying the lengths as needed "
        "(default: 10 x the TTFT objective, at least 10 s).",
    ),
]
MaxChips = Annotated[
    int, in_range("--max-chips", low=1, high=MAX_CHIPS, help="Chips per instance at most.")
]
MaxTp = Annotated[
    int, in_range("--max-tp", low=1, high=MAX_TP, help="Tensor-parallel degree at most.")
]
MaxInstances = Annotated[
    int,
    in_range(
        "--max-instances",
        low=1,
        high=MAX_INSTANCES,
        help="Nodes per group (prefill, decode, colocated) at most.",
    ),
]
Modes = Annotated[
    str,
    options.one_of(options.MODE_LIST, "--modes", help="Serving modes to search (comma list)."),
]
MaxBatch = Annotated[str, typer.Option("--max-batch", help="Decode batch limits (comma list).")]
ChunkTokens = Annotated[
    str, typer.Option("--chunk-tokens", help="Chunk sizes for chunked mode (comma list).")
]
WeightDtype = Annotated[
    str | None,
    options.one_of(
        options.WEIGHT_DTYPE,
        "--weight-dtype",
        help="Serve the weights in this precision: bf16, fp16, fp8, int4, fp4, nvfp4, mxfp4 "
        "(default: the model's, e.g. fp8 for DeepSeek-R1).",
    ),
]
KvDtype = Annotated[
    str | None,
    options.one_of(
        options.KV_DTYPE,
        "--kv-dtype",
        help="KV cache precision: bf16, fp16 or fp8 (default: bf16).",
    ),
]
Tolerance = Annotated[
    float,
    in_range(
        "--tolerance",
        low=0.001,
        high=0.5,
        help="Capacity search stops within this relative bracket.",
    ),
]
Top = Annotated[int, in_range("--top", low=1, high=100, help="Candidates to show.")]
Jobs = Annotated[
    int | None,
    in_range("--jobs", "-j", low=1, high=256, help="Local processes (default: cores)."),
]
Ray = Annotated[
    str | None,
    typer.Option("--ray", help="Spread the search over a Ray cluster: ADDRESS or auto."),
]
Plot = Annotated[
    Path | None,
    typer.Option(
        "--plot", help="Write attainment curves and the chips-vs-latency front (.html/.svg)."
    ),
]
NoPrune = Annotated[
    bool,
    typer.Option("--no-prune", help="Simulate every candidate (the roofline SLO pruning off)."),
]
ExhaustiveFront = Annotated[
    bool,
    typer.Option(
        "--exhaustive-front",
        help="Draw the front from the best 24 of an exhaustive search (more CPU); by default "
        "it is drawn from the candidates the search simulated.",
    ),
]
Out = Annotated[
    Path | None,
    typer.Option(
        "--out",
        help="Write the best candidate as a deployment file (for `engine serve --preset FILE`).",
    ),
]
Sketch = Annotated[
    list[str] | None,
    options.one_of(
        options.ENGINE,
        "--sketch",
        help="Also print the best candidate's launch sketch for lmdeploy, vllm or sglang "
        "(repeatable; not launched here).",
    ),
]
AsJson = Annotated[bool, typer.Option("--json", help="Print one pdnotes.plan/1 document.")]


def plan(
    ctx: typer.Context,
    *,
    model: Model,
    chip: Chip,
    link: Link = "roce-200g",
    rate: Rate = None,
    input_len: options.InputLen = options.DEFAULT_INPUT_LEN,
    output_len: options.OutputLen = options.DEFAULT_OUTPUT_LEN,
    dist: Dist = "fixed",
    trace: Trace = None,
    burstiness: options.Burstiness = 1.0,
    requests: Requests = 300,
    window_s: WindowS = None,
    slo_ttft_ms: options.SloTtftMs,
    slo_tpot_ms: options.SloTpotMs = None,
    slo_tbt_ms: options.SloTbtMs = None,
    slo_percentile: options.SloPercentile = options.DEFAULT_PERCENTILE,
    percentile_alias: options.PercentileAlias = None,
    attainment: options.Attainment = None,
    max_chips: MaxChips = 16,
    max_tp: MaxTp = 8,
    max_instances: MaxInstances = 4,
    modes: Modes = "disagg,colocated,chunked",
    max_batch: MaxBatch = "256",
    chunk_tokens: ChunkTokens = "512",
    weight_dtype: WeightDtype = None,
    kv_dtype: KvDtype = None,
    seed: options.Seed = 0,
    tolerance: Tolerance = 0.05,
    top: Top = 5,
    jobs: Jobs = None,
    ray: Ray = None,
    plot: Plot = None,
    no_prune: NoPrune = False,
    exhaustive_front: ExhaustiveFront = False,
    out: Out = None,
    sketch: Sketch = None,
    as_json: AsJson = False,
) -> None:
    """Find the deployment that serves a workload at its SLOs with the fewest chips (or the
    lowest price): modes, TP per phase (and for MoE models expert parallelism and attention
    data parallelism), P:D instance counts, batch and chunk sizes, each candidate's capacity
    found by simulation. Deterministic for a seed."""
    from notes_cli.engine.core.profiles import load_catalog
    from notes_cli.plan.crosscheck import crosscheck
    from notes_cli.plan.planner import PlanRequest
    from notes_cli.plan.planner import plan as run_plan
    from notes_cli.plan.slo import PlanSlo
    from notes_cli.render import plan as render_plan

    engines = sketch or []
    catalog = load_catalog()
    base, chip, catalog = _calibrated(chip, catalog)
    if base is not None and model != base.model:
        raise UsageError(
            f"--model {model}: the deployment file's engine was fitted serving {base.model}",
            fix=f"--model {base.model} (a calibration holds for the model it measured)",
        )
    chips = _chips(chip, catalog)
    _known("model", model, catalog.models)
    _known("link", link, catalog.links)
    _check_outputs(plot, out)
    space = _space(
        chips, modes, max_tp, max_chips, max_instances, max_batch, chunk_tokens,
        weight_dtype, kv_dtype,
    )  # fmt: skip
    _refuse_huge(space, catalog.models[model])
    judged_at = options.percentile(ctx, percentile_alias) / 100
    workload = _workload(input_len, output_len, dist, trace, requests, burstiness, seed)
    space = replace(space, prefix_cache_hit=workload.prefix_cache_hit)  # a trace's reuse
    request = PlanRequest(
        model=model,
        link=link,
        space=space,
        slo=PlanSlo(slo_ttft_ms, slo_tpot_ms, slo_tbt_ms, judged_at, attainment),
        workload=workload,
        target_rate=rate,
        seed=seed,
        tolerance=tolerance,
        window_s=_window(window_s, slo_ttft_ms),
        prune=not no_prune,
        exhaustive_front=exhaustive_front,
        top=top,
        curves=min(top, 4) if plot is not None else 0,
        base=base,
    )
    with render_plan.progress() as on_progress:
        report = run_plan(request, catalog, _executor(jobs, ray), on_progress=on_progress)
    report = replace(report, checks=crosscheck(report, catalog))  # aiconfigurator, if beside us
    checked = _trace_check(report, catalog, trace, requests)
    _publish(report, catalog, plot, out, engines, as_json, checked)
    if report.best is None:
        raise typer.Exit(1)


def _trace_check(
    report: PlanReport, catalog: Catalog, trace: Path | None, requests: int
) -> TraceCheck | None:
    """The best replayed on the trace itself (plan/trace_check.py), when there is a trace."""
    best = report.best_deployment()
    if trace is None or best is None:
        return None
    from notes_cli.plan.trace_check import check_on_trace

    return check_on_trace(best, catalog, trace, report.request.slo, requests)


def _check_outputs(plot: Path | None, out: Path | None) -> None:
    """Refuse a --plot or --out that could not be written, before any search."""
    from notes_cli.fileio import require_output_folder

    if plot is not None and plot.suffix.lower() not in (".html", ".htm", ".svg"):
        raise UsageError(f"cannot plot to {plot.name}: use a .html or .svg file")
    for flag, path in (("--plot", plot), ("--out", out)):
        if path is not None:
            require_output_folder(path, flag)


def _space(
    chips: tuple[ChipOption, ...],
    modes: str,
    max_tp: int,
    max_chips: int,
    max_instances: int,
    max_batch: str,
    chunk_tokens: str,
    weight_dtype: str | None,
    kv_dtype: str | None,
) -> SearchSpace:
    from notes_cli.plan.space import SearchSpace

    return SearchSpace(
        chips=chips,
        modes=_modes(modes),
        max_tp=max_tp,
        max_chips=max_chips,
        max_instances=max_instances,
        max_batches=_ints(max_batch, "--max-batch", MAX_BATCH),
        chunk_sizes=_ints(chunk_tokens, "--chunk-tokens", MAX_CHUNK_TOKENS),
        weight_dtype=weight_dtype,
        kv_dtype=kv_dtype,
    )


def _modes(text: str) -> tuple[str, ...]:
    """--modes, whose entries its type has checked."""
    mode_list = tuple(text.split(",")) if text else ()
    if not mode_list:
        raise UsageError("--modes needs at least one mode")
    return mode_list


def _publish(
    report: PlanReport,
    catalog: Catalog,
    plot: Path | None,
    out: Path | None,
    engines: list[str],
    as_json: bool,
    checked: TraceCheck | None = None,
) -> None:
    """Write the plot and the deployment file asked for, then print the report."""
    from notes_cli import render
    from notes_cli.render import plan as render_plan

    if plot is not None:
        from notes_cli.render.plan_plot import write_plan_plot

        write_plan_plot(report, plot)
        render.note(f"wrote {plot}")
    document = report.to_json()
    best = report.best_deployment()
    if best is not None and out is not None:
        from notes_cli.engine.core.deployment_file import dump_deployment
        from notes_cli.fileio import atomic_write

        atomic_write(out, dump_deployment(best, catalog, written_by="pdnotes engine plan"))
        document["deployment_file"] = str(out)
        render.note(f"wrote {out}: pdnotes engine serve --preset {out}")
    sketches = _sketches(best, catalog, engines) if best is not None else []
    if checked is not None:
        document["trace_check"] = checked.to_json()
    if as_json:
        document["launch"] = {s.engine: s.to_json() for s in sketches}
        render.emit_json(document)
        return
    render_plan.plan_report(report)
    if checked is not None:
        render_plan.trace_check_line(checked, report.request.slo)
    for result in sketches:
        render.line("")
        render_plan.sketch_text(result.text())


def _sketches(best: Deployment, catalog: Catalog, engines: list[str]) -> list[LaunchSketch]:
    from notes_cli.errors import PdnotesError
    from notes_cli.plan.launch import launch_sketch
    from notes_cli.plan.launch_flags import check_sketch

    out = []
    for engine in dict.fromkeys(engines):
        result = launch_sketch(best, catalog, engine)
        problems = check_sketch(result)
        if problems:  # as `engine sketch`: a flag the engine's source does not define
            raise PdnotesError(
                "the sketch uses flags not in the recorded flag data: " + "; ".join(problems),
                fix="this is a pdnotes bug; please report it",
            )
        out.append(result)
    return out


def _window(window_s: float | None, slo_ttft_ms: float) -> float:
    """--window-s, or by default 10 x the TTFT objective: at least 10 s, at most the most
    --window-s takes."""
    if window_s is not None:
        return window_s
    return min(MAX_WINDOW_S, max(10.0, slo_ttft_ms / 100))


def _refuse_huge(space: SearchSpace, model: ModelShape) -> None:
    """Refuse a search space of more than MAX_CANDIDATES candidates before enumerating it (a
    space of 100,000 TP degrees, chips and instances took 6 GB and never finished), naming the
    numbers that make it large."""
    from notes_cli.plan.space import count_candidates

    n = count_candidates(space, model)
    if n > MAX_CANDIDATES:
        raise UsageError(
            f"the search space has {n:,} candidates, more than the {MAX_CANDIDATES:,} one plan "
            f"searches: {len(space.chips)} chip kind(s) x {len(space.tp_choices(model))} TP "
            f"degree(s) per group (--max-tp {space.max_tp}) x up to {space.max_instances} nodes "
            f"per group (--max-instances) within --max-chips {space.max_chips}, x "
            f"{len(space.max_batches)} --max-batch x {len(space.chunk_sizes)} --chunk-tokens "
            f"value(s), over {len(space.modes)} mode(s)",
            fix="narrow it: fewer --chip kinds, --modes, --max-batch or --chunk-tokens values, "
            "or a lower --max-tp, --max-instances or --max-chips",
        )


def _calibrated(specs: list[str], catalog: Catalog) -> tuple[Deployment | None, list[str], Catalog]:
    """A --chip that names a deployment file (a calibrated engine): its rows join the catalog,
    the --chip becomes its chip (with any :PRICE kept) and its deployment the engine settings
    every candidate keeps. At most one: two engines' overheads cannot both apply."""
    from notes_cli import render
    from notes_cli.engine.core.deployment_file import is_deployment_path, resolve_preset

    def split(spec: str) -> tuple[str, str]:  # (path, ":PRICE" or "")
        if spec.endswith(".toml") or ":" not in spec:
            return spec, ""
        path, _, price = spec.rpartition(":")
        return path, f":{price}"

    files = [s for s in specs if is_deployment_path(split(s)[0])]
    if not files:
        return None, specs, catalog
    if len(files) > 1:
        raise UsageError("--chip takes one deployment file", fix="plan one engine at a time")
    spec = files[0]
    path, price = split(spec)
    deployment, catalog = resolve_preset(path, catalog)
    group = deployment.colocated or deployment.decode or deployment.prefill
    assert group is not None  # the catalog loader refuses a deployment without groups
    render.note(
        f"--chip {path}: chip {group.chip}, engine as {deployment.name} ({deployment.source})"
    )
    named = f"{group.chip}{price}"
    return deployment, [named if s == spec else s for s in specs], catalog


def _chips(specs: list[str], catalog: Catalog) -> tuple[ChipOption, ...]:
    from notes_cli.plan.space import ChipOption

    out: dict[str, ChipOption] = {}
    for spec in specs:
        name, sep, price_text = spec.partition(":")
        name = name.strip()
        _known("chip", name, catalog.chips)
        price = None
        if sep:
            try:
                price = float(price_text)
            except ValueError:
                raise UsageError(f"--chip {spec!r}: the price must be a number") from None
            if not 0 < price <= MAX_PRICE:  # also refuses nan and inf
                raise UsageError(
                    f"--chip {spec!r}: the price must be a number above 0 and at most "
                    f"{MAX_PRICE:,.0f} (per chip-hour)"
                )
        out[name] = ChipOption(name, price)
    options = tuple(out.values())
    priced = [c.price is not None for c in options]
    if any(priced) and not all(priced):
        raise UsageError(
            "give a price for every --chip or for none",
            fix="e.g. --chip h800:2.5 --chip h20:1.1 (price per chip-hour)",
        )
    return options


def _known(kind: str, name: str, table: Mapping[str, object]) -> None:
    if name not in table:
        raise UsageError(
            f"unknown {kind} {name!r}",
            fix=f"known {kind}s: {', '.join(sorted(table))}",
        )


def _ints(text: str, flag: str, high: int) -> tuple[int, ...]:
    values = []
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        if not part.isdigit() or not 1 <= int(part) <= high:
            raise UsageError(f"{flag}: {part!r} is not a whole number from 1 to {high}")
        values.append(int(part))
    if not values:
        raise UsageError(f"{flag} needs at least one value")
    return tuple(sorted(set(values)))


def _workload(
    input_len: int,
    output_len: int,
    dist: str,
    trace: Path | None,
    requests: int,
    burstiness: float,
    seed: int,
) -> PlanWorkload:
    from notes_cli.bench.workload import LengthSpec
    from notes_cli.plan.workload import drawn, from_trace

    if trace is not None:
        return from_trace(trace, requests, burstiness=burstiness)
    if dist in options.length_dists():
        spec = LengthSpec(input_len, output_len, dist)  # type: ignore[arg-type]
    else:  # a built-in workload brings its own lengths
        spec = LengthSpec(workload=dist)
    return drawn(spec, requests, seed=seed, burstiness=burstiness)


def _executor(jobs: int | None, ray: str | None) -> Executor:
    if ray is not None:
        if jobs is not None:
            raise UsageError("give --jobs or --ray, not both")
        from notes_cli.plan.run_ray import RayExecutor

        return RayExecutor(ray)
    from notes_cli.plan.run_local import LocalExecutor

    return LocalExecutor(jobs)


def plan_trace(
    trace: Path,
    *,
    model: str,
    chips: tuple[ChipOption, ...],
    slo: PlanSlo,
    target_rate: float | None,
    link: str = "roce-200g",
    requests: int = 300,
    max_chips: int = 16,
    modes: str = "disagg,colocated,chunked",
    jobs: int | None = None,
) -> PlanReport:
    """`engine plan --trace` with these settings and the defaults for the rest, as `trace cost`
    runs it (ranked per $/h, or with a target rate by what carrying it costs)."""
    from notes_cli.engine.core.profiles import load_catalog
    from notes_cli.plan.planner import PlanRequest
    from notes_cli.plan.planner import plan as run_plan
    from notes_cli.render import plan as render_plan

    catalog = load_catalog()
    for chip in chips:
        _known("chip", chip.name, catalog.chips)
    _known("model", model, catalog.models)
    _known("link", link, catalog.links)
    space = _space(chips, modes, 8, max_chips, 4, "256", "512", None, None)
    _refuse_huge(space, catalog.models[model])
    workload = _workload(0, 0, "fixed", trace, requests, 1.0, 0)
    request = PlanRequest(
        model=model,
        link=link,
        space=replace(space, prefix_cache_hit=workload.prefix_cache_hit),
        slo=slo,
        workload=workload,
        target_rate=target_rate,
        window_s=_window(None, slo.ttft_ms or 1000.0),
    )
    with render_plan.progress() as on_progress:
        return run_plan(request, catalog, _executor(jobs, None), on_progress=on_progress)
