"""Pick the kit's table out of a model answer and map its header onto the kit's columns.

`extract(text, kit)` looks for tables of every kind, scores each by how many kit columns its
header names (in either language, via the kit's synonyms), and keeps the best. It also tells a
refusal and the three ways an answer falls short apart, so callers can say exactly what went
wrong and ask for the right repair:

- `no-table`: no table began (`at_limit` says whether the model ran out of tokens first, e.g. a
  base model rambling, or simply answered in prose);
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
    usable = [t for t in tables if t.header]
    at_limit = finish_reason == "length"
    if not usable:
        return _without_table(text, kit, any(t.cut_short for t in tables), at_limit, len(tables))
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


def _without_table(text: str, kit: Kit, cut: bool, at_limit: bool, found: int) -> Extraction:
    if cut:  # a table began, its header never ended
        limit = " at the token limit" if at_limit else ""
        detail = f"the answer stops before its table's header ends{limit} (truncated output)"
        return Extraction("truncated", None, found, (), detail, at_limit)
    missing = tuple(c.key for c in kit.columns)
    if at_limit:
        detail = "the answer reached the token limit before any table began"
        return Extraction("no-table", None, 0, missing, detail, at_limit)
    if _REFUSAL.search(text):
        first = text.strip().splitlines()[0][:120] if text.strip() else ""
        return Extraction("refusal", None, 0, (), f"the model declined to answer: {first!r}")
    return Extraction("no-table", None, 0, missing, "the answer contains no table")
