"""The real Codex CLI (`codex exec`, config written by `pdnotes config codex --preset mock`)
against the engine over a real socket: a turn completes with the engine's answer, and the
article's errors (doubled /v1, wrong key, wrong model id) fail the way the reference says."""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from interop_support import (
    ClientRun,
    client_binary,
    codex_overrides,
    run_client,
    write_codex_config,
)

pytestmark = pytest.mark.interop


def codex_exec(
    home: Path,
    provider: str,
    *extra: str,
    env: dict[str, str] | None = None,
    prompt: str = "say pong",
) -> ClientRun:
    codex = client_binary("codex")
    workdir = home / "work"  # outside any git repository
    workdir.mkdir(exist_ok=True)
    args = [str(codex), "exec", "--skip-git-repo-check", "--strict-config"]
    args += [*codex_overrides(provider), *extra, prompt]
    run_env = {"HOME": str(home), "CODEX_HOME": str(home / ".codex"), **(env or {})}
    return run_client(args, env=run_env, cwd=workdir)


def test_codex_exec_completes_a_turn_with_the_engines_answer(
    cli: Callable[..., Any], isolated_home: Path, engine_server: Any
) -> None:
    client_binary("codex")
    provider = write_codex_config(cli, engine_server.base_url, None)

    run = codex_exec(isolated_home, provider)

    assert run.returncode == 0, run.stderr
    assert run.stdout.strip().lower().rstrip(".!") == "pong"


def test_codex_exec_runs_the_engines_tool_call_and_answers_with_its_output(
    cli: Callable[..., Any], isolated_home: Path, engine_server: Any
) -> None:
    """The engine's tool rule: `run: <command>` → one exec_command call; Codex runs it and
    posts the result; the engine's final answer quotes the command's output."""
    client_binary("codex")
    provider = write_codex_config(cli, engine_server.base_url, None)
    marker = f"marker-{uuid.uuid4().hex[:10]}"

    run = codex_exec(isolated_home, provider, "--json", prompt=f"run: echo {marker}")

    assert run.returncode == 0, run.stderr
    items = [json.loads(line) for line in run.stdout.splitlines() if line.startswith("{")]
    done = [i["item"] for i in items if i.get("type") == "item.completed"]
    commands = [i for i in done if i.get("type") == "command_execution"]
    assert len(commands) == 1, done
    assert marker in commands[0]["command"]
    assert commands[0]["exit_code"] == 0
    assert commands[0]["aggregated_output"].strip() == marker  # Codex ran it
    answers = [i["text"] for i in done if i.get("type") == "agent_message"]
    assert answers and marker in answers[-1]


def test_codex_reports_the_doubled_v1_as_404(
    cli: Callable[..., Any], isolated_home: Path, engine_server: Any
) -> None:
    client_binary("codex")
    provider = write_codex_config(cli, engine_server.base_url, None)
    doubled = f'model_providers.{provider}.base_url="{engine_server.base_url}/v1"'

    run = codex_exec(isolated_home, provider, "-c", doubled)

    assert run.returncode == 1
    assert run.stdout == ""
    assert "unexpected status 404 Not Found" in run.stderr
    assert "/api/v1/responses" in run.stderr


def test_codex_reports_a_wrong_key_as_401_without_showing_it(
    cli: Callable[..., Any],
    isolated_home: Path,
    start_engine_server: Callable[..., Any],
    monkeypatch: pytest.MonkeyPatch,
    sentinel_key: str,
) -> None:
    client_binary("codex")
    monkeypatch.setenv("ENGINE_KEY", "sk-the-right-key-0000")
    engine = start_engine_server(api_key_env="ENGINE_KEY")
    provider = write_codex_config(cli, engine.base_url, "MOCK_API_KEY")

    run = codex_exec(isolated_home, provider, env={"MOCK_API_KEY": sentinel_key})

    assert run.returncode == 1
    assert "unexpected status 401 Unauthorized" in run.stderr
    assert sentinel_key not in run.stderr + run.stdout


def test_codex_reports_a_wrong_model_id(
    cli: Callable[..., Any], isolated_home: Path, engine_server: Any
) -> None:
    client_binary("codex")
    provider = write_codex_config(cli, engine_server.base_url, None)

    run = codex_exec(isolated_home, provider, "-c", 'model="PD-Mock-1"')

    assert run.returncode == 1
    assert "The model `PD-Mock-1` does not exist" in run.stderr
