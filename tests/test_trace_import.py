"""`pdnotes trace import` turns Claude Code's and Codex's own session logs (hand-written
fixtures in their formats: tests/fixtures/agent_logs/README.md) into a trace: one row per model
call, duplicates counted once, cache reads as shared synthetic blocks, and no text."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from notes_cli.trace.format import read_rows

LOGS = Path(__file__).parent / "fixtures" / "agent_logs"


@pytest.fixture
def homes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The fixtures as the clients' own folders ($CLAUDE_CONFIG_DIR, $CODEX_HOME)."""
    shutil.copytree(LOGS, tmp_path / "logs")
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "logs" / "claude"))
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "logs" / "codex"))
    return tmp_path


def test_both_clients_logs_become_one_trace_without_text(cli, homes: Path) -> None:
    out = homes / "trace.jsonl"
    result = cli("trace", "import", str(out))
    assert result.exit_code == 0, result.stderr
    rows = list(read_rows(out))
    # Claude: msg_01A (two lines, counted once) and msg_01B; Codex: two calls (a repeated
    # event and a rate-limit-only one skipped). A call is sent with the last line the client
    # wrote before its answer (Claude: the prompt at 09:00:00, then the tool result at :05;
    # Codex: the prompt at 09:10:00.2, then the tool's output at :05), times from the first;
    # its delay runs from the end of the session's previous answer (Claude: its second line
    # at :03.1; Codex: the call item at :04, not the token count after the tool ran).
    got = [(r.timestamp, r.delay, r.input_length, r.output_length, r.cached_tokens, r.turn)
           for r in rows]  # fmt: skip
    assert got == [
        (0.0, None, 3 + 1200 + 14000, 80, 14000, 1),
        (5000.0, 1900.0, 5 + 900 + 15200, 40, 15200, 2),
        (600200.0, None, 9000, 300, 0, 1),
        (605000.0, 1000.0, 9800, 120, 8960, 2),
    ]  # fmt: skip
    assert rows[0].session_id == rows[1].session_id != rows[2].session_id == rows[3].session_id
    # 15,203 tokens: 30 blocks, all new; then 15,200 cached: the first 29 again, 3 new
    assert rows[0].hash_ids == tuple(range(30))
    assert rows[1].hash_ids == tuple(range(29)) + (30, 31, 32)
    # Codex's first call cached nothing; its second reuses 8,960 // 512 = 17 blocks
    assert rows[2].hash_ids == tuple(range(33, 51))
    assert rows[3].hash_ids == tuple(range(33, 50)) + (51, 52, 53)
    text = out.read_text()
    assert "SENTINEL" not in text and "7f3c2a10" not in text and "0196d1a2" not in text
    show = cli("trace", "show", str(out), "--json").json()
    assert (show["sessions"], show["turns_per_session"]) == (2, 2.0)
    assert (show["reused_blocks"], show["blocks"]) == (29 + 17, 30 + 32 + 18 + 20)


def test_a_client_and_a_date_range_choose_the_sessions(cli, homes: Path) -> None:
    out = homes / "codex.jsonl"
    assert cli("trace", "import", str(out), "--client", "codex").exit_code == 0
    assert [r.input_length for r in read_rows(out)] == [9000, 9800]
    later = cli("trace", "import", str(homes / "none.jsonl"), "--since", "2026-05-15")
    assert later.exit_code == 2 and "no model calls" in later.stderr
    assert not (homes / "none.jsonl").exists()
    folder = homes / "logs" / "claude" / "projects" / "-home-dev-app"
    one = homes / "one.jsonl"
    assert cli("trace", "import", str(one), "--client", "claude", "--claude-dir", str(folder),
               "--until", "2026-05-14").exit_code == 0  # fmt: skip
    assert len(list(read_rows(one))) == 2


def test_import_refuses_to_overwrite_and_bad_usage(cli, homes: Path) -> None:
    out = homes / "kept.jsonl"
    out.write_text("mine\n")
    result = cli("trace", "import", str(out))
    assert result.exit_code == 2 and "already exists" in result.stderr
    assert out.read_text() == "mine\n"
    rollout = next((homes / "logs" / "codex").rglob("rollout-*.jsonl"))
    rollout.write_text(rollout.read_text().replace('"output_tokens":300', '"output_tokens":-1'))
    bad = cli("trace", "import", str(homes / "t.jsonl"), "--client", "codex")
    assert bad.exit_code == 2 and "output_tokens is not a token count" in bad.stderr
    assert "Traceback" not in bad.stderr
