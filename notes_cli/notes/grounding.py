"""Is each fact in the note from the user's reading? Checked per cited claim and per concept.

Every item of every cell that carries a citation is a **cited claim**; it **holds** when the
page or source it names says it (notes/claims.py `holds`: the claim's kit terms as spelled, and
60 % of its content words, on that page), and is **misplaced** otherwise — with the pages that
do hold it named, if any. An item without a citation (outside the stage column, which names the
row) is listed as **from the model**. A source given but cited nowhere is reported.

Then, per required concept:

For every concept the rubric found in a row, the cell lines that state it are read for their
citations (`[S1 p.3]`), and the sources are searched for the concept (any of its synonyms,
with the rubric's matching rules):

- **cited** — a passage the line cites states it;
- **uncited** — some passage states it, but the line cites none that does (no citation, or a
  citation to a page that does not say it);
- **unsupported** — no passage states it: from the model, not from your reading.

`notes check --source FILE... --grounded` fails a note unless every concept is cited and every
cited claim holds; `notes generate` with sources asks the model to repair a claim that does not
hold and, when it still does not, writes the note without that citation (and says so).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from notes_cli.notes.claims import (
    TOLERANCE,
    Claim,
    Place,
    claims_of,
    content_words,
    key_terms_in,
    place,
)
from notes_cli.notes.passages import Passage, Ref, citations, without_citations
from notes_cli.notes.terms import contains_term

GroundStatus = Literal["cited", "uncited", "unsupported"]
MAX_CLAIMS = 1000  # a note has dozens of items; an answer with more is judged this far
ClaimStatus = Literal["holds", "misplaced", "from-model"]
_MAX_SHOWN = 3


@dataclass(frozen=True)
class ConceptGrounding:
    row: str
    concept: str
    status: GroundStatus
    cited: tuple[str, ...]  # labels the stating lines cite
    supported_by: tuple[str, ...]  # labels of passages that state the concept (first few)

    @property
    def detail(self) -> str:
        said = ", ".join(self.supported_by)
        if self.status == "cited":
            return f"cited {', '.join(self.cited)}, which says it"
        if self.status == "uncited" and self.cited:
            return f"cites {', '.join(self.cited)}, which does not say it; {said} does"
        if self.status == "uncited":
            return f"not cited; {said} says it"
        cites = f" (cites {', '.join(self.cited)})" if self.cited else ""
        return f"from the model, not from your reading{cites}"


@dataclass(frozen=True)
class ClaimGrounding:
    row: str  # the row's stage cell, without citations
    column: str  # the kit column key
    claim: str
    status: ClaimStatus
    cited: tuple[str, ...]  # the labels it cites
    held_by: tuple[str, ...]  # labels of passages that hold it (first few)

    @property
    def detail(self) -> str:
        where = ", ".join(self.held_by)
        if self.status == "holds":
            return f"{', '.join(self.cited)} says it"
        if self.status == "misplaced":
            said = f"; {where} does" if where else "; no source says it"
            return f"{', '.join(self.cited)} does not say it{said}"
        return f"no citation: from the model{f' ({where} says it)' if where else ''}"


@dataclass(frozen=True)
class Grounding:
    concepts: tuple[ConceptGrounding, ...]
    sources: tuple[str, ...]
    claims: tuple[ClaimGrounding, ...] = ()
    unjudged: int = 0  # items past MAX_CLAIMS

    @property
    def ok(self) -> bool:
        judged = not self.misplaced and not self.unjudged
        return judged and all(c.status == "cited" for c in self.concepts)

    @property
    def misplaced(self) -> tuple[ClaimGrounding, ...]:
        return tuple(c for c in self.claims if c.status == "misplaced")

    @property
    def from_model(self) -> tuple[ClaimGrounding, ...]:
        return tuple(c for c in self.claims if c.status == "from-model")

    @property
    def never_cited(self) -> tuple[str, ...]:
        """Labels (`S2`) of sources no claim cites."""
        cited = {label.split()[0] for c in self.claims for label in c.cited}
        return tuple(f"S{n}" for n in range(1, len(self.sources) + 1) if f"S{n}" not in cited)

    def count(self, status: GroundStatus) -> int:
        return sum(1 for c in self.concepts if c.status == status)

    def to_json(self) -> dict[str, Any]:
        return {
            "sources": [f"S{n} {name}" for n, name in enumerate(self.sources, start=1)],
            "ok": self.ok,
            "cited": self.count("cited"),
            "uncited": self.count("uncited"),
            "unsupported": self.count("unsupported"),
            "tolerance": TOLERANCE,
            "claims_cited": sum(1 for c in self.claims if c.status != "from-model"),
            "misplaced": len(self.misplaced),
            "from_model": len(self.from_model),
            "never_cited": list(self.never_cited),
            "unjudged": self.unjudged,
            "claims": [
                {
                    "row": c.row,
                    "column": c.column,
                    "claim": c.claim,
                    "status": c.status,
                    "cited": list(c.cited),
                    "held_by": list(c.held_by),
                    "detail": c.detail,
                }
                for c in self.claims
            ],
            "concepts": [
                {
                    "row": c.row,
                    "concept": c.concept,
                    "status": c.status,
                    "cited": list(c.cited),
                    "supported_by": list(c.supported_by),
                    "detail": c.detail,
                }
                for c in self.concepts
            ],
        }


def ground(check: Any, passages: list[Passage], sources: tuple[str, ...]) -> Grounding:
    """The grounding of every concept the rubric found in `check`'s table."""
    table = check.extraction.table
    found: list[ConceptGrounding] = []
    if table is None:
        return Grounding((), sources)
    passages = whole_pages(passages)
    claims, unjudged = ground_claims(check, passages)
    for spec, row in zip(check.kit.rubric.rows, check.rubric.rows, strict=True):
        if not row.required or not row.present:
            continue
        synonyms = {c.key: c.synonyms for c in spec.concepts}
        cells = [cell for i in row.table_rows for cell in table.rows[i]]
        for concept in row.concepts:
            if not concept.found:
                continue
            terms = synonyms.get(concept.key, ()) + ((concept.matched,) if concept.matched else ())
            found.append(_ground_one(row.label, concept.label, terms, cells, passages))
    return Grounding(tuple(found), sources, claims, unjudged)


def ground_claims(check: Any, passages: list[Passage]) -> tuple[tuple[ClaimGrounding, ...], int]:
    """Every item of every cell of `check`'s table (the first `MAX_CLAIMS`): does the place it
    cites hold it? Also returns how many items were left unjudged over the bound."""
    table = check.extraction.table
    if table is None:
        return (), 0
    kit = check.kit
    terms = kit_terms(kit)
    stage = kit.columns[0].key
    pages = [place(p.label, p.text, terms) for p in passages]
    whole = {ref: place(ref.label, text, terms) for ref, text in _texts_by_ref(passages).items()}
    found: list[ClaimGrounding] = []
    unjudged = 0
    for row in table.rows:
        name = " ".join(without_citations(table.stage_cell(row, stage)).split())
        for column in kit.columns:
            for claim in claims_of(table.cell(row, column.key)):
                if not claim.refs and column.key == stage:
                    continue  # the row's name, not a claim
                if len(found) >= MAX_CLAIMS:
                    unjudged += 1
                    continue
                found.append(_judge(claim, name, column.key, pages, whole, terms))
    return tuple(found), unjudged


def _judge(
    claim: Claim,
    row: str,
    column: str,
    pages: list[Place],
    whole: dict[Ref, Place],
    terms: tuple[tuple[str, ...], ...],
) -> ClaimGrounding:
    words = content_words(claim.text)
    keys = frozenset(key_terms_in(claim.text, terms))
    held = tuple(dict.fromkeys(p.label for p in pages if p.holds(words, keys)))[:_MAX_SHOWN]
    status: ClaimStatus = "from-model"
    if claim.refs:
        status = "holds" if _held(words, keys, claim.refs, whole) else "misplaced"
    labels = tuple(r.label for r in claim.refs)
    return ClaimGrounding(row, column, claim.text, status, labels, held)


def kit_terms(kit: Any) -> tuple[tuple[str, ...], ...]:
    """The terms a claim must keep as spelled on its page (or in its other language): every
    rubric concept's synonyms, one tuple per concept."""
    return tuple(c.synonyms for row in kit.rubric.rows for c in row.concepts)


def whole_pages(passages: list[Passage]) -> list[Passage]:
    """One passage per page (per source without pages): the verdict does not depend on how
    finely `generate` cut the reading for its prompt (its --max-source-tokens) or `check` did."""
    names = {p.source: p.name for p in passages}
    paged = {p.source for p in passages if p.page is not None}
    return [
        Passage(ref.source, ref.page, text, names[ref.source])
        for ref, text in _texts_by_ref(passages).items()
        if ref.page is not None or ref.source not in paged
    ]


def _texts_by_ref(passages: list[Passage]) -> dict[Ref, str]:
    """The text each possible reference names: a page, or a whole source."""
    texts: dict[Ref, list[str]] = {}
    for passage in passages:
        texts.setdefault(passage.ref, []).append(passage.text)
        if passage.page is not None:
            texts.setdefault(Ref(passage.source, None), []).append(passage.text)
    return {ref: "\n\n".join(parts) for ref, parts in texts.items()}


def _held(
    words: frozenset[str], keys: frozenset[str], refs: tuple[Ref, ...], whole: dict[Ref, Place]
) -> bool:
    """All the places cited together hold the claim, and each of them holds some of it: a
    citation that adds a wrong page to a right one is still wrong. A page or source that does
    not exist holds nothing."""
    places = [whole.get(ref) for ref in refs]
    if any(p is None for p in places):
        return False
    cited = [p for p in places if p is not None]
    if any(p.own(words, keys) and not p.own(words, keys) & p.words for p in cited):
        return False
    spelled = frozenset().union(*(p.terms for p in cited))
    translated = frozenset().union(*(p.translated for p in cited)) - spelled
    together = Place("", frozenset().union(*(p.words for p in cited)), spelled, translated)
    return together.holds(words, keys)


def _ground_one(
    row: str, concept: str, terms: tuple[str, ...], cells: list[str], passages: list[Passage]
) -> ConceptGrounding:
    lines = [line for cell in cells for line in cell.split("\n") if _states(line, terms)]
    cited: list[Ref] = []
    for line in lines:
        cited.extend(r for r in citations(line) if r not in cited)
    supporting = [p for p in passages if _states(p.text, terms)]
    labels = tuple(dict.fromkeys(p.label for p in supporting))[:_MAX_SHOWN]
    cited_labels = tuple(r.label for r in cited)
    if any(ref.covers(p) for ref in cited for p in supporting):
        backing = tuple(
            dict.fromkeys(p.label for p in supporting if any(r.covers(p) for r in cited))
        )
        return ConceptGrounding(row, concept, "cited", cited_labels, backing[:_MAX_SHOWN])
    status: GroundStatus = "uncited" if supporting else "unsupported"
    return ConceptGrounding(row, concept, status, cited_labels, labels)


def _states(text: str, terms: tuple[str, ...]) -> bool:
    return any(contains_term(text, term) for term in terms)
