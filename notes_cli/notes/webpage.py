"""The main text of a web page: the article, without navigation, ads and footers.

trafilatura does the finding (it is made for exactly this and well kept; readability-style
heuristics by hand would be worse). It brings lxml and date parsing with it, so it is the
optional extra `pdnotes[reading]`, imported only when an HTML source is read; without it the
page's visible text is kept whole and the user is told how to get the article alone.
"""

from __future__ import annotations

from dataclasses import dataclass
from html.parser import HTMLParser

from notes_cli.errors import InputError
from notes_cli.notes.tokens import estimate_tokens

_MAX_STDLIB_HTML_CHARS = 2_000_000
INSTALL_HINT = "install `pdnotes[reading]` (trafilatura) to keep the article and drop the rest"


@dataclass(frozen=True)
class PageText:
    title: str | None
    text: str
    dropped: str | None  # what was left out, in words
    notes: tuple[str, ...] = ()
    whole_page: bool = False  # no article was told apart: navigation, ads and footer are kept


def main_text(markup: str, *, url: str | None, name: str) -> PageText:
    """The article text of `markup`. Raises InputError when the page has no text at all."""
    visible = visible_text(markup, name)
    try:
        import trafilatura
    except ImportError:
        if not visible:
            raise InputError(f"source {name}: the page has no text") from None
        return PageText(
            _title_of(markup), visible, None, (f"whole page kept: {INSTALL_HINT}",), True
        )
    found = trafilatura.bare_extraction(markup, url=url, with_metadata=True, include_tables=True)
    text = (getattr(found, "text", None) or "").strip() if found is not None else ""
    title = (getattr(found, "title", None) or None) if found is not None else None
    if not text:
        if not visible:
            raise InputError(f"source {name}: the page has no text")
        return PageText(title or _title_of(markup), visible, None,
                        ("no article found: the whole page is kept",), True)  # fmt: skip
    dropped_tokens = max(0, estimate_tokens(visible) - estimate_tokens(text))
    dropped = (
        f"~{dropped_tokens:,} tokens of navigation, ads and other boilerplate"
        if dropped_tokens
        else None
    )
    return PageText(title or _title_of(markup), text, dropped)


def visible_text(markup: str, name: str) -> str:
    """Every piece of text a browser would show (scripts, styles and the head left out)."""
    try:
        import lxml.html
    except ImportError:
        # The stdlib parser is quadratic on some malformed markup (issue 11): keep it to pages
        # of ordinary size.
        if len(markup) > _MAX_STDLIB_HTML_CHARS:
            raise InputError(
                f"source {name}: a {len(markup) / 1e6:.0f} MB page needs lxml to be read",
                fix=INSTALL_HINT,
            ) from None
        return html_to_text(markup, name=name)
    try:
        # huge_tree: libxml2 otherwise drops a text node over 10 MB without a word, and a page
        # whose text is one long paragraph read as "no text" (issue 36). The page is already
        # bounded (documents.MAX_URL_BYTES, MAX_FILE_BYTES).
        parser = lxml.html.HTMLParser(huge_tree=True)
        root = lxml.html.document_fromstring(markup, parser=parser)
    except (ValueError, lxml.etree.ParserError):  # empty or only a comment
        return ""
    for element in root.xpath("//script|//style|//noscript|//head|//template|//svg"):
        element.drop_tree()
    lines = (" ".join(line.split()) for line in root.text_content().splitlines())
    return "\n".join(line for line in lines if line)


def _title_of(markup: str) -> str | None:
    import html
    import re

    match = re.search(r"<title[^<>]*+>([^<]{1,300})</title>", markup[:20000], re.IGNORECASE)
    return " ".join(html.unescape(match.group(1)).split()) or None if match else None


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
            fix=f"save the page as text, or {INSTALL_HINT}",
        ) from exc
    lines = (" ".join(line.split()) for line in "".join(parser.parts).splitlines())
    return "\n".join(line for line in lines if line)
