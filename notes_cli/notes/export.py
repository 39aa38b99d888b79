"""Exports of a checked note: Markdown (from templates/notes/note.md), CSV, JSON
(`pdnotes.notes/1`) and a standalone HTML page (templates/notes/note.html, inline CSS).

Every export carries the table, the rubric result, the model and the endpoint's base URL —
never the key. `write_note` writes atomically, so a reader never sees half a file.
"""

from __future__ import annotations

import csv
import html
import io
import json
import re
import tomllib
from dataclasses import dataclass, field
from datetime import datetime
from functools import lru_cache
from pathlib import Path
from string import Template
from typing import Any, Literal

from notes_cli.notes.check import NoteCheck
from notes_cli.notes.report import rubric_json

ExportFormat = Literal["md", "csv", "json", "html"]
FORMATS: tuple[ExportFormat, ...] = ("md", "csv", "json", "html")
JSON_SCHEMA = "pdnotes.notes/1"


@dataclass(frozen=True)
class NoteDocument:
    """A note ready to export: the checked table plus where it came from."""

    check: NoteCheck
    lang: str
    model: str | None = None
    endpoint: str | None = None  # base URL only; keys never reach a note
    sources: tuple[str, ...] = ()
    created: datetime = field(default_factory=lambda: datetime.now().astimezone())
    repairs: int = 0

    @property
    def title(self) -> str:
        return self.check.kit.title_for(self.lang)

    def columns(self) -> list[tuple[str, str]]:
        """(key, label) per column: the kit's columns in its order, then any extra columns
        the answer had, under their own header."""
        table = self.check.extraction.table
        columns = [(c.key, c.label(self.lang)) for c in self.check.kit.columns]
        if table is not None:
            mapped = set(table.column_index.values())
            columns += [(h, h) for i, h in enumerate(table.header) if i not in mapped and h]
        return columns

    def rows(self) -> list[dict[str, str]]:
        table = self.check.extraction.table
        if table is None:
            return []
        stage_key = self.check.kit.columns[0].key
        extra = {h: i for i, h in enumerate(table.header) if i not in table.column_index.values()}
        rows = []
        for cells in table.rows:
            row = {c.key: table.cell(cells, c.key) for c in self.check.kit.columns}
            row[stage_key] = table.stage_cell(cells, stage_key)
            row.update({h: cells[i] for h, i in extra.items() if h and i < len(cells)})
            rows.append(row)
        return rows


def render(document: NoteDocument, fmt: ExportFormat) -> str:
    """The note as text in `fmt`."""
    return {"md": to_markdown, "csv": to_csv, "json": to_json, "html": to_html}[fmt](document)


def to_json(document: NoteDocument) -> str:
    return json.dumps(note_json(document), ensure_ascii=False, indent=2) + "\n"


def note_json(document: NoteDocument) -> dict[str, Any]:
    """`pdnotes.notes/1`: columns, rows, rubric score and missing concepts, model, endpoint."""
    rubric = document.check.rubric
    return {
        "schema": JSON_SCHEMA,
        "kit": document.check.kit.name,
        "title": document.title,
        "lang": document.lang,
        "created": document.created.isoformat(timespec="seconds"),
        "model": document.model,
        "endpoint": document.endpoint,
        "sources": list(document.sources),
        "verdict": document.check.verdict,
        "columns": [{"key": k, "label": label} for k, label in document.columns()],
        "rows": document.rows(),
        "score": rubric.score,
        "passed": document.check.passed,
        "missing_concepts": rubric.missing_concepts,
        "repairs": document.repairs,
        "rubric": rubric_json(rubric),
        "cells": _cells_json(document),
    }


def _cells_json(document: NoteDocument) -> list[dict[str, dict[str, Any]]]:
    """Per row, per column: the cell's text and the sources it cites (`S1 p.3`; S1 is the
    first entry of `sources`)."""
    from notes_cli.notes.passages import citations

    keys = [key for key, _ in document.columns()]
    return [
        {
            key: {
                "text": row.get(key, ""),
                "sources": [r.label for r in citations(row.get(key, ""))],
            }
            for key in keys
        }
        for row in document.rows()
    ]


def to_csv(document: NoteDocument) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    columns = document.columns()
    writer.writerow([label for _, label in columns])
    for row in document.rows():
        writer.writerow([row.get(key, "") for key, _ in columns])
    return buffer.getvalue()


def to_markdown(document: NoteDocument) -> str:
    columns = document.columns()
    lines = [
        "| " + " | ".join(_md_cell(label) for _, label in columns) + " |",
        "|" + "---|" * len(columns),
    ]
    for row in document.rows():
        lines.append("| " + " | ".join(_md_cell(row.get(key, "")) for key, _ in columns) + " |")
    values = _meta(document, escape=lambda s: s)
    values.update(table="\n".join(lines), rubric=_markdown_rubric(document))
    return _template("note.md").substitute(values)


def to_html(document: NoteDocument) -> str:
    columns = document.columns()
    head = "".join(f"<th>{html.escape(label)}</th>" for _, label in columns)
    body = "\n".join(
        "<tr>"
        + "".join(
            f"<td>{_html_cell(row.get(key, ''), document.sources)}</td>" for key, _ in columns
        )
        + "</tr>"
        for row in document.rows()
    )
    table = (
        f'<table class="note">\n<thead><tr>{head}</tr></thead>\n<tbody>\n{body}\n</tbody>\n</table>'
    )
    values = _meta(document, escape=html.escape)
    values.update(table=table, rubric=_html_rubric(document), lang=document.lang)
    from notes_cli import __version__

    values["version"] = html.escape(__version__)
    return _template("note.html").substitute(values)


def write_note(path: Path, text: str) -> Path:
    """Write `text` to `path` atomically through `fileio.atomic_write`, the one write function
    of pdnotes: an existing note keeps its mode, a new one gets 0o666 minus the umask."""
    from notes_cli import fileio

    fileio.atomic_write(path, text)
    return path


def _template(name: str) -> Template:
    from notes_cli.resources import template_path

    return Template(template_path("notes", name).read_text(encoding="utf-8"))


@lru_cache(maxsize=1)
def _all_labels() -> dict[str, dict[str, str]]:
    from notes_cli.resources import template_path

    with template_path("notes", "labels.toml").open("rb") as handle:
        return tomllib.load(handle)


def _labels(lang: str) -> dict[str, str]:
    """The note's words in `lang` (templates/notes/labels.toml), English when not there."""
    table = _all_labels()
    return table.get(lang, table["en"])


def _meta(document: NoteDocument, escape: Any) -> dict[str, str]:
    words = _labels(document.lang)
    values = {
        "title": escape(document.title),
        "kit": escape(document.check.kit.name),
        # Numbered as the cells cite them: [S1 p.3] is page 3 of S1.
        "sources": escape(
            ", ".join(f"S{n} {name}" for n, name in enumerate(document.sources, start=1))
            or words["no_sources"]
        ),
        "model": escape(document.model or words["unknown"]),
        "endpoint": escape(document.endpoint or words["unknown"]),
        "date": escape(document.created.strftime("%Y-%m-%d %H:%M %Z").strip()),
    }
    values.update({f"label_{k}": escape(v) for k, v in words.items()})
    return values


_ENTITY_START = re.compile(r"&(?=#?[A-Za-z0-9]+)")


def _md_cell(text: str) -> str:
    """Cell text for a pipe table: pipes escaped, line breaks as `<br>`, and an `&` that would
    start an entity (`&gt`, `&#39`) written `&amp;`, so the text reads back as it was."""
    text = _ENTITY_START.sub("&amp;", text)
    return text.replace("|", "\\|").replace("\n", "<br>")


def _html_cell(text: str, sources: tuple[str, ...] = ()) -> str:
    """Cell text as HTML; citation markers become links to the source (its page, for a PDF)."""
    return "<br>".join(_linked(html.escape(line), sources) for line in text.split("\n"))


def _linked(escaped: str, sources: tuple[str, ...]) -> str:
    from notes_cli.notes.passages import citation_marker

    def link(match: Any) -> str:
        from notes_cli.notes.passages import citations

        refs = citations(match.group(0))
        parts = []
        for ref in refs:
            if not 0 < ref.source <= len(sources):
                parts.append(html.escape(ref.label))
                continue
            target = sources[ref.source - 1]
            href = target + (f"#page={ref.page}" if ref.page is not None else "")
            title = f"{target} p.{ref.page}" if ref.page is not None else target
            parts.append(
                f'<a class="cite" href="{html.escape(href, quote=True)}" '
                f'title="{html.escape(title, quote=True)}">{html.escape(ref.label)}</a>'
            )
        return "[" + "; ".join(parts) + "]"

    return citation_marker().sub(link, escaped)


def _verdict_line(document: NoteDocument) -> tuple[str, str]:
    rubric = document.check.rubric
    verdict = "PASS" if document.check.passed else "FAIL"
    summary = _labels(document.lang)["score"].format(
        score=f"{rubric.score:.2f}", pass_score=f"{rubric.pass_score:.2f}"
    )
    return verdict, summary


def _markdown_rubric(document: NoteDocument) -> str:
    verdict, summary = _verdict_line(document)
    words = _labels(document.lang)
    lines = [f"**{verdict}** — {summary}", ""]
    for row in document.check.rubric.rows:
        if not row.required and not row.present:
            continue
        if not row.present:
            lines.append(f"- ✗ {row.label}: {words['row_missing']}")
            continue
        found = ", ".join(c.label for c in row.concepts if c.found)
        missing = ", ".join(c.label for c in row.missing_concepts)
        line = f"- {'✓' if not missing else '✗'} {row.label}: {found or '—'}"
        lines.append(line + (" — " + words["missing"].format(missing=missing) if missing else ""))
    return "\n".join(lines)


def _html_rubric(document: NoteDocument) -> str:
    verdict, summary = _verdict_line(document)
    words = _labels(document.lang)
    items = []
    for row in document.check.rubric.rows:
        if not row.required and not row.present:
            continue
        if not row.present:
            label, why = html.escape(row.label), html.escape(words["row_missing"])
            items.append(f'<li class="missing">✗ {label}: {why}</li>')
            continue
        parts = [
            f'<span class="{"found" if c.found else "missing"}">{"✓" if c.found else "✗"} '
            f"{html.escape(c.label)}</span>"
            for c in row.concepts
        ]
        items.append(f"<li><strong>{html.escape(row.label)}</strong>: {', '.join(parts)}</li>")
    badge = f'<span class="verdict {verdict.lower()}">{verdict}</span>'
    listing = "\n".join(items)
    return f'<p>{badge} — {html.escape(summary)}</p>\n<ul class="rubric">\n{listing}\n</ul>'
