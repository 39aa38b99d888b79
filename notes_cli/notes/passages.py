"""Sources cut into labelled passages, the unit a note cites: `[S1 p.3]` is page 3 of the
first `--source`, `[S2]` the second source when it has no pages.

Passages keep to a token size (split at paragraph, then sentence, breaks) so a long document
can be read in map steps, and a cell's citation can be checked against the text it names.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from notes_cli.notes.documents import Document
from notes_cli.notes.tokens import estimate_tokens

DEFAULT_PASSAGE_TOKENS = 1200
# `[S1 p.3]`, `[S2]`, `[S1 p.3; S2 p.1]` (several in one bracket), full-width brackets too.
_CITATION = re.compile(r"[\[【]((?:S\d{1,3}(?:\s*p\.?\s*\d{1,5})?[\s;,，；]*){1,12})[\]】]")
_ONE_REF = re.compile(r"S(\d{1,3})(?:\s*p\.?\s*(\d{1,5}))?")
_SENTENCE_END = re.compile(r"(?<=[.!?。！？])\s+|(?<=[。！？])")


@dataclass(frozen=True)
class Ref:
    source: int  # 1-based, the order of --source
    page: int | None

    @property
    def label(self) -> str:
        return f"S{self.source} p.{self.page}" if self.page is not None else f"S{self.source}"

    def covers(self, passage: Passage) -> bool:
        """A page reference names that page; a bare `S2` names the whole source."""
        return passage.source == self.source and (self.page is None or passage.page == self.page)


@dataclass(frozen=True)
class Passage:
    source: int
    page: int | None
    text: str
    name: str  # the source's path or URL

    @property
    def ref(self) -> Ref:
        return Ref(self.source, self.page)

    @property
    def label(self) -> str:
        return self.ref.label

    @property
    def tokens(self) -> int:
        return estimate_tokens(self.text)


def split_passages(
    documents: Iterable[Document], max_tokens: int = DEFAULT_PASSAGE_TOKENS
) -> list[Passage]:
    """Every source's text as passages of at most `max_tokens` (estimated), in order: pages of a
    PDF stay apart (a long page is split further), other documents split at paragraphs."""
    passages: list[Passage] = []
    for index, document in enumerate(documents, start=1):
        for page in document.pages:
            for piece in _pieces(page.text, max_tokens):
                passages.append(Passage(index, page.number, piece, document.name))
    return passages


def _pieces(text: str, max_tokens: int) -> list[str]:
    """`text` in consecutive pieces within `max_tokens`, broken at paragraphs, then sentences,
    then (for a sentence longer than the whole budget) characters."""
    units: list[str] = []
    for paragraph in re.split(r"\n\s*\n", text.strip()):
        if estimate_tokens(paragraph) <= max_tokens:
            units.append(paragraph)
            continue
        for sentence in _SENTENCE_END.split(paragraph):
            if estimate_tokens(sentence) <= max_tokens:
                if sentence.strip():
                    units.append(sentence)
                continue
            units.extend(piece for piece in _cut(sentence, max_tokens) if piece.strip())
    pieces: list[str] = []
    current: list[str] = []
    size = 0
    for unit in units:
        tokens = estimate_tokens(unit) + 1
        if current and size + tokens > max_tokens:
            pieces.append("\n\n".join(current))
            current, size = [], 0
        current.append(unit)
        size += tokens
    if current:
        pieces.append("\n\n".join(current))
    return [p for p in pieces if p.strip()]


def _cut(text: str, max_tokens: int) -> Iterator[str]:
    """`text` (longer than `max_tokens`) in consecutive windows within `max_tokens`, each
    ending at a space where one is in its second half. Each character is looked at a bounded
    number of times: a text without sentence breaks costs time linear in its length (the cut
    was a slice of the rest per window, quadratic, issue 36)."""
    budget = max(1, max_tokens)
    widest = 4 * budget  # four characters a token: the widest window the estimate allows
    start = 0
    while start < len(text):
        end = min(len(text), start + widest)
        if estimate_tokens(text[start:end]) > budget:
            end = start + budget  # a CJK character is a token: this many always fit
        if end < len(text):
            space = text.rfind(" ", (start + end) // 2, end)
            end = space + 1 if space > 0 else end
        yield text[start:end]
        start = end


def citation_marker() -> re.Pattern[str]:
    """The pattern of one citation marker (`[S1 p.3]`, `[S1 p.3; S2]`)."""
    return _CITATION


def citations(text: str) -> list[Ref]:
    """Every reference in `text`'s citation markers, in order, without repeats."""
    found: list[Ref] = []
    for marker in _CITATION.finditer(text):
        for source, page in _ONE_REF.findall(marker.group(1)):
            ref = Ref(int(source), int(page) if page else None)
            if ref not in found:
                found.append(ref)
    return found


def without_citations(text: str) -> str:
    """`text` with its citation markers removed (for study cards and comparisons)."""
    lines = (" ".join(_CITATION.sub("", line).split()) for line in text.split("\n"))
    return "\n".join(line for line in lines if line)


def passages_block(passages: Iterable[Passage]) -> str:
    """Passages as the prompt shows them: a `[S1 p.3] name` line, then the text."""
    return "\n\n".join(f"[{p.label}] {_short(p.name)}\n{p.text}" for p in passages)


def _short(name: str) -> str:
    if "://" in name:
        return name
    from pathlib import Path

    return Path(name).name


def labelled_texts(prompt: str) -> list[tuple[Ref, str]]:
    """(reference, text) pairs found in a prompt: a `[S1 p.3] …` header line owns the lines
    under it up to the next header; a fact line ending in `[S1 p.3]` belongs to that passage.
    The engine's knowledge base reads passages and facts this way."""
    pairs: list[tuple[Ref, str]] = []
    header: list[Ref] | None = None
    body: list[str] = []
    for line in prompt.splitlines():
        stripped = line.strip()
        marker = _CITATION.match(stripped)
        if marker:  # a header line: `[S1 p.3] paper.pdf`
            if header:
                pairs.extend((ref, "\n".join(body)) for ref in header)
            header, body = citations(marker.group(0)), []
            continue
        refs = citations(stripped)
        if refs and stripped.startswith(("-", "•", "*")):
            fact = _CITATION.sub("", stripped).lstrip("-•* ").strip()
            pairs.extend((ref, fact) for ref in refs)
            continue
        if header is not None:
            body.append(line)
    if header:
        pairs.extend((ref, "\n".join(body)) for ref in header)
    return pairs
