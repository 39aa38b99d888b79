"""The real Codex CLI and Claude Code through the bridge, in front of the engine playing a
chat-only gateway (`/responses` and `/anthropic/...` are 404 there). The client configs are
written by `pdnotes config codex|claude --bridge`; a plain turn and a tool turn (`run: echo
<marker>`: the client runs the command, and the final answer quotes its output) complete."""

from __future__ import annotations

import json
import re
import secrets
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from bridge_support import bridge_to
from interop_support import CLAUDE_ENV, ClientRun, client_binary, codex_overrides, run_client

pytestmark = pytest.mark.interop


@pytest.fixture
def bridge(start_engine_server: Callable[..., Any]) -> Iterator[Any]:
    engine = start_engine_server(protocols=("chat",))
    with bridge_to(engine.base_url, key=None) as running:
        yield running


def _configure(cli: Callable[..., Any], client: str, bridge: Any) -> None:
    upstream = bridge.config.upstream
    result = cli(
        "config", client, "--bridge", "--base-url", upstream, "--model", "pd-mock-1",
        "--bridge-port", str(bridge.config.port),
    )  # fmt: skip
    assert result.exit_code == 0, result.stderr


def codex_exec(home: Path, prompt: str) -> ClientRun:
    codex = client_binary("codex")
    workdir = home / "work"
    workdir.mkdir(exist_ok=True)
    args = [str(codex), "exec", "--skip-git-repo-check", "--strict-config"]
    args += [*codex_overrides("pdnotes-bridge"), "--dangerously-bypass-approvals-and-sandbox"]
    env = {"HOME": str(home), "CODEX_HOME": str(home / ".codex")}
    return run_client([*args, prompt], env=env, cwd=workdir)


def claude_print(home: Path, prompt: str, *extra: str) -> ClientRun:
    claude = client_binary("claude")
    project = home / "project"
    project.mkdir(exist_ok=True)
    args = [str(claude), "-p", prompt, "--no-session-persistence", "--output-format", "json"]
    env = {"HOME": str(home), "CLAUDE_CONFIG_DIR": str(home / ".claude"), **CLAUDE_ENV}
    return run_client([*args, *extra], env=env, cwd=project)


def test_codex_exec_plain_turn_through_the_bridge(
    cli: Callable[..., Any], isolated_home: Path, bridge: Any
) -> None:
    client_binary("codex")
    _configure(cli, "codex", bridge)
    run = codex_exec(isolated_home, "say pong")
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip().lower().rstrip(".!") == "pong"


def test_codex_exec_runs_the_tool_and_quotes_its_output(
    cli: Callable[..., Any], isolated_home: Path, bridge: Any
) -> None:
    client_binary("codex")
    _configure(cli, "codex", bridge)
    marker = "bridge-" + secrets.token_hex(4)
    run = codex_exec(isolated_home, f"run: echo {marker}")
    assert run.returncode == 0, run.stderr
    assert marker in run.stdout
    assert bridge.app.requests >= 2  # the call, then the turn carrying its output


def test_claude_print_plain_turn_through_the_bridge(
    cli: Callable[..., Any], isolated_home: Path, bridge: Any
) -> None:
    client_binary("claude")
    _configure(cli, "claude", bridge)
    run = claude_print(isolated_home, "say pong")
    assert run.returncode == 0, run.stdout + run.stderr
    result = json.loads(run.stdout)
    assert result["is_error"] is False
    assert result["result"].strip().lower().rstrip(".!") == "pong"


def test_claude_print_runs_bash_and_quotes_its_output(
    cli: Callable[..., Any], isolated_home: Path, bridge: Any
) -> None:
    client_binary("claude")
    _configure(cli, "claude", bridge)
    marker = "bridge-" + secrets.token_hex(4)
    run = claude_print(isolated_home, f"run: echo {marker}", "--allowedTools", "Bash")
    assert run.returncode == 0, run.stdout + run.stderr
    result = json.loads(run.stdout)
    assert result["is_error"] is False
    assert marker in result["result"]
    assert bridge.app.requests >= 2


# --- the same tool turns against a scripted chat upstream (real tool-call deltas) ----------


def _scripted_upstream(requests: list[dict[str, Any]]) -> Callable[[Any], Any]:
    """First turn: one call of the client's shell tool running `echo` of the marker in the
    prompt; the turn that carries its output: a text quoting that output."""
    from bridge_support import tool_call_stream
    from loopback import Reply, chat_stream

    def handler(request: Any) -> Any:
        if request.method != "POST":
            return Reply.json({"data": [{"id": "pd-mock-1"}]})
        body = request.json()
        requests.append(body)
        last = body["messages"][-1]
        if last["role"] == "tool":
            output = last["content"] if isinstance(last["content"], str) else json.dumps(last)
            return Reply.sse(chat_stream([f"The command printed: {output.strip()[-40:]}"]))
        prompt = next(m for m in reversed(body["messages"]) if m["role"] == "user")["content"]
        prompt = prompt if isinstance(prompt, str) else json.dumps(prompt)
        marker = re.search(r"run: echo ([A-Za-z0-9_-]+)", prompt).group(1)  # type: ignore[union-attr]
        names = [t["function"]["name"] for t in body.get("tools", [])]
        tool, arg = ("exec_command", "cmd") if "exec_command" in names else ("Bash", "command")
        call = ("call_1", tool, json.dumps({arg: f"echo {marker}"}))
        return Reply.sse(tool_call_stream([call]))

    return handler


@pytest.mark.parametrize("client", ["codex", "claude"])
def test_tool_turn_against_a_scripted_chat_upstream(
    cli: Callable[..., Any], isolated_home: Path, client: str
) -> None:
    from loopback import LoopbackServer

    client_binary(client)
    requests: list[dict[str, Any]] = []
    marker = "scripted-" + secrets.token_hex(4)
    with (
        LoopbackServer(_scripted_upstream(requests)) as upstream,
        bridge_to(upstream.url, key=None) as bridge,
    ):
        _configure(cli, client, bridge)
        if client == "codex":
            run = codex_exec(isolated_home, f"run: echo {marker}")
            answer = run.stdout
        else:
            run = claude_print(isolated_home, f"run: echo {marker}", "--allowedTools", "Bash")
            answer = json.loads(run.stdout)["result"] if run.returncode == 0 else run.stdout
    assert run.returncode == 0, run.stdout + run.stderr
    assert marker in answer
    assert len(requests) == 2 and requests[1]["messages"][-1]["role"] == "tool"
    assert marker in requests[1]["messages"][-1]["content"]  # the client ran it: real output
