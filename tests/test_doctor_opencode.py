"""`pdnotes doctor --client opencode`: each misconfiguration that makes the real `opencode run`
fail (most of them with only "Unexpected server error") is a registered finding with the file,
the line and the fix; a config written by `pdnotes config opencode` is clean, offline and live
against the bundled engine, and the live probe sends OpenCode's recorded request."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest


def global_config(home: Path) -> Path:
    return home / ".config" / "opencode" / "opencode.json"


def write_config(home: Path, config: dict[str, Any] | str) -> Path:
    path = global_config(home)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(config if isinstance(config, str) else json.dumps(config, indent=2))
    return path


def provider(
    base_url: str = "https://gw.example.com/v1", *, npm: str = "@ai-sdk/openai-compatible", **more
) -> dict[str, Any]:
    entry: dict[str, Any] = {"npm": npm, "options": {"baseURL": base_url}}
    entry["models"] = more.pop("models", {"qwen3": {"limit": {"context": 65536, "output": 8192}}})
    entry["options"].update(more)
    return entry


def offline(cli: Any) -> dict[str, Any]:
    result = cli("doctor", "--client", "opencode", "--offline", "--json")
    assert result.exit_code in (0, 1), result.stderr
    return dict(result.json())


def by_id(doc: dict[str, Any], finding_id: str) -> dict[str, Any]:
    found = [f for f in doc["findings"] if f["id"] == finding_id]
    assert len(found) == 1, doc["findings"]
    return found[0]


def test_a_config_written_by_pdnotes_is_clean(cli, isolated_home) -> None:
    assert cli("config", "opencode", "--preset", "mock").exit_code == 0
    doc = offline(cli)
    assert doc["ok"] is True
    assert [f for f in doc["findings"] if f["client"] == "opencode"] == []


def test_no_config_is_an_error_when_opencode_is_asked_for(cli, isolated_home) -> None:
    doc = offline(cli)
    finding = by_id(doc, "config-missing")
    assert finding["severity"] == "error" and "pdnotes config opencode" in finding["fix"]
    # Among all clients, an absent OpenCode is not reported at all.
    every = cli("doctor", "--offline", "--json").json()
    assert not [f for f in every["findings"] if f["client"] == "opencode"]


@pytest.mark.parametrize(
    ("text", "line"),
    [('{\n  "model": "gw/qwen3",\n  "provider": {\n}', 4), ('{\n  "a": 1,\n  "a": 2\n}', 3)],
)
def test_a_file_opencode_cannot_read_is_named_with_its_line(cli, isolated_home, text, line) -> None:
    path = write_config(isolated_home, text)
    finding = by_id(offline(cli), "opencode-config-syntax")
    assert finding["severity"] == "error"
    assert finding["file"] == str(path) and finding["line"] == line
    assert f"line {line}" in finding["fix"]


def test_a_model_without_its_provider_prefix(cli, isolated_home) -> None:
    path = write_config(isolated_home, {"provider": {"gw": provider()}, "model": "qwen3"})
    finding = by_id(offline(cli), "opencode-model-format")
    assert finding["severity"] == "error" and '"model": "gw/qwen3"' in finding["fix"]
    lines = path.read_text().splitlines()
    assert lines[finding["line"] - 1].strip() == '"model": "qwen3"'  # not the "models" line


def test_a_model_naming_an_undefined_provider(cli, isolated_home) -> None:
    write_config(isolated_home, {"provider": {"gw": provider()}, "model": "gateway/qwen3"})
    finding = by_id(offline(cli), "opencode-provider-undefined")
    assert "--provider gateway --model qwen3" in finding["fix"]
    # A provider OpenCode ships (from models.dev) is not pdnotes' to judge.
    write_config(isolated_home, {"model": "anthropic/claude-sonnet-4"})
    assert not [f for f in offline(cli)["findings"] if f["id"].startswith("opencode-")]


def test_a_model_its_provider_does_not_list(cli, isolated_home) -> None:
    write_config(isolated_home, {"provider": {"gw": provider()}, "model": "gw/qwen2"})
    finding = by_id(offline(cli), "opencode-model-undefined")
    assert "(qwen3)" in finding["message"]
    assert finding["fix"] == "add it: pdnotes config opencode --provider gw --model qwen2"


def test_a_limit_without_output(cli, isolated_home) -> None:
    models = {"qwen3": {"limit": {"context": 65536}}}
    write_config(isolated_home, {"provider": {"gw": provider(models=models)}, "model": "gw/qwen3"})
    finding = by_id(offline(cli), "opencode-limit-incomplete")
    assert finding["severity"] == "error" and "no output" in finding["message"]
    assert '"output"' in finding["fix"]


def test_an_env_reference_to_an_unset_variable(cli, isolated_home, monkeypatch) -> None:
    config = {
        "provider": {"gw": provider(apiKey="{env:GW_API_KEY}")},
        "model": "gw/qwen3",
        "mcp": {"x": {"environment": {"T": "{env:OTHER_TOKEN}"}}},
    }
    write_config(isolated_home, config)
    doc = offline(cli)
    key = next(f for f in doc["findings"] if "GW_API_KEY" in f["message"])
    other = next(f for f in doc["findings"] if "OTHER_TOKEN" in f["message"])
    assert key["id"] == other["id"] == "opencode-env-unset"
    assert key["severity"] == "error" and other["severity"] == "warning"
    assert key["fix"].startswith("export GW_API_KEY=")
    monkeypatch.setenv("GW_API_KEY", "sk-set-now-0123456789")
    monkeypatch.setenv("OTHER_TOKEN", "x")
    assert not [f for f in offline(cli)["findings"] if f["id"] == "opencode-env-unset"]


def test_the_responses_adapter_on_a_gateway(cli, isolated_home) -> None:
    write_config(
        isolated_home, {"provider": {"gw": provider(npm="@ai-sdk/openai")}, "model": "gw/qwen3"}
    )
    finding = by_id(offline(cli), "opencode-adapter-mismatch")
    assert "/responses" in finding["message"] and "@ai-sdk/openai-compatible" in finding["fix"]


@pytest.mark.parametrize(
    ("url", "finding_id", "suggested"),
    [
        ("https://gw.example.com/v1/v1", "base-url-v1-suffix", "https://gw.example.com/v1"),
        (
            "https://gw.example.com/v1/chat/completions",
            "base-url-endpoint-suffix",
            "https://gw.example.com/v1",
        ),
        ("gw.example.com/v1", "base-url-no-scheme", "https://gw.example.com/v1"),
    ],
)
def test_base_url_mistakes(cli, isolated_home, url, finding_id, suggested) -> None:
    write_config(isolated_home, {"provider": {"gw": provider(url)}, "model": "gw/qwen3"})
    finding = by_id(offline(cli), finding_id)
    assert finding["client"] == "opencode" and suggested in finding["fix"]


def test_live_probes_call_the_resolved_endpoint_in_opencodes_shape(
    cli, isolated_home, engine_server: Any
) -> None:
    assert cli("config", "opencode", "--preset", "mock", "--base-url", engine_server.base_url)
    result = cli("doctor", "--client", "opencode", "--json")

    assert result.exit_code == 0, result.stdout + result.stderr
    probes = result.json()["probes"]
    assert [(p["method"], p["url"], p["ok"]) for p in probes] == [
        ("GET", engine_server.base_url + "/models", True),
        ("POST", engine_server.base_url + "/chat/completions", True),
    ]


def test_live_doubled_v1_is_confirmed_by_the_probe(cli, isolated_home, engine_server) -> None:
    base = engine_server.base_url + "/v1/v1"
    write_config(isolated_home, {"provider": {"gw": provider(base, models={"pd-mock-1": {}})},
                                 "model": "gw/pd-mock-1"})  # fmt: skip
    result = cli("doctor", "--client", "opencode", "--json")
    assert result.exit_code == 1
    ids = [f["id"] for f in result.json()["findings"]]
    assert "base-url-v1-suffix" in ids


def test_a_literal_key_in_the_file_is_flagged_without_showing_it(cli, isolated_home) -> None:
    secret = "sk-literal-opencode-0123456789abcdef"
    write_config(isolated_home, {"provider": {"gw": provider(apiKey=secret)}, "model": "gw/qwen3"})
    result = cli("doctor", "--client", "opencode", "--offline", "--json")
    assert secret not in result.stdout + result.stderr
    finding = by_id(result.json(), "key-in-file")
    assert finding["severity"] == "warning" and "{env:GW_API_KEY}" in finding["fix"]
    # The reference form is not a key in the file.
    write_config(isolated_home, {"provider": {"gw": provider(apiKey="{env:GW_API_KEY}")},
                                 "model": "gw/qwen3"})  # fmt: skip
    assert not [f for f in offline(cli)["findings"] if f["id"] == "key-in-file"]
