"""Kits: the bundled pd-disagg kit, user kits under $PDNOTES_HOME/kits, and clear errors that
name the file and the field of a malformed kit."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import CliResult

from notes_cli.errors import KitError
from notes_cli.notes.kits import bundled_kits_dir, list_kits, load_kit, user_kits_dir


def _user_kit(name: str = "my-kit") -> Path:
    target = user_kits_dir() / name
    shutil.copytree(bundled_kits_dir() / "pd-disagg", target)
    kit_toml = target / "kit.toml"
    kit_toml.write_text(
        kit_toml.read_text(encoding="utf-8").replace('name = "pd-disagg"', f'name = "{name}"'),
        encoding="utf-8",
    )
    return target


def test_bundled_kit_has_the_articles_columns_and_rows() -> None:
    kit = load_kit("pd-disagg")
    assert [c.zh for c in kit.columns] == ["阶段", "瓶颈", "优化手段", "对应组件"]
    assert [c.en for c in kit.columns] == ["Stage", "Bottleneck", "Optimisation", "Component"]
    assert [r.key for r in kit.rubric.rows if r.required] == ["prefill", "decode", "kv-transfer"]
    assert "DLSlime" in kit.prompt("zh") and "DLSlime" in kit.prompt("en")
    assert "阶段-瓶颈-优化手段-对应组件" in kit.prompt("zh")


def test_user_kit_is_listed_next_to_the_bundled_one(cli: Callable[..., CliResult]) -> None:
    _user_kit("my-kit")
    result = cli("notes", "kits", "--json")
    document = result.json()
    assert result.exit_code == 0
    assert document["schema"] == "pdnotes.notes.kits/1"
    origins = {k["name"]: k["origin"] for k in document["kits"]}
    assert origins == {
        "pd-disagg": "bundled",
        "kv-transfer": "bundled",
        "hw-adapt": "bundled",
        "my-kit": "user",
    }


def test_user_kit_with_a_bundled_name_replaces_it() -> None:
    _user_kit("pd-disagg")
    assert load_kit("pd-disagg").origin == "user"
    assert {k.name: k.origin for k in list_kits()}["pd-disagg"] == "user"
    assert [k.name for k in list_kits()].count("pd-disagg") == 1


def test_kits_human_output_names_columns(cli: Callable[..., CliResult]) -> None:
    result = cli("notes", "kits")
    assert result.exit_code == 0
    assert "pd-disagg" in result.stdout and "对应组件" in result.stdout


def _replace(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert old in text
    path.write_text(text.replace(old, new, 1), encoding="utf-8")


@pytest.mark.parametrize(
    ("file", "old", "new", "expected"),
    [
        ("kit.toml", 'key = "bottleneck"', "key = 3", "field 'columns[1].key'"),
        ("kit.toml", 'synonyms = ["瓶颈"', 'synonyms = "瓶颈" #', "field 'columns[1].synonyms'"),
        ("kit.toml", 'title = "', 'titel = "', "field 'title' is missing"),
        ("kit.toml", "[[columns]]", "[[columns]\n", "TOML syntax error: "),
        ("rubric.toml", "pass_score = 1.0", 'pass_score = "all"', "field 'pass_score'"),
        ("rubric.toml", 'label = "TTFT"', 'labl = "TTFT"', "field 'rows[0].concepts[1].label'"),
        ("kit.toml", 'languages = ["zh", "en"]', 'languages = ["zh", "en", "fr"]', "prompt.fr.md"),
        ("kit.toml", 'name = "my-kit"', 'name = "other"', "field 'name' is 'other'"),
        ("kit.toml", '[titles]\nzh = "', '[titles]\nzh = 5 #"', "field 'titles'"),
    ],
)
def test_malformed_kit_error_names_file_and_field(
    file: str, old: str, new: str, expected: str, cli: Callable[..., CliResult]
) -> None:
    kit_dir = _user_kit("my-kit")
    _replace(kit_dir / file, old, new)
    with pytest.raises(KitError) as info:
        load_kit("my-kit")
    assert expected in info.value.message
    assert str(kit_dir) in info.value.message
    result = cli("notes", "kits")
    assert result.exit_code == 2
    assert expected in " ".join(result.stderr.split())


def test_unknown_kit_lists_the_known_ones(cli: Callable[..., CliResult]) -> None:
    result = cli("notes", "check", "x.md", "--kit", "nope")
    assert result.exit_code == 2
    assert "no note kit called 'nope'" in result.stderr
    assert "pd-disagg" in result.stderr


def test_kit_titles_by_language_fall_back_to_the_default_title() -> None:
    from notes_cli.notes.kits import load_kit

    kit = load_kit("pd-disagg")
    assert kit.title_for("zh").startswith("PD 分离对照笔记")
    assert kit.title_for("en") == kit.title
    assert kit.title_for("fr") == kit.title
