"""Is each fact in the note from the user's reading? Checked per required concept.

For every concept the rubric found in a row, the cell lines that state it are read for their
citations (`[S1 p.3]`), and the sources are searched for the concept (any of its synonyms,
with the rubric's matching rules):

- **cited** — a passage the line cites states it;
- **uncited** — some passage states it, but the line cites none that does (no citation, or a
  citation to a page that does not say it);
- **unsupported** — no passage states it: from the model, not from your reading.

`notes check --source FILE... --grounded` fails a note unless every concept is cited.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from notes_cli.notes.passages import Passage, Ref, citations
from notes_cli.notes.terms import contains_term

GroundStatus = Literal["cited", "uncited", "unsupported"]
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
class Grounding:
    concepts: tuple[ConceptGrounding, ...]
    sources: tuple[str, ...]

    @property
    def ok(self) -> bool:
        return all(c.status == "cited" for c in self.concepts)

    def count(self, status: GroundStatus) -> int:
        return sum(1 for c in self.concepts if c.status == status)

    def to_json(self) -> dict[str, Any]:
        return {
            "sources": [f"S{n} {name}" for n, name in enumerate(self.sources, start=1)],
            "ok": self.ok,
            "cited": self.count("cited"),
            "uncited": self.count("uncited"),
            "unsupported": self.count("unsupported"),
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
    return Grounding(tuple(found), sources)


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
