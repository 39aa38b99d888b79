"""Claude Code's settings layers with the precedence it documents: user < project < local <
`--settings FILE` < managed (`managed-settings.json`, then `managed-settings.d/*.json`); the
managed folder is moved for tests by $PDNOTES_CLAUDE_MANAGED_DIR (conftest)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from notes_cli.clients.claude.setup import claude_setup


def write(path: Path, data: dict) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2), encoding="utf-8")
    return path


def env_settings(url: str, model: str | None = None) -> dict:
    env = {"ANTHROPIC_BASE_URL": url, "ANTHROPIC_AUTH_TOKEN": "t"}
    if model:
        env["ANTHROPIC_MODEL"] = model
    return {"env": env}


@pytest.fixture
def managed(isolated_home: Path) -> Path:
    return Path(os.environ["PDNOTES_CLAUDE_MANAGED_DIR"])


def test_managed_settings_win_over_every_other_file(
    isolated_home: Path, tmp_path: Path, managed: Path
) -> None:
    project = tmp_path / "repo"
    write(isolated_home / ".claude" / "settings.json", env_settings("https://user"))
    write(project / ".claude" / "settings.local.json", env_settings("https://local"))
    flag = write(tmp_path / "flag.json", env_settings("https://flag"))
    write(managed / "managed-settings.json", env_settings("https://managed"))

    setup = claude_setup(None, project, {}, flag)

    assert setup.endpoint is not None
    assert setup.endpoint.base_url == "https://managed"
    source = next(v.source for v in setup.values if v.name == "ANTHROPIC_BASE_URL")
    assert source == str(managed / "managed-settings.json")


def test_drop_ins_win_over_the_managed_file_alphabetically(isolated_home: Path, managed) -> None:
    write(managed / "managed-settings.json", env_settings("https://managed"))
    write(managed / "managed-settings.d" / "10-a.json", env_settings("https://a"))
    write(managed / "managed-settings.d" / "20-b.json", env_settings("https://b"))

    setup = claude_setup(None, None, {}, None)

    assert setup.endpoint is not None and setup.endpoint.base_url == "https://b"


def test_settings_flag_wins_over_local(isolated_home: Path, tmp_path: Path) -> None:
    project = tmp_path / "repo"
    write(project / ".claude" / "settings.local.json", env_settings("https://local"))
    flag = write(tmp_path / "flag.json", env_settings("https://flag"))

    assert claude_setup(None, project, {}, None).endpoint.base_url == "https://local"  # type: ignore[union-attr]
    assert claude_setup(None, project, {}, flag).endpoint.base_url == "https://flag"  # type: ignore[union-attr]


def test_doctor_reports_a_bad_model_in_managed_settings_at_that_file(
    cli, isolated_home: Path, managed: Path
) -> None:
    write(isolated_home / ".claude" / "settings.json", env_settings("https://gw", "good"))
    bad = write(managed / "managed-settings.json", env_settings("https://gw", "<model-id>"))

    doc = cli("doctor", "--offline", "--client", "claude", "--json").json()

    found = next(f for f in doc["findings"] if f["id"] == "model-placeholder")
    assert found["file"] == str(bad)


def test_doctor_settings_flag_is_a_layer(cli, isolated_home: Path, tmp_path: Path) -> None:
    write(isolated_home / ".claude" / "settings.json", env_settings("https://gw", "good"))
    flag = write(tmp_path / "flag.json", env_settings("https://gw", "<model-id>"))

    plain = cli("doctor", "--offline", "--client", "claude", "--json").json()
    flagged = cli(
        "doctor", "--offline", "--client", "claude", "--json", "--settings", str(flag)
    ).json()

    assert "model-placeholder" not in {f["id"] for f in plain["findings"]}
    found = next(f for f in flagged["findings"] if f["id"] == "model-placeholder")
    assert found["file"] == str(flag)


def test_config_show_names_the_managed_layer(cli, isolated_home: Path, managed: Path) -> None:
    write(isolated_home / ".claude" / "settings.json", env_settings("https://user"))
    write(managed / "managed-settings.json", env_settings("https://managed"))

    shown = cli("config", "show", "--client", "claude", "--json").json()

    assert str(managed / "managed-settings.json") in json.dumps(shown)


def test_a_bad_key_in_managed_settings_drops_only_that_key(
    cli, isolated_home: Path, managed: Path
) -> None:
    write(isolated_home / ".claude" / "settings.json", env_settings("https://user"))
    write(
        managed / "managed-settings.json",
        {"model": 5, "env": {"ANTHROPIC_BASE_URL": "https://managed/v1"}},
    )

    doc = cli("doctor", "--offline", "--client", "claude", "--json").json()

    ignored = next(f for f in doc["findings"] if f["id"] == "claude-settings-ignored")
    assert ignored["severity"] == "warning" and "keeps the rest" in ignored["message"]
    # the rest of the managed file still applies: its base URL (with a /v1) is what is checked
    assert any(
        "managed" in (f.get("file") or "") and f["id"].startswith("base-url")
        for f in doc["findings"]
    ), doc["findings"]
