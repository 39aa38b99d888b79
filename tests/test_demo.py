"""`pdnotes demo` end to end: every step's outcome, not just the exit code."""

from __future__ import annotations

import tempfile
import threading
from pathlib import Path

import pytest

STEPS = [
    "engine", "config", "doctor", "mistakes", "smoke", "notes", "bridge", "experiment", "next",
]  # fmt: skip
ARTICLE_FINDINGS = {
    "base-url-v1-suffix",
    "base-url-query",
    "env-key-unset",
    "model-unknown",
    "wire-api-chat-removed",
    "anthropic-in-codex",
}


def _engine_threads() -> list[str]:
    return [t.name for t in threading.enumerate() if t.name.startswith("pdnotes-engine")]


def test_demo_json_reports_every_step(cli, tmp_path: Path, isolated_home: Path) -> None:
    keep = tmp_path / "kept"
    result = cli("demo", "--json", "--lang", "zh", "--keep", str(keep))

    assert result.exit_code == 0, result.stderr
    doc = result.json()
    assert doc["schema"] == "pdnotes.demo/1" and doc["ok"] is True
    steps = {s["key"]: s for s in doc["steps"]}
    assert [s["key"] for s in doc["steps"]] == STEPS
    assert all(s["ok"] for s in doc["steps"]), [s["key"] for s in doc["steps"] if not s["ok"]]

    files = {f["client"]: f for f in steps["config"]["files"]}
    assert files["codex"]["request_url"].endswith("/api/responses")
    assert files["claude"]["request_url"].endswith("/api/anthropic/v1/messages")

    doctor = steps["doctor"]["doctor"]
    assert doctor["ok"] and not [f for f in doctor["findings"] if f["severity"] == "error"]
    assert {p["client"] for p in doctor["probes"]} == {"codex", "claude"}
    assert all(p["ok"] for p in doctor["probes"])

    cases = steps["mistakes"]["cases"]
    assert {c["expect"] for c in cases} == ARTICLE_FINDINGS
    for case in cases:
        assert case["caught"] and case["finding"]["fix"], case

    smoke = steps["smoke"]["smoke"]
    assert smoke["verdict"]["ok"] and len(smoke["runs"]) == 3

    notes = steps["notes"]
    assert notes["verdict"] == "pass"
    assert sorted(Path(p).suffix for p in notes["files"]) == [".csv", ".html", ".json", ".md"]
    assert all(Path(p).is_file() and Path(p).is_relative_to(keep) for p in notes["files"])
    assert notes["table"]["columns"] == ["阶段", "瓶颈", "优化手段", "对应组件"]
    checked = cli("notes", "check", str(keep / "notes" / "pd-disagg-zh.md"))
    assert checked.exit_code == 0, checked.stdout

    bridge = steps["bridge"]
    assert bridge["upstream_responses_status"] == 404  # the engine played a chat-only gateway
    assert bridge["request_url"] == bridge["bridge_codex_base_url"] + "/responses"
    assert bridge["smoke"]["verdict"]["ok"] and len(bridge["smoke"]["runs"]) == 2

    experiment = steps["experiment"]["experiment"]
    colocated, disagg = experiment["presets"]
    assert (colocated["mode"], disagg["mode"]) == ("colocated", "disagg")
    assert colocated["max_gap_ms"] >= 3 * disagg["max_gap_ms"]
    assert colocated["long_transfer_ms"] == 0 and disagg["long_transfer_ms"] > 0
    assert disagg["long_ttft_ms"] > disagg["long_transfer_ms"]

    # The user's own client folders were never touched, and no engine is left running.
    assert not (isolated_home / ".codex").exists()
    assert not (isolated_home / ".claude").exists()
    assert _engine_threads() == []


def test_demo_human_output_is_plain_text_without_a_terminal(
    cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))  # where the demo's sandbox goes
    result = cli("demo")

    assert result.exit_code == 0, result.stdout + result.stderr
    assert "\x1b[" not in result.stdout  # NO_COLOR and not a terminal: no escape codes
    for heading in (
        "1. Start the bundled mock PD engine",
        "4. Reproduce the article's common errors",
        "7. Codex on a chat-only endpoint, through the bridge",
        "8. The PD experiment",
    ):
        assert heading in result.stdout
    assert "✓ doubled /v1 → base-url-v1-suffix" in result.stdout
    assert "demo finished: all 9 steps did what they should." in result.stdout
    assert "(the demo's files were removed" in result.stdout
    assert "POST http://127.0.0.1:" in result.stdout and "/api/responses -> 404" in result.stdout
    assert list(scratch.iterdir()) == []  # its temporary folder is gone
    assert _engine_threads() == []


def test_demo_rejects_an_unknown_language(cli) -> None:
    result = cli("demo", "--lang", "fr")
    assert result.exit_code == 2
    assert "--lang fr" in result.stderr


def test_a_failing_step_is_a_sentence_and_the_demo_goes_on(
    cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 35: a dependency that drops an API the config step relies on (tomlkit 0.15 and
    `_insert_after`) gave a 40-line traceback; now it is one sentence, and exit 1."""
    from notes_cli.clients.codex import config as codex_config

    def dropped_api(doc: object, key: str, value: object) -> None:
        raise AttributeError("'TOMLDocument' object has no attribute '_insert_after'")

    monkeypatch.setattr(codex_config, "_set_top_level", dropped_api)
    result = cli("demo")

    assert result.exit_code == 1
    assert "Traceback" not in result.stdout + result.stderr
    sentence = (
        "step 2 failed: Write the Codex and Claude Code configuration: expected both clients "
        "point at the engine (backups kept; no key written); saw AttributeError: 'TOMLDocument' "
        "object has no attribute '_insert_after' (at notes_cli/clients/codex/config.py:"
    )
    flat = " ".join(result.stdout.split())
    assert sentence in flat, result.stdout
    assert "fix: this is a bug in pdnotes, not in your setup" in flat
    assert "8. The PD experiment" in result.stdout  # the later steps still ran
    assert _engine_threads() == []


def test_a_failing_step_is_reported_in_json(cli, monkeypatch: pytest.MonkeyPatch) -> None:
    from notes_cli.demo import run

    def broken() -> object:
        raise RuntimeError("the experiment's engine did not start")

    monkeypatch.setattr(run, "_experiment_step", broken)
    result = cli("demo", "--json")

    assert result.exit_code == 1
    doc = result.json()
    assert doc["ok"] is False
    (failed,) = [s for s in doc["steps"] if not s["ok"]]
    assert failed["key"] == "experiment"
    assert failed["error"]["saw"] == "RuntimeError: the experiment's engine did not start"
    assert failed["error"]["fix"].startswith("this is a bug in pdnotes")


def test_an_engine_that_cannot_start_ends_the_demo_with_a_sentence(
    cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    from notes_cli.engine.http import server

    def cannot_bind(*args: object, **kwargs: object) -> object:
        raise OSError(98, "Address already in use")

    monkeypatch.setattr(server, "start_engine", cannot_bind)
    result = cli("demo")

    assert result.exit_code == 1
    flat = " ".join(result.stdout.split())
    assert "Traceback" not in result.stdout + result.stderr
    assert (
        "step 1 failed: Start the bundled mock PD engine: expected engine running on loopback; "
        "saw OSError: [Errno 98] Address already in use"
    ) in flat, result.stdout
    assert "demo finished with 1 failed step(s):" in flat
