"""The corpus of realistic model answers (tests/corpus/answers): each answer's table is
extracted with the expected rows and gets the expected verdict."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from notes_cli.notes.check import check_text, read_answer
from notes_cli.notes.kits import load_kit

CORPUS = Path(__file__).parent / "corpus" / "answers"
ANSWERS = sorted(p for p in CORPUS.iterdir() if not p.name.endswith(".expected.toml"))


def _expected(answer: Path) -> dict:  # type: ignore[type-arg]
    return tomllib.loads((CORPUS / f"{answer.stem}.expected.toml").read_text(encoding="utf-8"))


def test_corpus_covers_both_languages_and_every_verdict() -> None:
    assert len(ANSWERS) >= 25
    assert {p.name[:3] for p in ANSWERS} >= {"zh_", "en_"}
    verdicts = {_expected(p)["verdict"] for p in ANSWERS}
    assert verdicts == {"pass", "fail", "wrong-columns", "no-table", "refusal", "truncated"}


@pytest.mark.parametrize("answer", ANSWERS, ids=lambda p: p.name)
def test_answer_gives_expected_rows_and_verdict(answer: Path) -> None:
    expected = _expected(answer)
    kit = load_kit("pd-disagg")
    text, source_format = read_answer(answer)
    result = check_text(text, kit, source_format=source_format)
    table = result.extraction.table
    stages = [table.stage_cell(row, "stage") for row in table.rows] if table else []
    assert stages == expected["rows"]
    assert result.verdict == expected["verdict"], result.problems()
    if "missing" in expected:
        assert result.rubric.missing_concepts == expected["missing"]
    if "missing_columns" in expected:
        assert list(result.extraction.missing_columns) == expected["missing_columns"]
