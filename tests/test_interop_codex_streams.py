"""The setting doctor's `stream-idle-gap` names is the one the real Codex obeys: on a gateway that
is silent for 2.5 s before its first delta, Codex with `stream_idle_timeout_ms = 1500` in the
provider block drops the stream ("idle timeout"); doctor, on the same config and gateway, names
that setting with a value, and with the value doctor suggests Codex completes the turn."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path
from typing import Any

import pytest
from interop_support import client_binary, run_client
from loopback import LoopbackServer, Reply, responses_stream

pytestmark = pytest.mark.interop
PAUSE_S = 2.5


def silent_gateway() -> LoopbackServer:
    events = responses_stream(["po", "ng"])

    def handler(request: object) -> Reply:
        if getattr(request, "method", "") == "GET":
            return Reply.json({"data": [{"id": "m1"}]})
        return Reply.sse([events[0], PAUSE_S, *events[1:]])

    return LoopbackServer(handler)


def write_config(home: Path, url: str, idle_ms: int) -> Path:
    path = home / ".codex" / "config.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        f'model = "m1"\nmodel_provider = "gw"\n\n[model_providers.gw]\nname = "gw"\n'
        f'base_url = "{url}/api"\nwire_api = "responses"\nstream_idle_timeout_ms = {idle_ms}\n'
        "request_max_retries = 0\nstream_max_retries = 0\n",
        encoding="utf-8",
    )
    return path


def codex_turn(home: Path) -> Any:
    workdir = home / "work"
    workdir.mkdir(exist_ok=True)
    args = [
        str(client_binary("codex")), "exec", "--skip-git-repo-check",
        "-c", "check_for_update_on_startup=false", "-c", "analytics.enabled=false",
        "-c", "features.plugins=false", "say pong",
    ]  # fmt: skip
    env = {"HOME": str(home), "CODEX_HOME": str(home / ".codex")}
    return run_client(args, env=env, cwd=workdir)


def test_codex_obeys_the_idle_timeout_doctor_names_and_its_suggested_value(
    cli: Any, isolated_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    client_binary("codex")
    monkeypatch.setenv("PDNOTES_CODEX_BIN", str(isolated_home / "no-codex-here"))
    with silent_gateway() as server:
        path = write_config(isolated_home, server.url, 1500)
        failed = codex_turn(isolated_home)
        doc = cli("doctor", "--client", "codex", "--json").json()
        [gap] = [f for f in doc["findings"] if f["id"] == "stream-idle-gap"]
        suggested = int(re.search(r"to (\d+) \(it is 1500 ms", gap["fix"])[1])  # type: ignore[index]
        write_config(isolated_home, server.url, suggested)
        assert (
            tomllib.loads(path.read_text())["model_providers"]["gw"]["stream_idle_timeout_ms"]
            == suggested
        )
        completed = codex_turn(isolated_home)

    assert failed.returncode != 0 and "idle timeout" in failed.stderr, failed.stderr
    assert "stream_idle_timeout_ms in [model_providers.gw]" in gap["fix"]
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout.strip().lower().rstrip(".!") == "pong"
