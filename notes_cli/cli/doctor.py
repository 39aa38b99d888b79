"""pdnotes doctor: check the Codex and Claude Code setup; live probes unless --offline."""

from __future__ import annotations

from pathlib import Path

import typer

from notes_cli.cli import layer_options


def doctor(
    client: str = typer.Option("all", "--client", help="codex, claude or all."),
    offline: bool = typer.Option(
        False, "--offline", help="Static checks only: files and environment, no network."
    ),
    timeout: float = typer.Option(10.0, "--timeout", help="Seconds per live probe."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON document on stdout."),
    codex_home: Path | None = typer.Option(None, "--codex-home", help="Codex folder."),
    claude_home: Path | None = typer.Option(None, "--claude-home", help="Claude Code user folder."),
    project_dir: Path | None = typer.Option(
        None, "--project-dir", help="Project whose .claude/ settings apply."
    ),
    codex_version: str | None = typer.Option(
        None,
        "--codex-version",
        help="Judge config.toml by this Codex release's rules (default: `codex --version`).",
    ),
    profile: str | None = layer_options.PROFILE,
    overrides: list[str] | None = layer_options.OVERRIDES,
    settings: Path | None = layer_options.SETTINGS,
    minimal: bool = typer.Option(
        False,
        "--minimal",
        help="Probe with pdnotes' small request instead of the client's real request shape.",
    ),
    run_helpers: bool = typer.Option(
        False,
        "--run-helpers",
        help="Also run a project-scope apiKeyHelper (5 s limit; its output is never shown).",
    ),
) -> None:
    """Find what would break the clients' connection, each finding with its fix.
    Exit 0 when there is no error, 1 when there is."""
    from notes_cli.clients.view import CodexView
    from notes_cli.doctor.run import run_doctor

    report = run_doctor(
        client,
        offline=offline,
        timeout=timeout,
        codex_home=codex_home,
        claude_home=claude_home,
        project_dir=project_dir,
        codex_version=codex_version,
        codex_view=CodexView(project_dir, profile, tuple(overrides or ())),
        claude_settings=settings,
        run_helpers=run_helpers,
        minimal=minimal,
    )
    if as_json:
        from notes_cli.render import emit_json

        emit_json(report.to_json())
    else:
        from notes_cli.render import doctor as render  # rich loads only for human output

        render.report(report, offline=offline)
    if not report.ok:
        raise typer.Exit(1)
