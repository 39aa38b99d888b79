"""pdnotes engine plan: search PD deployments for the fewest chips (or dollars) per request at
the SLOs, on all local cores or a Ray cluster."""

from __future__ import annotations

from collections.abc import Mapping
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
)
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

if TYPE_CHECKING:
    from notes_cli.engine.core.profiles import Catalog, Deployment, ModelShape
    from notes_cli.plan.launch import LaunchSketch
    from notes_cli.plan.planner import Executor
    from notes_cli.plan.space import ChipOption, SearchSpace
    from notes_cli.plan.workload import PlanWorkload


def plan(
    model: str = typer.Option(..., "--model", help="Model shape (see templates/engine/models)."),
    chip: list[str] = typer.Option(
        ...,
        "--chip",
        help="A chip kind you can deploy, NAME or NAME:PRICE per chip-hour (repeatable).",
    ),
    link: str = typer.Option("roce-200g", "--link", help="KV-transfer link between nodes."),
    rate: float | None = ranged(
        None,
        "--rate",
        low=RATE[0],
        high=RATE[1],
        help="Target request rate (req/s): also report the replicas it needs.",
    ),
    input_len: int = ranged(
        512,
        "--input-len",
        low=INPUT_LEN[0],
        high=INPUT_LEN[1],
        help="Prompt tokens (median if lognormal).",
    ),
    output_len: int = ranged(
        64,
        "--output-len",
        low=OUTPUT_LEN[0],
        high=OUTPUT_LEN[1],
        help="Output tokens (median if lognormal).",
    ),
    dist: str = typer.Option(
        "fixed",
        "--dist",
        "--workload",
        help="Length distribution: fixed, lognormal, or a built-in one `engine simulate` knows.",
    ),
    trace: Path | None = typer.Option(
        None, "--trace", help="JSONL trace whose lengths are replayed (its times are not)."
    ),
    burstiness: float = ranged(
        1.0,
        "--burstiness",
        low=BURSTINESS[0],
        high=BURSTINESS[1],
        help="Gamma shape of arrival gaps.",
    ),
    requests: int = ranged(
        300,
        "-n",
        "--requests",
        low=1,
        high=MAX_PLAN_REQUESTS,
        help="Distinct requests (lengths) per probe, at least.",
    ),
    window_s: float | None = ranged(
        None,
        "--window-s",
        low=1.0,
        high=MAX_WINDOW_S,
        help="A probe's arrivals span at least this long, replaying the lengths as needed "
        "(default: 10 x the TTFT objective, at least 10 s).",
    ),
    slo_ttft_ms: float = ranged(
        ..., "--slo-ttft-ms", low=SLO_MS[0], high=SLO_MS[1], help="TTFT objective (ms)."
    ),
    slo_tpot_ms: float | None = ranged(
        None, "--slo-tpot-ms", low=SLO_MS[0], high=SLO_MS[1], help="TPOT objective (ms)."
    ),
    slo_tbt_ms: float | None = ranged(
        None,
        "--slo-tbt-ms",
        low=SLO_MS[0],
        high=SLO_MS[1],
        help="Inter-token gap objective (ms), judged at P99.",
    ),
    percentile: float = ranged(
        90.0,
        "--percentile",
        low=50.0,
        high=99.99,
        help="Percentile TTFT and TPOT are judged at (90 or 99).",
    ),
    attainment: float | None = ranged(
        None,
        "--attainment",
        low=0.01,
        high=1.0,
        help="Judge per request instead: this share (e.g. 0.9) must meet every objective.",
    ),
    max_chips: int = ranged(
        16, "--max-chips", low=1, high=MAX_CHIPS, help="Chips per instance at most."
    ),
    max_tp: int = ranged(8, "--max-tp", low=1, high=MAX_TP, help="Tensor-parallel degree at most."),
    max_instances: int = ranged(
        4,
        "--max-instances",
        low=1,
        high=MAX_INSTANCES,
        help="Nodes per group (prefill, decode, colocated) at most.",
    ),
    modes: str = typer.Option(
        "disagg,colocated,chunked", "--modes", help="Serving modes to search (comma list)."
    ),
    max_batch: str = typer.Option("256", "--max-batch", help="Decode batch limits (comma list)."),
    chunk_tokens: str = typer.Option(
        "512", "--chunk-tokens", help="Chunk sizes for chunked mode (comma list)."
    ),
    weight_dtype: str | None = typer.Option(
        None,
        "--weight-dtype",
        help="Serve the weights in this precision: bf16, fp16, fp8, int4, fp4, nvfp4, mxfp4 "
        "(default: the model's, e.g. fp8 for DeepSeek-R1).",
    ),
    kv_dtype: str | None = typer.Option(
        None, "--kv-dtype", help="KV cache precision: bf16, fp16 or fp8 (default: bf16)."
    ),
    seed: int = ranged(
        0, "--seed", low=SEED[0], high=SEED[1], help="Seed for lengths and arrivals."
    ),
    tolerance: float = ranged(
        0.05,
        "--tolerance",
        low=0.001,
        high=0.5,
        help="Capacity search stops within this relative bracket.",
    ),
    top: int = ranged(5, "--top", low=1, high=100, help="Candidates to show."),
    jobs: int | None = ranged(
        None, "--jobs", "-j", low=1, high=256, help="Local processes (default: cores)."
    ),
    ray: str | None = typer.Option(
        None, "--ray", help="Spread the search over a Ray cluster: ADDRESS or auto."
    ),
    plot: Path | None = typer.Option(
        None, "--plot", help="Write attainment curves and the chips-vs-latency front (.html/.svg)."
    ),
    no_prune: bool = typer.Option(
        False, "--no-prune", help="Simulate every candidate (the roofline SLO pruning off)."
    ),
    out: Path | None = typer.Option(
        None,
        "--out",
        help="Write the best candidate as a deployment file (for `engine serve --preset FILE`).",
    ),
    sketch: list[str] = typer.Option(
        [],
        "--sketch",
        help="Also print the best candidate's launch sketch for lmdeploy, vllm or sglang "
        "(repeatable; not launched here).",
    ),
    as_json: bool = typer.Option(False, "--json", help="Print one pdnotes.plan/1 document."),
) -> None:
    """Find the deployment that serves a workload at its SLOs with the fewest chips (or the
    lowest price): modes, TP per phase (and for MoE models expert parallelism and attention
    data parallelism), P:D instance counts, batch and chunk sizes, each candidate's capacity
    found by simulation. Deterministic for a seed."""
    from notes_cli import render
    from notes_cli.cli.simulate import precision
    from notes_cli.engine.core.config import MODES
    from notes_cli.engine.core.profiles import load_catalog
    from notes_cli.fileio import require_output_folder
    from notes_cli.plan.planner import PlanRequest
    from notes_cli.plan.planner import plan as run_plan
    from notes_cli.plan.slo import PlanSlo
    from notes_cli.plan.space import SearchSpace
    from notes_cli.render import plan as render_plan

    catalog = load_catalog()
    chips = _chips(chip, catalog)
    _known("model", model, catalog.models)
    _known("link", link, catalog.links)
    weight_dtype, kv_dtype = precision(weight_dtype, kv_dtype)
    mode_list = tuple(m.strip() for m in modes.split(",") if m.strip())
    for m in mode_list:
        if m not in MODES:
            raise UsageError(f"--modes: unknown mode {m!r}; choose from {', '.join(MODES)}")
    if not mode_list:
        raise UsageError("--modes needs at least one mode")
    if plot is not None and plot.suffix.lower() not in (".html", ".htm", ".svg"):
        raise UsageError(f"cannot plot to {plot.name}: use a .html or .svg file")
    for flag, path in (("--plot", plot), ("--out", out)):
        if path is not None:
            require_output_folder(path, flag)
    from notes_cli.plan.launch import ENGINES

    for engine in sketch:
        if engine not in ENGINES:
            raise UsageError(f"--sketch: unknown engine {engine!r}; choose {', '.join(ENGINES)}")
    space = SearchSpace(
        chips=chips,
        modes=mode_list,
        max_tp=max_tp,
        max_chips=max_chips,
        max_instances=max_instances,
        max_batches=_ints(max_batch, "--max-batch", MAX_BATCH),
        chunk_sizes=_ints(chunk_tokens, "--chunk-tokens", MAX_CHUNK_TOKENS),
        weight_dtype=weight_dtype,
        kv_dtype=kv_dtype,
    )
    _refuse_huge(space, catalog.models[model])
    request = PlanRequest(
        model=model,
        link=link,
        space=space,
        slo=PlanSlo(slo_ttft_ms, slo_tpot_ms, slo_tbt_ms, percentile / 100, attainment),
        workload=_workload(input_len, output_len, dist, trace, requests, burstiness, seed),
        target_rate=rate,
        seed=seed,
        tolerance=tolerance,
        window_s=_window(window_s, slo_ttft_ms),
        prune=not no_prune,
        top=top,
        curves=min(top, 4) if plot is not None else 0,
    )
    progress = render_plan.Progress()
    report = run_plan(request, catalog, _executor(jobs, ray), on_progress=progress)
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
    sketches = _sketches(best, catalog, sketch) if best is not None else []
    if as_json:
        document["launch"] = {s.engine: s.to_json() for s in sketches}
        render.emit_json(document)
    else:
        render_plan.plan_report(report)
        for result in sketches:
            render.line("")
            render_plan.sketch_text(result.text())
    if report.best is None:
        raise typer.Exit(1)


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
            if not price > 0:
                raise UsageError(f"--chip {spec!r}: the price must be positive")
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
    spec = LengthSpec(input_len, output_len, dist)  # type: ignore[arg-type]
    return drawn(spec, requests, seed=seed, burstiness=burstiness)


def _executor(jobs: int | None, ray: str | None) -> Executor:
    if ray is not None:
        if jobs is not None:
            raise UsageError("give --jobs or --ray, not both")
        from notes_cli.plan.run_ray import RayExecutor

        return RayExecutor(ray)
    from notes_cli.plan.run_local import LocalExecutor

    return LocalExecutor(jobs)
