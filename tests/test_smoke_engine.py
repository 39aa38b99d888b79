"""Smoke and live doctor against the bundled engine on a real socket: every client protocol
returns, completes, reports the engine's pd_timing, and the engine's /api/v1 404 is diagnosed."""

from __future__ import annotations

import re
from typing import Any

import pytest

from notes_cli.clients.endpoint import Endpoint
from notes_cli.doctor.live import probe_endpoint
from notes_cli.smoke import run_smoke

KEY = "sk-engine-test-0123456789"


@pytest.mark.parametrize(
    ("client", "protocol", "anthropic"),
    [("codex", "responses", False), ("claude", "anthropic", True), ("openai", "chat", False)],
)
def test_smoke_passes_against_the_engine(
    engine_server: Any, client: str, protocol: str, anthropic: bool
) -> None:
    base = engine_server.anthropic_base_url if anthropic else engine_server.base_url
    endpoint = Endpoint(client, base, protocol, model="pd-mock-1", key=KEY)  # type: ignore[arg-type]
    report = run_smoke(endpoint, n=2, timeout=20)
    assert report.verdict.ok, report.verdict.reasons
    run = report.runs[0]
    assert run.output_tokens and run.tokens_source == "usage"
    assert run.ttft_ms is not None and run.total_ms is not None and run.ttft_ms <= run.total_ms
    assert run.pd_timing is not None and "prefill_ms" in run.pd_timing
    assert report.breakdown.engine is not None


def test_doctor_live_is_clean_against_the_engine(engine_server: Any) -> None:
    endpoint = Endpoint("codex", engine_server.base_url, "responses", model="pd-mock-1", key=KEY)
    findings, probes = probe_endpoint(endpoint, timeout=10)
    assert findings == []
    assert [(p.name, p.ok) for p in probes] == [("models", True), ("stream", True)]


def test_doctor_live_finds_the_doubled_v1_on_the_engine(engine_server: Any) -> None:
    endpoint = Endpoint(
        "codex",
        engine_server.base_url + "/v1",
        "responses",
        model="pd-mock-1",
        key=KEY,
        source="config.toml [model_providers.mock]",
    )
    findings, _ = probe_endpoint(endpoint, timeout=10)
    assert [f.id for f in findings] == ["base-url-v1-suffix"]
    assert findings[0].fix.endswith(f'base_url = "{engine_server.base_url}"')


def test_doctor_live_finds_a_miscased_model_on_the_engine(engine_server: Any) -> None:
    endpoint = Endpoint(
        "claude",
        engine_server.anthropic_base_url,
        "anthropic",
        model="PD-Mock-1",
        key=KEY,
        source="settings.json",
    )
    findings, _ = probe_endpoint(endpoint, timeout=10)
    assert [f.id for f in findings] == ["model-unknown"]
    assert '"ANTHROPIC_MODEL": "pd-mock-1"' in findings[0].fix


def test_smoke_command_against_the_engine(engine_server: Any, cli: Any) -> None:
    result = cli(
        "smoke",
        "--client",
        "claude",
        "--base-url",
        engine_server.anthropic_base_url,
        "--model",
        "pd-mock-1",
        "--json",
    )
    assert result.exit_code == 0, result.stdout + result.stderr
    doc = result.json()
    assert doc["ok"] and [r["finish_reason"] for r in doc["runs"]] == ["end_turn"] * 3
    assert doc["breakdown"]["engine"]["prefill_ms"] > 0


def test_the_documented_python_example_runs(engine_server: Any, capsys: Any) -> None:
    from pathlib import Path

    doc = (Path(__file__).parent.parent / "docs" / "smoke.md").read_text()
    code = doc.split("```python\n", 1)[1].split("```", 1)[0]
    code = code.replace("http://127.0.0.1:8000/api", engine_server.base_url)
    exec(compile(code, "docs/smoke.md", "exec"), {})
    printed = capsys.readouterr().out.splitlines()
    assert " completed True " in printed[0]
    assert "prefill_ms" in printed[2]


def test_the_engines_simulated_time_is_labelled_and_put_into_wall_time(
    start_engine_server: Any, cli: Any
) -> None:
    engine = start_engine_server(speed=5.0)
    args = ("smoke", "--client", "openai", "--base-url", engine.base_url, "--model", "pd-mock-1")
    result = cli(*args, "-n", "1")
    assert result.exit_code == 0, result.stdout + result.stderr
    doc = cli(*args, "-n", "1", "--json").json()
    engine_ms = doc["breakdown"]["engine"]
    assert engine_ms["speed"] == 5.0
    # The decode the engine reports is its simulated hardware's: five times the wall time.
    line = next(x for x in result.stdout.splitlines() if "pd_timing" in x)
    assert "in its simulated hardware time" in line and "decode" in line
    assert "--speed 5: its wall clock takes 1/5 of that time" in result.stdout
    decode = re.search(r"in wall time: decode ([\d.]+) ms", result.stdout.replace(",", ""))
    simulated = re.search(r"decode ([\d.]+) ms", line)
    assert decode and simulated
    assert float(decode.group(1)) == pytest.approx(float(simulated.group(1)) / 5, abs=0.06)
