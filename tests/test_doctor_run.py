"""run_doctor without --offline: static findings first, then one live probe per configured
endpoint; a live finding supersedes the static guess with the same id."""

from __future__ import annotations

from pathlib import Path

import pytest

from notes_cli.clients.endpoint import Endpoint
from notes_cli.doctor.findings import Finding, Probe
from notes_cli.doctor.run import run_doctor


@pytest.fixture
def probed(monkeypatch) -> list[tuple[Endpoint, list[Finding]]]:
    """Replace the live prober; record what it was asked, answer a /v1 error for Codex."""
    calls: list[tuple[Endpoint, list[Finding]]] = []

    def fake_probe(endpoint, *, timeout, static_findings, shape=None, limits=None, window=None):  # type: ignore[no-untyped-def]  # noqa: E501
        calls.append((endpoint, list(static_findings)))
        probe = Probe(endpoint.client, "models", "GET", endpoint.models_url(), 404, 1.0, False)
        if endpoint.client != "codex":
            return [], [probe]
        live = Finding("base-url-v1-suffix", "error", "codex", "404 with /v1", "drop /v1")
        return [live], [probe]

    monkeypatch.setattr("notes_cli.doctor.live.probe_endpoint", fake_probe)
    monkeypatch.setenv("PDNOTES_CODEX_BIN", "/nonexistent")
    return calls


def test_live_probes_each_endpoint_and_supersedes_static_guesses(cli, probed) -> None:
    cli("config", "codex", "--preset", "mock")
    cli("config", "claude", "--preset", "mock")
    config = Path.home() / ".codex" / "config.toml"
    config.write_text(config.read_text().replace("8000/api", "8000/api/v1"))

    report = run_doctor(offline=False, timeout=3.0)

    assert [endpoint.client for endpoint, _ in probed] == ["codex", "claude"]
    codex_static = probed[0][1]
    assert any(f.id == "base-url-v1-suffix" and f.severity == "warning" for f in codex_static)
    v1 = [f for f in report.findings if f.id == "base-url-v1-suffix"]
    assert [f.severity for f in v1] == ["error"]  # the static warning was replaced
    assert len(report.probes) == 2 and report.ok is False


def test_offline_never_probes(cli, probed) -> None:
    cli("config", "codex", "--preset", "mock")
    report = run_doctor(offline=True)
    assert probed == [] and report.probes == []


def test_unparseable_client_is_not_probed(cli, probed, isolated_home: Path) -> None:
    path = isolated_home / ".codex" / "config.toml"
    path.parent.mkdir(parents=True)
    path.write_text("model = [\n")
    cli("config", "claude", "--preset", "mock")

    report = run_doctor(offline=False)

    assert [endpoint.client for endpoint, _ in probed] == ["claude"]
    assert "toml-syntax" in {f.id for f in report.findings}


def test_each_client_file_is_read_once_for_checks_summary_and_probe(
    cli, probed, monkeypatch
) -> None:
    # One reading feeds the static checks, the summary and the live probe: a file edited
    # while doctor runs cannot give the three different answers.
    from notes_cli import fileio

    cli("config", "codex", "--preset", "mock")
    cli("config", "claude", "--preset", "mock")
    reads: list[Path] = []
    read_text = fileio.read_text

    def counting(path: Path, **kwargs):  # type: ignore[no-untyped-def]
        reads.append(Path(path))
        return read_text(path, **kwargs)

    monkeypatch.setattr(fileio, "read_text", counting)
    report = run_doctor(offline=False, timeout=3.0)

    codex = Path.home() / ".codex" / "config.toml"
    claude = Path.home() / ".claude" / "settings.json"
    assert reads.count(codex) == 1 and reads.count(claude) == 1, reads
    assert [s.client for s in report.clients] == ["codex", "claude"]
    assert [endpoint.client for endpoint, _ in probed] == ["codex", "claude"]
