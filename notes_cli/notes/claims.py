"""Cited claims in a note's cells, and whether the passage a claim cites really holds it.

A claim is one item of a cell: the cell split at line breaks (`<br>`), semicolons and bullets.
Its citations are the markers inside it (`[S1 p.3]`), or standing alone right after it (`The KV
cache moves over RDMA; [S2]` is one claim citing S2); a claim without any is the model's own.

`holds(claim, text, concepts)` is the one test of "this passage says that", shared by
`notes check --grounded`, `notes generate` and the bundled engine (which cites only where the
test passes). `concepts` are the kit's rubric concepts, each as its synonyms. A passage holds a
claim when

1. every key term the claim names (a concept's synonym, matched as in rubric.py: case, width,
   spaces, hyphens and brackets ignored, so "(TP) interconnect" is "TP interconnect") appears in
   the passage as the claim spells it, so a cell about "eager mode" cannot cite a page that
   only mentions "graph mode"; a page that names the concept only in the other language (the
   claim says "tensor parallel", a Chinese page only 张量并行) holds the term too; and
2. at least `TOLERANCE` (60 %) of the claim's content words appear in the passage: Latin
   words of three or more letters (stop words left out, a plural `s` ignored), numbers, and
   pairs of adjacent CJK characters; the words of a key term the page holds in the other
   language are not counted. A paraphrase passes; a different fact does not.

Every pattern here is a single character class or a fixed word: linear on any model output.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache

from notes_cli.notes.passages import Ref, citation_marker, citations, without_citations
from notes_cli.notes.terms import contains_term, has_cjk

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


Concepts = Iterable[Sequence[str]]  # the kit's rubric concepts, each as its synonyms


@dataclass(frozen=True)
class Claim:
    text: str  # the item without its citation markers
    refs: tuple[Ref, ...]


def _items(parts: list[str]) -> list[list[int]]:
    """The items of a cell split with its breaks kept (`_ITEM_BREAK_KEPT`): each as the indexes
    of its parts. A part that is only citation markers belongs to the item before it."""
    items: list[list[int]] = []
    for index in range(0, len(parts), 2):  # even places are items, odd ones the breaks
        if without_citations(parts[index]).strip(_TRIM):
            items.append([index])
        elif items and citations(parts[index]):
            items[-1].append(index)
    return items


def claims_of(cell: str) -> list[Claim]:
    """The items of one cell, each with the references it cites (empty: uncited)."""
    parts = _ITEM_BREAK_KEPT.split(cell)
    found: list[Claim] = []
    for item in _items(parts):
        text = without_citations(parts[item[0]]).strip(_TRIM)
        refs = [ref for index in item for ref in citations(parts[index])]
        found.append(Claim(text, tuple(dict.fromkeys(refs))))
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


def key_terms_in(claim: str, concepts: Concepts) -> tuple[str, ...]:
    """The kit terms `claim` names, as the kit spells them."""
    terms = dict.fromkeys(t for group in concepts for t in group)
    return tuple(t for t in terms if contains_term(claim, t))


def holds(claim: str, text: str, concepts: Concepts = ()) -> bool:
    """Does `text` (a page, a section, a fact) say what `claim` says? See the module docstring."""
    keys = frozenset(key_terms_in(claim, concepts))
    named = [group for group in concepts if keys.intersection(group)]
    return place("", text, named).holds(content_words(claim), keys)


def enough_words(claim: frozenset[str], place: frozenset[str]) -> bool:
    """Rule 2: the place holds at least `TOLERANCE` of the claim's content words."""
    return not claim or len(claim & place) >= TOLERANCE * len(claim)


@dataclass(frozen=True)
class Place:
    """A page or source prepared once for many claims: its content words, the kit terms it
    spells, and the kit terms it names only in the other language."""

    label: str
    words: frozenset[str]
    terms: frozenset[str]
    translated: frozenset[str] = frozenset()

    def holds(self, words: frozenset[str], terms: frozenset[str]) -> bool:
        if not terms <= self.terms | self.translated:
            return False
        return enough_words(self.own(words, terms), self.words)

    def own(self, words: frozenset[str], terms: frozenset[str]) -> frozenset[str]:
        """The claim's `words` this place must hold word for word: without the words of the
        key terms it says in the other language."""
        elsewhere = terms - self.terms
        return words.difference(*(content_words(t) for t in elsewhere))


def place(label: str, text: str, concepts: Concepts) -> Place:
    groups = [tuple(group) for group in concepts]
    spelled = frozenset(t for group in groups for t in group if contains_term(text, t))
    translated: set[str] = set()
    for group in groups:
        for term in group:
            mine = [t for t in group if has_cjk(t) == has_cjk(term)]
            other = [t for t in group if has_cjk(t) != has_cjk(term)]
            if spelled.isdisjoint(mine) and not spelled.isdisjoint(other):
                translated.add(term)
    return Place(label, content_words(text), spelled, frozenset(translated))


def uncite(cell: str, wrong: Collection[str]) -> str:
    """`cell` with the citation markers of every item whose text is in `wrong` removed; the
    item stays."""
    parts = _ITEM_BREAK_KEPT.split(cell)
    for item in _items(parts):
        if without_citations(parts[item[0]]).strip(_TRIM) in wrong:
            parts[item[0]] = citation_marker().sub("", parts[item[0]]).rstrip()
            for index in item[1:]:  # markers standing alone go with the break before them
                parts[index - 1] = parts[index] = ""
    return "".join(parts)
