"""Every file pdnotes writes goes through `fileio.atomic_write` (issue 16.4): an existing file
keeps its mode, a new one honours the umask, and files that hold a secret (backups, a settings
file with a literal token) are 0600 whatever the umask."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from notes_cli.errors import InputError
from notes_cli.notes.export import write_note


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.fixture(params=[0o022, 0o077, 0o002])
def umask(request: pytest.FixtureRequest) -> Iterator[int]:
    old = os.umask(request.param)
    try:
        yield request.param
    finally:
        os.umask(old)


def test_a_new_note_honours_the_umask(tmp_path: Path, umask: int) -> None:
    note = write_note(tmp_path / "notes" / "pd.md", "| a |\n")
    assert mode(note) == 0o666 & ~umask


@pytest.mark.parametrize("existing", [0o644, 0o640, 0o600, 0o664])
def test_a_rewritten_note_keeps_its_mode(tmp_path: Path, existing: int) -> None:
    note = tmp_path / "pd.md"
    note.write_text("old")
    note.chmod(existing)

    write_note(note, "new")

    assert note.read_text() == "new" and mode(note) == existing


@pytest.mark.parametrize("name", ["a" * 300 + ".md", "a" * 300 + "/pd.md"])
def test_a_note_name_too_long_is_an_input_error(tmp_path: Path, name: str) -> None:
    out = tmp_path / "out"
    out.mkdir()
    with pytest.raises(InputError, match="name too long for the file system"):
        write_note(out / name, "| a |\n")
    assert list(out.iterdir()) == []


def test_a_new_codex_config_honours_the_umask_and_backups_are_private(
    cli, isolated_home: Path, umask: int
) -> None:
    assert cli("config", "codex", "--preset", "mock").exit_code == 0
    assert mode(isolated_home / ".codex" / "config.toml") == 0o666 & ~umask
    assert cli("config", "codex", "--preset", "mock", "--model", "other").exit_code == 0
    saved = list((isolated_home / ".pdnotes" / "backups" / "codex").glob("*"))
    assert saved and all(mode(p) == 0o600 for p in saved)


def test_a_settings_file_holding_a_token_is_0600_whatever_the_umask(
    cli, isolated_home: Path, umask: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = isolated_home / ".claude" / "settings.json"
    path.parent.mkdir(parents=True)
    path.write_text("{}\n")
    path.chmod(0o644)
    monkeypatch.setenv("GW_TOKEN", "tt-0123456789abcdefghijklmnop")

    result = cli("config", "claude", "--base-url", "https://gw.example",
                 "--write-token-from-env", "GW_TOKEN")  # fmt: skip

    assert result.exit_code == 0, result.stderr
    assert mode(path) == 0o600
    assert not [p for p in path.parent.iterdir() if p.name.startswith(".settings.json.")]
