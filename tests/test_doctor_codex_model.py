"""doctor flags a gateway's model Codex's bundled catalog does not know ("Model metadata for X
not found", a 272000-token window assumed), and the `config codex` command that fixes it is the
one that makes the finding go away."""

from __future__ import annotations

from pathlib import Path

import pytest

GATEWAY = """model = "{model}"
model_provider = "gw"
{extra}
[model_providers.gw]
name = "gw"
base_url = "https://gw.example/v1"
wire_api = "responses"
"""


@pytest.fixture
def doctor(cli, isolated_home: Path, monkeypatch):
    monkeypatch.setenv("PDNOTES_CODEX_BIN", str(isolated_home / "no-codex-here"))
    path = isolated_home / ".codex" / "config.toml"

    def run(model: str = "qwen3-coder", extra: str = "") -> list[dict]:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(GATEWAY.format(model=model, extra=extra), encoding="utf-8")
        return cli("doctor", "--offline", "--client", "codex", "--json").json()["findings"]

    return run


def unknown(findings: list[dict]) -> list[dict]:
    return [f for f in findings if f["id"] == "codex-model-unknown"]


def test_a_custom_model_without_a_window_is_flagged_with_the_command(doctor) -> None:
    [found] = unknown(doctor())
    assert found["severity"] == "warning" and found["line"] == 1
    assert "Model metadata for qwen3-coder not found" in found["message"]
    assert "272000" in found["message"]
    assert "pdnotes config codex --context-window gateway" in found["fix"]


def test_the_fix_the_finding_names_clears_it(doctor, cli, isolated_home) -> None:
    assert unknown(doctor())
    written = cli("config", "codex", "--context-window", "32768")
    assert written.exit_code == 0, written.stderr
    after = cli("doctor", "--offline", "--client", "codex", "--json").json()["findings"]
    assert unknown(after) == []


@pytest.mark.parametrize(
    "extra", ["model_context_window = 32768", 'model_catalog_json = "/etc/codex/models.json"']
)
def test_a_window_or_a_catalog_is_metadata_enough(doctor, extra) -> None:
    assert unknown(doctor(extra=extra)) == []


def test_a_model_in_codexs_own_catalog_needs_nothing(doctor) -> None:
    assert unknown(doctor(model="gpt-5.5")) == []


def test_a_window_above_the_fallback_is_said_to_be_capped(doctor) -> None:
    [found] = unknown(doctor(extra="model_context_window = 1000000"))
    assert found["severity"] == "info" and found["line"] == 3
    assert "272000" in found["message"] and "model_catalog_json" in found["fix"]
