"""The user's reading (`--source FILE|URL`) fitted into a token budget, cutting the longest
sources first and saying what was cut. Reading the documents is notes/documents.py's job."""

from __future__ import annotations

import re
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path
from typing import TYPE_CHECKING

from notes_cli.errors import InputError

if TYPE_CHECKING:
    from notes_cli.notes.documents import Document

_CJK_CHAR = re.compile(r"[\u3000-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uff00-\uffef]")


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


def estimate_tokens(text: str) -> int:
    """A tokenizer-free estimate: one token per CJK character, one per four other characters.
    Close enough for budgeting; real tokenizers differ by model."""
    cjk = len(_CJK_CHAR.findall(text))
    return cjk + (len(text) - cjk + 3) // 4


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


class _TextOnly(HTMLParser):
    _SKIP = {"script", "style", "head", "noscript", "svg"}
    _BLOCK = {"p", "div", "br", "li", "tr", "h1", "h2", "h3", "h4", "h5", "h6", "section", "pre"}

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.skipping = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in self._SKIP:
            self.skipping += 1
        elif tag in self._BLOCK:
            self.parts.append("\n")

    def handle_endtag(self, tag: str) -> None:
        if tag in self._SKIP:
            self.skipping = max(0, self.skipping - 1)
        elif tag in self._BLOCK or tag in ("td", "th"):
            self.parts.append("\n" if tag in self._BLOCK else " ")

    def handle_data(self, data: str) -> None:
        if not self.skipping:
            self.parts.append(data)


def html_to_text(markup: str, *, name: str = "page") -> str:
    """Visible text of `markup` with the stdlib parser: the fallback when lxml is not
    installed. HTMLParser trips over some malformed markup (AssertionError on `<![CDATh`)."""
    parser = _TextOnly()
    try:
        parser.feed(markup)
        parser.close()
    except AssertionError as exc:
        raise InputError(
            f"source {name}: malformed HTML the parser cannot read ({exc})",
            fix=f"save the page as text, or {_reading_hint()}",
        ) from exc
    lines = (" ".join(line.split()) for line in "".join(parser.parts).splitlines())
    return "\n".join(line for line in lines if line)


def _reading_hint() -> str:
    from notes_cli.notes.webpage import INSTALL_HINT

    return INSTALL_HINT
