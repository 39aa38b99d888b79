"""pdnotes engine plan: search PD deployments for the fewest chips (or dollars) per request at
the SLOs, on all local cores or a Ray cluster."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from notes_cli.errors import UsageError

if TYPE_CHECKING:
    from notes_cli.engine.core.profiles import Catalog, Deployment
    from notes_cli.plan.launch import LaunchSketch
    from notes_cli.plan.planner import Executor
    from notes_cli.plan.space import ChipOption
    from notes_cli.plan.workload import PlanWorkload


def plan(
    model: str = typer.Option(..., "--model", help="Model shape (see templates/engine/models)."),
    chip: list[str] = typer.Option(
        ...,
        "--chip",
        help="A chip kind you can deploy, NAME or NAME:PRICE per chip-hour (repeatable).",
    ),
    link: str = typer.Option("roce-200g", "--link", help="KV-transfer link between nodes."),
    rate: float | None = typer.Option(
        None, "--rate", help="Target request rate (req/s): also report the replicas it needs."
    ),
    input_len: int = typer.Option(512, "--input-len", help="Prompt tokens (median if lognormal)."),
    output_len: int = typer.Option(64, "--output-len", help="Output tokens (median if lognormal)."),
    dist: str = typer.Option(
        "fixed",
        "--dist",
        "--workload",
        help="Length distribution: fixed, lognormal, or a built-in one `engine simulate` knows.",
    ),
    trace: Path | None = typer.Option(
        None, "--trace", help="JSONL trace whose lengths are replayed (its times are not)."
    ),
    burstiness: float = typer.Option(1.0, "--burstiness", help="Gamma shape of arrival gaps."),
    requests: int = typer.Option(
        300, "-n", "--requests", help="Distinct requests (lengths) per probe, at least."
    ),
    window_s: float | None = typer.Option(
        None,
        "--window-s",
        help="A probe's arrivals span at least this long, replaying the lengths as needed "
        "(default: 10 x the TTFT objective, at least 10 s).",
    ),
    slo_ttft_ms: float = typer.Option(..., "--slo-ttft-ms", help="TTFT objective (ms)."),
    slo_tpot_ms: float | None = typer.Option(None, "--slo-tpot-ms", help="TPOT objective (ms)."),
    slo_tbt_ms: float | None = typer.Option(
        None, "--slo-tbt-ms", help="Inter-token gap objective (ms), judged at P99."
    ),
    percentile: float = typer.Option(
        90.0, "--percentile", help="Percentile TTFT and TPOT are judged at (90 or 99)."
    ),
    attainment: float | None = typer.Option(
        None,
        "--attainment",
        help="Judge per request instead: this share (e.g. 0.9) must meet every objective.",
    ),
    max_chips: int = typer.Option(16, "--max-chips", help="Chips per instance at most."),
    max_tp: int = typer.Option(8, "--max-tp", help="Tensor-parallel degree at most."),
    max_instances: int = typer.Option(
        4, "--max-instances", help="Nodes per group (prefill, decode, colocated) at most."
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
    seed: int = typer.Option(0, "--seed", help="Seed for lengths and arrivals."),
    tolerance: float = typer.Option(
        0.05, "--tolerance", help="Capacity search stops within this relative bracket."
    ),
    top: int = typer.Option(5, "--top", help="Candidates to show."),
    jobs: int | None = typer.Option(None, "--jobs", "-j", help="Local processes (default: cores)."),
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
    if not 50 <= percentile < 100:
        raise UsageError("--percentile must be between 50 and 100, e.g. 90 or 99")
    if attainment is not None and not 0 < attainment <= 1:
        raise UsageError("--attainment is a share between 0 and 1, e.g. 0.9")
    for name, value in (
        ("--max-chips", max_chips),
        ("--max-tp", max_tp),
        ("--max-instances", max_instances),
        ("-n", requests),
        ("--top", top),
    ):
        if value < 1:
            raise UsageError(f"{name} must be at least 1")
    if rate is not None and not rate > 0:
        raise UsageError("--rate must be positive")
    if window_s is not None and not window_s > 0:
        raise UsageError("--window-s must be positive")
    if not 0 < tolerance < 1:
        raise UsageError("--tolerance must be between 0 and 1, e.g. 0.05")
    if jobs is not None and jobs < 1:
        raise UsageError("--jobs must be at least 1")
    if plot is not None and plot.suffix.lower() not in (".html", ".htm", ".svg"):
        raise UsageError(f"cannot plot to {plot.name}: use a .html or .svg file")
    from notes_cli.plan.launch import ENGINES

    for engine in sketch:
        if engine not in ENGINES:
            raise UsageError(f"--sketch: unknown engine {engine!r}; choose {', '.join(ENGINES)}")
    request = PlanRequest(
        model=model,
        link=link,
        space=SearchSpace(
            chips=chips,
            modes=mode_list,
            max_tp=max_tp,
            max_chips=max_chips,
            max_instances=max_instances,
            max_batches=_ints(max_batch, "--max-batch"),
            chunk_sizes=_ints(chunk_tokens, "--chunk-tokens"),
            weight_dtype=weight_dtype,
            kv_dtype=kv_dtype,
        ),
        slo=PlanSlo(slo_ttft_ms, slo_tpot_ms, slo_tbt_ms, percentile / 100, attainment),
        workload=_workload(input_len, output_len, dist, trace, requests, burstiness, seed),
        target_rate=rate,
        seed=seed,
        tolerance=tolerance,
        window_s=window_s if window_s is not None else max(10.0, slo_ttft_ms / 100.0),
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


def _ints(text: str, flag: str) -> tuple[int, ...]:
    values = []
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        if not part.isdigit() or int(part) < 1:
            raise UsageError(f"{flag}: {part!r} is not a positive integer")
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

    if not burstiness > 0:
        raise UsageError("--burstiness must be positive (1 = Poisson)")
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
