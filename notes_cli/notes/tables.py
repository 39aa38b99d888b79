"""Find tables in a model's answer, whatever shape it came in.

Models answer with Markdown pipe tables (fenced or not, with prose around them, full-width `｜`
pipes, escaped `\\|`, `<br>` line breaks, bold and links in cells, missing outer pipes, rows
with too few or too many cells), HTML `<table>`s, JSON arrays or objects, or CSV. Each finder
returns `RawTable`s with cleaned cell text; choosing the table that fits a kit is `extract`'s job.
"""

from __future__ import annotations

import csv
import html
import io
import json
import re
from dataclasses import dataclass, replace
from typing import Any, Literal

from notes_cli.errors import InputError

TableKind = Literal["markdown", "html", "json", "csv"]

# A note's answer is a few KB and a cell a few hundred characters; these bounds are far above
# that and keep the worst input judged within a second (benchmarks/notes_parse/run.py).
MAX_ANSWER_CHARS = 1_000_000
MAX_CELL_CHARS = 20_000


class AnswerTooLarge(InputError):
    """An answer, or one of its cells, is beyond what a note can be (exit 2)."""


def check_answer_size(text: str) -> None:
    """Raise AnswerTooLarge when `text` exceeds MAX_ANSWER_CHARS."""
    if len(text) > MAX_ANSWER_CHARS:
        raise AnswerTooLarge(
            f"the answer is {len(text):,} characters; pdnotes reads notes up to "
            f"{MAX_ANSWER_CHARS:,}",
            fix="pass the answer itself, not a whole document or log",
        )


@dataclass(frozen=True)
class RawTable:
    """A header and rows of cleaned cells (line breaks inside a cell are `\\n`). `cut_short`
    marks a table whose end is missing (the answer stopped mid-row or mid-document)."""

    header: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    kind: TableKind
    cut_short: bool = False


# --- cell text -------------------------------------------------------------------------------

# Every pattern here runs on text the model (or a hostile file) chose, so none may backtrack
# across the cell: a match attempt that starts at an opener stops at the next opener of the same
# kind (`[^<>]`, `[^\[\]]`, `[^*]`), which keeps each substitution linear. The earlier
# `[^>]*`, `[^\]]*` and `.+?` forms scanned to the end of the cell from every opener: 6.9 s on
# a 40 KB cell of `[`, 6.8 s on `*a ` repeated to 40 KB (issue 11).
_BR = re.compile(r"<br\s*+/?>", re.IGNORECASE)
_TAG = re.compile(r"</?[a-zA-Z][^<>]*+>")
_LINK = re.compile(r"!?\[([^\[\]]*+)\]\([^()]*+(?:\([^()]*+\)[^()]*+)*+\)")
_AUTOLINK = re.compile(r"<(https?://[^<>]++)>")
_STRONG = re.compile(r"(\*\*|__)((?:(?!\1).)+?)\1")
_EMPH = re.compile(r"(?<![\w*])\*(?!\s)([^*]+?)(?<!\s)\*(?![\w*])")
_CODE = re.compile(r"`([^`]*+)`")


def _first_group(match: re.Match[str]) -> str:
    return match.group(1)


def _second_group(match: re.Match[str]) -> str:
    return match.group(2)


def clean_cell(text: str, *, entities: bool = True) -> str:
    """Markdown/HTML cell → plain text: `<br>` becomes a newline; bold, emphasis, code spans,
    links and tags are unwrapped; entities decoded (unless `entities=False`: CSV and JSON
    cells are data, where `&gt;` is literal text); whitespace tidied. Raises AnswerTooLarge
    for a cell over MAX_CELL_CHARS."""
    if len(text) > MAX_CELL_CHARS and len(text.strip()) > MAX_CELL_CHARS:
        raise AnswerTooLarge(
            f"a table cell is {len(text.strip()):,} characters; pdnotes reads cells up to "
            f"{MAX_CELL_CHARS:,}: {text.strip()[:40]!r}…",
            fix="a note's cells are short: check that the file is the model's answer",
        )
    # Replacements are functions, not r"\1" templates: re expands a template in Python per
    # match, 1.5 s on a 1 MB table of code spans against 0.3 s this way.
    text = _BR.sub("\n", text)
    text = _AUTOLINK.sub(_first_group, text)
    text = _TAG.sub("", text)
    text = _LINK.sub(_first_group, text)
    text = _CODE.sub(_first_group, text)
    for _ in range(2):  # nested bold inside emphasis
        text = _STRONG.sub(_second_group, text)
    text = _EMPH.sub(_first_group, text)
    if entities:  # Markdown and HTML carry entities; CSV and JSON cells are plain data
        text = html.unescape(text)
    text = text.replace("\xa0", " ")
    lines = (" ".join(line.split()) for line in text.split("\n"))
    return "\n".join(line for line in lines if line)


# --- Markdown pipe tables ----------------------------------------------------------------------

_FENCE = re.compile(r"^\s*(```|~~~)")
_SEPARATOR_CELL = re.compile(r"^\s*:?[-—–－─]+:?\s*$")


_UNESCAPED_PIPE = re.compile(r"(?<!\\)\|")


def _split_row(line: str) -> list[str] | None:
    """Cells of a pipe-table line, or None if the line has no unescaped pipe. `\\|` is a
    literal pipe inside a cell. (A regex split: the character loop it replaces took 0.65 s on
    a 1 MB table.)"""
    line = line.strip().replace("｜", "|")
    parts = _UNESCAPED_PIPE.split(line)
    if len(parts) == 1:
        return None
    cells = [part.replace("\\|", "|") for part in parts]
    if line.startswith("|"):
        cells = cells[1:]
    if line.endswith("|") and not line.endswith("\\|"):
        cells = cells[:-1]
    return cells


def _is_separator(cells: list[str]) -> bool:
    return (
        bool(cells)
        and all(_SEPARATOR_CELL.match(c) for c in cells if c.strip())
        and any(c.strip() for c in cells)
    )


def _closed(line: str) -> bool:
    stripped = line.strip().replace("｜", "|")
    return stripped.endswith("|") and not stripped.endswith("\\|")


def markdown_tables(text: str) -> list[RawTable]:
    """Every pipe table in `text`. Fence lines are skipped (tables inside ```markdown fences
    count); a blank line inside a table is tolerated; a new separator line starts a new table."""
    lines = text.splitlines()
    last_content = max((i for i, line in enumerate(lines) if line.strip()), default=-1)
    unclosed_fence = sum(1 for line in lines if _FENCE.match(line)) % 2 == 1
    blocks: list[list[tuple[int, str, list[str]]]] = []
    current: list[tuple[int, str, list[str]]] = []
    for number, line in enumerate(lines):
        if _FENCE.match(line) or (not line.strip() and current):
            continue
        cells = _split_row(line)
        if cells is None:
            if current:
                blocks.append(current)
            current = []
            continue
        current.append((number, line, cells))
    if current:
        blocks.append(current)
    tables: list[RawTable] = []
    for block in blocks:
        tables.extend(_tables_in_block(block, last_content, unclosed_fence))
    return tables


def _tables_in_block(
    block: list[tuple[int, str, list[str]]], last_content: int, unclosed_fence: bool
) -> list[RawTable]:
    separators = [i for i, (_, _, cells) in enumerate(block) if i > 0 and _is_separator(cells)]
    # Without a separator line, a loose grid of at least two lines is header + rows.
    loose = [0] if len(block) >= 2 else []
    starts = [s - 1 for s in separators] if separators else loose
    tables = []
    for n, start in enumerate(starts):
        end = starts[n + 1] if n + 1 < len(starts) else len(block)
        header_line = block[start]
        body = [row for row in block[start + 1 : end] if not _is_separator(row[2])]
        tables.append(_assemble(header_line, body, last_content, unclosed_fence))
    return tables


def _assemble(
    header_line: tuple[int, str, list[str]],
    body: list[tuple[int, str, list[str]]],
    last_content: int,
    unclosed_fence: bool,
) -> RawTable:
    header = [clean_cell(c) for c in header_line[2]]
    width = len(header)
    rows = []
    for _, _, cells in body:
        if len(cells) > width:  # an unescaped pipe inside the last cell
            cells = cells[: width - 1] + [" | ".join(cells[width - 1 :])]
        row = [clean_cell(c) for c in cells] + [""] * (width - len(cells))
        if any(row):
            rows.append(tuple(row))
    cut_short = False
    if body and body[-1][0] == last_content:
        # A line that stops early loses its closing pipe; without outer pipes, its cells.
        if _closed(header_line[1]):
            cut_short = not _closed(body[-1][1])
        else:
            cut_short = len(body[-1][2]) < width
        cut_short = cut_short or unclosed_fence
    return RawTable(tuple(header), tuple(rows), "markdown", cut_short)


# --- HTML tables -------------------------------------------------------------------------------


# The stdlib HTMLParser is quadratic on unfinished tags (9 s on `<table>` + `<a ` × 10,000) and
# raises AssertionError on `<![CDATh` (issue 11). Tables need only five tags, so a one-pass
# tokenizer does: one regex whose attribute part stops at the next `<` or `>` (linear), comments
# skipped with `str.find`, everything else is cell text for `clean_cell` (which strips the other
# tags and decodes entities).
_TABLE_TAG = re.compile(r"<(/?)(table|tr|td|th|br)\b[^<>]*+>", re.IGNORECASE)


class _HtmlTables:
    def __init__(self) -> None:
        self.tables: list[list[list[str]]] = []
        self.open_tables = 0
        self.cell: list[str] | None = None

    def feed(self, text: str) -> None:
        text, position = _without_comments(text), 0
        for match in _TABLE_TAG.finditer(text):
            self.data(text[position : match.start()])
            position = match.end()
            closing, tag = match.group(1), match.group(2).lower()
            if closing:
                self.end(tag)
            else:
                self.start(tag)
        # Text after the last tag belongs to a cell that never closed: the answer stopped
        # there, and half a cell is not kept.

    def start(self, tag: str) -> None:
        if tag == "table":
            self.open_tables += 1
            self.tables.append([])
        elif tag == "tr" and self.tables:
            self._close_cell()
            self.tables[-1].append([])
        elif tag in ("td", "th") and self.tables:
            self._close_cell()
            if not self.tables[-1]:
                self.tables[-1].append([])
            self.cell = []
        elif tag == "br" and self.cell is not None:
            self.cell.append("<br>")

    def end(self, tag: str) -> None:
        if tag in ("td", "th", "tr"):
            self._close_cell()
        elif tag == "table":
            self._close_cell()
            self.open_tables = max(0, self.open_tables - 1)

    def data(self, data: str) -> None:
        if self.cell is not None:
            self.cell.append(data)

    def _close_cell(self) -> None:
        if self.cell is not None and self.tables and self.tables[-1]:
            self.tables[-1][-1].append(clean_cell("".join(self.cell)))
        self.cell = None


def _without_comments(text: str) -> str:
    """`text` without `<!-- … -->` comments (an unclosed one runs to the end)."""
    if "<!--" not in text:
        return text
    kept, position = [], 0
    while (opening := text.find("<!--", position)) != -1:
        kept.append(text[position:opening])
        closing = text.find("-->", opening + 4)
        if closing == -1:
            return "".join(kept)
        position = closing + 3
    kept.append(text[position:])
    return "".join(kept)


def html_tables(text: str) -> list[RawTable]:
    """Every `<table>` in `text`; the first row is the header. A table never closed (the
    answer stopped inside it) is marked cut short."""
    if "<table" not in text.lower():
        return []
    parser = _HtmlTables()
    parser.feed(text)
    still_open = parser.open_tables > 0
    tables = []
    for n, grid in enumerate(parser.tables):
        grid = [row for row in grid if row]
        if not grid:
            continue
        width = len(grid[0])
        rows = tuple(tuple((row + [""] * width)[:width]) for row in grid[1:] if any(row))
        last = n == len(parser.tables) - 1
        tables.append(RawTable(tuple(grid[0]), rows, "html", still_open and last))
    return tables


# --- JSON --------------------------------------------------------------------------------------

_JSON_FENCE = re.compile(r"```(?:json)?\s*\n(.*?)(?:\n```|\Z)", re.DOTALL | re.IGNORECASE)
_ROW_LIST_KEYS = ("rows", "table", "data", "items", "note", "notes", "records", "result")


def json_tables(text: str) -> list[RawTable]:
    """Tables from JSON in `text`: the whole text, ```json fences, or a bare array of objects
    inside prose. A JSON document that stops early yields an empty table marked cut short."""
    candidates = [m.group(1) for m in _JSON_FENCE.finditer(text)]
    stripped = text.strip()
    if stripped[:1] in "[{":
        candidates.insert(0, stripped)
    elif (start := text.find("[")) != -1 and re.match(r"\[\s*\{", text[start:]):
        candidates.append(text[start : text.rfind("]") + 1] or text[start:])
    tables: list[RawTable] = []
    for candidate in candidates:
        try:
            document = json.loads(candidate)
        except RecursionError:
            continue  # nested deeper than any table (a thousand levels): not a note
        except ValueError:
            if _looks_cut_json(candidate):
                tables.append(RawTable((), (), "json", cut_short=True))
            continue
        try:
            table = _json_to_table(document)
        except RecursionError:  # a cell holding a list nested too deep to print
            continue
        if table is not None:
            tables.append(table)
    return tables


def _looks_cut_json(candidate: str) -> bool:
    body = candidate.strip()
    return body[:1] in "[{" and body.count("{") + body.count("[") > body.count("}") + body.count(
        "]"
    )


def _json_to_table(document: Any) -> RawTable | None:
    if isinstance(document, dict):
        columns = document.get("columns")
        for key in _ROW_LIST_KEYS:
            rows = document.get(key)
            if isinstance(rows, list) and rows:
                if isinstance(columns, list) and all(isinstance(r, list) for r in rows):
                    return _grid_table([_column_label(c) for c in columns], rows)
                return _json_to_table(rows)
        return None
    if not isinstance(document, list) or not document:
        return None
    if all(isinstance(item, dict) for item in document):
        header: list[str] = []
        for item in document:
            header.extend(k for k in item if k not in header)
        grid = [[_json_cell(item.get(k, "")) for k in header] for item in document]
        return RawTable(tuple(clean_cell(h, entities=False) for h in header), _tuples(grid), "json")
    if all(isinstance(item, list) for item in document):
        return _grid_table([str(c) for c in document[0]], document[1:])
    return None


def _column_label(column: Any) -> str:
    if isinstance(column, dict):
        return str(column.get("key") or column.get("label") or column.get("name") or "")
    return str(column)


def _grid_table(header: list[str], rows: list[Any]) -> RawTable:
    width = len(header)
    grid = [([_json_cell(c) for c in row] + [""] * width)[:width] for row in rows]
    return RawTable(tuple(clean_cell(h, entities=False) for h in header), _tuples(grid), "json")


def _json_cell(value: Any) -> str:
    if isinstance(value, list):
        return clean_cell("\n".join(str(v) for v in value), entities=False)
    return clean_cell("" if value is None else str(value), entities=False)


def _tuples(grid: list[list[str]]) -> tuple[tuple[str, ...], ...]:
    return tuple(tuple(row) for row in grid if any(row))


# --- CSV ---------------------------------------------------------------------------------------


def csv_tables(text: str) -> list[RawTable]:
    """The one table of a CSV (or TSV) file: the first record is the header."""
    sample = text[:4096]
    try:
        dialect: Any = csv.Sniffer().sniff(sample, delimiters=",\t;")
    except csv.Error:
        dialect = csv.excel
    try:
        records = [r for r in csv.reader(io.StringIO(text), dialect) if any(c.strip() for c in r)]
    except csv.Error as exc:  # a field over the csv module's limit, a NUL byte
        raise AnswerTooLarge(f"the CSV cannot be read: {exc}") from exc
    if len(records) < 1:
        return []
    return [replace(_grid_table(records[0], records[1:]), kind="csv")]
