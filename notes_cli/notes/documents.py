"""The user's reading as documents: a file (PDF, HTML, Markdown, text) or a URL, turned into
titled, paged plain text with a note of what was left out.

`load_document("paper.pdf")` / `load_document("https://…")` → `Document`. Every failure — a
missing, huge, corrupt, encrypted or scanned file, a URL that redirects too often or never
finishes, text in an encoding that cannot be told — is an `InputError` (exit 2) naming the
source, raised before anything is written. PDF text comes from pypdf (notes/pdf.py), the main
text of a web page from trafilatura when installed (notes/webpage.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from notes_cli.errors import InputError

DocumentKind = Literal["pdf", "html", "markdown", "text"]
MAX_FILE_BYTES = 50_000_000
"""A paper is a few MB; a 200 MB file is not reading material pdnotes should load whole."""
MAX_URL_BYTES = 20_000_000
URL_TIMEOUT_S = 20.0

_HTML_SUFFIXES = (".html", ".htm", ".xhtml")
_MARKDOWN_SUFFIXES = (".md", ".markdown", ".mdx")
_TEXT_SUFFIXES = (".txt", ".text", ".rst", "")


@dataclass(frozen=True)
class Page:
    number: int | None  # the PDF page (1-based); None for documents without pages
    text: str


@dataclass(frozen=True)
class Document:
    name: str  # the path or URL as the user gave it
    kind: DocumentKind
    title: str | None
    pages: tuple[Page, ...]
    dropped: str | None = None  # what extraction left out, in words
    fetched: str | None = None  # for a URL: the final URL and size actually read
    notes: tuple[str, ...] = field(default_factory=tuple)
    whole_page: bool = False  # a web page read whole: its navigation and footer are in the text

    @property
    def left_out(self) -> str:
        """What reading left out, in words, honest about a page that was kept whole."""
        if self.dropped:
            return self.dropped
        if self.whole_page:
            return "nothing: the whole page is kept, navigation and footer included"
        return "nothing"

    @property
    def text(self) -> str:
        return "\n\n".join(p.text for p in self.pages if p.text)

    @property
    def tokens(self) -> int:
        from notes_cli.notes.tokens import estimate_tokens

        return estimate_tokens(self.text)

    @property
    def page_count(self) -> int | None:
        return len(self.pages) if self.pages and self.pages[0].number is not None else None


def is_url(spec: str) -> bool:
    return spec.lower().startswith(("http://", "https://"))


def load_document(spec: str) -> Document:
    """The document at `spec`: a URL (http/https) or a file path."""
    if is_url(spec):
        return _load_url(spec)
    return _load_file(Path(spec))


def _load_file(path: Path) -> Document:
    from notes_cli.fileio import read_document

    data = read_document(
        path,
        max_bytes=MAX_FILE_BYTES,
        what="source",
        missing_fix="check the path (a URL must start with http:// or https://); "
        "`pdnotes notes sources FILE` shows what a source yields",
    )
    suffix = path.suffix.lower()
    name = str(path)
    if suffix == ".pdf" or data[:5] == b"%PDF-":
        return _pdf(name, data)
    if suffix in (".docx", ".pptx", ".doc", ".ppt", ".odt", ".epub"):
        raise InputError(
            f"source {name}: {suffix} files are not read by pdnotes",
            fix="export it as PDF or Markdown (or convert it with MinerU / markitdown) and "
            "pass that file",
        )
    text = decode_text(data, None, name)
    if suffix in _HTML_SUFFIXES or _looks_like_html(text):
        return _html(name, text, None)
    kind: DocumentKind = "markdown" if suffix in _MARKDOWN_SUFFIXES else "text"
    return Document(name, kind, _first_heading(text), (Page(None, text.strip()),))


def _load_url(url: str) -> Document:
    from notes_cli.gateway.fetch import fetch

    got = fetch(url, timeout=URL_TIMEOUT_S, max_bytes=MAX_URL_BYTES)
    via = f" (after {len(got.redirects)} redirect(s))" if got.redirects else ""
    fetched = f"{got.final_url}, {len(got.body):,} bytes, {got.content_type or 'no type'}{via}"
    if got.content_type == "application/pdf" or got.body[:5] == b"%PDF-":
        document = _pdf(url, got.body)
    else:
        text = decode_text(got.body, got.charset, url)
        if "html" in got.content_type or _looks_like_html(text):
            document = _html(url, text, got.final_url)
        else:
            document = Document(url, "text", _first_heading(text), (Page(None, text.strip()),))
    from dataclasses import replace

    return replace(document, fetched=fetched)


def _pdf(name: str, data: bytes) -> Document:
    from notes_cli.notes.pdf import read_pdf

    title, pages = read_pdf(data, name)
    return Document(name, "pdf", title, tuple(Page(n, t) for n, t in pages))


def _html(name: str, markup: str, url: str | None) -> Document:
    from notes_cli.notes.webpage import main_text

    page = main_text(markup, url=url, name=name)
    return Document(name, "html", page.title, (Page(None, page.text),), page.dropped, None,
                    page.notes, page.whole_page)  # fmt: skip


def decode_text(data: bytes, declared: str | None, name: str) -> str:
    """Bytes → text: a BOM or the declared charset wins, then UTF-8, then a `<meta charset>`,
    then charset detection (charset-normalizer, when installed). Raises InputError when none
    gives clean text."""
    import codecs
    import re

    if b"\x00" in data[:4096] and not data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        raise InputError(f"source {name} is a binary file, not text", fix="pass text, HTML or PDF")
    candidates: list[str] = []
    if data.startswith(codecs.BOM_UTF8):
        candidates.append("utf-8-sig")
    elif data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        candidates.append("utf-16")
    if declared:
        candidates.append(declared)
    candidates.append("utf-8")
    meta = re.search(rb"""<meta[^<>]{0,200}?charset=["']?([A-Za-z0-9_-]{1,40})""", data[:4096])
    if meta:
        candidates.append(meta.group(1).decode("ascii").lower())
    for encoding in candidates:
        try:
            return data.decode(encoding)
        except (UnicodeDecodeError, LookupError):
            continue
    try:
        from charset_normalizer import from_bytes
    except ImportError:  # pragma: no cover - installed with the reading extra
        best = None
    else:
        best = from_bytes(data[:MAX_URL_BYTES]).best()
    if best is not None and best.encoding:
        return str(best)
    raise InputError(
        f"source {name}: cannot tell its text encoding (not UTF-8"
        + (f", not {declared}" if declared else "")
        + ")",
        fix="save it as UTF-8 and pass the file",
    )


def _looks_like_html(text: str) -> bool:
    head = text.lstrip()[:512].lower()
    return head.startswith(("<!doctype html", "<html")) or "<body" in head


def _first_heading(text: str) -> str | None:
    for line in text.splitlines()[:40]:
        stripped = line.strip()
        if stripped.startswith("#"):
            return stripped.lstrip("#").strip() or None
    return None
