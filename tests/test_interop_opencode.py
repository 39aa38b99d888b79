"""The real OpenCode (`opencode run`, npm opencode-ai) on the bundled engine, with the config
`pdnotes config opencode --preset mock` wrote: a plain turn answers with the engine's text; a
tool turn runs the engine's bash call and answers with its output (also through `pdnotes bridge
serve` with the config `config opencode --bridge` wrote, falling back when an upstream is
down); and the misconfigurations
doctor names make the real client fail, so the finding is about a real failure. HOME and the
XDG folders are temp dirs; OpenCode runs with its update check, models.dev fetch, LSP download
and plugin install switched off (no network)."""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from bridge_support import bridge_serve, free_port
from interop_support import client_binary, opencode_events, opencode_run, recording_server

pytestmark = pytest.mark.interop


def configure(cli: Callable[..., Any], base_url: str, *extra: str) -> Path:
    result = cli("config", "opencode", "--preset", "mock", "--base-url", base_url, *extra)
    assert result.exit_code == 0, result.stderr
    return Path(result.stdout.split("wrote ", 1)[1].split("\n", 1)[0])


def parts(events: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [e["part"] for e in events if e.get("type") == kind]


def test_opencode_run_completes_a_plain_turn_with_the_engines_answer(
    cli: Callable[..., Any], isolated_home: Path, engine_server: Any
) -> None:
    client_binary("opencode")
    configure(cli, engine_server.base_url)

    # The npm registry and models.dev point at a loopback recorder: the offline switches must
    # leave it without a single request (a missing switch shows here, not on the internet).
    with recording_server() as (elsewhere, requests):
        watched = {"npm_config_registry": f"{elsewhere}/npm/", "OPENCODE_MODELS_URL": elsewhere}
        run = opencode_run(isolated_home, "say pong", env=watched)

    assert run.returncode == 0, run.stdout + run.stderr
    events = opencode_events(run)
    texts = [p["text"] for p in parts(events, "text")]
    assert [t.strip().lower().rstrip(".!") for t in texts] == ["pong"]
    assert [p["reason"] for p in parts(events, "step_finish")] == ["stop"]
    assert requests == []


def test_opencode_runs_the_engines_bash_call_and_answers_with_its_output(
    cli: Callable[..., Any], isolated_home: Path, engine_server: Any
) -> None:
    client_binary("opencode")
    configure(cli, engine_server.base_url)
    marker = f"marker-{uuid.uuid4().hex[:10]}"

    run = opencode_run(isolated_home, f"run: echo {marker}")

    assert run.returncode == 0, run.stdout + run.stderr
    events = opencode_events(run)
    (call,) = parts(events, "tool_use")
    assert call["tool"] == "bash"
    assert call["state"]["input"] == {"command": f"echo {marker}"}
    assert call["state"]["status"] == "completed"
    assert call["state"]["output"].strip() == marker  # OpenCode ran it
    assert [p["reason"] for p in parts(events, "step_finish")] == ["tool-calls", "stop"]
    assert [p["text"] for p in parts(events, "text")] == [f"The command printed: {marker}"]


def test_the_key_reaches_the_engine_through_the_env_reference(
    cli: Callable[..., Any],
    isolated_home: Path,
    start_engine_server: Callable[..., Any],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`--key-env` writes `{env:ENGINE_KEY}`: with the variable set the turn completes; unset,
    OpenCode sends an empty key (the engine answers 401) and doctor names the variable."""
    client_binary("opencode")
    monkeypatch.setenv("ENGINE_KEY", "sk-the-right-key-0000")
    engine = start_engine_server(api_key_env="ENGINE_KEY")
    path = configure(cli, engine.base_url, "--key-env", "ENGINE_KEY")
    assert "sk-the-right-key" not in path.read_text()

    good = opencode_run(isolated_home, "say pong", env={"ENGINE_KEY": "sk-the-right-key-0000"})
    assert good.returncode == 0, good.stdout + good.stderr
    assert parts(opencode_events(good), "text")

    bad = opencode_run(isolated_home, "say pong")
    assert bad.returncode != 0 or not parts(opencode_events(bad), "text")
    assert "401" in bad.stdout + bad.stderr or "nauthorized" in bad.stdout + bad.stderr
    monkeypatch.delenv("ENGINE_KEY")
    doctor = cli("doctor", "--client", "opencode", "--offline", "--json").json()
    (unset,) = [f for f in doctor["findings"] if f["id"] == "opencode-env-unset"]
    assert unset["severity"] == "error" and "ENGINE_KEY" in unset["message"]


@pytest.mark.parametrize(
    ("edit", "finding_id"),
    [
        (lambda c: c.update(model="pd-mock-1"), "opencode-model-format"),
        (lambda c: c.update(model="pdnotes-mock/not-listed"), "opencode-model-undefined"),
        (lambda c: c.update(model="elsewhere/pd-mock-1"), "opencode-provider-undefined"),
        (
            lambda c: c["provider"]["pdnotes-mock"]["models"]["pd-mock-1"]["limit"].pop("output"),
            "opencode-limit-incomplete",
        ),
    ],
    ids=["no-provider-prefix", "model-not-listed", "provider-undefined", "limit-no-output"],
)
def test_what_doctor_flags_is_what_makes_the_real_client_fail(
    cli: Callable[..., Any],
    isolated_home: Path,
    engine_server: Any,
    edit: Callable[[dict[str, Any]], Any],
    finding_id: str,
) -> None:
    client_binary("opencode")
    path = configure(cli, engine_server.base_url)
    assert opencode_run(isolated_home, "say pong").returncode == 0  # the unbroken config works
    config = json.loads(path.read_text())
    edit(config)
    path.write_text(json.dumps(config, indent=2))

    run = opencode_run(isolated_home, "say pong")

    assert run.returncode != 0, run.stdout
    assert not parts(opencode_events(run), "text")
    doctor = cli("doctor", "--client", "opencode", "--offline", "--json").json()
    assert finding_id in [f["id"] for f in doctor["findings"] if f["severity"] == "error"]


def test_opencode_needs_no_bridge_on_a_chat_only_engine(
    cli: Callable[..., Any], isolated_home: Path, start_engine_server: Callable[..., Any]
) -> None:
    """OpenCode speaks chat completions itself: on an engine that serves only that API (where
    Codex and Claude Code need the bridge) the tool turn completes directly."""
    client_binary("opencode")
    engine = start_engine_server(protocols=("chat",))
    configure(cli, engine.base_url)
    marker = f"marker-{uuid.uuid4().hex[:10]}"

    run = opencode_run(isolated_home, f"run: echo {marker}")

    assert run.returncode == 0, run.stdout + run.stderr
    events = opencode_events(run)
    assert [p["tool"] for p in parts(events, "tool_use")] == ["bash"]
    assert [p["text"] for p in parts(events, "text")] == [f"The command printed: {marker}"]


ENGINE_KEY = "sk-engine-only-the-bridge-has-0000"


@pytest.fixture
def keyed_chat_engine(
    start_engine_server: Callable[..., Any], monkeypatch: pytest.MonkeyPatch
) -> Any:
    """An engine serving only chat completions whose key only the bridge holds: OpenCode's
    environment has no ENGINE_KEY, so a turn that completes went through the bridge."""
    monkeypatch.setenv("ENGINE_KEY", ENGINE_KEY)
    return start_engine_server(protocols=("chat",), api_key_env="ENGINE_KEY")


def configure_bridge(cli: Callable[..., Any], upstream: str, *extra: str) -> Path:
    result = cli(
        "config", "opencode", "--bridge", "--base-url", upstream, "--key-env", "ENGINE_KEY",
        "--model", "pd-mock-1", "--context-window", "32768", "--bridge-port", str(free_port()),
        *extra,
    )  # fmt: skip
    assert result.exit_code == 0, result.stderr
    path = Path(result.stdout.split("wrote ", 1)[1].split("\n", 1)[0])
    assert ENGINE_KEY not in path.read_text()  # the key stays with the bridge
    return path


def test_opencode_plain_turn_through_the_bridge_on_a_chat_only_engine(
    cli: Callable[..., Any], isolated_home: Path, keyed_chat_engine: Any
) -> None:
    client_binary("opencode")
    configure_bridge(cli, keyed_chat_engine.base_url)

    with bridge_serve():
        run = opencode_run(isolated_home, "say pong")

    assert run.returncode == 0, run.stdout + run.stderr
    texts = [p["text"] for p in parts(opencode_events(run), "text")]
    assert [t.strip().lower().rstrip(".!") for t in texts] == ["pong"]


def test_opencode_tool_turn_through_the_bridge_on_a_chat_only_engine(
    cli: Callable[..., Any], isolated_home: Path, keyed_chat_engine: Any
) -> None:
    """The pass-through keeps OpenCode's tools and the engine's call both ways: OpenCode runs
    the command and the answer quotes its output."""
    client_binary("opencode")
    configure_bridge(cli, keyed_chat_engine.base_url)
    marker = f"marker-{uuid.uuid4().hex[:10]}"

    with bridge_serve():
        run = opencode_run(isolated_home, f"run: echo {marker}")

    assert run.returncode == 0, run.stdout + run.stderr
    events = opencode_events(run)
    (call,) = parts(events, "tool_use")
    assert call["tool"] == "bash" and call["state"]["status"] == "completed"
    assert call["state"]["output"].strip() == marker
    assert [p["reason"] for p in parts(events, "step_finish")] == ["tool-calls", "stop"]
    assert [p["text"] for p in parts(events, "text")] == [f"The command printed: {marker}"]


def test_opencode_completes_the_turn_when_the_first_upstream_is_down(
    cli: Callable[..., Any], isolated_home: Path, keyed_chat_engine: Any
) -> None:
    """`--bridge-fallback`: the recorded upstream refuses connections, the bridge tries the
    fallback (with its own key variable), logs the switch, and OpenCode never notices."""
    client_binary("opencode")
    down = f"http://127.0.0.1:{free_port()}/api"
    configure_bridge(
        cli, down,
        "--bridge-fallback", keyed_chat_engine.base_url, "--bridge-fallback-key-env", "ENGINE_KEY",
    )  # fmt: skip

    with bridge_serve() as log:
        run = opencode_run(isolated_home, "say pong")

    assert run.returncode == 0, run.stdout + run.stderr
    texts = [p["text"] for p in parts(opencode_events(run), "text")]
    assert [t.strip().lower().rstrip(".!") for t in texts] == ["pong"]
    said = "".join(log)
    assert f"trying {keyed_chat_engine.base_url}" in said, said
    assert ENGINE_KEY not in said
