"""`pdnotes doctor`: static findings for each client, then (unless offline) live probes of the
endpoints the clients will call. Returns a `DoctorReport`; never prints."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from notes_cli import paths
from notes_cli.clients.codex.view import CodexView
from notes_cli.clients.plugin import Where
from notes_cli.doctor.findings import Finding, FindingClient, Probe, Severity
from notes_cli.errors import UsageError

if TYPE_CHECKING:
    from notes_cli.doctor.resolved import Resolved


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
    homes: Mapping[str, Path | None] | None = None,
) -> DoctorReport:
    """Check `client` ("codex", "claude" or "all"); live probes only when not `offline`.
    `codex_version` ("0.171.0") picks the Codex rules; default: the installed `codex --version`.
    Each client's files are read once (`doctor.resolved`); the static checks, the summary and
    the live probe all use that one reading. `homes`: the folder options of the clients in
    folders of their own (`clients.registry`), by client name."""
    from notes_cli.clients import registry

    if client not in ("all", *registry.names()):
        raise UsageError(f"unknown --client {client!r}", fix=f"use {registry.listing('all')}")
    from notes_cli.doctor.env_checks import check_env

    env = dict(os.environ)
    view = codex_view or CodexView(cwd=project_dir)
    report = DoctorReport()
    version = _codex_version(codex_version) if client in ("all", "codex") else None
    resolved: list[Resolved[Any]] = []
    if client in ("all", "codex"):
        resolved.append(_codex(report, env, codex_home, version, view))
    if client in ("all", "claude"):
        resolved.append(
            _claude(report, env, claude_home, project_dir, claude_settings, run_helpers)
        )
    where = Where(homes or {}, project_dir)
    for plugin in registry.CLIENTS:
        if client in ("all", plugin.name):
            one, findings = plugin.doctor(where, env)
            report.findings += findings
            if one.configured or client == plugin.name:
                resolved.append(one)
    report.clients += [_summary(r) for r in resolved if r.configured]
    _config_missing(report, client, codex_home, claude_home, where)
    report.findings += check_env(env)
    if not offline:
        betas_off = any(_claude_betas_off(r, env) for r in resolved if r.client == "claude")
        _live(report, resolved, timeout, _Shapes(minimal, version, betas_off))
    return report


@dataclass(frozen=True)
class _Shapes:
    """Which request shape the live probe sends: the client's recorded one (by default) or,
    with `--minimal`, pdnotes' small body."""

    minimal: bool
    codex_version: tuple[int, int, int] | None
    claude_betas_off: bool = False  # CLAUDE_CODE_DISABLE_EXPERIMENTAL_BETAS is set

    def for_endpoint(self, endpoint: Any) -> Any:
        if self.minimal:
            return None
        from notes_cli.doctor.client_shape import installed_shape, without_betas

        shape = installed_shape(endpoint, codex_version=self.codex_version)
        if shape and endpoint.protocol == "anthropic" and self.claude_betas_off:
            return without_betas(shape)
        return shape


def _claude_betas_off(resolved: Resolved[Any], env: Mapping[str, str]) -> bool:
    """Whether Claude Code, as configured, sends no experimental `anthropic-beta` values."""
    from notes_cli.clients.resolve import merge_claude_layers

    loaded = [(f.path, f.data) for f in resolved.layers if f.data is not None]
    value, _ = merge_claude_layers(loaded, env).env.get(_BETAS_OFF, ("", ""))
    return bool(str(value).strip())


_BETAS_OFF = "CLAUDE_CODE_DISABLE_EXPERIMENTAL_BETAS"


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
) -> Resolved[Any]:
    from notes_cli.clients.codex.checks import check_codex_layers
    from notes_cli.doctor.resolved import resolve_codex

    codex, problem = resolve_codex(codex_home, env, view)
    if problem is not None:
        report.findings.append(problem)
    if codex.layers is not None:
        report.findings += check_codex_layers(codex.layers, env, version, view.profile)
    return codex


def _claude(
    report: DoctorReport,
    env: dict[str, str],
    claude_home: Path | None,
    project_dir: Path | None,
    settings_file: Path | None,
    run_helpers: bool,
) -> Resolved[Any]:
    from notes_cli.doctor.claude_checks import check_claude
    from notes_cli.doctor.resolved import resolve_claude

    claude = resolve_claude(claude_home, project_dir, env, settings_file)
    report.findings += check_claude(claude.layers, claude_home, env, run_helpers=run_helpers)
    return claude


def _summary(resolved: Resolved[Any]) -> ClientSummary:
    """The client's header: its files and the URL it will call (none when a file does not
    parse; that file has its finding)."""
    endpoint = resolved.endpoint
    return ClientSummary(
        resolved.client,
        resolved.files,
        endpoint.request_url() if endpoint else None,
        endpoint.model if endpoint else None,
    )


def _config_missing(
    report: DoctorReport,
    client: str,
    codex_home: Path | None,
    claude_home: Path | None,
    where: Where | None = None,
) -> None:
    """A client with no config: an error when asked for explicitly or when no client is
    configured, else a warning (most people use one client). The clients whose `listed_unset`
    is False are counted in "all" only once set up: most people with Codex or Claude Code use
    none."""
    from notes_cli.clients import registry
    from notes_cli.doctor.registry import make

    configured = {s.client for s in report.clients}
    wanted = ["codex", "claude"] if client == "all" else [client]
    if client == "all":
        wanted += [c.name for c in registry.CLIENTS if c.listed_unset]
    severity: Severity = "error" if client != "all" or not configured else "warning"
    for name in wanted:
        finding_client: FindingClient = name
        if name in configured:
            continue
        plugin = registry.get(name)
        if plugin is not None:
            path = plugin.missing_file(where or Where())
        elif name == "codex":
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
    report: DoctorReport, resolved: list[Resolved[Any]], timeout: float, shapes: _Shapes
) -> None:
    """Probe the endpoint of each client that has one; a live finding supersedes the static
    guess with the same id (e.g. the /v1 warning becomes an error once a probe has shown the
    404)."""
    try:
        from notes_cli.doctor.live import probe_endpoint
    except ImportError as exc:
        raise UsageError(
            "live checks are not available in this build", fix="run pdnotes doctor --offline"
        ) from exc
    from notes_cli.clients.urls import url_problem

    for client in resolved:
        # A URL that does not parse cannot be called: its static finding says why.
        if client.endpoint is None or url_problem(client.endpoint.base_url) is not None:
            continue
        findings, probes = probe_endpoint(
            client.endpoint,
            timeout=timeout,
            static_findings=[f for f in report.findings if f.client == client.client],
            shape=shapes.for_endpoint(client.endpoint),
            limits=client.limits,
            window=client.window,
        )
        confirmed = {(f.id, f.client) for f in findings}
        report.findings = [f for f in report.findings if (f.id, f.client) not in confirmed]
        report.findings += findings
        report.probes += probes
