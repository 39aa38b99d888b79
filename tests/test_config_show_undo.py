"""`pdnotes config show` (effective values, their files, the URL each client calls) and
`pdnotes config undo`."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest


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


def _three_states(cli, home: Path) -> tuple[Path, list[Path]]:
    """config.toml at v3 with backups of v1 and v2 (oldest first)."""
    path = home / ".codex" / "config.toml"
    path.parent.mkdir(parents=True)
    path.write_text('model = "v1"\n')
    for model in ("v2", "v3"):
        assert cli("config", "codex", "--preset", "mock", "--model", model).exit_code == 0
    metas = sorted((home / ".pdnotes" / "backups" / "codex").glob("*.json"))
    assert len(metas) == 2
    return path, metas


def _assert_refused_naming(result, name: Path, path: Path, before: bytes) -> None:
    assert result.exit_code == 2 and "Traceback" not in result.stderr
    assert str(name) in result.stderr and "permission denied" in result.stderr
    assert "nothing was changed" in result.stderr and "restored" not in result.stdout
    assert "nothing to undo" not in result.stdout
    assert path.read_bytes() == before


def test_undo_refuses_when_the_newest_backup_cannot_be_read(cli, isolated_home, monkeypatch):
    """Skipping it restored the OLDER state, silently. Root reads any mode, so the refusal is
    simulated where the meta is opened (the real chmod is the next test)."""
    path, metas = _three_states(cli, isolated_home)
    before = path.read_bytes()
    real_open = os.open

    def deny(name, *args, **kwargs):  # type: ignore[no-untyped-def]
        if Path(name) == metas[-1]:
            raise PermissionError(13, "Permission denied")
        return real_open(name, *args, **kwargs)

    with monkeypatch.context() as patch:
        patch.setattr(os, "open", deny)
        result = cli("config", "undo", "--client", "codex")

    _assert_refused_naming(result, metas[-1], path, before)
    assert sorted(metas[0].parent.glob("*.json")) == metas  # nothing consumed


def test_undo_refuses_a_newest_backup_with_mode_000(cli, isolated_home, modes_deny) -> None:
    path, metas = _three_states(cli, isolated_home)
    before = path.read_bytes()
    metas[-1].chmod(0)
    try:
        result = cli("config", "undo", "--client", "codex")
    finally:
        metas[-1].chmod(0o600)

    _assert_refused_naming(result, metas[-1], path, before)


def test_undo_refuses_when_the_backup_folder_cannot_be_read(cli, isolated_home, monkeypatch):
    """It said "nothing to undo", exit 0. Simulated (root lists any folder); the real chmod
    is the next test."""
    path, metas = _three_states(cli, isolated_home)
    before = path.read_bytes()
    folder = metas[0].parent
    real_listdir = os.listdir

    def deny(name=".", *args, **kwargs):  # type: ignore[no-untyped-def]
        if Path(name) == folder:
            raise PermissionError(13, "Permission denied", str(name))
        return real_listdir(name, *args, **kwargs)

    with monkeypatch.context() as patch:
        patch.setattr(os, "listdir", deny)
        result = cli("config", "undo", "--client", "codex")

    _assert_refused_naming(result, folder, path, before)


def test_undo_refuses_a_backup_folder_with_mode_000(cli, isolated_home, modes_deny) -> None:
    path, metas = _three_states(cli, isolated_home)
    before = path.read_bytes()
    folder = metas[0].parent
    folder.chmod(0)
    try:
        result = cli("config", "undo", "--client", "codex")
    finally:
        folder.chmod(0o700)

    _assert_refused_naming(result, folder, path, before)


@pytest.mark.parametrize("garbage", [b"{cut sho", b"[]", b'{"existed": true}', b"\xff\xfe"])
def test_undo_refuses_a_backup_it_cannot_understand(cli, isolated_home, garbage) -> None:
    path, metas = _three_states(cli, isolated_home)
    before = path.read_bytes()
    metas[-1].write_bytes(garbage)

    result = cli("config", "undo", "--client", "codex")

    assert result.exit_code == 2 and "Traceback" not in result.stderr
    assert f"{metas[-1]} is not a codex backup pdnotes can read" in result.stderr
    assert f"mv {metas[-1]} {metas[-1]}.broken" in result.stderr
    assert path.read_bytes() == before
    metas[-1].rename(metas[-1].with_name(metas[-1].name + ".broken"))  # the fix it gives
    assert cli("config", "undo", "--client", "codex").exit_code == 0
    assert path.read_text() == 'model = "v1"\n'


def test_a_write_refuses_while_a_backup_cannot_be_understood(cli, isolated_home) -> None:
    """The write's recovery step reads every backup (one may be its own, left pending)."""
    path, metas = _three_states(cli, isolated_home)
    before = path.read_bytes()
    metas[0].write_bytes(b"{cut sho")

    result = cli("config", "codex", "--preset", "mock", "--model", "v4")

    assert result.exit_code == 2 and "Traceback" not in result.stderr
    assert f"{metas[0]} is not a codex backup pdnotes can read" in result.stderr
    assert path.read_bytes() == before
