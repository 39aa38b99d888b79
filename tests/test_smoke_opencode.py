"""`pdnotes smoke --client opencode` and `notes generate --client opencode`: they call the
endpoint OpenCode's config resolves to, smoke in OpenCode's recorded request shape (its system
message, its ten tools, its headers), and refuse an `{env:NAME}` that would send an empty key."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "scripts"))
from client_shapes import recording_server  # noqa: E402

from notes_cli.clients.opencode import CLIENT  # noqa: E402

RECORDED = json.loads((CLIENT.shapes_dir() / "1.18.33.json").read_text("utf-8"))


def configure(cli: Any, base_url: str, *extra: str) -> None:
    result = cli(
        "config", "opencode", "--base-url", base_url, "--model", "shape-model",
        "--provider", "rec", *extra,
    )  # fmt: skip
    assert result.exit_code == 0, result.stderr


def test_smoke_sends_opencodes_request_to_the_configured_endpoint(cli, monkeypatch) -> None:
    monkeypatch.setenv("PDNOTES_OPENCODE_BIN", "/nonexistent")  # version unknown: newest shape
    with recording_server() as (url, requests):
        configure(cli, f"{url}/v1")
        result = cli("smoke", "--client", "opencode", "-n", "1", "--json")

    assert result.exit_code == 0, result.stdout + result.stderr
    (turn,) = [r for r in requests if r["body"] is not None]
    assert turn["path"] == "/v1/chat/completions"
    body = turn["body"]
    assert set(body) == set(RECORDED["body"])
    assert [t["function"]["name"] for t in body["tools"]] == [
        t["function"]["name"] for t in RECORDED["body"]["tools"]
    ]
    assert [m["role"] for m in body["messages"]] == ["system", "user"]
    assert body["model"] == "shape-model" and body["stream"] is True
    assert turn["headers"]["user-agent"].startswith("opencode/")
    assert {"x-session-id", "x-session-affinity"} <= set(turn["headers"])


def test_smoke_minimal_sends_pdnotes_small_body_instead(cli) -> None:
    with recording_server() as (url, requests):
        configure(cli, f"{url}/v1")
        result = cli("smoke", "--client", "opencode", "-n", "1", "--minimal", "--json")
    assert result.exit_code == 0, result.stdout + result.stderr
    (turn,) = [r for r in requests if r["body"] is not None]
    assert "tools" not in turn["body"]


def test_smoke_refuses_an_env_reference_to_an_unset_variable(cli) -> None:
    configure(cli, "http://127.0.0.1:9/v1", "--key-env", "REC_KEY_UNSET")
    result = cli("smoke", "--client", "opencode", "-n", "1")
    assert result.exit_code == 2
    assert "{env:REC_KEY_UNSET}" in result.stderr and "empty key" in result.stderr


def test_smoke_explains_an_opencode_config_without_an_endpoint(cli, isolated_home) -> None:
    path = isolated_home / ".config" / "opencode" / "opencode.json"
    path.parent.mkdir(parents=True)
    path.write_text('{"model": "gw/m"}')
    result = cli("smoke", "--client", "opencode")
    assert result.exit_code == 2
    assert "no provider 'gw'" in result.stderr and "doctor --client opencode" in result.stderr


def test_notes_generate_asks_the_endpoint_opencode_is_configured_for(
    cli, tmp_path: Path, engine_server: Any
) -> None:
    assert cli("config", "opencode", "--preset", "mock", "--base-url", engine_server.base_url)
    source = tmp_path / "src.md"
    source.write_text("Prefill is compute-bound; decode is memory-bound.\n")
    out = tmp_path / "note.md"

    result = cli(
        "notes", "generate", "--client", "opencode", "--source", str(source), "-o", str(out)
    )

    assert result.exit_code == 0, result.stdout + result.stderr
    assert f"{engine_server.base_url}/chat/completions" in result.stdout + result.stderr
    assert out.read_text().strip()


def test_smoke_asks_the_output_limit_opencodes_config_holds(cli) -> None:
    """OpenCode asks each turn for the model's `limit.output`: so does smoke (issue 36: it asked
    512 whatever the config held), unless --max-tokens says otherwise."""
    with recording_server() as (url, requests):
        configure(cli, f"{url}/v1", "--context-window", "4096", "--output-limit", "333")
        asked = cli("smoke", "--client", "opencode", "-n", "1", "--json")
        told = cli("smoke", "--client", "opencode", "-n", "1", "--max-tokens", "77", "--json")
    assert asked.exit_code in (0, 1) and told.exit_code in (0, 1), asked.stderr + told.stderr
    turns = [r["body"] for r in requests if r["body"] is not None]
    assert [body["max_tokens"] for body in turns] == [333, 77]
