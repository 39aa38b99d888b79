"""The user's reading (`--source FILE|URL`) fitted into a token budget, cutting the longest
sources first and saying what was cut. Reading the documents is notes/documents.py's job."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from notes_cli.notes.tokens import estimate_tokens

if TYPE_CHECKING:
    from notes_cli.notes.documents import Document


@dataclass(frozen=True)
class Source:
    path: str
    text: str  # what goes into the prompt (possibly cut)
    tokens: int  # estimated tokens of `text`
    original_tokens: int
    document: Document | None = None

    @property
    def cut(self) -> bool:
        return self.tokens < self.original_tokens


def read_source(path: Path) -> str:
    """A source file as plain text (see notes/documents.py for what is read and how)."""
    from notes_cli.notes.documents import load_document

    return load_document(str(path)).text


def fit_sources(specs: list[Path] | list[str], max_tokens: int) -> list[Source]:
    """Read every source (file or URL) and cut the largest ones until the total fits
    `max_tokens`: each source gets an equal share, and shares a small source leaves unused go
    to the others."""
    from notes_cli.notes.documents import load_document

    documents = [load_document(str(spec)) for spec in specs]
    return fit_documents(documents, max_tokens)


def fit_documents(documents: list[Document], max_tokens: int) -> list[Source]:
    texts = [(d.name, d.text) for d in documents]
    sizes = [estimate_tokens(t) for _, t in texts]
    limits = _fair_shares(sizes, max_tokens)
    return [
        Source(name, text if limit >= size else _cut(text, limit), min(size, limit), size, doc)
        for (name, text), size, limit, doc in zip(texts, sizes, limits, documents, strict=True)
    ]


def _fair_shares(sizes: list[int], budget: int) -> list[int]:
    limits = [0] * len(sizes)
    pending = sorted(range(len(sizes)), key=lambda i: sizes[i])
    while pending:
        share = budget // len(pending)
        index = pending.pop(0)
        limits[index] = min(sizes[index], share)
        budget -= limits[index]
    return limits


def _cut(text: str, tokens: int) -> str:
    """The longest prefix of `text` within `tokens`, ended at a line or sentence break."""
    low, high = 0, len(text)
    while low < high:
        mid = (low + high + 1) // 2
        if estimate_tokens(text[:mid]) <= tokens:
            low = mid
        else:
            high = mid - 1
    prefix = text[:low]
    breaks = [prefix.rfind(mark) for mark in ("\n", "。", ". ")]
    best = max(breaks)
    return prefix[: best + 1].rstrip() if best > len(prefix) // 2 else prefix.rstrip()
