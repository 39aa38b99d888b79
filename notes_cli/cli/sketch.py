"""pdnotes engine sketch: the commands that would run a preset or deployment file on LMDeploy,
vLLM or SGLang, each flag checked against that engine's recorded argument definitions.

The core is `plan/launch.py`, not engine/: it is the same sketch `engine plan --sketch` prints
for its pick, so the planner owns it and this command borrows it."""

from __future__ import annotations

from typing import Annotated

import typer

from notes_cli.cli import options


def sketch(
    preset: Annotated[
        str,
        typer.Argument(
            help="Deployment preset (see `pdnotes engine presets`) or a deployment FILE.toml."
        ),
    ],
    engine: Annotated[
        str,
        options.one_of(
            options.SKETCH_ENGINE,
            "--engine",
            "-e",
            help="Engine to sketch for: lmdeploy, vllm or sglang.",
        ),
    ] = "lmdeploy",
    mode: Annotated[
        str | None,
        options.one_of(
            options.MODE, "--mode", help="disagg, colocated or chunked (default: the preset's)."
        ),
    ] = None,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print one pdnotes.launch-sketch/1 doc.")
    ] = False,
) -> None:
    """Print a launch sketch for real hardware (not run here; flags checked against the engine's
    source, versions in docs/launch.md)."""
    from notes_cli.engine.core.deployment_file import resolve_preset
    from notes_cli.errors import PdnotesError
    from notes_cli.plan.launch import launch_sketch
    from notes_cli.plan.launch_flags import check_sketch
    from notes_cli.render import launch as render_launch

    deployment, catalog = resolve_preset(preset)
    result = launch_sketch(deployment.with_mode(mode), catalog, engine)
    problems = check_sketch(result)
    if problems:  # a sketch pdnotes wrote uses a flag the engine's source does not define
        raise PdnotesError(
            "the sketch uses flags not in the recorded flag data: " + "; ".join(problems),
            fix="this is a pdnotes bug; please report it",
        )
    render_launch.sketch(result, as_json=as_json)
