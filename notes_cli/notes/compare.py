"""`notes compare A B`: where two notes (two models, two runs, two languages) agree and differ.

Both notes are read through the kit's vocabulary of concepts, each with its Chinese and English
spellings: every rubric concept, every rubric row (its `match` terms: `Prefill`, `预填充`), and,
when the kit has a knowledge base (prompts/<kit>/knowledge.toml), each of its items that names
no rubric concept, its `zh` and `en` wordings paired. Rows are paired by the rubric's rows
(other rows by their stage text); a cell pair agrees when both cells name the same concepts.
Two cells that name no concept agree when their text is the same; if the notes are in
different languages such cells are `unmatched` (words cannot be compared across languages) and
count neither way. Per concept, the comparison says in which rows each note names it.

Column labels follow `lang`, by default the language of note A's header.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from notes_cli.notes.check import NoteCheck
from notes_cli.notes.passages import without_citations
from notes_cli.notes.terms import contains_term, has_cjk, normalize

CellVerdict = Literal["agree", "differ", "only-a", "only-b", "empty", "unmatched"]


@dataclass(frozen=True)
class Concept:
    key: str
    label: str  # in the comparison's language
    terms: tuple[str, ...]  # every spelling, zh and en


@dataclass(frozen=True)
class ConceptAgreement:
    label: str
    rows_a: tuple[str, ...]  # the rows of A that name it
    rows_b: tuple[str, ...]

    @property
    def agrees(self) -> bool:
        return self.rows_a == self.rows_b


@dataclass(frozen=True)
class CellComparison:
    column: str  # the kit column key
    label: str
    verdict: CellVerdict
    a: str
    b: str
    only_a: tuple[str, ...] = ()  # concept labels only A's cell mentions
    only_b: tuple[str, ...] = ()
    concepts_a: tuple[str, ...] = ()  # every concept each cell names
    concepts_b: tuple[str, ...] = ()


@dataclass(frozen=True)
class RowComparison:
    label: str
    cells: tuple[CellComparison, ...]

    @property
    def agrees(self) -> bool:
        return all(c.verdict in ("agree", "empty", "unmatched") for c in self.cells)


@dataclass(frozen=True)
class Comparison:
    a_name: str
    b_name: str
    rows: tuple[RowComparison, ...]
    lang: str = "en"
    concepts: tuple[ConceptAgreement, ...] = ()

    @property
    def agreeing_cells(self) -> int:
        return sum(1 for r in self.rows for c in r.cells if c.verdict == "agree")

    @property
    def differing_cells(self) -> int:
        neutral = ("agree", "empty", "unmatched")
        return sum(1 for r in self.rows for c in r.cells if c.verdict not in neutral)

    def to_json(self) -> dict[str, Any]:
        return {
            "schema": "pdnotes.notes.compare/1",
            "a": self.a_name,
            "b": self.b_name,
            "lang": self.lang,
            "agree": self.agreeing_cells,
            "differ": self.differing_cells,
            "unmatched": sum(1 for r in self.rows for c in r.cells if c.verdict == "unmatched"),
            "concepts": [
                {"concept": c.label, "agrees": c.agrees, "a": list(c.rows_a), "b": list(c.rows_b)}
                for c in self.concepts
            ],
            "rows": [
                {
                    "row": r.label,
                    "agrees": r.agrees,
                    "cells": [
                        {
                            "column": c.column,
                            "label": c.label,
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


def note_language(check: NoteCheck) -> str:
    """zh when the note's header is written in Chinese, else en."""
    table = check.extraction.table
    return "zh" if table is not None and any(has_cjk(h) for h in table.header) else "en"


def compare(a: NoteCheck, b: NoteCheck, lang: str | None, names: tuple[str, str]) -> Comparison:
    kit = a.kit
    lang = lang or note_language(a)
    vocabulary = kit_vocabulary(kit, lang)
    same_language = note_language(a) == note_language(b)
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
        cells = _cells(kit, lang, cells_a, cells_b, vocabulary, same_language)
        rows.append(RowComparison(spec.label, cells))
    rows.extend(_other_rows(a, b, kit, lang, paired_a, paired_b, vocabulary, same_language))
    return Comparison(names[0], names[1], tuple(rows), lang, _agreement(rows, vocabulary))


def _agreement(
    rows: list[RowComparison], vocabulary: list[Concept]
) -> tuple[ConceptAgreement, ...]:
    """Per concept either note names: the rows of each that name it."""
    found = []
    for concept in vocabulary:
        in_a = tuple(r.label for r in rows if any(concept.label in c.concepts_a for c in r.cells))
        in_b = tuple(r.label for r in rows if any(concept.label in c.concepts_b for c in r.cells))
        if in_a or in_b:
            found.append(ConceptAgreement(concept.label, in_a, in_b))
    return tuple(found)


def kit_vocabulary(kit: Any, lang: str) -> list[Concept]:
    """The kit's concepts with all their spellings (see the module docstring), labelled in
    `lang`: in Chinese a concept is shown by its first Chinese spelling."""
    found: list[Concept] = []
    seen: set[str] = set()

    def add(key: str, label: str, terms: tuple[str, ...]) -> None:
        spellings = tuple(t for t in dict.fromkeys(terms) if t.strip())
        if key in seen or not spellings:
            return
        seen.add(key)
        chinese = next((t for t in spellings if has_cjk(t)), None)
        shown = chinese if lang == "zh" and chinese and not has_cjk(label) else label
        found.append(Concept(key, shown, spellings))

    for row in kit.rubric.rows:
        add(f"row:{row.key}", row.label, (row.label, *row.match))
        for concept in row.concepts:
            add(concept.key, concept.label, (concept.label, *concept.synonyms))
    rubric_terms = [t for c in found for t in c.terms]
    for number, (zh, en) in enumerate(_knowledge_pairs(kit.path)):
        if not any(contains_term(en, t) or contains_term(zh, t) for t in rubric_terms):
            add(f"knowledge:{number}", zh if lang == "zh" else en, (en, zh))
    return found


def _knowledge_pairs(kit_path: Path) -> list[tuple[str, str]]:
    """(zh, en) wordings of every item of the kit's knowledge base, paired by position."""
    import tomllib

    path = kit_path / "knowledge.toml"
    if not path.is_file():
        return []
    try:
        with path.open("rb") as handle:
            rows = tomllib.load(handle).get("rows", [])
    except (OSError, tomllib.TOMLDecodeError):
        return []
    pairs: list[tuple[str, str]] = []
    for row in rows:
        zh, en = row.get("zh", {}), row.get("en", {})
        for key, items in en.items():
            pairs.extend(zip(zh.get(key, []), items, strict=False))
    return pairs


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
    vocabulary: list[Concept],
    same_language: bool,
) -> tuple[CellComparison, ...]:
    found = []
    for column in kit.columns:
        text_a = (a or {}).get(column.key, "")
        text_b = (b or {}).get(column.key, "")
        cell = _cell(column.key, column.label(lang), text_a, text_b, a, b, vocabulary,
                     same_language)  # fmt: skip
        found.append(cell)
    return tuple(found)


def _cell(
    key: str,
    label: str,
    text_a: str,
    text_b: str,
    row_a: dict[str, str] | None,
    row_b: dict[str, str] | None,
    vocabulary: list[Concept],
    same_language: bool,
) -> CellComparison:
    in_a = _named(text_a, vocabulary) if row_a is not None else ()
    in_b = _named(text_b, vocabulary) if row_b is not None else ()
    if row_a is None or row_b is None:
        side: CellVerdict = "only-b" if row_a is None else "only-a"
        return CellComparison(key, label, side, text_a, text_b, concepts_a=in_a, concepts_b=in_b)
    if not text_a.strip() and not text_b.strip():
        return CellComparison(key, label, "empty", text_a, text_b)
    only_a = tuple(n for n in in_a if n not in in_b)
    only_b = tuple(n for n in in_b if n not in in_a)
    if not in_a and not in_b:  # no concept to compare by: the text itself, in one language
        verdict: CellVerdict = "agree" if _plain(text_a) == _plain(text_b) else "differ"
        if verdict == "differ" and not same_language:
            verdict = "unmatched"
    else:
        verdict = "differ" if only_a or only_b else "agree"
    return CellComparison(key, label, verdict, text_a, text_b, only_a, only_b, in_a, in_b)


def _named(text: str, vocabulary: list[Concept]) -> tuple[str, ...]:
    """The labels of the concepts `text` names, in vocabulary order."""
    plain = without_citations(text)
    return tuple(c.label for c in vocabulary if any(contains_term(plain, t) for t in c.terms))


def _plain(text: str) -> str:
    return "".join(normalize(without_citations(text)).split())


def _other_rows(
    a: NoteCheck,
    b: NoteCheck,
    kit: Any,
    lang: str,
    paired_a: set[int],
    paired_b: set[int],
    vocabulary: list[Concept],
    same_language: bool,
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
            RowComparison(
                without_citations(label),
                _cells(kit, lang, cells_a, cells_b, vocabulary, same_language),
            )
        )
    return found
