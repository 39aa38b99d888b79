"""doctor flags a gateway's model Codex's catalog does not know ("Model metadata for X not
found", a 272000-token window assumed, left out of the picker) and a model catalog Codex cannot
read, and the `config codex` command the finding names is the one that makes it go away."""

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
    assert "272000" in found["message"] and "picker" in found["message"]
    assert "pdnotes config codex --context-window gateway --model-catalog" in found["fix"]


@pytest.mark.parametrize("extra", ["", "model_context_window = 32768"])
def test_the_fix_the_finding_names_clears_it(doctor, cli, extra) -> None:
    [found] = unknown(doctor(extra=extra))
    command = found["fix"].split(" (")[0].replace("gateway", "32768").split()
    assert command[:3] == ["pdnotes", "config", "codex"] and "--model-catalog" in command
    written = cli(*command[1:])
    assert written.exit_code == 0, written.stderr
    after = cli("doctor", "--offline", "--client", "codex", "--json").json()["findings"]
    assert unknown(after) == []


def test_a_window_without_a_catalog_still_leaves_codex_warning(doctor) -> None:
    [found] = unknown(doctor(extra="model_context_window = 32768"))
    assert found["severity"] == "info" and found["line"] == 3
    assert "Model metadata for qwen3-coder not found" in found["message"]
    assert found["fix"].startswith("pdnotes config codex --model-catalog")


def catalog_line(path: Path) -> str:
    return f'model_catalog_json = "{path}"'


def test_a_catalog_that_lists_the_model_is_metadata_enough(doctor, cli, isolated_home) -> None:
    doctor()
    assert cli("config", "codex", "--context-window", "32768", "--model-catalog").exit_code == 0
    written = isolated_home / ".codex" / "pdnotes-models.json"
    assert unknown(doctor(extra=catalog_line(written))) == []


def test_a_catalog_without_the_model_is_flagged_with_the_command(
    doctor, cli, isolated_home
) -> None:
    doctor()
    assert cli("config", "codex", "--model", "other-model", "--model-catalog").exit_code == 0
    written = isolated_home / ".codex" / "pdnotes-models.json"
    [found] = unknown(doctor(extra=catalog_line(written)))
    assert found["severity"] == "warning" and found["line"] == 3
    assert "does not list 'qwen3-coder'" in found["message"]
    assert "pdnotes config codex --model-catalog" in found["fix"] and str(written) in found["fix"]


@pytest.mark.parametrize(
    ("text", "said"),
    [
        (None, "does not exist"),
        ("{oops", "not JSON"),
        ('{"models": []}', "lists no model"),
        ('{"models": [{"slug": "qwen3-coder", "display_name": "q"}]}', "lacks"),
    ],
)
def test_a_catalog_codex_cannot_read_is_an_error(doctor, isolated_home, text, said) -> None:
    path = isolated_home / "catalog.json"
    if text is not None:
        path.write_text(text, encoding="utf-8")
    [found] = unknown(doctor(extra=catalog_line(path)))
    assert found["severity"] == "error" and said in found["message"]
    assert str(path) in found["fix"]


def test_a_model_in_codexs_own_catalog_needs_nothing(doctor) -> None:
    assert unknown(doctor(model="gpt-5.5")) == []


def test_a_window_above_the_fallback_is_said_to_be_capped(doctor) -> None:
    [found] = unknown(doctor(extra="model_context_window = 1000000"))
    assert found["severity"] == "info" and found["line"] == 3
    assert "272000" in found["message"] and "--model-catalog" in found["fix"]
