"""JSON shapes for note results, shared by `notes check --json`, `notes generate --json` and
the JSON export, so a script sees the same fields everywhere."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from notes_cli.notes.check import NoteCheck
from notes_cli.notes.kits import Kit
from notes_cli.notes.rubric import RubricResult

if TYPE_CHECKING:
    from notes_cli.notes.documents import Document


def rubric_json(rubric: RubricResult) -> dict[str, Any]:
    return {
        "score": rubric.score,
        "pass_score": rubric.pass_score,
        "passed": rubric.passed,
        "missing_concepts": rubric.missing_concepts,
        "missing_rows": [r.label for r in rubric.missing_rows],
        "rows": [
            {
                "key": row.key,
                "label": row.label,
                "required": row.required,
                "present": row.present,
                "concepts": [
                    {"key": c.key, "label": c.label, "found": c.found, "matched": c.matched}
                    for c in row.concepts
                ],
            }
            for row in rubric.rows
        ],
    }


def check_json(check: NoteCheck, source: str) -> dict[str, Any]:
    """`pdnotes.notes.check/1`: verdict, the extracted table and the rubric for one answer."""
    table = check.extraction.table
    return {
        "schema": "pdnotes.notes.check/1",
        "ok": check.passed,
        "file": source,
        "kit": check.kit.name,
        "verdict": check.verdict,
        "detail": check.extraction.detail,
        "problems": check.problems(),
        "table": None
        if table is None
        else {
            "kind": table.kind,
            "header": list(table.header),
            "column_index": table.column_index,
            "rows": [list(r) for r in table.rows],
        },
        "missing_columns": list(check.extraction.missing_columns),
        "rubric": rubric_json(check.rubric),
        "grounded": check.grounded,
        "grounding": check.grounding.to_json() if check.grounding is not None else None,
    }


def kits_json(kits: list[Kit]) -> dict[str, Any]:
    """`pdnotes.notes.kits/1`: every kit with its origin, folder, languages and columns."""
    return {
        "schema": "pdnotes.notes.kits/1",
        "kits": [
            {
                "name": kit.name,
                "title": kit.title,
                "description": kit.description,
                "origin": kit.origin,
                "path": str(kit.path),
                "languages": list(kit.languages),
                "columns": [{"key": c.key, "zh": c.zh, "en": c.en} for c in kit.columns],
                "required_rows": [r.label for r in kit.rubric.rows if r.required],
            }
            for kit in kits
        ],
    }


def documents_json(found: list[Document]) -> dict[str, Any]:
    """`pdnotes.notes.sources/1`: what each source yields, before any budget applies."""
    return {
        "schema": "pdnotes.notes.sources/1",
        "sources": [
            {
                "source": doc.name,
                "kind": doc.kind,
                "title": doc.title,
                "pages": doc.page_count,
                "tokens": doc.tokens,
                "dropped": doc.dropped,
                "whole_page": doc.whole_page,
                "left_out": doc.left_out,
                "fetched": doc.fetched,
                "notes": list(doc.notes),
            }
            for doc in found
        ],
    }
