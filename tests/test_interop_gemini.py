"""The real Gemini CLI (`gemini -p`) with a config written by `pdnotes config gemini`: a plain
turn and a tool turn (`run: echo <marker>` through its run_shell_command) on the bundled
engine's Gemini routes, and the same through `pdnotes bridge serve` in front of the engine
playing a chat-only gateway. A loopback proxy that every other connection would go through
proves Gemini CLI made none (no update check, usage statistics or telemetry)."""

from __future__ import annotations

import json
import secrets
import socket
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from bridge_support import bridge_to
from interop_support import ClientRun, client_binary, gemini_print, write_gemini_config

pytestmark = pytest.mark.interop


class _Catcher:
    """A listening socket standing in for an HTTP(S) proxy: it records who connected (and
    what they asked for) and answers nothing useful, so a phone-home would show here."""

    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.sock.settimeout(0.2)
        self.seen: list[bytes] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.sock.getsockname()[1]}"

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            with conn:
                conn.settimeout(1.0)
                try:
                    self.seen.append(conn.recv(512) or b"(connected)")
                except OSError:
                    self.seen.append(b"(connected)")

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        self.sock.close()


@pytest.fixture
def no_network() -> Iterator[dict[str, str]]:
    catcher = _Catcher()
    env = {
        "HTTPS_PROXY": catcher.url,
        "HTTP_PROXY": catcher.url,
        "https_proxy": catcher.url,
        "http_proxy": catcher.url,
        "NO_PROXY": "127.0.0.1,localhost",
        "no_proxy": "127.0.0.1,localhost",
    }
    yield env
    catcher.close()
    assert catcher.seen == [], f"Gemini CLI connected elsewhere: {catcher.seen}"


def _answer(run: ClientRun) -> dict[str, Any]:
    assert run.returncode == 0, run.stdout + run.stderr
    return json.loads(run.stdout[run.stdout.index("{") :])  # type: ignore[no-any-return]


def _shell_calls(document: dict[str, Any]) -> dict[str, Any]:
    return document["stats"]["tools"]["byName"].get("run_shell_command", {})  # type: ignore[no-any-return]


def test_gemini_completes_a_plain_turn_on_the_engine(
    cli: Callable[..., Any], isolated_home: Path, engine_server: Any, no_network: dict[str, str]
) -> None:
    client_binary("gemini")
    write_gemini_config(
        cli, isolated_home, "--preset", "mock", "--base-url", engine_server.gemini_base_url
    )

    document = _answer(gemini_print(isolated_home, "say pong", env=no_network))

    assert document["response"].strip().lower().rstrip(".!") == "pong"
    assert document["stats"]["models"]["pd-mock-1"]["api"]["totalErrors"] == 0


def test_gemini_runs_the_engines_shell_call_and_answers_with_its_output(
    cli: Callable[..., Any], isolated_home: Path, engine_server: Any, no_network: dict[str, str]
) -> None:
    """--yolo: headless Gemini CLI offers run_shell_command only when it may run it."""
    client_binary("gemini")
    write_gemini_config(
        cli, isolated_home, "--preset", "mock", "--base-url", engine_server.gemini_base_url
    )
    marker = f"marker-{secrets.token_hex(5)}"

    document = _answer(gemini_print(isolated_home, f"run: echo {marker}", "--yolo", env=no_network))

    assert _shell_calls(document)["success"] == 1
    assert document["response"] == f"The command printed: {marker}"
    assert document["stats"]["models"]["pd-mock-1"]["api"]["totalRequests"] == 2


@pytest.fixture
def bridge(start_engine_server: Callable[..., Any]) -> Iterator[Any]:
    engine = start_engine_server(protocols=("chat",))  # a chat-only gateway
    with bridge_to(engine.base_url, key=None) as running:
        yield running


def _configure_bridge(cli: Callable[..., Any], home: Path, bridge: Any) -> None:
    write_gemini_config(
        cli, home, "--bridge", "--base-url", bridge.config.upstream, "--model", "pd-mock-1",
        "--bridge-port", str(bridge.config.port),
    )  # fmt: skip


def test_gemini_plain_turn_through_the_bridge_on_a_chat_only_engine(
    cli: Callable[..., Any], isolated_home: Path, bridge: Any, no_network: dict[str, str]
) -> None:
    client_binary("gemini")
    _configure_bridge(cli, isolated_home, bridge)

    document = _answer(gemini_print(isolated_home, "say pong", env=no_network))

    assert document["response"].strip().lower().rstrip(".!") == "pong"


def test_gemini_tool_turn_through_the_bridge_on_a_chat_only_engine(
    cli: Callable[..., Any], isolated_home: Path, bridge: Any, no_network: dict[str, str]
) -> None:
    client_binary("gemini")
    _configure_bridge(cli, isolated_home, bridge)
    marker = f"marker-{secrets.token_hex(5)}"

    document = _answer(gemini_print(isolated_home, f"run: echo {marker}", "--yolo", env=no_network))

    assert _shell_calls(document)["success"] == 1
    assert document["response"] == f"The command printed: {marker}"


def test_gemini_fails_without_the_trust_config_gemini_names(
    cli: Callable[..., Any], isolated_home: Path, engine_server: Any
) -> None:
    """What doctor's gemini-folder-untrusted says is true of the real client."""
    client_binary("gemini")
    write_gemini_config(
        cli, isolated_home, "--preset", "mock", "--base-url", engine_server.gemini_base_url
    )
    # Not trusted yet (no rule, the variable empty): headless Gemini CLI refuses to run.
    undecided = {"GEMINI_CLI_TRUST_WORKSPACE": "", "GEMINI_API_KEY": "k"}
    run = gemini_print(isolated_home, "say pong", env=undecided)
    assert run.returncode != 0
    assert "not running in a trusted directory" in run.stdout + run.stderr
    # Explicitly untrusted: it runs, but ignores .gemini/.env, so the key is missing.
    run = gemini_print(isolated_home, "say pong", env={"GEMINI_CLI_TRUST_WORKSPACE": "false"})
    assert run.returncode != 0
    assert "GEMINI_API_KEY" in run.stdout + run.stderr
    doctor = cli("doctor", "--offline", "--client", "gemini", "--json", "--project-dir",
                 str(isolated_home / "project"))  # fmt: skip
    assert "gemini-folder-untrusted" in [f["id"] for f in doctor.json()["findings"]]
