"""A fix line never tells the user to remove, rename or move aside a system path, a device, a
FIFO, a folder or the home folder itself: when a setting (`model_catalog_json`, `--records`)
names one, the fix says to point the setting at another file. A regular file of the user's
still gets the short "move it aside" fix. Driven through the real CLI in temp homes."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

_REMOVAL = r"\b(rm|mv|remove|rename|move|delete)\b[^.;]*?"


def removal_suggested(text: str, path: str) -> bool:
    """Whether a `fix:` line of `text` tells the user to remove, rename or move `path`."""
    fixes = [line for line in text.splitlines() if "fix" in line]
    pattern = re.compile(_REMOVAL + re.escape(path) + r"(?![\w/.-])")
    return any(pattern.search(line) for line in fixes)


def _unsafe_paths(home: Path, tmp_path: Path) -> dict[str, str]:
    fifo = tmp_path / "catalog-fifo.json"
    os.mkfifo(fifo)
    folder = tmp_path / "catalog-folder.json"
    folder.mkdir()
    return {
        "device": "/dev/null",
        "system-folder": "/etc",
        "home": str(home),
        "fifo": str(fifo),
        "folder": str(folder),
    }


UNSAFE = ["device", "system-folder", "home", "fifo", "folder"]


def _config_with_catalog(cli, home: Path, catalog: str) -> Path:
    result = cli("config", "codex", "--preset", "mock")
    assert result.exit_code == 0, result.stderr
    path = home / ".codex" / "config.toml"
    text, count = re.subn(
        r"(?m)^model_catalog_json = .*$", f'model_catalog_json = "{catalog}"', path.read_text()
    )
    assert count == 1  # the preset wrote its own catalog: the hand edit points elsewhere
    path.write_text(text)
    return path


@pytest.mark.parametrize("kind", UNSAFE)
def test_config_codex_model_catalog_never_suggests_removing_what_the_setting_names(
    cli, isolated_home: Path, tmp_path: Path, kind: str
) -> None:
    catalog = _unsafe_paths(isolated_home, tmp_path)[kind]
    config = _config_with_catalog(cli, isolated_home, catalog)
    before = config.read_bytes()

    result = cli(
        "config", "codex", "--preset", "mock", "--context-window", "4096", "--model-catalog"
    )

    assert result.exit_code != 0
    assert not removal_suggested(result.stderr, catalog), result.stderr
    assert "at another file" in result.stderr
    assert config.read_bytes() == before


@pytest.mark.parametrize("kind", UNSAFE)
def test_doctor_never_suggests_removing_the_catalog_a_setting_names(
    cli, isolated_home: Path, tmp_path: Path, kind: str
) -> None:
    catalog = _unsafe_paths(isolated_home, tmp_path)[kind]
    _config_with_catalog(cli, isolated_home, catalog)

    result = cli("doctor", "--client", "codex", "--offline", "--json")

    (finding,) = [f for f in result.json()["findings"] if f["id"] == "codex-model-unknown"]
    assert catalog in finding["message"]
    assert not removal_suggested("fix: " + finding["fix"], catalog), finding["fix"]
    assert "point model_catalog_json at another file" in finding["fix"]


def test_a_broken_catalog_file_of_the_users_may_still_be_removed(
    cli, isolated_home: Path, tmp_path: Path
) -> None:
    catalog = tmp_path / "catalog.json"
    catalog.write_text("{")
    _config_with_catalog(cli, isolated_home, str(catalog))

    result = cli("doctor", "--client", "codex", "--offline", "--json")

    (finding,) = [f for f in result.json()["findings"] if f["id"] == "codex-model-unknown"]
    assert removal_suggested("fix: " + finding["fix"], str(catalog)), finding["fix"]


def test_bench_records_naming_a_folder_is_not_to_be_removed(cli, tmp_path: Path) -> None:
    records = tmp_path / "run.jsonl"
    records.mkdir()

    result = cli(
        "bench", "--base-url", "http://127.0.0.1:9/v1", "--model", "m", "--requests", "1",
        "--records", str(records),
    )  # fmt: skip

    assert result.exit_code == 2, result.stderr
    assert not removal_suggested(result.stderr, str(records)), result.stderr
    assert records.is_dir()


def test_a_binary_config_file_of_the_users_is_still_moved_aside(cli, isolated_home: Path) -> None:
    config = isolated_home / ".codex" / "config.toml"
    config.parent.mkdir()
    config.write_bytes(b"model = \x00\x01")

    result = cli("config", "codex", "--preset", "mock")

    assert result.exit_code == 2
    assert f"mv {config} {config}.broken" in result.stderr
