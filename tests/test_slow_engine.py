"""Defaults that adapt (issue 27, point 6): smoke, doctor and `notes generate` against a real
engine server that decodes slowly — the bundled engine at `speed` < 1 (about 16 tokens/s at 0.1,
like a CPU llama.cpp) with the `no-stop` fault (every answer runs to its budget, like a base
model). The verdicts name the real cause: slow but working (with the measured rate), stalled,
or never started. The assertions are on verdicts, never on wall-clock times: every timeout
here is far from the boundary the verdict depends on (e.g. 3 s against a 256-token answer
that needs 16 s)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

CPU_SPEED = 0.1  # the default preset decodes ~160 tokens/s at speed 1: ~16 tokens/s here


@pytest.fixture
def cpu_engine(start_engine_server: Any) -> Any:
    """A healthy engine that decodes at ~16 tokens/s and never stops by itself."""
    return start_engine_server(speed=CPU_SPEED, faults=("no-stop",))


def codex_config(home: Path, base_url: str) -> None:
    path = home / ".codex" / "config.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        'model = "pd-mock-1"\nmodel_provider = "gw"\n\n[model_providers.gw]\nname = "GW"\n'
        f'base_url = "{base_url}"\nwire_api = "responses"\n'
    )


def claude_config(home: Path, base_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = home / ".claude"
    folder.mkdir(parents=True, exist_ok=True)
    settings = {"env": {"ANTHROPIC_BASE_URL": base_url, "ANTHROPIC_MODEL": "pd-mock-1"}}
    (folder / "settings.json").write_text(json.dumps(settings))
    monkeypatch.setenv("ANTHROPIC_AUTH_TOKEN", "sk-slow-engine-test")


def smoke(cli: Any, engine: Any, *flags: str) -> Any:
    return cli(
        *("smoke", "--client", "openai", "--base-url", engine.base_url, "--model", "pd-mock-1"),
        *flags,
    )


# --------------------------------------------------------------------------- smoke


def test_smoke_says_slow_but_working_with_the_rate_not_a_failure(cli: Any, cpu_engine: Any) -> None:
    result = smoke(cli, cpu_engine, "-n", "2", "--timeout", "3", "--retries", "2", "--json")
    assert result.exit_code == 0, result.stdout
    doc = result.json()
    verdict = doc["verdict"]
    assert doc["ok"] is True and verdict["slow"] is True, verdict
    assert verdict["returned"] and verdict["stable"] and verdict["reasons"] == []
    for run in doc["runs"]:
        assert run["pace"]["cause"] == "slow", run
        assert run["attempts"] == 1 and run["retried"] == []  # the next try would be as slow
        assert run["pace"]["max_tokens"] == 512 and 2 <= run["pace"]["tokens"] < 512
        assert run["tokens_per_s"] == run["pace"]["tokens_per_s"] > 0
        # The flag to change and a value that fits, measured from this run.
        assert "slow but working" in run["problem"] and "raise --timeout to " in run["problem"]
        assert "lower --max-tokens to " in run["problem"]
    assert len(verdict["slow_reasons"]) == 2
    human = smoke(cli, cpu_engine, "-n", "1", "--timeout", "3")
    assert human.exit_code == 0
    assert "SLOW returned yes, completed not seen" in human.stdout
    assert "slow 1 of 1" in human.stdout
    assert "tokens/s (first token after" in human.stdout


def test_smoke_passes_a_slow_engine_whose_answer_ends_in_time(
    cli: Any, start_engine_server: Any
) -> None:
    """Slow decoding is no verdict by itself: an answer that ends within --timeout passes."""
    engine = start_engine_server(speed=0.3)  # ~50 tokens/s; the 82-token answer takes ~2 s
    result = smoke(cli, engine, "-n", "1", "--timeout", "30", "--json")
    assert result.exit_code == 0, result.stdout
    doc = result.json()
    assert doc["verdict"]["slow"] is False and doc["runs"][0]["pace"] is None
    assert doc["runs"][0]["finish_reason"] == "stop"


def test_smoke_fails_a_stall_and_does_not_call_it_slow(cli: Any, start_engine_server: Any) -> None:
    engine = start_engine_server(faults=("stall-mid-stream:60s",))
    result = smoke(cli, engine, "-n", "1", "--timeout", "2", "--json")
    assert result.exit_code == 1
    run = result.json()["runs"][0]
    assert run["pace"]["cause"] == "stalled" and run["ok"] is False
    assert result.json()["verdict"]["slow"] is False
    # With --timeout 2 the whole-answer deadline (2 s from the request) and the silence limit
    # (2 s from the one token, 8 ms later) are one timer tick apart: under load either may
    # fire first, and either names the stall.
    assert run["problem"].startswith(("total-timeout: ", "idle-stream-timeout: "))
    assert ": stalled: 1 token (first token after " in run["problem"]


# --------------------------------------------------------------------------- doctor


@pytest.mark.parametrize("client", ["codex", "claude"])
def test_doctor_warns_slow_but_working_instead_of_stream_never_finished(
    cli: Any, cpu_engine: Any, isolated_home: Path, monkeypatch: pytest.MonkeyPatch, client: str
) -> None:
    if client == "codex":  # the Responses API, in Codex's request shape
        codex_config(isolated_home, cpu_engine.base_url)
    else:  # Anthropic Messages, in Claude Code's
        claude_config(isolated_home, cpu_engine.anthropic_base_url, monkeypatch)
    result = cli("doctor", "--client", client, "--timeout", "3", "--json")
    assert result.exit_code == 0, result.stdout
    findings = {f["id"]: f for f in result.json()["findings"]}
    assert "stream-never-finished" not in findings
    slow = findings["stream-slow"]
    assert slow["severity"] == "warning"
    assert (
        "slow but working: " in slow["message"]
        and " tokens/s (first token after " in (slow["message"])
    )
    assert "the 256-token budget needs about " in slow["message"]
    assert "raise --timeout to " in slow["fix"]


def test_doctor_names_a_stalled_stream(
    cli: Any, start_engine_server: Any, isolated_home: Path
) -> None:
    engine = start_engine_server(faults=("stall-mid-stream:60s",))
    codex_config(isolated_home, engine.base_url)
    result = cli("doctor", "--client", "codex", "--timeout", "2", "--json")
    assert result.exit_code == 1
    findings = {f["id"]: f for f in result.json()["findings"]}
    assert "stream-slow" not in findings
    stalled = findings["stream-never-finished"]
    assert ": stalled: 1 token (first token after " in stalled["message"]
    assert "stopped sending mid-answer" in stalled["fix"]


def test_doctor_names_a_stream_that_never_started(
    cli: Any, start_engine_server: Any, isolated_home: Path
) -> None:
    """Headers at once, the first token only after a long prefill (~17 s at speed 0.001)."""
    engine = start_engine_server(speed=0.001)
    codex_config(isolated_home, engine.base_url)
    result = cli("doctor", "--client", "codex", "--timeout", "2", "--json")
    assert result.exit_code == 1
    finding = next(f for f in result.json()["findings"] if f["id"] == "stream-never-finished")
    assert ": never started: no output token within " in finding["message"]
    assert "raise --timeout to see its first token" in finding["fix"]


# --------------------------------------------------------------------------- notes generate


def generate(cli: Any, engine: Any, timeout: str) -> Any:
    return cli(
        *("notes", "generate", "--base-url", engine.base_url, "--model", "pd-mock-1"),
        *("--lang", "en", "--no-repair", "--timeout", timeout, "-o", "note.md"),
    )


def test_notes_generate_gives_up_early_when_not_even_a_table_fits(
    cli: Any, cpu_engine: Any, tmp_path: Path
) -> None:
    # ~16 tokens/s x 5 s: under the ~106-token table. The first look at the rate comes at the
    # 16th chunk, a second after the first token; 5 s leaves a loaded machine four seconds for
    # that first token (3 s did not: the check never ran before the deadline under load)
    result = generate(cli, cpu_engine, "5")
    assert result.exit_code == 1
    assert "fewer than the smallest table this kit needs" in result.stderr
    assert "stopped after " in result.stderr  # early: not at the deadline
    assert " tokens/s (first token after " in result.stderr
    assert "fix: raise --timeout (the 4096-token budget needs about " in result.stderr
    assert not (tmp_path / "note.md").exists()


def test_notes_generate_warns_then_names_the_rate_at_the_deadline(
    cli: Any, start_engine_server: Any, tmp_path: Path
) -> None:
    engine = start_engine_server(speed=0.3, faults=("no-stop",))  # ~50 tokens/s
    result = generate(cli, engine, "6")
    assert result.exit_code == 1
    assert "warning: slow model: " in result.stderr
    assert "so a longer one will be cut" in result.stderr
    assert "error: the model is slow but working: " in result.stderr
    assert "ran out before the answer ended; no note written" in result.stderr
    assert "fix: raise --timeout to " in result.stderr
    assert not (tmp_path / "note.md").exists()


def test_notes_generate_names_a_stall_as_a_stall(
    cli: Any, start_engine_server: Any, tmp_path: Path
) -> None:
    engine = start_engine_server(faults=("stall-mid-stream:60s",))
    result = cli(
        *("notes", "generate", "--base-url", engine.base_url, "--model", "pd-mock-1"),
        *("--lang", "en", "--no-repair", "--timeout", "2", "-o", "note.md", "--json"),
    )
    assert result.exit_code == 1
    error = json.loads(result.stdout)
    assert ": stalled: 1 token (first token after " in error["error"]
    assert "slow but working" not in error["error"]
    assert not (tmp_path / "note.md").exists()
