"""pdnotes engine calibrate: fit the cost model to `pdnotes bench --records` runs of a real
engine and write a deployment file `engine simulate -p` and `engine plan` take unchanged."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from notes_cli.cli import options
from notes_cli.cli.ranges import in_range
from notes_cli.errors import UsageError

MAX_RECORDS_FILES = 256
MAX_BATCH = 1_000_000


def _hold_outs() -> tuple[str, ...]:
    from notes_cli.engine.simulate.calibrate import HOLD_OUT

    return HOLD_OUT


HOLD_OUT = options.Names(_hold_outs, "unknown --hold-out {value}; choose from {choices}")

Records = Annotated[
    list[Path],
    typer.Argument(
        help="`pdnotes bench --records` files, one per load point (a sweep writes one per "
        "point; `bench --input-lens 64,256 --concurrency 1,2,3,4` the grid calibrate needs)."
    ),
]
Out = Annotated[
    Path,
    typer.Option("--out", "-o", help="Deployment file to write (e.g. my-engine.toml)."),
]
HoldOut = Annotated[
    str,
    options.one_of(
        HOLD_OUT,
        "--hold-out",
        help="Points kept out of the fit to test it: highest-load (the highest concurrency), "
        "every-third, or none.",
    ),
]
ModelShapeName = Annotated[
    str | None,
    typer.Option(
        "--model-shape",
        help="The catalog model the engine serves (default: the records' model id, when it "
        "names one; see `pdnotes engine presets`).",
    ),
]
MaxBatch = Annotated[
    int | None,
    in_range(
        "--max-batch",
        low=1,
        high=MAX_BATCH,
        help="Sequences the engine decodes at once (llama-server -np, vLLM --max-num-seqs; "
        "default: the most the server's metrics saw running, else the highest concurrency "
        "recorded).",
    ),
]
Name = Annotated[str, typer.Option("--name", help="The deployment's name in the file.")]
Force = Annotated[bool, typer.Option("--force", help="Replace an existing --out file.")]
AsJson = Annotated[bool, typer.Option("--json", help="Print one pdnotes.calibrate/1 document.")]


def calibrate(
    records: Records,
    *,
    out_path: Out,
    hold_out: HoldOut = "highest-load",
    model_shape: ModelShapeName = None,
    max_batch: MaxBatch = None,
    name: Name = "calibrated",
    force: Force = False,
    as_json: AsJson = False,
) -> None:
    """Fit prefill and decode costs, overheads and batch to measured records; test the fit on
    held-back points (predicted vs measured TTFT and TPOT); write the deployment file.
    Exit 2 when the records cannot identify a parameter (the message says what to add)."""
    from notes_cli import fileio, render
    from notes_cli.engine.simulate.calibrate import calibrate as fit

    if len(records) > MAX_RECORDS_FILES:
        raise UsageError(f"at most {MAX_RECORDS_FILES} records files, got {len(records)}")
    if not name or not all(ch.isalnum() or ch in "-_." for ch in name):
        raise UsageError(f"--name {name!r}: use letters, digits, '-', '_' or '.'")
    if out_path.exists() and not force:
        raise UsageError(
            f"--out {out_path} exists; calibrate does not overwrite it",
            fix="pass another --out, or --force to replace it",
        )
    fileio.require_output_folder(out_path, "--out")
    result = fit(
        records, model_shape=model_shape, hold_out=hold_out, name=name, max_batch=max_batch
    )
    fileio.atomic_write(out_path, result.document)
    if as_json:
        render.emit_json({**result.to_json(), "out": str(out_path)})
        return
    from notes_cli.render.calibrate import calibration_report

    calibration_report(result, out_path)
