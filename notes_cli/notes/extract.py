"""Pick the kit's table out of a model answer and map its header onto the kit's columns.

`extract(text, kit)` looks for tables of every kind, scores each by how many kit columns its
header names (in either language, via the kit's synonyms), and keeps the best. It also tells a
refusal and the three ways an answer falls short apart, so callers can say exactly what went
wrong and ask for the right repair:

- `no-table`: no table began (`at_limit` says whether the model ran out of tokens first, e.g. a
  base model rambling, or simply answered in prose; `echoed` that the only "tables" were lines
  repeating pdnotes' own request, whose sentences name the columns as `A | B | C | D`, which
  a base model continuing its prompt writes out);
- `truncated`: a table began and was cut off before it ended;
- `at-limit`: the table looks complete, but the model stopped at its token limit (finish reason
  "length"), so its end cannot be trusted and it is not written as a note.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from notes_cli.notes.kits import Column, Kit
from notes_cli.notes.tables import (
    RawTable,
    TableKind,
    csv_tables,
    html_tables,
    json_tables,
    markdown_tables,
)
from notes_cli.notes.terms import contains_term, has_cjk, same_label

ExtractStatus = Literal["ok", "wrong-columns", "no-table", "refusal", "truncated", "at-limit"]
SourceFormat = Literal["text", "csv"]

_REFUSAL = re.compile(
    r"\b(i['’]?m sorry|i am sorry|i can(?:not|['’]?t)|i['’]?m (?:not able|unable)|i am (?:not able"
    r"|unable)|unable to (?:help|assist|comply)|as an ai)\b"
    r"|抱歉|对不起|无法(?:提供|完成|协助|回答|帮助)|不能(?:提供|协助|回答)",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class NoteTable:
    """The chosen table. `column_index` maps a kit column key to its position in `header`
    (absent when the answer has no such column)."""

    header: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    kind: TableKind
    column_index: dict[str, int]

    def cell(self, row: tuple[str, ...], column_key: str) -> str:
        index = self.column_index.get(column_key)
        return row[index] if index is not None and index < len(row) else ""

    def stage_cell(self, row: tuple[str, ...], stage_key: str) -> str:
        """The cell naming the row: the stage column, or the first column if there is none."""
        return self.cell(row, stage_key) if stage_key in self.column_index else row[0]


@dataclass(frozen=True)
class Extraction:
    status: ExtractStatus
    table: NoteTable | None
    tables_found: int
    missing_columns: tuple[str, ...]
    detail: str
    at_limit: bool = False  # the model stopped at its token limit (finish reason "length")
    echoed: bool = False  # the answer repeated the request's own column list, and no table

    @property
    def ok(self) -> bool:
        return self.status == "ok"


def extract(
    text: str, kit: Kit, *, source_format: SourceFormat = "text", finish_reason: str | None = None
) -> Extraction:
    """Find the table that best fits `kit` in `text`. `finish_reason="length"` (the model hit
    its token limit) never lets a table pass: a cut one is `truncated`, a whole-looking one
    `at-limit`."""
    tables = csv_tables(text) if source_format == "csv" else find_tables(text)
    # A line of our own request repeated back ("… with the columns Stage | Bottleneck | …")
    # splits on its pipes like a table row: it is the prompt, not a table.
    answered = [t for t in tables if not echoes_columns(t, kit)]
    echoed = len(answered) < len(tables)
    tables = answered
    usable = [t for t in tables if t.header]
    at_limit = finish_reason == "length"
    if not usable:
        cut = any(t.cut_short for t in tables)
        return _without_table(text, kit, cut, at_limit, len(tables), echoed=echoed)
    best = max(usable, key=lambda t: (_score(t, kit.columns), len(t.rows), -usable.index(t)))
    table = NoteTable(best.header, best.rows, best.kind, map_columns(best.header, kit.columns))
    missing = tuple(c.key for c in kit.columns if c.key not in table.column_index)
    limit = " at the token limit" if at_limit else ""
    if best.cut_short:
        detail = f"the answer stops in the middle of the table{limit} (truncated output)"
        return Extraction("truncated", table, len(usable), missing, detail, at_limit)
    if at_limit:
        detail = (
            f"the table looks complete ({len(best.rows)} rows), but the answer was truncated at "
            "the token limit (finish reason length): its end cannot be trusted"
        )
        return Extraction("at-limit", table, len(usable), missing, detail, at_limit)
    if missing:
        labels = ", ".join(
            c.label(_header_lang(best.header)) for c in kit.columns if c.key in missing
        )
        detail = f"the table has no {labels} column (header: {' | '.join(best.header)})"
        return Extraction("wrong-columns", table, len(usable), missing, detail)
    return Extraction("ok", table, len(usable), (), f"{best.kind} table with {len(best.rows)} rows")


def find_tables(text: str) -> list[RawTable]:
    """Every table in the answer, of any kind, in a stable order (HTML, JSON, Markdown)."""
    return html_tables(text) + json_tables(text) + markdown_tables(text)


def map_columns(header: tuple[str, ...], columns: tuple[Column, ...]) -> dict[str, int]:
    """Kit column key → header position. Exact label matches win; then a header that merely
    mentions a synonym (`主要瓶颈（Bottleneck）`). Each header cell serves one column."""
    index: dict[str, int] = {}
    for exact in (True, False):
        for column in columns:
            if column.key in index:
                continue
            for pos, label in enumerate(header):
                if pos in index.values():
                    continue
                hit = (
                    same_label(label, column.names)
                    if exact
                    else any(contains_term(label, n) for n in column.names)
                )
                if hit:
                    index[column.key] = pos
                    break
    return index


def _score(table: RawTable, columns: tuple[Column, ...]) -> int:
    return len(map_columns(table.header, columns))


def _header_lang(header: tuple[str, ...]) -> str:
    return "zh" if any(has_cjk(h) for h in header) else "en"


def echoes_columns(table: RawTable, kit: Kit) -> bool:
    """Whether a line of `table` is a sentence quoting the kit's column list, `… the columns
    A | B | C | D.`: the list's first label ends a longer first cell or its last label starts a
    longer last cell (a real header has the labels as whole cells)."""
    for lang in ("en", "zh"):
        labels = [c.label(lang) for c in kit.columns]
        for line in (table.header, *table.rows):
            if _quotes(tuple(cell.strip() for cell in line), labels):
                return True
    return False


def _quotes(cells: tuple[str, ...], labels: list[str]) -> bool:
    n = len(labels)
    if n < 2:
        return False
    for at in range(len(cells) - n + 1):
        first, *middle, last = cells[at : at + n]
        if (
            first.endswith(labels[0])
            and last.startswith(labels[-1])
            and list(middle) == labels[1:-1]
            and (first != labels[0] or last != labels[-1])
        ):
            return True
    return False


def _without_table(
    text: str, kit: Kit, cut: bool, at_limit: bool, found: int, *, echoed: bool = False
) -> Extraction:
    if cut:  # a table began, its header never ended
        limit = " at the token limit" if at_limit else ""
        detail = f"the answer stops before its table's header ends{limit} (truncated output)"
        return Extraction("truncated", None, found, (), detail, at_limit)
    missing = tuple(c.key for c in kit.columns)
    if echoed:
        limit = " until the token limit" if at_limit else ""
        detail = (
            "the answer repeats pdnotes' own request (its list of columns) instead of writing "
            f"the table{limit}"
        )
        return Extraction("no-table", None, 0, missing, detail, at_limit, echoed=True)
    if at_limit:
        detail = "the answer reached the token limit before any table began"
        return Extraction("no-table", None, 0, missing, detail, at_limit)
    if _REFUSAL.search(text):
        first = text.strip().splitlines()[0][:120] if text.strip() else ""
        return Extraction("refusal", None, 0, (), f"the model declined to answer: {first!r}")
    return Extraction("no-table", None, 0, missing, "the answer contains no table")
