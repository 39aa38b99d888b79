"""Flashcards from a checked note: one card per concept the rubric found in a cell, both
directions, labelled in Chinese and English; exported as an Anki deck (genanki) or CSV.

A card's question is where the fact sits (`Decode · Bottleneck 瓶颈`), its answer the concept
and the cell line that states it, with the line's source citations kept apart. The reverse card
asks the other way: given the concept, which stage and column? Anki model and deck ids are
fixed per kit, and note ids (guids) come from the content, so re-importing an updated deck
updates the cards instead of duplicating them.
"""

from __future__ import annotations

import csv
import hashlib
import io
from dataclasses import dataclass

from notes_cli.notes.check import NoteCheck
from notes_cli.notes.passages import citations, without_citations
from notes_cli.notes.terms import contains_term, has_cjk

CSV_HEADER = ("direction", "front", "back", "stage", "column", "concept", "sources")


@dataclass(frozen=True)
class Card:
    stage: str  # the row's stage cell (citations removed)
    column: str  # "Bottleneck 瓶颈": the column in both languages
    concept: str  # "memory-bound（访存密集）": the concept, with its Chinese name when it has one
    statement: str  # the cell line that states it (citations removed)
    sources: tuple[str, ...]  # the line's citations, e.g. ("S1 p.3",)

    @property
    def question(self) -> str:
        return f"{self.stage} · {self.column}"

    @property
    def answer(self) -> str:
        return f"{self.concept}: {self.statement}"


def cards_from(check: NoteCheck) -> list[Card]:
    """One card per (row, concept) the rubric found, in table order."""
    table = check.extraction.table
    if table is None:
        return []
    kit = check.kit
    stage_key = kit.columns[0].key
    found: list[Card] = []
    for spec, row in zip(kit.rubric.rows, check.rubric.rows, strict=True):
        if not row.present:
            continue
        synonyms = {c.key: c.synonyms for c in spec.concepts}
        cells = table.rows[row.table_rows[0]]
        stage = without_citations(table.stage_cell(cells, stage_key)) or row.label
        for concept in row.concepts:
            if not concept.found:
                continue
            terms = synonyms.get(concept.key, ()) + ((concept.matched or "",))
            located = _locate(table, cells, kit, terms)
            if located is None:
                continue
            column, line = located
            found.append(
                Card(
                    stage=stage,
                    column=column,
                    concept=_bilingual(concept.label, synonyms.get(concept.key, ())),
                    statement=without_citations(line),
                    sources=tuple(r.label for r in citations(line)),
                )
            )
    return found


def _locate(table: object, cells: tuple[str, ...], kit: object, terms: tuple[str, ...]) -> (
    tuple[str, str] | None
):  # fmt: skip
    """(column in both languages, the line) of the first cell line stating one of `terms`;
    the stage column is searched last (it names the row, rarely the fact)."""
    columns = list(kit.columns)  # type: ignore[attr-defined]
    for column in columns[1:] + columns[:1]:
        text = table.cell(cells, column.key)  # type: ignore[attr-defined]
        for line in text.split("\n"):
            if any(t and contains_term(line, t) for t in terms):
                label = column.en if column.en == column.zh else f"{column.en} {column.zh}"
                return label, line.strip().lstrip("•·- ").strip()
    return None


def _bilingual(label: str, synonyms: tuple[str, ...]) -> str:
    if has_cjk(label):
        return label
    chinese = next((s for s in synonyms if has_cjk(s)), None)
    return f"{label}（{chinese}）" if chinese else label


def to_csv(cards: list[Card]) -> str:
    """Both directions, one line each: `direction,front,back,stage,column,concept,sources`."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(CSV_HEADER)
    for card in cards:
        sources = "; ".join(card.sources)
        common = (card.stage, card.column, card.concept, sources)
        writer.writerow(("forward", card.question, card.answer, *common))
        writer.writerow(("reverse", card.concept, f"{card.question}: {card.statement}", *common))
    return buffer.getvalue()


def to_apkg(cards: list[Card], *, kit: str, title: str) -> bytes:
    """An Anki package (.apkg) holding one deck with a note per card and two card templates
    (forward and reverse)."""
    import genanki

    model = genanki.Model(
        _stable_id(f"pdnotes-model-{kit}"),
        f"pdnotes {kit} (both directions)",
        fields=[{"name": n} for n in ("Question", "Concept", "Statement", "Sources")],
        templates=[
            {
                "name": "Where → what",
                "qfmt": "{{Question}}",
                "afmt": "{{FrontSide}}<hr id=answer><b>{{Concept}}</b><br>{{Statement}}"
                "<br><small>{{Sources}}</small>",
            },
            {
                "name": "What → where",
                "qfmt": "{{Concept}}",
                "afmt": "{{FrontSide}}<hr id=answer><b>{{Question}}</b><br>{{Statement}}"
                "<br><small>{{Sources}}</small>",
            },
        ],
        css=".card { font-family: sans-serif; font-size: 20px; text-align: left; }",
    )
    deck = genanki.Deck(_stable_id(f"pdnotes-deck-{kit}"), title)
    for card in cards:
        fields = [card.question, card.concept, card.statement, "; ".join(card.sources)]
        deck.add_note(
            genanki.Note(
                model=model,
                fields=[_html(f) for f in fields],
                guid=genanki.guid_for(kit, card.question, card.concept),
                tags=[f"pdnotes::{kit}"],
            )
        )
    buffer = io.BytesIO()
    genanki.Package(deck).write_to_file(buffer)
    return buffer.getvalue()


def _stable_id(name: str) -> int:
    """Anki ids are 31-bit-ish integers; the same name always gives the same id."""
    return int(hashlib.sha256(name.encode()).hexdigest()[:8], 16) % (1 << 30) + (1 << 30)


def _html(text: str) -> str:
    import html

    return html.escape(text).replace("\n", "<br>")
