"""Score a note table against its kit's rubric: which required rows are there, and which
concepts their cells mention (in either language)."""

from __future__ import annotations

from dataclasses import dataclass

from notes_cli.notes.extract import NoteTable
from notes_cli.notes.kits import Kit, RubricRow
from notes_cli.notes.terms import first_match


@dataclass(frozen=True)
class ConceptResult:
    key: str
    label: str
    found: bool
    matched: str | None  # the synonym that was found


@dataclass(frozen=True)
class RowResult:
    key: str
    label: str
    required: bool
    present: bool
    table_rows: tuple[int, ...]  # indexes into NoteTable.rows
    concepts: tuple[ConceptResult, ...]

    @property
    def missing_concepts(self) -> tuple[ConceptResult, ...]:
        return tuple(c for c in self.concepts if not c.found)


@dataclass(frozen=True)
class RubricResult:
    rows: tuple[RowResult, ...]
    score: float  # found / expected concepts over required rows (a missing row counts all)
    pass_score: float
    passed: bool

    @property
    def missing_rows(self) -> tuple[RowResult, ...]:
        return tuple(r for r in self.rows if r.required and not r.present)

    @property
    def missing_concepts(self) -> list[str]:
        """`row: concept` labels for every required concept not found."""
        return [
            f"{row.label}: {c.label}"
            for row in self.rows
            if row.required
            for c in row.concepts
            if not c.found
        ]


def score(table: NoteTable | None, kit: Kit) -> RubricResult:
    """Evaluate every rubric row; a missing table scores 0."""
    results = tuple(_row_result(table, kit, row) for row in kit.rubric.rows)
    required = [r for r in results if r.required]
    expected = sum(max(1, len(r.concepts)) for r in required)
    found = sum(
        (sum(c.found for c in r.concepts) if r.concepts else int(r.present)) for r in required
    )
    value = round(found / expected, 3) if expected else 1.0
    passed = all(r.present for r in required) and value >= kit.rubric.pass_score
    return RubricResult(results, value, kit.rubric.pass_score, passed)


def _row_result(table: NoteTable | None, kit: Kit, row: RubricRow) -> RowResult:
    stage_key = kit.columns[0].key
    hits: tuple[int, ...] = ()
    if table is not None:
        hits = tuple(
            i
            for i, cells in enumerate(table.rows)
            if first_match(table.stage_cell(cells, stage_key), row.match)
        )
    text = "\n".join(cell for i in hits for cell in table.rows[i]) if table else ""
    concepts = []
    for concept in row.concepts:
        matched = first_match(text, concept.synonyms) if hits else None
        concepts.append(ConceptResult(concept.key, concept.label, matched is not None, matched))
    return RowResult(row.key, row.label, row.required, bool(hits), hits, tuple(concepts))
