"""The user's reading (`--source FILE`): Markdown, text or HTML turned into plain text and fitted
into a token budget, cutting the longest sources first and saying what was cut."""

from __future__ import annotations

import re
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path

from notes_cli.errors import InputError

_CJK_CHAR = re.compile(r"[\u3000-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uff00-\uffef]")


@dataclass(frozen=True)
class Source:
    path: str
    text: str  # what goes into the prompt (possibly cut)
    tokens: int  # estimated tokens of `text`
    original_tokens: int

    @property
    def cut(self) -> bool:
        return self.tokens < self.original_tokens


def estimate_tokens(text: str) -> int:
    """A tokenizer-free estimate: one token per CJK character, one per four other characters.
    Close enough for budgeting; real tokenizers differ by model."""
    cjk = len(_CJK_CHAR.findall(text))
    return cjk + (len(text) - cjk + 3) // 4


def read_source(path: Path) -> str:
    """A source file as plain text. HTML loses its tags, scripts and styles."""
    try:
        raw = path.read_text(encoding="utf-8-sig")
    except FileNotFoundError as exc:
        raise InputError(f"source file not found: {path}") from exc
    except (OSError, UnicodeDecodeError) as exc:
        reason = getattr(exc, "strerror", None) or str(exc)
        raise InputError(f"cannot read source {path}: {reason}", fix="pass UTF-8 text") from exc
    if path.suffix.lower() in (".html", ".htm") or raw.lstrip().lower().startswith(
        ("<!doctype html", "<html")
    ):
        return html_to_text(raw)
    return raw.strip()


def fit_sources(paths: list[Path], max_tokens: int) -> list[Source]:
    """Read every source and cut the largest ones until the total fits `max_tokens`: each
    source gets an equal share, and shares a small source leaves unused go to the others."""
    texts = [(str(p), read_source(p)) for p in paths]
    sizes = [estimate_tokens(t) for _, t in texts]
    limits = _fair_shares(sizes, max_tokens)
    return [
        Source(name, text if limit >= size else _cut(text, limit), min(size, limit), size)
        for (name, text), size, limit in zip(texts, sizes, limits, strict=True)
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


def html_to_text(markup: str) -> str:
    parser = _TextOnly()
    parser.feed(markup)
    parser.close()
    lines = (" ".join(line.split()) for line in "".join(parser.parts).splitlines())
    return "\n".join(line for line in lines if line)
