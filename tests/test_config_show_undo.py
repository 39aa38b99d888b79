"""`pdnotes config show` (effective values, their files, the URL each client calls) and
`pdnotes config undo`."""

from __future__ import annotations

import json
from pathlib import Path


def test_show_names_values_sources_and_request_urls(cli, isolated_home, monkeypatch) -> None:
    monkeypatch.setenv("TAOTOKEN_API_KEY", "sk-show0123456789wxyz")
    cli("config", "codex", "--preset", "taotoken", "--model", "glm-4.6")
    cli("config", "claude", "--preset", "mock")

    doc = cli("config", "show", "--json").json()

    assert doc["schema"] == "pdnotes.config/1"
    codex, claude = doc["clients"]
    config = str(isolated_home / ".codex" / "config.toml")
    assert codex["request_url"] == "https://taotoken.net/api/responses"
    assert codex["key"] == "sk-…wxyz" and codex["key_env"] == "TAOTOKEN_API_KEY"
    assert {"name": "model", "value": "glm-4.6", "source": config} in codex["values"]
    assert {"name": "key", "value": "sk-…wxyz", "source": "$TAOTOKEN_API_KEY"} in codex["values"]
    assert claude["request_url"] == "http://127.0.0.1:8000/api/anthropic/v1/messages"
    assert claude["files"] == [str(isolated_home / ".claude" / "settings.json")]


def test_show_human_output_masks_the_key(cli, monkeypatch) -> None:
    monkeypatch.setenv("TAOTOKEN_API_KEY", "sk-show0123456789wxyz")
    cli("config", "codex", "--preset", "taotoken", "--model", "glm-4.6")

    result = cli("config", "show", "--client", "codex")

    assert result.exit_code == 0
    assert "request URL: POST https://taotoken.net/api/responses" in result.stdout
    assert "sk-…wxyz" in result.stdout and "sk-show0123456789wxyz" not in result.stdout


def test_claude_layers_merge_local_over_project_over_user(cli, isolated_home, tmp_path) -> None:
    user = isolated_home / ".claude" / "settings.json"
    user.parent.mkdir(parents=True)
    user.write_text(
        json.dumps({"env": {"ANTHROPIC_BASE_URL": "https://user.example"}, "model": "from-user"})
    )
    local = tmp_path / ".claude" / "settings.local.json"
    local.parent.mkdir(parents=True)
    local.write_text(json.dumps({"env": {"ANTHROPIC_BASE_URL": "https://local.example"}}))

    claude = cli("config", "show", "--client", "claude", "--json").json()["clients"][0]

    assert claude["request_url"] == "https://local.example/v1/messages"
    assert {"name": "model", "value": "from-user", "source": str(user)} in claude["values"]


def test_show_on_a_fresh_home_says_not_configured(cli) -> None:
    result = cli("config", "show")
    assert result.exit_code == 0
    assert "not configured" in result.stdout
    assert "pdnotes config codex --preset" in result.stdout


def test_show_exits_2_on_an_unparseable_file(cli, isolated_home: Path) -> None:
    path = isolated_home / ".codex" / "config.toml"
    path.parent.mkdir(parents=True)
    path.write_text("model = \n")
    result = cli("config", "show", "--client", "codex")
    assert result.exit_code == 2 and f"{path}:1:" in result.stderr


def test_undo_without_client_undoes_the_most_recent_write(cli, isolated_home: Path) -> None:
    cli("config", "codex", "--preset", "mock")
    cli("config", "claude", "--preset", "mock")

    result = cli("config", "undo", "--json")

    assert result.json()["client"] == "claude" and result.json()["action"] == "removed"
    assert not (isolated_home / ".claude" / "settings.json").exists()
    assert (isolated_home / ".codex" / "config.toml").exists()


def test_undo_keeps_the_state_it_replaced(cli, isolated_home: Path) -> None:
    cli("config", "codex", "--preset", "mock", "--model", "a")
    cli("config", "codex", "--preset", "mock", "--model", "b")
    cli("config", "undo", "--client", "codex")

    undone = sorted((isolated_home / ".pdnotes" / "backups" / "codex" / "undone").glob("*.bak"))
    assert len(undone) == 1 and 'model = "b"' in undone[0].read_text()


def test_undo_with_nothing_to_undo_says_so_and_exits_0(cli, isolated_home: Path) -> None:
    result = cli("config", "undo", "--client", "claude")
    assert result.exit_code == 0, result.stderr
    assert "nothing to undo: no claude backup in" in result.stdout

    as_json = cli("config", "undo", "--json").json()
    assert as_json["schema"] == "pdnotes.config-undo/1"
    assert (as_json["client"], as_json["action"], as_json["file"]) == ("codex", "nothing", None)
    assert not (isolated_home / ".codex" / "config.toml").exists()


def test_presets_lists_the_shipped_presets(cli) -> None:
    names = {p["name"] for p in cli("config", "presets", "--json").json()["presets"]}
    assert {"taotoken", "mock", "openai", "deepseek"} <= names


def test_undo_from_another_folder_restores_a_relative_project_path(cli, tmp_path, monkeypatch):
    (tmp_path / "proj").mkdir()
    cli("config", "claude", "--preset", "mock", "--scope", "local", "--project-dir", "proj")
    written = tmp_path / "proj" / ".claude" / "settings.local.json"
    assert written.exists()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)

    assert cli("config", "undo", "--client", "claude").exit_code == 0
    assert not written.exists()


def test_undo_refuses_a_backup_whose_data_file_is_missing(cli, isolated_home: Path) -> None:
    """A backup's .bak deleted by hand or a cleaner: undo used to "restore" an empty file."""
    path = isolated_home / ".codex" / "config.toml"
    path.parent.mkdir(parents=True)
    path.write_text('model = "mine"\n[tui]\nnotifications = true\n')
    assert cli("config", "codex", "--preset", "mock", "--model", "m").exit_code == 0
    written = path.read_bytes()
    folder = isolated_home / ".pdnotes" / "backups" / "codex"
    (bak,) = folder.glob("*.bak")
    bak.unlink()

    result = cli("config", "undo", "--client", "codex")

    assert result.exit_code == 1 and "Traceback" not in result.stderr
    assert "backup is incomplete" in result.stderr and str(bak) in result.stderr
    assert "nothing was changed" in result.stderr and "restored" not in result.stdout
    assert path.read_bytes() == written  # not emptied
    assert len(list(folder.glob("*.json"))) == 1  # the backup is not consumed
    assert not (folder / "undone").exists() or not list((folder / "undone").iterdir())
