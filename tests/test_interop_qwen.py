"""The real Qwen Code (`qwen -p`, settings written by `pdnotes config qwen`) against the bundled
engine's chat-completions route: a plain turn completes with the engine's answer, a tool turn
runs the engine's shell call and answers with its output (directly, and through `pdnotes bridge
serve` with the settings `config qwen --bridge` wrote, falling back when an upstream is down),
and the mistakes doctor names
(doubled /v1, an unexported key variable) fail the way doctor says. A fresh recording of the
real client has the stored request shape, and smoke sends that shape."""

from __future__ import annotations

import json
import re
import sys
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from bridge_support import bridge_serve, free_port
from interop_support import ClientRun, client_binary, run_client

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "scripts"))
import client_shapes  # noqa: E402

from notes_cli.doctor.client_shape import shape_for  # noqa: E402

pytestmark = pytest.mark.interop

QUIET_SETTINGS = """{
  // written before pdnotes: Qwen Code must not phone home in a test (its settings schema)
  "privacy": {"usageStatisticsEnabled": false},
  "telemetry": {"enabled": false},
  "general": {"enableAutoUpdate": false, "disableAutoUpdate": true, "disableUpdateNag": true}
}
"""


def write_qwen_settings(cli: Callable[..., Any], home: Path, base_url: str, *extra: str) -> Path:
    """The user's settings (comments and telemetry off), then `pdnotes config qwen` merged in."""
    return write_qwen_settings_with(cli, home, "--preset", "mock", "--base-url", base_url, *extra)


def write_qwen_settings_with(cli: Callable[..., Any], home: Path, *args: str) -> Path:
    path = home / ".qwen" / "settings.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(QUIET_SETTINGS)
    result = cli("config", "qwen", *args)
    assert result.exit_code == 0, result.stderr
    text = path.read_text()
    assert "// written before pdnotes" in text  # the merge kept the user's comment
    return path


def qwen_print(
    home: Path, *extra: str, prompt: str, env: dict[str, str] | None = None
) -> ClientRun:
    qwen = client_binary("qwen")
    project = home / "project"
    project.mkdir(exist_ok=True)
    args = [str(qwen), "-p", prompt, *extra]
    base = {
        "HOME": str(home),
        "QWEN_HOME": str(home / ".qwen"),
        "QWEN_CODE_SUPPRESS_YOLO_WARNING": "1",
    }
    return run_client(args, env={**base, **(env or {})}, cwd=project)


def events(run: ClientRun) -> list[dict[str, Any]]:
    return [json.loads(line) for line in run.stdout.splitlines() if line.startswith("{")]


def test_qwen_completes_a_plain_turn_on_the_engine(
    cli: Callable[..., Any], isolated_home: Path, engine_server: Any
) -> None:
    client_binary("qwen")
    write_qwen_settings(cli, isolated_home, engine_server.base_url)

    run = qwen_print(isolated_home, "--output-format", "json", prompt="say pong")

    assert run.returncode == 0, run.stdout + run.stderr
    final = [e for e in json.loads(run.stdout) if e.get("type") == "result"][-1]
    assert final["is_error"] is False
    assert final["result"].strip().lower().rstrip(".!") == "pong"


def test_qwen_runs_the_engines_shell_call_and_answers_with_its_output(
    cli: Callable[..., Any], isolated_home: Path, engine_server: Any
) -> None:
    """The engine's tool rule through Qwen Code's run_shell_command (--yolo: -p asks for no
    approval). The command prints something its own text does not hold, so the answer can
    only come from the output Qwen Code sent back."""
    client_binary("qwen")
    write_qwen_settings(cli, isolated_home, engine_server.base_url)
    marker = uuid.uuid4().hex[:10]
    command = f"printf 'marker-%s\\n' {marker}"  # a whole line: a partial one can be lost

    run = qwen_print(
        isolated_home, "--yolo", "--output-format", "stream-json", prompt=f"run: {command}"
    )

    assert run.returncode == 0, run.stdout + run.stderr
    found = events(run)
    blocks = [
        block
        for event in found
        if event.get("type") in ("assistant", "user")
        for block in event["message"]["content"]
        if isinstance(block, dict)
    ]
    calls = [b for b in blocks if b.get("type") == "tool_use"]
    assert [c["name"] for c in calls] == ["run_shell_command"]
    assert calls[0]["input"]["command"] == command
    results = [b for b in blocks if b.get("type") == "tool_result"]
    assert len(results) == 1 and not results[0].get("is_error")
    final = found[-1]
    assert final["type"] == "result" and final["is_error"] is False
    assert f"marker-{marker}" in final["result"]
    assert final["num_turns"] == 2


def test_qwen_needs_no_bridge_on_a_chat_only_engine(
    cli: Callable[..., Any], isolated_home: Path, start_engine_server: Callable[..., Any]
) -> None:
    """Qwen Code speaks chat completions: an engine that serves only /chat/completions (like
    LMDeploy or a chat-only gateway) is enough, with the settings pdnotes wrote."""
    client_binary("qwen")
    engine = start_engine_server(protocols=("chat",))
    write_qwen_settings(cli, isolated_home, engine.base_url)

    run = qwen_print(isolated_home, "--output-format", "json", prompt="say pong")

    assert run.returncode == 0, run.stdout + run.stderr
    final = [e for e in json.loads(run.stdout) if e.get("type") == "result"][-1]
    assert final["result"].strip().lower().rstrip(".!") == "pong"


ENGINE_KEY = "sk-engine-only-the-bridge-has-0000"


@pytest.fixture
def keyed_chat_engine(
    start_engine_server: Callable[..., Any], monkeypatch: pytest.MonkeyPatch
) -> Any:
    """An engine serving only chat completions whose key only the bridge holds: the client's
    environment has no ENGINE_KEY, so a turn that completes went through the bridge."""
    monkeypatch.setenv("ENGINE_KEY", ENGINE_KEY)
    return start_engine_server(protocols=("chat",), api_key_env="ENGINE_KEY")


def write_bridged_settings(
    cli: Callable[..., Any], home: Path, upstream: str, port: int, *extra: str
) -> Path:
    path = write_qwen_settings_with(
        cli, home, "--bridge", "--base-url", upstream, "--key-env", "ENGINE_KEY",
        "--model", "pd-mock-1", "--bridge-port", str(port), *extra,
    )  # fmt: skip
    assert ENGINE_KEY not in path.read_text()  # the key stays with the bridge
    return path


def test_qwen_plain_turn_through_the_bridge_on_a_chat_only_engine(
    cli: Callable[..., Any], isolated_home: Path, keyed_chat_engine: Any
) -> None:
    client_binary("qwen")
    write_bridged_settings(cli, isolated_home, keyed_chat_engine.base_url, free_port())

    with bridge_serve():
        run = qwen_print(isolated_home, "--output-format", "json", prompt="say pong")

    assert run.returncode == 0, run.stdout + run.stderr
    final = [e for e in json.loads(run.stdout) if e.get("type") == "result"][-1]
    assert final["is_error"] is False
    assert final["result"].strip().lower().rstrip(".!") == "pong"


def test_qwen_tool_turn_through_the_bridge_on_a_chat_only_engine(
    cli: Callable[..., Any], isolated_home: Path, keyed_chat_engine: Any
) -> None:
    """The pass-through keeps Qwen Code's tools and the engine's tool call both ways: the
    answer quotes output only the real command printed."""
    client_binary("qwen")
    write_bridged_settings(cli, isolated_home, keyed_chat_engine.base_url, free_port())
    marker = uuid.uuid4().hex[:10]
    command = f"printf 'marker-%s\\n' {marker}"

    with bridge_serve():
        run = qwen_print(
            isolated_home, "--yolo", "--output-format", "stream-json", prompt=f"run: {command}"
        )

    assert run.returncode == 0, run.stdout + run.stderr
    found = events(run)
    calls = [
        block
        for event in found
        if event.get("type") == "assistant"
        for block in event["message"]["content"]
        if isinstance(block, dict) and block.get("type") == "tool_use"
    ]
    assert [(c["name"], c["input"]["command"]) for c in calls] == [("run_shell_command", command)]
    final = found[-1]
    assert final["type"] == "result" and final["is_error"] is False
    assert f"marker-{marker}" in final["result"]
    assert final["num_turns"] == 2


def test_qwen_completes_the_turn_when_the_first_upstream_is_down(
    cli: Callable[..., Any], isolated_home: Path, keyed_chat_engine: Any
) -> None:
    """`--bridge-fallback`: the recorded upstream refuses connections, the bridge tries the
    fallback (with its own key variable), logs the switch, and Qwen Code never notices."""
    client_binary("qwen")
    down = f"http://127.0.0.1:{free_port()}/api"
    write_bridged_settings(
        cli, isolated_home, down, free_port(),
        "--bridge-fallback", keyed_chat_engine.base_url, "--bridge-fallback-key-env", "ENGINE_KEY",
    )  # fmt: skip

    with bridge_serve() as log:
        run = qwen_print(isolated_home, "--output-format", "json", prompt="say pong")

    assert run.returncode == 0, run.stdout + run.stderr
    final = [e for e in json.loads(run.stdout) if e.get("type") == "result"][-1]
    assert final["result"].strip().lower().rstrip(".!") == "pong"
    said = "".join(log)
    assert f"trying {keyed_chat_engine.base_url}" in said, said
    assert ENGINE_KEY not in said


def test_qwen_takes_the_window_config_read_from_the_engines_models(
    cli: Callable[..., Any], isolated_home: Path, start_engine_server: Callable[..., Any]
) -> None:
    """Issue 38: `config qwen --context-window gateway` writes the engine's window, and Qwen Code
    reports it as the model's window (`/context`: "Context window: 49.2k tokens"), where it
    would otherwise assume its default for a model it does not know (200.0k in 0.24.4)."""
    client_binary("qwen")
    engine = start_engine_server(max_context_tokens=49_152)  # not the mock preset's 32768
    write_qwen_settings(cli, isolated_home, engine.base_url, "--context-window", "gateway")

    run = qwen_print(isolated_home, "--output-format", "json", prompt="/context")

    assert run.returncode == 0, run.stdout + run.stderr
    final = [e for e in json.loads(run.stdout) if e.get("type") == "result"][-1]
    assert re.search(r"Context window: 49\.2k tokens", final["result"]), final["result"]


def test_qwen_fails_on_a_doubled_v1_as_doctor_says(
    cli: Callable[..., Any], isolated_home: Path, engine_server: Any
) -> None:
    client_binary("qwen")
    path = write_qwen_settings(cli, isolated_home, engine_server.base_url)
    doubled = engine_server.base_url + "/v1/v1"
    path.write_text(path.read_text().replace(engine_server.base_url, doubled))

    report = cli("doctor", "--client", "qwen", "--offline", "--json")
    run = qwen_print(isolated_home, prompt="say pong")

    assert [f["id"] for f in report.json()["findings"]] == ["qwen-v1-doubled"]
    assert run.returncode != 0
    assert "404" in run.stdout + run.stderr


def test_qwen_stops_without_the_exported_key_as_doctor_says(
    cli: Callable[..., Any],
    isolated_home: Path,
    start_engine_server: Callable[..., Any],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    client_binary("qwen")
    monkeypatch.setenv("ENGINE_KEY", "sk-engine-key-0000")
    engine = start_engine_server(api_key_env="ENGINE_KEY")
    write_qwen_settings(cli, isolated_home, engine.base_url, "--key-env", "GW_KEY")

    report = cli("doctor", "--client", "qwen", "--offline", "--json")
    missing = qwen_print(isolated_home, prompt="say pong")
    exported = qwen_print(isolated_home, prompt="say pong", env={"GW_KEY": "sk-engine-key-0000"})

    assert [f["id"] for f in report.json()["findings"]] == ["qwen-key-env-unset"]
    assert missing.returncode != 0
    assert "GW_KEY" in missing.stdout + missing.stderr
    # doctor quotes the words this Qwen Code really prints
    quoted = re.search(r'stops with "(.+)"', report.json()["findings"][0]["message"])
    assert quoted is not None and quoted.group(1) in missing.stdout + missing.stderr, quoted
    assert exported.returncode == 0, exported.stdout + exported.stderr
    assert "pong" in exported.stdout.lower()


def test_a_fresh_recording_has_the_stored_shape() -> None:
    binary = client_binary("qwen")
    version, request = client_shapes.record("qwen", binary.parent)
    fresh = client_shapes.sanitise("qwen", version, request)
    stored = shape_for("chat", None, client="qwen")
    assert stored is not None
    if stored.version != version:
        pytest.fail(
            f"no recorded request shape for qwen {version} (newest stored: {stored.version}): "
            "run `python scripts/client_shapes.py qwen` and commit the file"
        )

    assert sorted(fresh["body"]) == sorted(stored.body)
    names = [t["function"]["name"] for t in fresh["body"]["tools"]]
    assert names == [t["function"]["name"] for t in stored.body["tools"]]
    assert sorted(fresh["headers"]) == sorted(stored.headers)
    assert fresh["path"] == "/v1/chat/completions"


def test_smoke_sends_what_the_real_client_sends(
    cli: Callable[..., Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    binary = client_binary("qwen")
    monkeypatch.setenv("REC_KEY", "rec")
    _, real = client_shapes.record("qwen", binary.parent)
    with client_shapes.recording_server() as (url, requests):
        result = cli(
            "smoke", "--client", "qwen", "-n", "1", "--base-url", f"{url}/v1",
            "--model", client_shapes.MODEL, "--key-env", "REC_KEY",
        )  # fmt: skip
    assert result.exit_code == 0, result.stdout + result.stderr
    sent = next(r for r in requests if r["path"].endswith("/chat/completions"))

    assert set(sent["body"]) == set(real["body"])
    tools = [t["function"]["name"] for t in sent["body"]["tools"]]
    assert tools == [t["function"]["name"] for t in real["body"]["tools"]]
    real_headers = set(real["headers"]) - client_shapes.DROP_HEADERS
    assert real_headers <= set(sent["headers"]) | {"accept-encoding"}
    assert sent["headers"]["user-agent"].startswith("QwenCode/")
