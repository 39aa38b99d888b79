"""`pdnotes bridge serve` as a user runs it (a subprocess serving the recorded upstream, its
banner, a clean stop on SIGTERM) and `pdnotes doctor` on a client that points at a bridge."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from bridge_support import asyncio_upstream, bridge_to

from notes_cli.bridge.config import BridgeConfig, save_record


def test_bridge_serve_with_no_flags_serves_the_recorded_upstream(
    start_engine_server: Callable[..., Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    engine = start_engine_server(protocols=("chat",))
    monkeypatch.setenv("UP_KEY", "sk-never-printed-0123456789")
    save_record(BridgeConfig(upstream=engine.base_url, upstream_key_env="UP_KEY", port=0))
    process = subprocess.Popen(
        [sys.executable, "-m", "notes_cli", "bridge", "serve"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        text=True,
        start_new_session=True,
        env={**os.environ, "NO_COLOR": "1"},
    )
    try:
        lines: list[str] = []
        deadline = time.monotonic() + 30
        assert process.stdout is not None
        while time.monotonic() < deadline and not any("Ctrl-C" in line for line in lines):
            line = process.stdout.readline()
            if not line:
                break
            lines.append(line)
        banner = "".join(lines)
        match = re.search(r"Codex base_url\s+(http://127\.0\.0\.1:(\d+)/v1)", banner)
        assert match, banner
        assert f"upstream {engine.base_url}/chat/completions" in banner
        assert "pdnotes config codex --bridge --base-url" in banner
        assert "sk-never-printed" not in banner
        health = httpx.get(f"http://127.0.0.1:{match.group(2)}/health", timeout=10).json()
        assert health["upstream"]["ok"] is True
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(15)
        if process.stdout is not None:
            process.stdout.close()
    assert process.returncode == 0


def test_doctor_checks_the_bridge_and_its_upstream(
    cli: Callable[..., Any], start_engine_server: Callable[..., Any]
) -> None:
    engine = start_engine_server(protocols=("chat",))
    with bridge_to(engine.base_url, key=None) as bridge:
        port = str(bridge.config.port)
        wrote = cli(
            "config", "codex", "--bridge", "--base-url", engine.base_url,
            "--model", "pd-mock-1", "--bridge-port", port,
        )  # fmt: skip
        assert wrote.exit_code == 0, wrote.stderr
        healthy = cli("doctor", "--client", "codex", "--json")
    assert healthy.exit_code == 0, healthy.stdout
    assert not [f for f in healthy.json()["findings"] if f["severity"] == "error"]
    stopped = cli("doctor", "--client", "codex", "--json")
    assert stopped.exit_code == 1
    ids = [f["id"] for f in stopped.json()["findings"]]
    assert "bridge-not-running" in ids


def test_doctor_on_the_chat_only_engine_gives_the_bridge_commands(
    cli: Callable[..., Any], start_engine_server: Callable[..., Any]
) -> None:
    engine = start_engine_server(protocols=("chat",))
    wrote = cli("config", "codex", "--preset", "mock", "--base-url", engine.base_url)
    assert wrote.exit_code == 0, wrote.stderr
    report = cli("doctor", "--client", "codex", "--json")
    findings = {f["id"]: f for f in json.loads(report.stdout)["findings"]}
    assert "responses-unsupported" in findings, findings
    fix = findings["responses-unsupported"]["fix"]
    assert f"pdnotes config codex --bridge --base-url {engine.base_url}" in fix
    assert "pdnotes bridge serve" in fix


KEYED_UPSTREAMS = [
    "https://user:tt-SENTINELabcdefghijklmnopq@gw.example/api",
    "https://gw.example/api?api_key=tt-SENTINELabcdefghijklmnopq",
    "https://gw.example/sk-tt-SENTINELabcdefghijklmnopq/v1",
]


@pytest.mark.parametrize("url", KEYED_UPSTREAMS)
@pytest.mark.parametrize(
    "command",
    [
        ["bridge", "serve", "--port", "0", "--upstream"],
        ["config", "codex", "--bridge", "--model", "m", "--base-url"],
        ["config", "claude", "--bridge", "--model", "m", "--base-url"],
    ],
)
def test_an_upstream_url_carrying_a_key_is_refused_unshown(
    cli, isolated_home: Path, command: list[str], url: str
) -> None:
    result = cli(*command, url)
    assert result.exit_code == 2, result.stdout + result.stderr
    assert "tt-SENTINEL" not in result.stdout + result.stderr
    assert not (isolated_home / ".pdnotes" / "bridge.json").exists()


def test_bridge_serve_refuses_a_key_http_cannot_carry(
    cli, monkeypatch: pytest.MonkeyPatch, sentinel_key: str
) -> None:
    monkeypatch.setenv("UP_KEY", sentinel_key + "\n")  # `export UP_KEY="$(cat key.txt)"`-ish
    result = cli(
        *["bridge", "serve", "--port", "0", "--upstream", "http://127.0.0.1:9/v1"],
        "--upstream-key-env",
        "UP_KEY",
    )
    assert result.exit_code == 2
    assert "U+000A at position" in result.stderr
    assert sentinel_key not in result.stdout + result.stderr


def test_the_bridges_terminal_shows_no_key_an_upstream_echoes(tmp_path: Path) -> None:
    # the upstream puts the key it was sent in its status line; the bridge's log (a terminal,
    # or a service's journal) printed it through httpx's request log
    key = "sk-echoed-SENTINEL-0123456789abcdef"

    async def echo(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.closing(writer), contextlib.suppress(ConnectionError, EOFError):
            while True:  # until the bridge hangs up (IncompleteReadError is an EOFError)
                head = await reader.readuntil(b"\r\n\r\n")
                length = re.search(rb"content-length: *(\d+)", head, re.IGNORECASE)
                await reader.readexactly(int(length.group(1)) if length else 0)
                status = b"HTTP/1.1 401 Unauthorized %s\r\n" % key.encode()
                writer.write(status + b"content-length: 0\r\n\r\n")
                await writer.drain()

    log = tmp_path / "bridge.log"  # a file, as a service's journal (with a pipe, no line came)
    with asyncio_upstream(echo) as url, log.open("w") as sink:
        process = subprocess.Popen(
            [sys.executable, "-m", "notes_cli", "bridge", "serve", "--port", "0"]
            + ["--upstream", url + "/v1", "--upstream-key-env", "UP_KEY"],
            stdout=sink,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
            env={**os.environ, "NO_COLOR": "1", "UP_KEY": key},
        )
        try:
            port = None
            deadline = time.monotonic() + 30
            while port is None and time.monotonic() < deadline and process.poll() is None:
                time.sleep(0.1)
                port = re.search(r"Codex base_url\s+http://127\.0\.0\.1:(\d+)/v1", log.read_text())
            assert port, log.read_text()
            root = f"http://127.0.0.1:{port.group(1)}"
            assert httpx.get(root + "/v1/models", timeout=10).status_code == 401
            turn = {"model": "m", "input": "hi", "stream": False}
            answer = httpx.post(root + "/v1/responses", json=turn, timeout=10)
            assert answer.status_code == 401 and key not in answer.text
        finally:
            os.killpg(process.pid, signal.SIGTERM)
            process.wait(15)
    output = log.read_text()
    assert key not in output
    assert "SENTINEL-0123456789" not in output
