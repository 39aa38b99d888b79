"""pdnotes engine serve | presets | simulate | estimate | calibrate | sketch | plan"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from notes_cli.cli import calibrate, estimate, options, plan, simulate, sketch
from notes_cli.cli.ranges import SEED, SPEED, in_range

app = typer.Typer(
    help="The bundled mock PD engine: serve it over HTTP, list its presets, simulate offline, "
    "estimate one step, calibrate to a real engine's records, plan a deployment, sketch a "
    "real-engine launch.",
    no_args_is_help=True,
)
app.command("simulate")(simulate.simulate)
app.command("estimate")(estimate.estimate)
app.command("calibrate")(calibrate.calibrate)
app.command("sketch")(sketch.sketch)
app.command("plan")(plan.plan)


# The flags of `engine serve`.
Host = Annotated[str, typer.Option("--host", help="Interface to listen on.")]
Port = Annotated[
    int, typer.Option("--port", min=0, max=65535, help="TCP port (0 picks a free one).")
]
Prefix = Annotated[str, typer.Option("--prefix", help="Path the OpenAI routes live under.")]
ApiKeyEnv = Annotated[
    str | None,
    typer.Option(
        "--api-key-env",
        help="Require the value of this environment variable as Bearer token or x-api-key.",
    ),
]
Mode = Annotated[
    str | None,
    options.one_of(
        options.MODE, "--mode", help="disagg, colocated or chunked (default: the preset's)."
    ),
]
Preset = Annotated[
    str,
    typer.Option(
        "--preset",
        help="Deployment preset (see `pdnotes engine presets`) or a deployment FILE.toml.",
    ),
]
Fault = Annotated[
    list[str] | None,
    typer.Option(
        "--fault",
        help="Inject a fault: KIND[:SECONDS][@SCHEDULE], e.g. 500@first:2, "
        "503@rate:0.2:seed:7, stall-mid-stream:10s@every:3, kv-tcp-fallback (repeatable; "
        "see docs/engine.md).",
    ),
]
Speed = Annotated[
    float,
    in_range(
        "--speed",
        low=SPEED[0],
        high=SPEED[1],
        help="Run the wall clock X times faster than simulated hardware time.",
    ),
]
Seed = Annotated[
    int,
    in_range("--seed", low=SEED[0], high=SEED[1], help="Seed for the deterministic answers."),
]
Model = Annotated[
    list[str] | None,
    typer.Option("--model", help="Model id to serve (repeatable; default pd-mock-1). Exact match."),
]
MaxQueue = Annotated[
    int,
    in_range(
        "--max-queue",
        low=1,
        high=1_000_000,
        help="Waiting requests before new ones get 429 + Retry-After.",
    ),
]
Protocols = Annotated[
    str,
    typer.Option(
        "--protocols",
        help="Comma list of the APIs to serve: chat, responses, anthropic, gemini. "
        "`--protocols chat` plays a chat-only gateway: /responses, /anthropic/... and "
        "/gemini/... answer 404.",
    ),
]
Record = Annotated[
    Path | None,
    typer.Option(
        "--record",
        help="Write a trace of the answered requests to this new FILE.jsonl: sessions, turns, "
        "arrival times, token counts and salted prompt block ids, never text (docs/trace.md).",
    ),
]


@app.command("serve")
def serve(
    host: Host = "127.0.0.1",
    port: Port = 8000,
    prefix: Prefix = "/api",
    api_key_env: ApiKeyEnv = None,
    mode: Mode = None,
    preset: Preset = "h800-h20-rdma",
    fault: Fault = None,
    speed: Speed = 1.0,
    seed: Seed = 0,
    model: Model = None,
    max_queue: MaxQueue = 512,
    protocols: Protocols = "chat,responses,anthropic,gemini",
    record: Record = None,
) -> None:
    """Serve the mock PD engine (OpenAI chat + Responses, Anthropic Messages, Gemini) until
    Ctrl-C."""
    import os

    from notes_cli import render
    from notes_cli.engine.core.config import EngineConfig
    from notes_cli.engine.core.deployment_file import resolve_preset
    from notes_cli.engine.http.faults import FaultSpecError, parse_fault
    from notes_cli.engine.http.server import serve_forever
    from notes_cli.errors import PdnotesError, UsageError
    from notes_cli.render import engine as render_engine

    served = _protocols(protocols)
    deployment = resolve_preset(preset)[0].with_mode(mode)  # Usage/InputError if unknown or bad
    try:
        faults = [parse_fault(spec) for spec in fault or ()]
    except FaultSpecError as exc:
        raise UsageError(str(exc), fix="see `pdnotes engine serve --help`") from exc
    if api_key_env and not os.environ.get(api_key_env):
        raise UsageError(
            f"--api-key-env names {api_key_env}, which is unset or empty",
            fix=f"export {api_key_env}=<a key of your choice> and run the command again",
        )
    config = EngineConfig(
        preset=preset,
        mode=mode,
        speed=speed,
        seed=seed,
        served_models=tuple(model or ()) or ("pd-mock-1",),
        max_queue=max_queue,
    )
    banner = render_engine.ServeBanner(
        config, deployment.mode, api_key_env, tuple(f.describe() for f in faults), served
    )
    recorder = None
    if record is not None:
        from notes_cli.fileio import require_output_folder
        from notes_cli.trace.record import TraceRecorder

        require_output_folder(record, "--record")
        recorder = TraceRecorder.create(record)
    try:
        serve_forever(
            config,
            host=host,
            port=port,
            prefix=prefix,
            api_key_env=api_key_env,
            faults=faults,
            protocols=served,
            on_ready=banner.show,
            recorder=recorder,
        )
    except (OSError, OverflowError) as exc:  # OverflowError: a port bind() refuses
        why = getattr(exc, "strerror", None) or exc
        raise PdnotesError(
            f"cannot listen on {host}:{port}: {why}",
            fix="pick another --port (or --port 0 for a free one)",
        ) from exc
    finally:
        if recorder is not None:
            recorder.close()
    render.note("engine stopped")


def _protocols(value: str) -> tuple[str, ...]:
    from notes_cli.engine.http.dialects import PROTOCOLS
    from notes_cli.errors import UsageError

    words = tuple(dict.fromkeys(w.strip().lower() for w in value.split(",") if w.strip()))
    unknown = [w for w in words if w not in PROTOCOLS]
    if unknown or not words:
        raise UsageError(
            f"--protocols {value!r}: unknown {', '.join(unknown) or 'empty list'}",
            fix=f"give a comma list of {', '.join(PROTOCOLS)}, e.g. --protocols chat",
        )
    return words


@app.command("presets")
def presets(
    as_json: Annotated[
        bool, typer.Option("--json", help="Print one pdnotes.engine.presets/1 doc.")
    ] = False,
) -> None:
    """List the deployment presets: mode, prefill / decode chips, KV link and model."""
    from notes_cli import render
    from notes_cli.engine.core.profiles import load_catalog
    from notes_cli.render import engine as render_engine

    rows = render_engine.preset_rows(load_catalog())
    if as_json:
        render.emit_json({"schema": "pdnotes.engine.presets/1", "presets": rows})
    else:
        render_engine.presets_table(rows)
