"""Drawing for `pdnotes doctor`: a header per client (its file and the URL it will call), one
line per finding with its fix underneath, the live probes, and a closing verdict."""

from __future__ import annotations

from typing import TYPE_CHECKING

from notes_cli.render import escape, line
from notes_cli.secrets import mask_url

if TYPE_CHECKING:
    from notes_cli.doctor.findings import Finding
    from notes_cli.doctor.run import DoctorReport

_STYLE = {"error": "bold red", "warning": "yellow", "info": "cyan"}
_RANK = {"error": 0, "warning": 1, "info": 2}


def report(doctor_report: DoctorReport, *, offline: bool) -> None:
    from notes_cli.clients import registry

    titles = {**registry.titles(), "env": "Environment"}
    summaries = {s.client: s for s in doctor_report.clients}
    order = [
        c for c in titles if c in summaries or any(f.client == c for f in doctor_report.findings)
    ]
    for client in order:
        line(f"[bold]{titles[client]}[/]" + _header(summaries.get(client)))
        summary = summaries.get(client)
        if summary and summary.request_url:
            line(f"  calls POST {escape(mask_url(summary.request_url))}")
        findings = sorted(
            (f for f in doctor_report.findings if f.client == client),
            key=lambda f: _RANK[f.severity],
        )
        for finding in findings:
            _finding(finding)
        if not findings:
            line("  [green]no problems found[/]")
        for probe in (p for p in doctor_report.probes if p.client == client):
            status = probe.status if probe.status is not None else "—"
            took = f"{probe.ms:.0f} ms" if probe.ms is not None else ""
            mark = "[green]ok[/]" if probe.ok else "[red]fail[/]"
            line(
                f"  probe {mark} {escape(probe.method)} {escape(probe.url)} → {status} {took}"
                + (f"  {escape(probe.detail)}" if probe.detail else "")
            )
    line(_verdict(doctor_report, offline=offline))


def _header(summary: object) -> str:
    files = getattr(summary, "files", ()) if summary else ()
    return f"  [dim]{escape(', '.join(files))}[/]" if files else ""


def _finding(finding: Finding) -> None:
    where = ""
    if finding.file:
        where = f"  ({escape(finding.file)}" + (f":{finding.line}" if finding.line else "") + ")"
    style = _STYLE[finding.severity]
    line(
        f"  [{style}]{finding.severity:<7}[/] [bold]{finding.id}[/]  {escape(finding.message)}"
        f"[dim]{where}[/]"
    )
    line(f"          fix: {escape(finding.fix)}")


def _verdict(doctor_report: DoctorReport, *, offline: bool) -> str:
    counts = {s: sum(f.severity == s for f in doctor_report.findings) for s in _STYLE}
    tally = f"{counts['error']} error(s), {counts['warning']} warning(s), {counts['info']} note(s)"
    scope = " (offline: files and environment only)" if offline else ""
    if doctor_report.ok:
        return f"[green]ok[/]: {tally}{scope}"
    return f"[bold red]problems found[/]: {tally}{scope}; fix the errors above and run again"
