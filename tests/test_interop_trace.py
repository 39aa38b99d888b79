"""The real Codex CLI and Claude Code, each for a session of several turns with a tool call,
through `pdnotes bridge serve --record FILE` in front of the bundled engine (chat completions
only, its key held by the bridge): the recording groups the turns by the client's own session
header, `trace show` finds prefix reuse, and `trace import` of the session logs the clients
wrote themselves finds the same calls with the same token counts. Neither file holds any of
the prompts' text, the keys, the session ids or the paths (sentinels planted in each)."""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from bridge_support import bridge_serve, free_port
from interop_support import CLAUDE_ENV, ClientRun, client_binary, codex_overrides, run_client

from notes_cli.trace.format import TraceRow, read_rows

pytestmark = pytest.mark.interop

ENGINE_KEY = "sk-SENTINEL-engine-key-0123456789abcdef"
BRIDGE_KEY = "sk-SENTINEL-bridge-key-fedcba9876543210"


@pytest.fixture
def keyed_chat_engine(
    start_engine_server: Callable[..., Any], monkeypatch: pytest.MonkeyPatch
) -> Any:
    """An engine serving only chat completions, whose key only the bridge holds; the clients
    send the bridge its own key."""
    monkeypatch.setenv("ENGINE_KEY", ENGINE_KEY)
    monkeypatch.setenv("BRIDGE_KEY", BRIDGE_KEY)
    return start_engine_server(protocols=("chat",), api_key_env="ENGINE_KEY")


def _configure(cli: Callable[..., Any], client: str, upstream: str) -> None:
    key_flag = "--env-key" if client == "codex" else "--token-env"
    result = cli(
        "config", client, "--bridge", "--base-url", upstream, key_flag, "ENGINE_KEY",
        "--bridge-key-env", "BRIDGE_KEY", "--model", "pd-mock-1",
        "--bridge-port", str(free_port()),
    )  # fmt: skip
    assert result.exit_code == 0, result.stderr


def _codex(home: Path, *args: str) -> ClientRun:
    codex = client_binary("codex")
    workdir = home / "work"
    workdir.mkdir(exist_ok=True)
    flags = ["--skip-git-repo-check", "--strict-config", *codex_overrides("pdnotes-bridge")]
    flags.append("--dangerously-bypass-approvals-and-sandbox")
    env = {"HOME": str(home), "CODEX_HOME": str(home / ".codex"), "BRIDGE_KEY": BRIDGE_KEY}
    return run_client([str(codex), "exec", *flags, *args], env=env, cwd=workdir)


def _claude(home: Path, *args: str) -> ClientRun:
    claude = client_binary("claude")
    project = home / "project"
    project.mkdir(exist_ok=True)
    env = {"HOME": str(home), "CLAUDE_CONFIG_DIR": str(home / ".claude"), **CLAUDE_ENV}
    flags = ["--output-format", "json", "--allowedTools", "Bash"]
    return run_client([str(claude), *flags, *args], env={**env, "BRIDGE_KEY": BRIDGE_KEY},
                      cwd=project)  # fmt: skip


def _check_session(rows: list[TraceRow], calls: int) -> None:
    """One session, its turns numbered in order, each prompt growing on the one before."""
    assert len(rows) == calls, rows
    assert rows[0].session_id is not None
    assert {r.session_id for r in rows} == {rows[0].session_id}
    assert [r.turn for r in rows] == list(range(1, calls + 1))
    assert all(a.timestamp < b.timestamp for a, b in zip(rows, rows[1:], strict=False))
    assert all(r.output_length >= 1 for r in rows)


def _check_no_text(path: Path, secrets: list[str]) -> None:
    text = path.read_text()
    for secret in ["SENTINEL", "pd-mock-1", *secrets]:
        assert secret not in text, secret


def _check_recording(cli: Callable[..., Any], trace: Path, calls: int) -> list[TraceRow]:
    rows = list(read_rows(trace))
    _check_session(rows, calls)
    show = cli("trace", "show", str(trace), "--json")
    assert show.exit_code == 0, show.stderr
    summary = show.json()
    assert (summary["requests"], summary["sessions"], summary["max_turns"]) == (calls, 1, calls)
    # every turn resends the tools, instructions and conversation so far: a prefix seen before
    assert summary["reused_blocks"] > 0 and summary["prefix_reuse"] > 0
    for before, after in zip(rows, rows[1:], strict=False):
        assert after.hash_ids[0] == before.hash_ids[0]
    return rows


def _check_import(
    cli: Callable[..., Any], client: str, home: Path, recorded: list[TraceRow]
) -> Path:
    """`trace import` of the client's own logs: the same calls, in the same session, with the
    token counts the bridge recorded (the clients log the usage the bridge answered with) and
    the think time before each later turn."""
    imported = home.parent / f"{client}-imported.jsonl"
    result = cli("trace", "import", str(imported), "--client", client)
    assert result.exit_code == 0, result.stderr
    assert f"{len(recorded)} model calls in 1 sessions" in result.stderr
    rows = list(read_rows(imported))
    _check_session(rows, len(recorded))
    assert [(r.input_length, r.output_length) for r in rows] == [
        (r.input_length, r.output_length) for r in recorded
    ]
    assert [r.cached_tokens for r in rows] == [0] * len(rows)  # the engine reports no hits
    # sent when the client logged the prompt or the tool's output, after the previous answer
    # ended: each later turn has its think time, as a recording does
    assert rows[0].delay is None
    assert all(r.delay is not None and 0 <= r.delay < r.timestamp for r in rows[1:]), rows
    return imported


def test_a_codex_session_through_the_recording_bridge_and_its_own_log(
    cli: Callable[..., Any], isolated_home: Path, keyed_chat_engine: Any, tmp_path: Path
) -> None:
    client_binary("codex")
    _configure(cli, "codex", keyed_chat_engine.base_url)
    mark = f"SENTINEL{uuid.uuid4().hex[:10]}"
    trace = tmp_path / "codex.jsonl"

    with bridge_serve("--record", str(trace)):
        first = _codex(isolated_home, f"run: echo {mark}")
        second = _codex(isolated_home, "resume", "--last", f"say {mark}-two")

    # the tool call and the answer quoting its output, then a resumed turn of the same session
    assert first.returncode == 0 and second.returncode == 0, first.stderr + second.stderr
    assert f"The command printed: {mark}" in first.stdout and f"{mark}-two" in second.stdout
    sessions = set(re.findall(r"session id: (\S+)", first.stderr + second.stderr))
    assert len(sessions) == 1, sessions  # Codex sends it as `session-id` on every request
    recorded = _check_recording(cli, trace, 3)
    secrets = [ENGINE_KEY, BRIDGE_KEY, *sessions, str(isolated_home)]
    _check_no_text(trace, secrets)

    rollouts = list((isolated_home / ".codex" / "sessions").rglob("rollout-*.jsonl"))
    assert len(rollouts) == 1 and mark in rollouts[0].read_text()  # the log holds the text
    _check_no_text(_check_import(cli, "codex", isolated_home, recorded), secrets)


def test_a_claude_code_session_through_the_recording_bridge_and_its_own_log(
    cli: Callable[..., Any], isolated_home: Path, keyed_chat_engine: Any, tmp_path: Path
) -> None:
    client_binary("claude")
    _configure(cli, "claude", keyed_chat_engine.base_url)
    mark = f"SENTINEL{uuid.uuid4().hex[:10]}"
    trace = tmp_path / "claude.jsonl"

    with bridge_serve("--record", str(trace)):
        first = _claude(isolated_home, "-p", f"run: echo {mark}")
        second = _claude(isolated_home, "--continue", "-p", f"say {mark}-two")

    assert first.returncode == 0 and second.returncode == 0, first.stdout + second.stdout
    answers = [json.loads(first.stdout), json.loads(second.stdout)]
    assert answers[0]["num_turns"] == 2 and mark in answers[0]["result"]  # Bash ran
    assert answers[1]["result"].strip() == f"{mark}-two"
    sessions = {a["session_id"] for a in answers}
    assert len(sessions) == 1, sessions  # --continue: the same X-Claude-Code-Session-Id
    recorded = _check_recording(cli, trace, 3)
    secrets = [ENGINE_KEY, BRIDGE_KEY, *sessions, str(isolated_home)]
    _check_no_text(trace, secrets)

    logs = list((isolated_home / ".claude" / "projects").rglob("*.jsonl"))
    assert len(logs) == 1 and mark in logs[0].read_text()
    _check_no_text(_check_import(cli, "claude", isolated_home, recorded), secrets)
