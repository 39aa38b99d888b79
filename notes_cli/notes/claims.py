"""Cited claims in a note's cells, and whether the passage a claim cites really holds it.

A claim is one item of a cell: the cell split at line breaks (`<br>`), semicolons and bullets.
Its citations are the markers inside it (`[S1 p.3]`); a claim without any is the model's own.

`holds(claim, text, key_terms)` is the one test of "this passage says that", shared by
`notes check --grounded`, `notes generate` and the bundled engine (which cites only where the
test passes). A passage holds a claim when

1. every key term the claim names (the kit's rubric concept terms, matched as in rubric.py:
   case, width, spaces and hyphens ignored) appears in the passage as the claim spells it, so
   a cell about "eager mode" cannot cite a page that only mentions "graph mode"; and
2. at least `TOLERANCE` (60 %) of the claim's content words appear in the passage: Latin
   words of three or more letters (stop words left out, a plural `s` ignored), numbers, and
   pairs of adjacent CJK characters. A paraphrase passes; a different fact does not.

Every pattern here is a single character class or a fixed word: linear on any model output.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Collection, Iterable
from dataclasses import dataclass
from functools import lru_cache

from notes_cli.notes.passages import Ref, citation_marker, citations, without_citations
from notes_cli.notes.terms import contains_term

TOLERANCE = 0.6
_ITEM_BREAK = re.compile(r"\n|；|;\s|•")
_ITEM_BREAK_KEPT = re.compile(r"(\n|；|;\s|•)")
_WORD = re.compile(r"[a-z0-9]+")
_CJK_RUN = re.compile(r"[\u3400-\u9fff]+")
_TRIM = " \t,.;:，。；：-–—•*"
_STOPWORDS = frozenset(
    ("the", "and", "for", "from", "with", "that", "this", "into", "must", "are", "can", "its",
     "their", "each", "between", "over", "under", "after", "before", "than", "then", "also",
     "only", "per", "via", "use", "uses", "used", "one", "all", "has", "have", "was", "were",
     "not", "but", "which", "when", "where", "they", "them", "there", "here", "is", "be")
)  # fmt: skip


@dataclass(frozen=True)
class Claim:
    text: str  # the item without its citation markers
    refs: tuple[Ref, ...]


def claims_of(cell: str) -> list[Claim]:
    """The items of one cell, each with the references it cites (empty: uncited)."""
    found: list[Claim] = []
    for item in _ITEM_BREAK.split(cell):
        text = without_citations(item).strip(_TRIM)
        if text:
            found.append(Claim(text, tuple(citations(item))))
    return found


@lru_cache(maxsize=1024)
def content_words(text: str) -> frozenset[str]:
    """The words a claim rests on (see the module docstring)."""
    plain = unicodedata.normalize("NFKC", text).lower()
    words: set[str] = set()
    for word in _WORD.findall(plain):
        if word.isdigit() or (len(word) >= 3 and word not in _STOPWORDS):
            words.add(word[:-1] if len(word) > 3 and word.endswith("s") else word)
    for run in _CJK_RUN.findall(plain):
        words.update(run[i : i + 2] for i in range(max(1, len(run) - 1)))
    return frozenset(words)


def key_terms_in(claim: str, terms: Iterable[str]) -> tuple[str, ...]:
    """The kit terms `claim` names, as the kit spells them."""
    return tuple(t for t in dict.fromkeys(terms) if contains_term(claim, t))


def holds(claim: str, text: str, key_terms: Iterable[str] = ()) -> bool:
    """Does `text` (a page, a section, a fact) say what `claim` says? See the module docstring."""
    if not all(contains_term(text, term) for term in key_terms_in(claim, key_terms)):
        return False
    return enough_words(content_words(claim), content_words(text))


def enough_words(claim: frozenset[str], place: frozenset[str]) -> bool:
    """Rule 2: the place holds at least `TOLERANCE` of the claim's content words."""
    return not claim or len(claim & place) >= TOLERANCE * len(claim)


@dataclass(frozen=True)
class Place:
    """A page or source prepared once for many claims: its content words and kit terms."""

    label: str
    words: frozenset[str]
    terms: frozenset[str]

    def holds(self, words: frozenset[str], terms: frozenset[str]) -> bool:
        return terms <= self.terms and enough_words(words, self.words)


def place(label: str, text: str, kit_terms: Iterable[str]) -> Place:
    found = frozenset(t for t in kit_terms if contains_term(text, t))
    return Place(label, content_words(text), found)


def uncite(cell: str, wrong: Collection[str]) -> str:
    """`cell` with the citation markers of every item whose text is in `wrong` removed; the
    item stays."""
    parts = _ITEM_BREAK_KEPT.split(cell)
    for index in range(0, len(parts), 2):  # even places are items, odd ones the breaks
        text = without_citations(parts[index]).strip(_TRIM)
        if text in wrong:
            parts[index] = citation_marker().sub("", parts[index]).rstrip()
    return "".join(parts)
