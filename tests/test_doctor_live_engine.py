"""`pdnotes doctor` (live) end to end against the bundled engine: the article's doubled /v1 and a
mis-cased model are found with exact fixes, probes are reported, and the key never shows."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest


@pytest.fixture
def engine_with_key(
    start_engine_server: Any, sentinel_key: str, monkeypatch: pytest.MonkeyPatch
) -> Any:
    monkeypatch.setenv("GW_KEY", sentinel_key)
    return start_engine_server(api_key_env="GW_KEY")


def write_codex_config(home: Path, base_url: str, model: str) -> Path:
    path = home / ".codex" / "config.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        f'model = "{model}"\nmodel_provider = "gw"\n\n[model_providers.gw]\nname = "GW"\n'
        f'base_url = "{base_url}"\nenv_key = "GW_KEY"\nwire_api = "responses"\n'
    )
    return path


def test_doctor_live_json_against_the_engine(
    cli: Any, isolated_home: Path, engine_with_key: Any, sentinel_key: str
) -> None:
    config = write_codex_config(isolated_home, engine_with_key.base_url + "/v1", "PD-Mock-1")
    result = cli("doctor", "--client", "codex", "--json")
    assert result.exit_code == 1, result.stderr
    doc = result.json()
    live = {
        f["id"]: f for f in doc["findings"] if f["id"] in ("base-url-v1-suffix", "model-unknown")
    }
    assert live["base-url-v1-suffix"]["severity"] == "error"
    assert live["base-url-v1-suffix"]["fix"].endswith(f'base_url = "{engine_with_key.base_url}"')
    assert str(config) in live["base-url-v1-suffix"]["fix"]
    assert 'model = "pd-mock-1"' in live["model-unknown"]["fix"]
    assert doc["probes"] and all(p["ms"] is not None for p in doc["probes"])
    human = cli("doctor", "--client", "codex")
    for output in (result.stdout + result.stderr, human.stdout + human.stderr):
        assert sentinel_key not in output


def test_doctor_live_is_clean_when_the_config_is_right(
    cli: Any, isolated_home: Path, engine_with_key: Any, sentinel_key: str
) -> None:
    write_codex_config(isolated_home, engine_with_key.base_url, "pd-mock-1")
    result = cli("doctor", "--client", "codex", "--json")
    doc = result.json()
    errors = [f for f in doc["findings"] if f["severity"] == "error"]
    assert errors == [] and result.exit_code == 0, doc["findings"]
    assert [(p["name"], p["ok"]) for p in doc["probes"]] == [("models", True), ("stream", True)]
    assert sentinel_key not in result.stdout + result.stderr
