"""Every client whose folder has a headless module, run for real on the bundled engine (issue 38):
`pdnotes config <name> --preset mock` writes its files in a temp HOME, then the real client (the
npm release its npm.toml pins, and npm's newest) answers a plain turn with the engine's answer,
and in a tool turn runs the engine's shell call and answers with what it printed. Going over the
registry, so a new client is driven here without a test file of its own; the five older clients
keep their own, longer interop files."""

from __future__ import annotations

import sys
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from interop_support import client_binary, run_client

from notes_cli.clients import registry
from notes_cli.clients.headless import Headless, Turn, headless

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "scripts"))
from npm_clients import releases  # noqa: E402

pytestmark = pytest.mark.interop

BINS = {release["client"]: release["bin"] for release in releases()}
HEADLESS = [name for name in registry.names() if headless(name) is not None]


def runner(name: str) -> Headless:
    found = headless(name)
    assert found is not None, name
    return found


def url_for(name: str, engine: Any) -> str:
    client = registry.get(name)
    assert client is not None, name
    return str(engine.anthropic_base_url if client.protocol == "anthropic" else engine.base_url)


def one_turn(name: str, home: Path, prompt: str) -> Turn:
    assert name in BINS, f"{name} has a headless module but no npm.toml"
    binary = client_binary(BINS[name])
    command = runner(name).command(binary, home, prompt)
    command.cwd.mkdir(parents=True, exist_ok=True)
    run = run_client(command.argv, env=command.env, cwd=command.cwd)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    return runner(name).turn(run.stdout, run.stderr)


def configure(cli: Callable[..., Any], name: str, engine: Any) -> None:
    result = cli("config", name, "--preset", "mock", "--base-url", url_for(name, engine))
    assert result.exit_code == 0, result.stdout + result.stderr


def test_every_client_with_a_headless_module_names_its_npm_release() -> None:
    assert set(HEADLESS) <= set(BINS)


@pytest.mark.parametrize("name", HEADLESS)
def test_the_real_client_answers_a_plain_turn_with_the_engines_answer(
    name: str, cli: Callable[..., Any], isolated_home: Path, engine_server: Any
) -> None:
    configure(cli, name, engine_server)

    turn = one_turn(name, isolated_home, "say pong")

    assert [text.strip().lower().rstrip(".!") for text in turn.texts] == ["pong"]
    assert turn.tool_calls == []


@pytest.mark.parametrize("name", HEADLESS)
def test_the_real_client_runs_the_engines_shell_call_and_answers_with_its_output(
    name: str, cli: Callable[..., Any], isolated_home: Path, engine_server: Any
) -> None:
    configure(cli, name, engine_server)
    marker = f"marker-{uuid.uuid4().hex[:10]}"

    turn = one_turn(name, isolated_home, f"run: echo {marker}")

    (call,) = turn.tool_calls
    assert call.command == f"echo {marker}"
    assert call.output is not None and call.output.strip().splitlines()[0] == marker  # it ran
    assert turn.texts[-1].strip() == f"The command printed: {marker}"
