"""`pdnotes smoke --client gemini`: Gemini CLI's recorded request (clients/gemini/shapes/),
sent where and how Gemini CLI sends it, judged on Gemini's stream; and a full run on the
bundled engine's Gemini routes with a config `pdnotes config gemini` wrote."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from conftest import CliResult
from loopback import LoopbackServer, Reply

Cli = Callable[..., CliResult]


def _gemini_stream(text: str, finish: str = "STOP") -> list[bytes]:
    chunks = []
    for i, word in enumerate(text.split(" ")):
        last = i == len(text.split(" ")) - 1
        candidate: dict[str, Any] = {"content": {"role": "model", "parts": [{"text": word}]}}
        if last:
            candidate["finishReason"] = finish
        chunks.append(f"data: {json.dumps({'candidates': [candidate]})}\r\n\r\n".encode())
    return chunks


@pytest.fixture
def trusted(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GEMINI_CLI_TRUST_WORKSPACE", "true")
    monkeypatch.setenv("PDNOTES_GEMINI_BIN", "/nonexistent")  # the newest recorded shape


def test_smoke_sends_gemini_clis_request_to_its_url_with_its_key_header(
    cli: Cli, trusted: None, monkeypatch: pytest.MonkeyPatch, sentinel_key: str
) -> None:
    monkeypatch.setenv("GEMINI_API_KEY", sentinel_key)
    with LoopbackServer(Reply.sse(_gemini_stream("pong ok"))) as server:
        config = cli("config", "gemini", "--base-url", server.url + "/gw", "--model", "gm-1")
        assert config.exit_code == 0, config.stderr
        result = cli("smoke", "--client", "gemini", "-n", "1", "--json")
        sent = server.requests[0]
    assert result.exit_code == 0, result.stdout + result.stderr
    assert sent.path == "/gw/v1beta/models/gm-1:streamGenerateContent?alt=sse"
    assert sent.headers["x-goog-api-key"] == sentinel_key
    assert "authorization" not in sent.headers
    assert sent.headers["x-goog-api-client"].startswith("google-genai-sdk/")
    body = sent.json()
    recorded = json.loads(
        (Path(__file__).parent.parent / "notes_cli/clients/gemini/shapes/0.61.0.json").read_text()
    )["body"]
    names = [f["name"] for t in body["tools"] for f in t["functionDeclarations"]]
    assert names == [f["name"] for t in recorded["tools"] for f in t["functionDeclarations"]]
    assert body["generationConfig"]["thinkingConfig"] == {"includeThoughts": True}
    assert body["generationConfig"]["maxOutputTokens"] == 512  # smoke's budget, added
    assert body["contents"][-1]["parts"][-1]["text"] != "Reply with the single word ok."
    assert sentinel_key not in result.stdout + result.stderr


def test_a_cut_gemini_stream_does_not_complete(cli: Cli, trusted: None, monkeypatch) -> None:
    monkeypatch.setenv("GEMINI_API_KEY", "k")
    with LoopbackServer(Reply.sse(_gemini_stream("half an", finish="MAX_TOKENS"))) as server:
        cli("config", "gemini", "--base-url", server.url, "--model", "gm-1")
        result = cli("smoke", "--client", "gemini", "-n", "1")
    assert result.exit_code == 1 and "MAX_TOKENS" in result.stdout + result.stderr


def test_smoke_stops_like_gemini_cli_without_a_key(cli: Cli, trusted: None) -> None:
    # a remote gateway (a local one gets a placeholder key: tests/test_config_keyless.py);
    # smoke stops before sending anything
    assert (
        cli("config", "gemini", "--base-url", "https://gw.example", "--model", "m").exit_code == 0
    )
    result = cli("smoke", "--client", "gemini", "-n", "1")
    assert result.exit_code == 2 and "GEMINI_API_KEY is unset" in result.stderr


def test_smoke_passes_on_the_engine_with_the_mock_preset(
    cli: Cli, trusted: None, engine_server: Any
) -> None:
    base = engine_server.gemini_base_url
    assert cli("config", "gemini", "--preset", "mock", "--base-url", base).exit_code == 0
    result = cli("smoke", "--client", "gemini", "-n", "2", "--json")
    assert result.exit_code == 0, result.stdout + result.stderr
    document = result.json()
    assert document["verdict"]["ok"] is True
    assert all(run["finish_reason"] == "STOP" for run in document["runs"])


def test_right_after_config_in_an_untrusted_folder_smoke_and_doctor_name_the_trust(
    cli: Cli, engine_server: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Issue 35: `config gemini --preset mock` writes the key into ~/.gemini/.env, which Gemini
    CLI reads only in a trusted folder; smoke used to say the key was unset."""
    monkeypatch.setenv("PDNOTES_GEMINI_BIN", "/nonexistent")
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)  # a new folder: not trusted yet, no GEMINI_CLI_TRUST_WORKSPACE
    base = engine_server.gemini_base_url
    assert cli("config", "gemini", "--preset", "mock", "--base-url", base).exit_code == 0
    env_file = Path.home() / ".gemini" / ".env"
    assert "GEMINI_API_KEY=" in env_file.read_text()
    smoke = cli("smoke", "--client", "gemini", "-n", "1")
    said = " ".join(smoke.stderr.split())
    assert smoke.exit_code == 2
    assert f"{work} is not trusted by Gemini CLI" in said and f"skips {env_file}" in said
    assert "fix: export GEMINI_CLI_TRUST_WORKSPACE=true" in said
    assert "GEMINI_API_KEY is unset" not in said
    doctor = cli("doctor", "--client", "gemini", "--offline", "--json")
    found = {f["id"]: f for f in doctor.json()["findings"]}
    key = found["gemini-key-missing"]
    assert f"{env_file} sets it" in key["message"] and "not trusted" in key["message"]
    assert key["fix"].startswith("export GEMINI_CLI_TRUST_WORKSPACE=true")
    # the fix it names is the fix
    monkeypatch.setenv("GEMINI_CLI_TRUST_WORKSPACE", "true")
    assert cli("smoke", "--client", "gemini", "-n", "1").exit_code == 0
    assert "gemini-key-missing" not in cli("doctor", "--client", "gemini", "--offline").stdout
