"""Exports: every format carries the table and the rubric result, reads back through
`notes check` with the same verdict, and never contains a key."""

from __future__ import annotations

import csv
import io
import json
import string
from datetime import UTC, datetime
from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from notes_cli.notes.check import NoteCheck, check_text, read_answer
from notes_cli.notes.export import FORMATS, NoteDocument, render, write_note
from notes_cli.notes.extract import Extraction, NoteTable
from notes_cli.notes.kits import load_kit
from notes_cli.notes.rubric import score

CORPUS = Path(__file__).parent / "corpus" / "answers"
WHEN = datetime(2026, 11, 29, 9, 30, tzinfo=UTC)


def _document(answer: str, lang: str = "zh") -> NoteDocument:
    kit = load_kit("pd-disagg")
    text, fmt = read_answer(CORPUS / answer)
    return NoteDocument(
        check_text(text, kit, source_format=fmt),
        lang,
        model="pd-mock-1",
        endpoint="http://127.0.0.1:8000/api",
        sources=("reading.md",),
        created=WHEN,
    )


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("answer", ["zh_br_cells.md", "en_missing_paged_attention.md"])
def test_export_reads_back_with_the_same_rows_and_verdict(
    fmt: str, answer: str, tmp_path: Path
) -> None:
    document = _document(answer)
    path = write_note(tmp_path / f"note.{fmt}", render(document, fmt))  # type: ignore[arg-type]
    text, source_format = read_answer(path)
    again = check_text(text, document.check.kit, source_format=source_format)
    assert again.verdict == document.check.verdict
    assert again.extraction.table is not None
    assert [r[0] for r in again.extraction.table.rows] == [r["stage"] for r in document.rows()]
    assert again.rubric.missing_concepts == document.check.rubric.missing_concepts


def test_json_export_fields() -> None:
    data = json.loads(render(_document("en_missing_paged_attention.md", "en"), "json"))
    assert data["schema"] == "pdnotes.notes/1"
    assert [c["label"] for c in data["columns"]] == [
        "Stage",
        "Bottleneck",
        "Optimisation",
        "Component",
    ]
    assert data["rows"][1]["stage"] == "Decode"
    assert data["missing_concepts"] == ["Decode: PagedAttention"]
    assert data["score"] == pytest.approx(10 / 11, abs=0.001)
    assert data["passed"] is False
    assert (data["model"], data["endpoint"]) == ("pd-mock-1", "http://127.0.0.1:8000/api")
    assert data["created"] == "2026-11-29T09:30:00+00:00"


def test_markdown_export_has_metadata_table_and_rubric() -> None:
    text = render(_document("zh_br_cells.md"), "md")
    assert text.startswith("# PD 分离对照笔记")  # a zh note gets the kit's zh title
    for expected in ("| 模型 | pd-mock-1 |", "| 资料来源 | S1 reading.md |", "| 日期 | 2026-11-29"):
        assert expected in text
    assert "| 阶段 | 瓶颈 | 优化手段 | 对应组件 |" in text
    assert "Compute-bound<br>长 Prompt 密集矩阵乘" in text  # line breaks survive as <br>
    assert "**PASS** — 得分 1.00（通过线 1.00）" in text


def test_an_english_note_speaks_english() -> None:
    text = render(_document("en_missing_paged_attention.md", lang="en"), "md")
    assert text.startswith("# PD disaggregation")
    for expected in ("| Model | pd-mock-1 |", "| Source | S1 reading.md |", "## Rubric"):
        assert expected in text
    assert "**FAIL** — score 0.91 (pass at 1.00)" in text
    assert "— missing: PagedAttention" in text


def test_html_export_is_a_standalone_page() -> None:
    page = render(_document("zh_br_cells.md"), "html")
    assert page.startswith("<!DOCTYPE html>") and '<html lang="zh">' in page
    assert "<style>" in page
    assert "<link" not in page and "<script" not in page and "http" not in page.split("接口地址")[0]
    assert '<span class="verdict pass">PASS</span>' in page
    assert "<td>Compute-bound<br>长 Prompt 密集矩阵乘<br>优化目标：TTFT</td>" in page


def test_csv_export_keeps_line_breaks_inside_quoted_cells() -> None:
    rows = list(csv.reader(io.StringIO(render(_document("zh_br_cells.md"), "csv"))))
    assert rows[0] == ["阶段", "瓶颈", "优化手段", "对应组件"]
    assert rows[1][1] == "Compute-bound\n长 Prompt 密集矩阵乘\n优化目标：TTFT"


def test_write_note_leaves_no_temp_file_and_replaces_atomically(tmp_path: Path) -> None:
    target = tmp_path / "notes" / "note.md"
    write_note(target, "first")
    write_note(target, "second")
    assert target.read_text(encoding="utf-8") == "second"
    assert [p.name for p in target.parent.iterdir()] == ["note.md"]


_cell_text = st.text(
    alphabet=string.ascii_letters + string.digits + " |\\&;:,.\n中文，；：（）",
    min_size=1,
    max_size=30,
).filter(lambda s: s.strip(" \n") != "")


def _tidy(cell: str) -> str:
    lines = (" ".join(line.split()) for line in cell.split("\n"))
    return "\n".join(line for line in lines if line)


@settings(max_examples=60, deadline=None)
@given(cells=st.lists(_cell_text, min_size=4, max_size=4))
@example(cells=["0", "0", "0", "&gt"])  # an entity without its `;` (found by hypothesis)
@example(cells=["&amp;", "a&#39;b", "R & D", "&lt;br&gt;"])
def test_every_export_round_trips_any_cell_text(cells: list[str]) -> None:
    """Whatever a cell holds (pipes, backslashes, ampersands, line breaks, CJK punctuation),
    each exported format reads back to the same cells."""
    kit = load_kit("pd-disagg")
    header = tuple(c.zh for c in kit.columns)
    table = NoteTable(
        header, (tuple(cells),), "markdown", {c.key: i for i, c in enumerate(kit.columns)}
    )
    extraction = Extraction("ok", table, 1, (), "")
    document = NoteDocument(NoteCheck(kit, extraction, score(table, kit)), "zh", created=WHEN)
    for fmt in FORMATS:
        text = render(document, fmt)
        again = check_text(text, kit, source_format="csv" if fmt == "csv" else "text")
        assert again.extraction.table is not None, fmt
        assert again.extraction.table.rows == (tuple(_tidy(c) for c in cells),), fmt
