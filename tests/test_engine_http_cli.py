"""`pdnotes engine serve` and `pdnotes engine presets` as a user runs them."""

from __future__ import annotations

import socket
from collections.abc import Callable
from typing import Any

import httpx
import pytest
from engine_process import EngineProcess


def test_presets_json_lists_deployments_with_their_nodes(cli: Callable[..., Any]) -> None:
    result = cli("engine", "presets", "--json")

    assert result.exit_code == 0
    document = result.json()
    assert document["schema"] == "pdnotes.engine.presets/1"
    presets = {p["name"]: p for p in document["presets"]}
    h800 = presets["h800-h20-rdma"]
    assert h800["mode"] == "disagg"
    assert h800["prefill"]["chip"] == "h800" and h800["decode"]["chip"] == "h20"
    assert all(p["source"] for p in presets.values())


def test_presets_table_names_every_preset(cli: Callable[..., Any]) -> None:
    names = [p["name"] for p in cli("engine", "presets", "--json").json()["presets"]]
    result = cli("engine", "presets")

    assert result.exit_code == 0
    for name in names:
        assert name[:10] in result.stdout


def test_engine_help_lists_its_commands(cli: Callable[..., Any]) -> None:
    result = cli("engine", "--help")

    assert result.exit_code == 0
    for command in ("serve", "presets", "simulate"):
        assert command in result.stdout


@pytest.mark.parametrize(
    ("args", "complaint"),
    [
        (["--mode", "sideways"], "unknown --mode"),
        (["--preset", "no-such-preset"], "unknown engine preset"),
        (["--fault", "418"], "unknown fault kind"),
        (["--fault", "500@sometimes"], "bad schedule"),
        (["--speed", "0"], "--speed"),
        (["--api-key-env", "PDNOTES_TEST_UNSET_KEY"], "PDNOTES_TEST_UNSET_KEY"),
        (["--port", "70000"], "'--port'"),  # was an OverflowError traceback from bind()
        (["--port", "-1"], "'--port'"),
    ],
)
def test_serve_rejects_bad_flags_with_exit_2(
    cli: Callable[..., Any], args: list[str], complaint: str
) -> None:
    result = cli("engine", "serve", "--port", "0", *args)

    assert result.exit_code == 2
    assert complaint in result.stderr
    assert "Traceback" not in result.stderr


def test_serve_on_a_taken_port_says_so(cli: Callable[..., Any]) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = cli("engine", "serve", "--port", str(port))

    assert result.exit_code == 1
    assert f"cannot listen on 127.0.0.1:{port}" in result.stderr
    assert "--port" in result.stderr


def test_serve_prints_the_urls_and_config_commands_for_each_client() -> None:
    with EngineProcess("--api-key-env", "HOME", "--fault", "500@first:1") as engine:
        banner = "".join(engine.output)
        first = httpx.post(f"{engine.base_url}/models", timeout=10)

    base = f"http://127.0.0.1:{engine.port}/api"
    assert f"OpenAI SDK / Codex base_url   {base}" in banner
    assert f"Claude ANTHROPIC_BASE_URL     {base}/anthropic" in banner
    assert f"pdnotes config codex --preset mock --base-url {base} --env-key HOME" in banner
    assert f"pdnotes config claude --preset mock --base-url {base}/anthropic --token-env HOME" in (
        banner
    )
    assert "500@first:1" in banner
    assert first.status_code in (401, 405)  # keyed: nothing served without the key
