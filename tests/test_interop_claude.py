"""The real Claude Code (`claude -p`, settings written by `pdnotes config claude --preset mock`)
against the engine's Anthropic routes: a turn completes with the engine's answer, and the
article's errors (doubled /v1, wrong key) fail the way the reference says."""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from interop_support import (
    CLAUDE_ENV,
    ClientRun,
    client_binary,
    run_client,
    set_claude_base_url,
    write_claude_settings,
)

pytestmark = pytest.mark.interop


def claude_print(home: Path, *extra: str, prompt: str = "say pong") -> ClientRun:
    claude = client_binary("claude")
    project = home / "project"
    project.mkdir(exist_ok=True)
    args = [str(claude), "-p", prompt, "--no-session-persistence", *extra]
    env = {"HOME": str(home), "CLAUDE_CONFIG_DIR": str(home / ".claude"), **CLAUDE_ENV}
    return run_client(args, env=env, cwd=project)


def test_claude_print_completes_a_turn_with_the_engines_answer(
    cli: Callable[..., Any], isolated_home: Path, engine_server: Any
) -> None:
    client_binary("claude")
    write_claude_settings(cli, engine_server.anthropic_base_url)

    run = claude_print(isolated_home, "--output-format", "json")

    assert run.returncode == 0, run.stdout + run.stderr
    result = json.loads(run.stdout)
    assert result["is_error"] is False
    assert result["result"].strip().lower().rstrip(".!") == "pong"
    assert result["stop_reason"] == "end_turn"


def test_claude_runs_the_engines_bash_call_and_answers_with_its_output(
    cli: Callable[..., Any], isolated_home: Path, engine_server: Any
) -> None:
    """The engine's tool rule through Claude Code's Bash tool (allowed with --allowedTools:
    `-p` asks for no permission it was not given)."""
    client_binary("claude")
    write_claude_settings(cli, engine_server.anthropic_base_url)
    marker = f"marker-{uuid.uuid4().hex[:10]}"
    flags = ("--allowedTools", "Bash", "--output-format", "stream-json", "--verbose")

    run = claude_print(isolated_home, *flags, prompt=f"run: echo {marker}")

    assert run.returncode == 0, run.stdout + run.stderr
    events = [json.loads(line) for line in run.stdout.splitlines() if line.startswith("{")]
    blocks = [
        block
        for event in events
        if event.get("type") in ("assistant", "user")
        for block in event["message"]["content"]
        if isinstance(block, dict)
    ]
    calls = [b for b in blocks if b.get("type") == "tool_use"]
    assert [c["name"] for c in calls] == ["Bash"]
    assert calls[0]["input"] == {"command": f"echo {marker}"}
    results = [b for b in blocks if b.get("type") == "tool_result"]
    assert len(results) == 1 and not results[0].get("is_error")
    assert marker in json.dumps(results[0]["content"])  # Claude Code ran it
    final = events[-1]
    assert final["type"] == "result" and final["is_error"] is False
    assert marker in final["result"]
    assert final["num_turns"] == 2


def test_claude_reports_the_doubled_v1_as_a_model_issue(
    cli: Callable[..., Any], isolated_home: Path, engine_server: Any
) -> None:
    client_binary("claude")
    write_claude_settings(cli, engine_server.anthropic_base_url)
    set_claude_base_url(isolated_home / ".claude", engine_server.anthropic_base_url + "/v1")

    run = claude_print(isolated_home)

    assert run.returncode == 1
    assert "There's an issue with the selected model" in run.stdout  # API errors go to stdout


def test_claude_reports_a_rejected_key(
    cli: Callable[..., Any],
    isolated_home: Path,
    start_engine_server: Callable[..., Any],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    client_binary("claude")
    monkeypatch.setenv("ENGINE_KEY", "sk-the-right-key-0000")
    engine = start_engine_server(api_key_env="ENGINE_KEY")
    write_claude_settings(cli, engine.anthropic_base_url)

    run = claude_print(isolated_home, "--output-format", "json")

    assert run.returncode == 1
    result = json.loads(run.stdout)
    assert result["is_error"] is True
    assert result["api_error_status"] == 401


def test_claude_takes_the_window_config_read_from_the_engines_models(
    cli: Callable[..., Any], isolated_home: Path, start_engine_server: Callable[..., Any]
) -> None:
    """Issue 38: `config claude --context-window gateway` writes the engine's window, and Claude
    Code reports the window it used for the model (`modelUsage.<model>.contextWindow`), which
    it would otherwise assume (1m tokens in 2.1.332 for a model it does not know)."""
    client_binary("claude")
    # not the mock preset's 32768, and room for Claude Code's own prompt (2.1.332 refuses to
    # send into a 12288-token window: "Prompt is too long", terminal_reason "blocking_limit")
    engine = start_engine_server(max_context_tokens=49_152)
    result = cli(
        "config", "claude", "--base-url", engine.anthropic_base_url, "--model", "pd-mock-1",
        "--context-window", "gateway",
    )  # fmt: skip
    assert result.exit_code == 0, result.stderr

    run = claude_print(isolated_home, "--output-format", "json")

    assert run.returncode == 0, run.stdout + run.stderr
    usage = json.loads(run.stdout)["modelUsage"]
    assert usage["pd-mock-1"]["contextWindow"] == 49_152, usage
