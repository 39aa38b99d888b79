"""pdnotes doctor: check each client's setup (clients.registry); live probes unless
--offline."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from notes_cli.cli import layer_options
from notes_cli.cli.client_options import with_homes
from notes_cli.cli.ranges import within
from notes_cli.clients import registry


@with_homes(after="as_json", short=True, options_after="project_dir")
def doctor(
    client: Annotated[str, typer.Option("--client", help=f"{registry.listing('all')}.")] = "all",
    offline: Annotated[
        bool,
        typer.Option("--offline", help="Static checks only: files and environment, no network."),
    ] = False,
    timeout: Annotated[
        float,
        typer.Option(
            "--timeout",
            callback=within(0.1, 3600.0),
            help="Seconds per live probe (0.1 to 3600).",
        ),
    ] = 10.0,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print one JSON document on stdout.")
    ] = False,
    project_dir: Annotated[
        Path | None,
        typer.Option(
            "--project-dir",
            help=f"Project folder of {layer_options.ALL_PROJECT_FILES} (default: the "
            "current folder).",
        ),
    ] = None,
    profile: layer_options.Profile = None,
    overrides: layer_options.Overrides = None,
    settings: layer_options.Settings = None,
    minimal: Annotated[
        bool,
        typer.Option(
            "--minimal",
            help="Probe with pdnotes' small request instead of the client's real request shape.",
        ),
    ] = False,
    homes: dict[str, Path | None] | None = None,
    flags: dict[str, Any] | None = None,
) -> None:
    """Find what would break the clients' connection, each finding with its fix.
    Exit 0 when there is no error, 1 when there is."""
    from notes_cli.doctor.run import run_doctor

    report = run_doctor(
        client,
        offline=offline,
        timeout=timeout,
        project_dir=project_dir,
        minimal=minimal,
        homes=homes,
        flags={
            **(flags or {}),
            "profile": profile,
            "overrides": tuple(overrides or ()),
            "settings": settings,
        },
    )
    if as_json:
        from notes_cli.render import emit_json

        emit_json(report.to_json())
    else:
        from notes_cli.render import doctor as render  # rich loads only for human output

        render.report(report, offline=offline)
    if not report.ok:
        raise typer.Exit(1)
