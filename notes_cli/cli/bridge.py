"""pdnotes bridge serve | install | uninstall"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

if TYPE_CHECKING:
    from notes_cli.bridge.service import Runner

app = typer.Typer(
    help="Serve Codex (Responses API) and Claude Code (Messages) on a chat-completions endpoint.",
    no_args_is_help=True,
)

# Options `serve` and `install` share.
Upstream = Annotated[
    list[str] | None,
    typer.Option(
        "--upstream",
        help="The chat endpoint's API root, the URL before /chat/completions (default: the one "
        "`pdnotes config … --bridge` recorded). Repeat for fallbacks, tried in order when one "
        "is down or answers 5xx / 429 before its answer starts.",
    ),
]
UpstreamKeyEnv = Annotated[
    list[str] | None,
    typer.Option(
        "--upstream-key-env",
        help="NAME of the variable holding the upstream's key; repeated, the Nth is the Nth "
        "--upstream's (an upstream past the last has none).",
    ),
]
Record = Annotated[
    Path | None,
    typer.Option(
        "--record",
        help="Write a trace of the turns to this new FILE.jsonl: sessions, turns, arrival "
        "times, token counts and salted prompt block ids, never text (docs/trace.md).",
    ),
]
Host = Annotated[
    str | None, typer.Option("--host", help="Interface to listen on (default 127.0.0.1).")
]
Port = Annotated[
    int | None,
    typer.Option("--port", min=0, max=65535, help="TCP port (default 8787; 0 picks a free one)."),
]
ModelMap = Annotated[
    list[str] | None,
    typer.Option("--model-map", help="Rename a client model id upstream: FROM=TO (repeatable)."),
]
ApiKeyEnv = Annotated[
    str | None,
    typer.Option(
        "--api-key-env",
        help="Require the value of this variable from clients (Bearer token or x-api-key).",
    ),
]


@app.command("serve")
def serve(
    upstream: Upstream = None,
    upstream_key_env: UpstreamKeyEnv = None,
    host: Host = None,
    port: Port = None,
    model_map: ModelMap = None,
    api_key_env: ApiKeyEnv = None,
    record: Record = None,
    answer_timeout: Annotated[
        float,
        typer.Option(
            "--answer-timeout",
            min=0.1,
            max=86400,
            help="Seconds a non-streamed answer may take from the upstream, head to last byte "
            "(then a 504, or the next --upstream).",
        ),
    ] = 600.0,
) -> None:
    """Translate Responses / Messages requests to the upstream's chat completions (and pass
    chat completions through), falling back to the next --upstream, until Ctrl-C."""
    from notes_cli import render
    from notes_cli.bridge import config as bridge_config
    from notes_cli.errors import PdnotesError
    from notes_cli.render import bridge as render_bridge

    config = bridge_config.resolve(
        upstream=upstream,
        upstream_key_env=upstream_key_env,
        host=host,
        port=port,
        model_map=model_map or [],
        api_key_env=api_key_env,
    )
    from dataclasses import replace

    config = replace(config, answer_timeout=answer_timeout)
    from notes_cli.bridge.server import serve_forever  # after the flags: the app is heavier

    if record is not None:
        from notes_cli.fileio import require_output_folder

        require_output_folder(record, "--record")

    try:
        serve_forever(config, on_ready=render_bridge.banner, record=record)
    except (OSError, OverflowError) as exc:  # OverflowError: a port bind() refuses
        why = getattr(exc, "strerror", None) or exc
        raise PdnotesError(
            f"cannot listen on {config.host}:{config.port}: {why}",
            fix="pick another --port (or --port 0 for a free one); is a bridge already running?",
        ) from exc
    render.note("bridge stopped")


@app.command("install")
def install(
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Show the file and commands; do nothing.")
    ] = False,
    no_start: Annotated[
        bool,
        typer.Option("--no-start", help="Write the service file but do not enable or start it."),
    ] = False,
    force: Annotated[
        bool,
        typer.Option(
            "--force",
            help="Replace a service file that has changes pdnotes did not write (a copy of it is "
            "kept in $PDNOTES_HOME/backups/bridge-service/).",
        ),
    ] = False,
) -> None:
    """Keep `pdnotes bridge serve` running as a user service (systemd on Linux, launchd on macOS)
    for the upstream `pdnotes config … --bridge` recorded."""
    from notes_cli.bridge import config as bridge_config
    from notes_cli.bridge import service
    from notes_cli.errors import UsageError
    from notes_cli.render import bridge as render_bridge

    record = bridge_config.load_record()
    if record is None:
        raise UsageError(
            "no bridge recorded: the service would not know its upstream",
            fix="first run `pdnotes config codex --bridge --base-url URL --model ID` "
            "(or the same for claude)",
        )
    plan = service.plan_service(record)
    if dry_run:
        outcome = service.Outcome(service.file_state(plan))
    else:
        try:
            outcome = service.install(plan, start=not no_start, force=force, runner=_runner())
        except service.UnitEditedError as exc:
            render_bridge.edited_diff(exc.diff)
            raise
    render_bridge.install_report(
        plan, record, outcome, dry_run=dry_run, started=not no_start, force=force
    )


@app.command("uninstall")
def uninstall(
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Show what would be removed.")] = False,
) -> None:
    """Stop and remove the user service `pdnotes bridge install` wrote."""
    from notes_cli.bridge import config as bridge_config
    from notes_cli.bridge import service
    from notes_cli.render import bridge as render_bridge

    # the record is not needed to find or remove the unit: a damaged one must not block this
    plan = service.plan_service(bridge_config.BridgeConfig(upstream="-"), removal=True)
    if dry_run:
        state = service.file_state(plan)
        # what the file is judged by here is what pdnotes last wrote: plan.text has no names
        outcome = service.Outcome("ours" if state == "same" else state)
    else:
        outcome = service.uninstall(plan, runner=_runner())
    render_bridge.uninstall_report(plan, outcome, dry_run=dry_run)
    if outcome.not_stopped:
        import shlex

        from notes_cli.errors import PdnotesError

        stop = "; ".join(shlex.join(c) for c in plan.disable)
        raise PdnotesError(
            f"removed {plan.path}, but the service manager did not stop the service: "
            + "; ".join(outcome.not_stopped),
            fix="without a user service manager (ssh without a login session, a container) no "
            f"bridge service can be running here; where one is, stop it there: {stop}",
        )


def _runner() -> Runner:
    """The service-manager runner; PDNOTES_SERVICE_MANAGER=skip (tests) runs nothing."""
    import os

    from notes_cli.bridge import service

    if os.environ.get("PDNOTES_SERVICE_MANAGER") == "skip":
        return lambda command: 0
    return service.run_manager
