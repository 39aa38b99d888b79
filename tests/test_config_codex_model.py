"""`pdnotes config codex --context-window`: Codex learns the custom model's window, from the flag
or from the gateway's GET /models, written with config writing's guarantees."""

from __future__ import annotations

import tomllib
from pathlib import Path

import httpx
import pytest
import respx

GW = "https://gw.example/v1"
BASE = ["config", "codex", "--base-url", GW, "--model", "qwen3-coder", "--provider", "gw"]
HAND_WRITTEN = """# my Codex
model = "old"   # keep this comment
model_provider = "gw"

[model_providers.gw]
name = "gw"
base_url = "https://gw.example/v1"
env_key = "GW_KEY"
wire_api = "responses"

[tui]
theme = "dark"  # mine
"""


def config(home: Path) -> Path:
    path = home / ".codex" / "config.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    return path


def test_the_flag_writes_the_window_keeping_comments_and_undo_restores(cli, isolated_home) -> None:
    path = config(isolated_home)
    path.write_text(HAND_WRITTEN, encoding="utf-8")

    result = cli(*BASE, "--env-key", "GW_KEY", "--context-window", "131_072")

    assert result.exit_code == 0, result.stderr
    text = path.read_text(encoding="utf-8")
    assert tomllib.loads(text)["model_context_window"] == 131072
    assert 'theme = "dark"  # mine' in text and "# my Codex" in text
    assert cli("config", "undo", "--client", "codex").exit_code == 0
    assert path.read_text(encoding="utf-8") == HAND_WRITTEN


def test_dry_run_shows_the_window_in_the_diff_and_writes_nothing(cli, isolated_home) -> None:
    path = config(isolated_home)
    path.write_text(HAND_WRITTEN, encoding="utf-8")
    result = cli(*BASE, "--context-window", "65536", "--dry-run")
    assert result.exit_code == 0, result.stderr
    assert "+model_context_window = 65536" in result.stdout
    assert path.read_text(encoding="utf-8") == HAND_WRITTEN


@pytest.mark.parametrize("value", ["0", "128k", "-5", "99999999999"])
def test_a_window_that_is_no_token_count_is_a_usage_error(cli, isolated_home, value) -> None:
    result = cli(*BASE, "--context-window", value)
    assert result.exit_code == 2 and "--context-window" in result.stderr
    assert "Traceback" not in result.stderr and not config(isolated_home).exists()


def test_a_window_above_codexs_fallback_is_written_with_the_cap_explained(
    cli, isolated_home
) -> None:
    result = cli(*BASE, "--context-window", "1000000")
    assert result.exit_code == 0, result.stderr
    assert "272000" in result.stdout and "catalog" in result.stdout


@respx.mock
def test_vllms_max_model_len_becomes_the_window(cli, isolated_home, monkeypatch) -> None:
    monkeypatch.setenv("GW_KEY", "sk-test-0123456789abcdef0123")
    route = respx.get(f"{GW}/models").mock(
        return_value=httpx.Response(
            200,
            json={"object": "list", "data": [{"id": "qwen3-coder", "max_model_len": 32768}]},
        )
    )
    result = cli(*BASE, "--env-key", "GW_KEY", "--context-window", "gateway")

    assert result.exit_code == 0, result.stderr
    written = tomllib.loads(config(isolated_home).read_text(encoding="utf-8"))
    assert written["model_context_window"] == 32768
    sent = route.calls.last.request
    assert sent.headers["authorization"] == "Bearer sk-test-0123456789abcdef0123"
    assert "max_model_len" in result.stdout and "sk-test" not in result.stdout


@respx.mock
def test_openrouters_limits_are_read_and_what_codex_cannot_take_is_said(cli, isolated_home) -> None:
    entry = {
        "id": "qwen3-coder",
        "context_length": 262144,
        "top_provider": {"context_length": 131072, "max_completion_tokens": 65536},
        "supported_parameters": ["tools", "reasoning"],
    }
    respx.get(f"{GW}/models").mock(
        return_value=httpx.Response(200, json={"data": [{"id": "other"}, entry]})
    )
    result = cli(*BASE, "--context-window", "gateway")

    assert result.exit_code == 0, result.stderr
    written = tomllib.loads(config(isolated_home).read_text(encoding="utf-8"))
    assert written["model_context_window"] == 262144
    assert "output limit 65536" in result.stdout and "reasons" in result.stdout


@respx.mock
@pytest.mark.parametrize(
    ("answer", "said"),
    [
        (httpx.Response(200, json={"data": [{"id": "other", "context_length": 8192}]}), "list"),
        (httpx.Response(200, json={"data": [{"id": "qwen3-coder"}]}), "without a context"),
        (httpx.Response(401, json={"error": {"message": "bad key"}}), "cannot read"),
    ],
)
def test_a_gateway_that_cannot_say_leaves_the_file_alone(cli, isolated_home, answer, said) -> None:
    respx.get(f"{GW}/models").mock(return_value=answer)
    result = cli(*BASE, "--context-window", "gateway")
    assert result.exit_code == 2 and said in result.stderr
    assert "--context-window <tokens>" in result.stderr
    assert not config(isolated_home).exists()


def test_the_bundled_engines_models_list_gives_codex_its_window(
    cli, isolated_home, start_engine_server
) -> None:
    """A real engine on loopback says `max_model_len` in /models as vLLM does; the window it
    serves with is what Codex gets, and doctor then has nothing to say about the model."""
    engine = start_engine_server(max_context_tokens=16384)
    result = cli(
        "config", "codex", "--preset", "mock", "--base-url", engine.base_url,
        "--context-window", "gateway",
    )  # fmt: skip
    assert result.exit_code == 0, result.stderr
    written = tomllib.loads(config(isolated_home).read_text(encoding="utf-8"))
    assert written["model_context_window"] == 16384


def test_the_mock_preset_writes_the_engines_default_window(cli, isolated_home, monkeypatch) -> None:
    monkeypatch.setenv("PDNOTES_CODEX_BIN", str(isolated_home / "no-codex-here"))
    assert cli("config", "codex", "--preset", "mock", "--no-model-catalog").exit_code == 0
    written = tomllib.loads(config(isolated_home).read_text(encoding="utf-8"))
    assert written["model_context_window"] == 32768 and "model_catalog_json" not in written
    doc = cli("doctor", "--offline", "--client", "codex", "--json").json()
    said = [f for f in doc["findings"] if f["id"] == "codex-model-unknown"]
    assert [f["severity"] for f in said] == ["info"]  # the window is right; no catalog yet
    assert cli("config", "codex", "--preset", "mock").exit_code == 0  # the preset's catalog
    written = tomllib.loads(config(isolated_home).read_text(encoding="utf-8"))
    assert written["model_catalog_json"] == str(isolated_home / ".codex" / "pdnotes-models.json")
    doc = cli("doctor", "--offline", "--client", "codex", "--json").json()
    assert "codex-model-unknown" not in {f["id"] for f in doc["findings"]}
