"""`notes compare` by concepts (issue 29, point 4): the same note in English and in Chinese
agrees cell by cell and concept by concept, a real difference is named by its concept in
either language, and column labels follow the notes' own language."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import CliResult

from notes_cli.notes.kits import load_kit
from notes_cli.notes.knowledge import answer_for


def _note(folder: Path, lang: str, seed: int) -> Path:
    answer = answer_for(load_kit("pd-disagg").prompt(lang), seed=seed)
    assert answer is not None
    path = folder / f"{lang}-{seed}.md"
    path.write_text(answer, encoding="utf-8")
    return path


@pytest.mark.parametrize("seed", [0, 2, 4, 7])
def test_the_same_note_in_english_and_chinese_agrees(
    seed: int, tmp_path: Path, cli: Callable[..., CliResult]
) -> None:
    en, zh = _note(tmp_path, "en", seed), _note(tmp_path, "zh", seed)
    result = cli("notes", "compare", str(en), str(zh), "--json")
    assert result.exit_code == 0, result.stdout
    report = result.json()
    assert report["differ"] == 0 and report["agree"] >= 12
    assert report["concepts"] and all(c["agrees"] for c in report["concepts"])
    assert {"compute-bound", "PagedAttention", "DLSlime"} <= {
        c["concept"] for c in report["concepts"]
    }
    shown = cli("notes", "compare", str(en), str(zh)).stdout
    assert "0 differ" in shown and "only A" not in shown and "only B" not in shown


def test_column_labels_follow_the_notes_language(
    tmp_path: Path, cli: Callable[..., CliResult]
) -> None:
    en, zh = _note(tmp_path, "en", 1), _note(tmp_path, "zh", 1)
    labels_en = {c["label"] for r in cli("notes", "compare", str(en), str(en), "--json").json()[
        "rows"] for c in r["cells"]}  # fmt: skip
    labels_zh = {c["label"] for r in cli("notes", "compare", str(zh), str(zh), "--json").json()[
        "rows"] for c in r["cells"]}  # fmt: skip
    assert labels_en == {"Stage", "Bottleneck", "Optimisation", "Component"}
    assert labels_zh == {"阶段", "瓶颈", "优化手段", "对应组件"}
    forced = cli("notes", "compare", str(zh), str(zh), "--lang", "en", "--json").json()
    assert forced["rows"][0]["cells"][0]["label"] == "Stage"
    assert cli("notes", "compare", str(en), str(zh), "--lang", "fr").exit_code == 2


def test_a_difference_across_languages_is_named_by_its_concept(
    tmp_path: Path, cli: Callable[..., CliResult]
) -> None:
    en = _note(tmp_path, "en", 2)
    zh = _note(tmp_path, "zh", 2)
    zh.write_text(zh.read_text(encoding="utf-8").replace("PagedAttention", "连续批处理"), "utf-8")
    result = cli("notes", "compare", str(en), str(zh), "--json")
    assert result.exit_code == 1
    report = result.json()
    assert report["differ"] == 1
    decode = next(r for r in report["rows"] if r["row"] == "Decode")
    optimisation = next(c for c in decode["cells"] if c["column"] == "optimisation")
    assert optimisation["only_a"] == ["PagedAttention"] and optimisation["only_b"] == []
    paged = next(c for c in report["concepts"] if c["concept"] == "PagedAttention")
    assert paged == {"concept": "PagedAttention", "agrees": False, "a": ["Decode"], "b": []}
    shown = " ".join(cli("notes", "compare", str(en), str(zh)).stdout.split())
    assert (
        "only A: PagedAttention" in shown and "PagedAttention: A in Decode; B in nowhere" in shown
    )


def test_free_text_is_matched_by_the_knowledge_wording_or_left_unmatched(
    tmp_path: Path, cli: Callable[..., CliResult]
) -> None:
    en, zh = _note(tmp_path, "en", 4), _note(tmp_path, "zh", 4)  # seed 4 has the DLInfer row
    vendor_en, vendor_zh = (
        "Every vendor's chip exposes different operators",
        "各厂商芯片算子接口不同",
    )
    assert vendor_en in en.read_text(encoding="utf-8")
    assert vendor_zh in zh.read_text(encoding="utf-8")
    changed = tmp_path / "changed.md"  # the Chinese note now says something else there
    changed.write_text(
        zh.read_text(encoding="utf-8").replace(vendor_zh, "芯片之间差别不大"), "utf-8"
    )
    report = cli("notes", "compare", str(en), str(changed), "--json").json()
    cell = next(c for r in report["rows"] for c in r["cells"] if vendor_en in c["a"])
    assert (cell["verdict"], cell["only_a"]) == ("differ", [vendor_en])
    # words the kit does not know, in two languages: not comparable, so not counted either way
    free_en = tmp_path / "free-en.md"
    free_en.write_text(en.read_text(encoding="utf-8").replace(vendor_en, "Chips vary"), "utf-8")
    report = cli("notes", "compare", str(free_en), str(changed), "--json").json()
    cell = next(c for r in report["rows"] for c in r["cells"] if "Chips vary" in c["a"])
    assert cell["verdict"] == "unmatched" and report["differ"] == 0 and report["unmatched"] == 1
