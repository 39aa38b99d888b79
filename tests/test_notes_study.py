"""Study aids (issue 15, part 4): flashcards as an Anki package and CSV, and `notes compare`."""

from __future__ import annotations

import csv
import io
import json
import sqlite3
import zipfile
from collections.abc import Callable
from pathlib import Path

from conftest import CliResult

from notes_cli.notes.cards import CSV_HEADER, cards_from
from notes_cli.notes.check import check_text, read_answer
from notes_cli.notes.kits import load_kit
from notes_cli.notes.knowledge import answer_for

CORPUS = Path(__file__).parent / "corpus" / "answers"


def _note(tmp_path: Path, name: str = "note.md", seed: int = 2, lang: str = "en") -> Path:
    answer = answer_for(load_kit("pd-disagg").prompt(lang), seed=seed)
    assert answer is not None
    path = tmp_path / name
    path.write_text(answer, encoding="utf-8")
    return path


def _check(path: Path):  # type: ignore[no-untyped-def]
    text, fmt = read_answer(path)
    return check_text(text, load_kit("pd-disagg"), source_format=fmt)


def test_one_card_per_found_concept_in_both_languages(tmp_path: Path) -> None:
    check = _check(_note(tmp_path))
    cards = cards_from(check)
    found = [c for r in check.rubric.rows if r.present for c in r.concepts if c.found]
    assert len(cards) == len(found)
    decode = next(c for c in cards if c.concept.startswith("memory-bound"))
    assert decode.question == "Decode · Bottleneck 瓶颈"
    assert decode.concept == "memory-bound（访存密集）"
    assert "KV cache reads" in decode.statement and "[S" not in decode.statement


def test_csv_holds_both_directions_and_reads_back(
    tmp_path: Path, cli: Callable[..., CliResult]
) -> None:
    note = _note(tmp_path)
    result = cli("notes", "cards", str(note), "-o", str(tmp_path / "cards.csv"))
    assert result.exit_code == 0, result.stderr
    rows = list(csv.reader(io.StringIO((tmp_path / "cards.csv").read_text(encoding="utf-8"))))
    assert tuple(rows[0]) == CSV_HEADER
    forward = [r for r in rows[1:] if r[0] == "forward"]
    reverse = [r for r in rows[1:] if r[0] == "reverse"]
    assert len(forward) == len(reverse) == len(cards_from(_check(note)))
    assert {r[1] for r in reverse} == {r[5] for r in forward}  # reverse asks the concept


def test_apkg_is_a_valid_anki_package(tmp_path: Path, cli: Callable[..., CliResult]) -> None:
    note = _note(tmp_path, lang="zh")
    deck = tmp_path / "pd.apkg"
    assert cli("notes", "cards", str(note), "-o", str(deck)).exit_code == 0
    with zipfile.ZipFile(deck) as package:
        assert "collection.anki2" in package.namelist()
        (tmp_path / "c.anki2").write_bytes(package.read("collection.anki2"))
    db = sqlite3.connect(tmp_path / "c.anki2")
    try:
        notes = db.execute("select flds, tags from notes").fetchall()
        cards = db.execute("select count(*) from cards").fetchone()[0]
        models = json.loads(db.execute("select models from col").fetchone()[0])
        decks = json.loads(db.execute("select decks from col").fetchone()[0])
    finally:
        db.close()
    expected = len(cards_from(_check(note)))
    assert len(notes) == expected and cards == 2 * expected  # both directions
    (model,) = [m for m in models.values() if m["name"].startswith("pdnotes")]
    assert [t["name"] for t in model["tmpls"]] == ["Where → what", "What → where"]
    assert any("预填充" in flds or "Prefill" in flds for flds, _ in notes)
    assert all("pdnotes::pd-disagg" in tags for _, tags in notes)
    kit = load_kit("pd-disagg")
    assert any(d["name"] == kit.title_for(kit.default_language) for d in decks.values())
    # the same note again gives the same note ids (re-import updates, not duplicates)
    again = tmp_path / "again.apkg"
    cli("notes", "cards", str(note), "-o", str(again))
    with zipfile.ZipFile(again) as package:
        (tmp_path / "d.anki2").write_bytes(package.read("collection.anki2"))
    db = sqlite3.connect(tmp_path / "d.anki2")
    try:
        guids = {g for (g,) in db.execute("select guid from notes")}
    finally:
        db.close()
    db = sqlite3.connect(tmp_path / "c.anki2")
    try:
        assert guids == {g for (g,) in db.execute("select guid from notes")}
    finally:
        db.close()


def test_no_table_no_cards(tmp_path: Path, cli: Callable[..., CliResult]) -> None:
    result = cli("notes", "cards", str(CORPUS / "en_refusal.txt"), "-o", str(tmp_path / "c.csv"))
    assert result.exit_code == 1 and "no cards" in result.stderr
    assert not (tmp_path / "c.csv").exists()
    assert cli("notes", "cards", str(CORPUS / "en_csv.csv"), "-o", "x.txt").exit_code == 2


def test_compare_names_the_concepts_only_one_side_has(cli: Callable[..., CliResult]) -> None:
    a = CORPUS / "en_bold_links.md"
    b = CORPUS / "en_missing_paged_attention.md"
    result = cli("notes", "compare", str(a), str(b), "--lang", "en", "--json")
    assert result.exit_code == 1
    report = result.json()
    assert report["schema"] == "pdnotes.notes.compare/1"
    decode = next(r for r in report["rows"] if r["row"] == "Decode")
    optimisation = next(c for c in decode["cells"] if c["column"] == "optimisation")
    assert optimisation["verdict"] == "differ" and "PagedAttention" in optimisation["only_a"]
    human = cli("notes", "compare", str(a), str(b), "--lang", "en")
    assert "only A: PagedAttention" in human.stdout


def test_a_note_compared_with_itself_agrees_in_any_format(
    tmp_path: Path, cli: Callable[..., CliResult]
) -> None:
    from notes_cli.notes.export import NoteDocument, render

    md = _note(tmp_path, "a.md", seed=1)
    other = tmp_path / "b.json"  # the same note exported as JSON
    other.write_text(render(NoteDocument(_check(md), "en"), "json"), encoding="utf-8")
    result = cli("notes", "compare", str(md), str(other), "--json")
    assert result.exit_code == 0, result.stdout
    assert result.json()["differ"] == 0 and result.json()["agree"] > 0


def test_zh_and_en_notes_of_the_same_facts_agree(
    tmp_path: Path, cli: Callable[..., CliResult]
) -> None:
    zh = _note(tmp_path, "zh.md", seed=4, lang="zh")
    en = _note(tmp_path, "en.md", seed=4, lang="en")
    report = cli("notes", "compare", str(zh), str(en), "--json").json()
    concept_rows = [r for r in report["rows"] if r["row"] in ("Prefill", "Decode")]
    for row in concept_rows:
        for cell in row["cells"]:
            if cell["column"] in ("bottleneck", "optimisation"):
                assert cell["verdict"] == "agree", cell
