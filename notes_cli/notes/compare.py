"""`notes compare A B`: where two notes (two models, two runs) agree and differ, cell by cell.

Rows are paired by the kit's rubric rows (so `Decode（解码）` and `Decode` meet), other rows by
their stage text. A cell pair agrees when both cells mention the same rubric concepts of their
row (a cell of a row without concepts: the same text, ignoring case, spaces and citations);
otherwise the concepts only one side has are named.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Literal

from notes_cli.notes.check import NoteCheck
from notes_cli.notes.passages import without_citations
from notes_cli.notes.terms import first_match, normalize

CellVerdict = Literal["agree", "differ", "only-a", "only-b", "empty"]


@dataclass(frozen=True)
class CellComparison:
    column: str  # the kit column key
    label: str
    verdict: CellVerdict
    a: str
    b: str
    only_a: tuple[str, ...] = ()  # concept labels only A's cell mentions
    only_b: tuple[str, ...] = ()


@dataclass(frozen=True)
class RowComparison:
    label: str
    cells: tuple[CellComparison, ...]

    @property
    def agrees(self) -> bool:
        return all(c.verdict in ("agree", "empty") for c in self.cells)


@dataclass(frozen=True)
class Comparison:
    a_name: str
    b_name: str
    rows: tuple[RowComparison, ...]

    @property
    def agreeing_cells(self) -> int:
        return sum(1 for r in self.rows for c in r.cells if c.verdict == "agree")

    @property
    def differing_cells(self) -> int:
        return sum(1 for r in self.rows for c in r.cells if c.verdict not in ("agree", "empty"))

    def to_json(self) -> dict[str, Any]:
        return {
            "schema": "pdnotes.notes.compare/1",
            "a": self.a_name,
            "b": self.b_name,
            "agree": self.agreeing_cells,
            "differ": self.differing_cells,
            "rows": [
                {
                    "row": r.label,
                    "agrees": r.agrees,
                    "cells": [
                        {
                            "column": c.column,
                            "verdict": c.verdict,
                            "a": c.a,
                            "b": c.b,
                            "only_a": list(c.only_a),
                            "only_b": list(c.only_b),
                        }
                        for c in r.cells
                    ],
                }
                for r in self.rows
            ],
        }


def compare(a: NoteCheck, b: NoteCheck, lang: str, names: tuple[str, str]) -> Comparison:
    kit = a.kit
    rows: list[RowComparison] = []
    paired_a: set[int] = set()
    paired_b: set[int] = set()
    for spec, row_a, row_b in zip(kit.rubric.rows, a.rubric.rows, b.rubric.rows, strict=True):
        if not row_a.present and not row_b.present:
            continue
        cells_a = _row_cells(a, row_a.table_rows)
        cells_b = _row_cells(b, row_b.table_rows)
        paired_a.update(row_a.table_rows[:1])
        paired_b.update(row_b.table_rows[:1])
        concepts = [(c.label, c.synonyms) for c in spec.concepts]
        rows.append(RowComparison(spec.label, _cells(kit, lang, cells_a, cells_b, concepts)))
    rows.extend(_other_rows(a, b, kit, lang, paired_a, paired_b))
    return Comparison(names[0], names[1], tuple(rows))


def _row_cells(check: NoteCheck, indexes: tuple[int, ...]) -> dict[str, str] | None:
    table = check.extraction.table
    if table is None or not indexes:
        return None
    cells = table.rows[indexes[0]]
    return {c.key: table.cell(cells, c.key) for c in check.kit.columns}


def _cells(
    kit: Any,
    lang: str,
    a: dict[str, str] | None,
    b: dict[str, str] | None,
    concepts: list[tuple[str, tuple[str, ...]]],
) -> tuple[CellComparison, ...]:
    found = []
    for column in kit.columns:
        text_a = (a or {}).get(column.key, "")
        text_b = (b or {}).get(column.key, "")
        found.append(_cell(column.key, column.label(lang), text_a, text_b, a, b, concepts))
    return tuple(found)


def _cell(
    key: str,
    label: str,
    text_a: str,
    text_b: str,
    row_a: dict[str, str] | None,
    row_b: dict[str, str] | None,
    concepts: list[tuple[str, tuple[str, ...]]],
) -> CellComparison:
    if row_a is None or row_b is None:
        side: CellVerdict = "only-b" if row_a is None else "only-a"
        return CellComparison(key, label, side, text_a, text_b)
    if not text_a.strip() and not text_b.strip():
        return CellComparison(key, label, "empty", text_a, text_b)
    in_a = {name for name, synonyms in concepts if first_match(text_a, synonyms)}
    in_b = {name for name, synonyms in concepts if first_match(text_b, synonyms)}
    order = [name for name, _ in concepts]
    only_a = tuple(n for n in order if n in in_a - in_b)
    only_b = tuple(n for n in order if n in in_b - in_a)
    if not in_a and not in_b:  # no concept here: compare the terms the cells name
        words_a, words_b = _terms(text_a), _terms(text_b)
        only_a = tuple(sorted(words_a - words_b))[:_MAX_TERMS]
        only_b = tuple(sorted(words_b - words_a))[:_MAX_TERMS]
    verdict: CellVerdict = "differ" if only_a or only_b else "agree"
    return CellComparison(key, label, verdict, text_a, text_b, only_a, only_b)


_MAX_TERMS = 6
_WORD = re.compile(r"[a-z][a-z0-9+.-]{2,}|[\u3400-\u9fff]{2,}")
_STOPWORDS = frozenset(
    ("the", "and", "for", "from", "with", "that", "this", "into", "must", "are", "can", "its",
     "their", "each", "between", "over", "under", "after", "before", "than", "then", "also",
     "only", "per", "via", "use", "uses", "used")
)  # fmt: skip


def _terms(text: str) -> set[str]:
    """The words a cell names (lower case, stop words dropped), for cells without concepts."""
    words = _WORD.findall(normalize(without_citations(text)))
    return {w.rstrip(".") for w in words if w not in _STOPWORDS}


def _plain(text: str) -> str:
    return "".join(normalize(without_citations(text)).split())


def _other_rows(
    a: NoteCheck, b: NoteCheck, kit: Any, lang: str, paired_a: set[int], paired_b: set[int]
) -> list[RowComparison]:
    """Rows no rubric row claims, paired by their stage text."""
    stage_key = kit.columns[0].key

    def extra(check: NoteCheck, paired: set[int]) -> dict[str, dict[str, str]]:
        table = check.extraction.table
        if table is None:
            return {}
        claimed = paired | {i for r in check.rubric.rows for i in r.table_rows}
        return {
            _plain(table.stage_cell(cells, stage_key)): {
                c.key: table.cell(cells, c.key) for c in kit.columns
            }
            for i, cells in enumerate(table.rows)
            if i not in claimed
        }

    rows_a, rows_b = extra(a, paired_a), extra(b, paired_b)
    found = []
    for stage in list(rows_a) + [s for s in rows_b if s not in rows_a]:
        cells_a, cells_b = rows_a.get(stage), rows_b.get(stage)
        label = (cells_a or cells_b or {}).get(stage_key, stage)
        found.append(
            RowComparison(without_citations(label), _cells(kit, lang, cells_a, cells_b, []))
        )
    return found
