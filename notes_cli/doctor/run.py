"""`pdnotes doctor`: static findings for each client, then (unless offline) live probes of the
endpoints the clients will call. Returns a `DoctorReport`; never prints."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

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
    project_dir: Path | None = None,
    minimal: bool = False,
    homes: Mapping[str, Path | None] | None = None,
    flags: Mapping[str, Any] | None = None,
) -> DoctorReport:
    """Check `client` (a client's name or "all"); live probes only when not `offline`.
    Each client's files are read once (`doctor.resolved`); the static checks, the summary and
    the live probe all use that one reading. `homes`: the clients' folder options, by client
    name; `flags`: how the clients are run (`Where.flags`: `--profile`, `-c`, `--settings`,
    each client's `doctor_options`)."""
    from notes_cli.clients import registry

    if client not in ("all", *registry.names()):
        raise UsageError(f"unknown --client {client!r}", fix=f"use {registry.listing('all')}")
    from notes_cli.doctor.env_checks import check_env

    env = dict(os.environ)
    report = DoctorReport()
    resolved: list[Resolved[Any]] = []
    where = Where(homes or {}, project_dir, flags or {})
    for plugin in registry.CLIENTS:  # in the order users see them
        if client not in ("all", plugin.name):
            continue
        one, findings = plugin.doctor(where, env)
        report.findings += findings
        if one.configured or client == plugin.name:
            resolved.append(one)
    report.clients += [_summary(r) for r in resolved if r.configured]
    _config_missing(report, client, where)
    report.findings += check_env(env)
    if not offline:
        _live(report, resolved, timeout, _Shapes(minimal))
    return report


@dataclass(frozen=True)
class _Shapes:
    """Which request shape the live probe sends: the client's recorded one (by default) or,
    with `--minimal`, pdnotes' small body."""

    minimal: bool

    def for_client(self, client: Resolved[Any]) -> Any:
        """The client's shape at the release doctor judged it by (default: the installed),
        without the headers the client, as configured, does not send."""
        endpoint = client.endpoint
        if self.minimal or endpoint is None:
            return None
        from notes_cli.doctor.client_shape import installed_shape, without_headers

        shape = installed_shape(endpoint, version=client.version)
        if shape and client.unsent_headers:
            return without_headers(shape, client.unsent_headers)
        return shape


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


def _config_missing(report: DoctorReport, client: str, where: Where | None = None) -> None:
    """A client with no config: an error when asked for explicitly or when no client is
    configured, else a warning (most people use one client). The clients whose `listed_unset`
    is False are counted in "all" only once set up: most people with Codex or Claude Code use
    none of them."""
    from notes_cli.clients import registry
    from notes_cli.doctor.registry import make

    configured = {s.client for s in report.clients}
    listed = [c.name for c in registry.CLIENTS if c.listed_unset]
    wanted = listed if client == "all" else [client]
    severity: Severity = "error" if client != "all" or not configured else "warning"
    for name in wanted:
        finding_client: FindingClient = name
        if name in configured:
            continue
        plugin = registry.get(name)
        assert plugin is not None, name  # run_doctor checked --client
        path = plugin.missing_file(where or Where())
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
            shape=shapes.for_client(client),
            limits=client.limits,
            window=client.window,
        )
        confirmed = {(f.id, f.client) for f in findings}
        report.findings = [f for f in report.findings if (f.id, f.client) not in confirmed]
        report.findings += findings
        report.probes += probes
