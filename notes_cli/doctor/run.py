"""`pdnotes doctor`: static findings for each client, then (unless offline) live probes of the
endpoints the clients will call. Returns a `DoctorReport`; never prints."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from notes_cli import paths
from notes_cli.clients.view import CodexView
from notes_cli.doctor.findings import Finding, FindingClient, Probe, Severity
from notes_cli.errors import InputError, UsageError

CLIENTS = ("all", "codex", "claude")


@dataclass(frozen=True)
class ClientSummary:
    """The header of one client's section: its file(s) and the URL it will call."""

    client: str
    files: tuple[str, ...]
    request_url: str | None
    model: str | None = None


@dataclass
class DoctorReport:
    findings: list[Finding] = field(default_factory=list)
    probes: list[Probe] = field(default_factory=list)
    clients: list[ClientSummary] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """False iff some finding is an error (docs/architecture.md); the exit code follows it."""
        return not any(f.severity == "error" for f in self.findings)

    def to_json(self) -> dict[str, Any]:
        return {
            "schema": "pdnotes.doctor/1",
            "ok": self.ok,
            "findings": [f.to_json() for f in self.findings],
            "probes": [p.to_json() for p in self.probes],
        }


def run_doctor(
    client: str = "all",
    *,
    offline: bool,
    timeout: float = 10.0,
    codex_home: Path | None = None,
    claude_home: Path | None = None,
    project_dir: Path | None = None,
    codex_version: str | None = None,
    codex_view: CodexView | None = None,
    claude_settings: Path | None = None,
    run_helpers: bool = False,
    minimal: bool = False,
) -> DoctorReport:
    """Check `client` ("codex", "claude" or "all"); live probes only when not `offline`.
    `codex_version` ("0.171.0") picks the Codex rules; default: the installed `codex --version`."""
    if client not in CLIENTS:
        raise UsageError(f"unknown --client {client!r}", fix="use codex, claude or all")
    from notes_cli.doctor.env_checks import check_env

    env = dict(os.environ)
    view = codex_view or CodexView(cwd=project_dir)
    report = DoctorReport()
    version = _codex_version(codex_version) if client in ("all", "codex") else None
    if client in ("all", "codex"):
        _codex(report, env, codex_home, version, view)
    if client in ("all", "claude"):
        _claude(report, env, claude_home, project_dir, claude_settings, run_helpers)
    _config_missing(report, client, codex_home, claude_home)
    report.findings += check_env(env)
    if not offline:
        shapes = _Shapes(minimal, version)
        _live(
            report,
            client,
            timeout,
            codex_home,
            claude_home,
            project_dir,
            view,
            claude_settings,
            shapes,
        )
    return report


@dataclass(frozen=True)
class _Shapes:
    """Which request shape the live probe sends: the client's recorded one (by default) or,
    with `--minimal`, pdnotes' small body."""

    minimal: bool
    codex_version: tuple[int, int, int] | None

    def for_protocol(self, protocol: str) -> Any:
        if self.minimal:
            return None
        from notes_cli.doctor.client_shape import shape_for

        if protocol == "anthropic":
            from notes_cli.doctor.version import claude_version

            return shape_for(protocol, claude_version())
        return shape_for(protocol, self.codex_version)


def _codex_version(given: str | None) -> tuple[int, int, int] | None:
    from notes_cli.doctor.version import codex_version, parse_version

    if given is None:
        return codex_version()
    parsed = parse_version(given)
    if parsed is None:
        raise UsageError(
            f"--codex-version {given!r} is not a version", fix="give it as X.Y.Z, e.g. 0.171.0"
        )
    return parsed


def _codex(
    report: DoctorReport,
    env: dict[str, str],
    codex_home: Path | None,
    version: tuple[int, int, int] | None,
    view: CodexView,
) -> None:
    from notes_cli.clients.layers import codex_layers
    from notes_cli.doctor.codex_checks import check_codex_layers
    from notes_cli.doctor.registry import make
    from notes_cli.errors import ConfigParseError

    path = paths.codex_config_path(codex_home)
    try:
        merged = codex_layers(
            codex_home, cwd=view.cwd, profile=view.profile, overrides=view.overrides
        )
    except ConfigParseError as exc:
        report.findings.append(
            make(
                "toml-syntax",
                "codex",
                f"{exc.message}; Codex will not start",
                file=exc.path or str(path),
                line=exc.line,
                column=exc.column,
            )
        )
        report.clients.append(ClientSummary("codex", (exc.path or str(path),), None))
        return
    except UsageError:
        raise
    except InputError as exc:
        report.findings.append(
            make(
                "file-unreadable",
                "codex",
                exc.message,
                file=str(getattr(exc, "path", None) or path),
                detail=exc.fix or "fix or remove the file",
            )
        )
        report.clients.append(ClientSummary("codex", (str(path),), None))
        return
    if not any(layer.kind == "user" for layer in merged.layers):
        # No config.toml: config-missing says so (project, profile or -c layers alone do
        # not make a Codex setup pdnotes can check).
        return
    report.findings += check_codex_layers(merged, env, version, view.profile)
    report.clients.append(_summary("codex", lambda: _codex_endpoint(codex_home, env, view)))


def _codex_endpoint(codex_home: Path | None, env: dict[str, str], view: CodexView) -> Any:
    from notes_cli.clients.resolve import codex_setup

    return codex_setup(codex_home, env, view=view)


def _claude(
    report: DoctorReport,
    env: dict[str, str],
    claude_home: Path | None,
    project_dir: Path | None,
    settings_file: Path | None,
    run_helpers: bool,
) -> None:
    from notes_cli.clients.resolve import claude_setup
    from notes_cli.doctor.claude_checks import check_claude

    findings, present = check_claude(
        claude_home, project_dir, env, settings_file, run_helpers=run_helpers
    )
    report.findings += findings
    if present or any(k.startswith("ANTHROPIC_") for k in env):
        summary = _summary(
            "claude", lambda: claude_setup(claude_home, project_dir, env, settings_file)
        )
        report.clients.append(
            ClientSummary(
                "claude", tuple(str(p) for p in present), summary.request_url, summary.model
            )
        )


def _summary(client: str, setup_of: Any) -> ClientSummary:
    """The client's header; a file that does not parse has already produced a finding."""
    try:
        setup = setup_of()
    except InputError:
        return ClientSummary(client, (), None)
    endpoint = setup.endpoint
    return ClientSummary(
        client,
        tuple(str(p) for p in setup.files),
        endpoint.request_url() if endpoint else None,
        endpoint.model if endpoint else None,
    )


def _config_missing(
    report: DoctorReport, client: str, codex_home: Path | None, claude_home: Path | None
) -> None:
    """A client with no config: an error when asked for explicitly or when neither client is
    configured, else a warning (most people use one client)."""
    from notes_cli.doctor.registry import make

    configured = {s.client for s in report.clients}
    wanted = ["codex", "claude"] if client == "all" else [client]
    severity: Severity = "error" if client != "all" or not configured else "warning"
    for name in wanted:
        finding_client: FindingClient = "codex" if name == "codex" else "claude"
        if name in configured:
            continue
        if name == "codex":
            path = paths.codex_config_path(codex_home)
        else:
            path = paths.claude_settings_path("user", claude_home_dir=claude_home)
        report.findings.insert(
            0,
            make(
                "config-missing",
                finding_client,
                f"{path} does not exist",
                severity=severity,
                file=str(path),
                tool=name,
            ),
        )


def _live(
    report: DoctorReport,
    client: str,
    timeout: float,
    codex_home: Path | None,
    claude_home: Path | None,
    project_dir: Path | None,
    view: CodexView,
    claude_settings: Path | None,
    shapes: _Shapes,
) -> None:
    from notes_cli.clients.resolve import resolve_setups

    try:
        from notes_cli.doctor.live import probe_endpoint
    except ImportError as exc:
        raise UsageError(
            "live checks are not available in this build", fix="run pdnotes doctor --offline"
        ) from exc
    for name in ("codex", "claude"):
        if client not in ("all", name):
            continue
        try:
            setups = resolve_setups(
                name,
                codex_home=codex_home,
                claude_home=claude_home,
                project_dir=project_dir,
                codex_view=view,
                claude_settings=claude_settings,
            )
        except InputError:
            continue  # already reported as toml-syntax / json-syntax / file-unreadable
        for setup in setups:
            if setup.endpoint is None:
                continue
            static = [f for f in report.findings if f.client == name]
            findings, probes = probe_endpoint(
                setup.endpoint,
                timeout=timeout,
                static_findings=static,
                shape=shapes.for_protocol(setup.endpoint.protocol),
            )
            # A live finding supersedes the static guess with the same id (e.g. the /v1
            # warning becomes an error once a probe has shown the 404).
            confirmed = {(f.id, f.client) for f in findings}
            report.findings = [
                f for f in report.findings if f not in static or (f.id, f.client) not in confirmed
            ]
            report.findings += findings
            report.probes += probes
