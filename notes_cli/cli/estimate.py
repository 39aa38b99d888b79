"""pdnotes engine estimate: one step of a deployment, statically (no queueing)."""

from __future__ import annotations

from dataclasses import replace
from typing import Annotated

import typer

from notes_cli.cli import options
from notes_cli.cli.ranges import INPUT_LEN, in_range

MAX_BATCH_PER_GPU = 1_048_576  # sequences or tokens per GPU in one step


def _phases() -> tuple[str, ...]:
    return ("prefill", "decode")


PHASE = options.Names(_phases, "unknown --phase {value}; choose from {choices}")

Preset = Annotated[
    str,
    typer.Option(
        "--preset",
        "-p",
        help="Deployment preset (see `pdnotes engine presets`) or a deployment FILE.toml.",
    ),
]
Phase = Annotated[
    str,
    options.one_of(
        PHASE, "--phase", help="prefill (a saturated prefill step) or decode (a decode step)."
    ),
]
Batch = Annotated[
    int,
    in_range(
        "--batch",
        "-b",
        low=1,
        high=MAX_BATCH_PER_GPU,
        help="Decode: sequences per GPU. Prefill: prompt tokens per GPU.",
    ),
]
Context = Annotated[
    int,
    in_range(
        "--context",
        low=INPUT_LEN[0],
        high=INPUT_LEN[1],
        help="Decode: KV tokens each sequence holds (prompt + output so far). Prefill: tokens "
        "per prompt.",
    ),
]
WeightDtype = Annotated[
    str | None,
    options.one_of(
        options.WEIGHT_DTYPE,
        "--weight-dtype",
        help="Serve the weights in this precision (default: the preset's, else the model's).",
    ),
]
KvDtype = Annotated[
    str | None,
    options.one_of(
        options.KV_DTYPE, "--kv-dtype", help="KV cache precision (default: the preset's)."
    ),
]
PrefixHit = Annotated[
    float | None,
    in_range(
        "--prefix-hit",
        low=0.0,
        high=0.999,
        help="Share of prompt tokens served from the prefix cache (default: the preset's, 0).",
    ),
]
MtpAcceptance = Annotated[
    float | None,
    in_range(
        "--mtp-acceptance",
        low=0.0,
        high=0.999,
        help="Speculative decoding: acceptance of each draft token (default: the preset's, off).",
    ),
]
Overlap = Annotated[
    bool | None,
    typer.Option(
        "--two-batch-overlap/--no-two-batch-overlap",
        help="Hide communication under compute (default: the preset's, off).",
    ),
]
Eplb = Annotated[
    bool | None,
    typer.Option(
        "--eplb/--no-eplb",
        help="Expert-parallel load balancing runs: balanced experts (default: the preset's, off:"
        " the busiest GPU does 1.5x the mean's expert work).",
    ),
]
AsJson = Annotated[
    bool, typer.Option("--json", help="Print one pdnotes.engine.estimate/1 document.")
]


def estimate(
    *,
    phase: Phase,
    batch: Batch,
    context: Context,
    preset: Preset = "h800-h20-rdma",
    weight_dtype: WeightDtype = None,
    kv_dtype: KvDtype = None,
    prefix_hit: PrefixHit = None,
    mtp_acceptance: MtpAcceptance = None,
    two_batch_overlap: Overlap = None,
    eplb: Eplb = None,
    as_json: AsJson = False,
) -> None:
    """One step of a deployment, statically: step time, tokens/s per GPU, node and user,
    whether the KV fits, and what the step is made of. What published saturated-prefill and
    decode figures measure; queueing and batching dynamics are `engine simulate`'s."""
    from notes_cli import render
    from notes_cli.engine.core.deployment_file import resolve_preset
    from notes_cli.engine.core.estimate import estimate as run
    from notes_cli.render import engine as render_engine

    deployment, catalog = resolve_preset(preset)
    deployment = replace(
        deployment,
        weight_dtype=weight_dtype or deployment.weight_dtype,
        kv_dtype=kv_dtype or deployment.kv_dtype,
        prefix_cache_hit=deployment.prefix_cache_hit if prefix_hit is None else prefix_hit,
        mtp_acceptance=deployment.mtp_acceptance if mtp_acceptance is None else mtp_acceptance,
        two_batch_overlap=(
            deployment.two_batch_overlap if two_batch_overlap is None else two_batch_overlap
        ),
        eplb=deployment.eplb if eplb is None else eplb,
    )
    result = run(deployment, catalog, phase, batch, context)
    if as_json:
        render.emit_json(result.to_json())
    else:
        render_engine.estimate_table(result.to_json())
