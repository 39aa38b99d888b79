"""`pdnotes bench --records FILE`: one row per request, as JSON Lines (`.jsonl`, `.json`) or CSV
(`.csv`); the schema is in docs/simulate-bench.md, "Per-request records". The summary's
percentiles are numpy's over exactly these rows: TTFT, TPOT and E2E over the `ok` rows (TPOT
where it is not null), ITL over every `itl_ms` entry of the `ok` rows pooled."""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence
from pathlib import Path

import msgspec

from notes_cli.bench.client import RequestRecord
from notes_cli.errors import UsageError

SCHEMA = "pdnotes.bench.record/1"
FORMATS = {".jsonl": "jsonl", ".json": "jsonl", ".ndjson": "jsonl", ".csv": "csv"}


def records_format(path: Path) -> str:
    """jsonl or csv, from the file name; a usage error for anything else (checked before the
    run, so a typo does not cost a benchmark)."""
    kind = FORMATS.get(path.suffix.lower())
    if kind is None:
        raise UsageError(
            f"--records {path}: name it .jsonl (JSON Lines) or .csv", fix="e.g. --records run.jsonl"
        )
    return kind


def render_records(records: Sequence[RequestRecord], kind: str) -> str:
    """The file's text: JSON Lines (one object per request, `schema` first) or CSV (a header
    row, then one row per request; `itl_ms` is a JSON array in its cell)."""
    # msgspec, not json.dumps: 3.4 µs a record against 52 µs (63 ITLs, timeit), which was a
    # fifth of bench's CPU per request over the bench before records (benchmarks/bench_client).
    encode = msgspec.json.encode
    if kind == "jsonl":
        return "".join(
            encode({"schema": SCHEMA, **record._asdict()}).decode() + "\n" for record in records
        )
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(RequestRecord._fields)
    for record in records:
        writer.writerow(
            encode(value).decode() if name == "itl_ms" else "" if value is None else value
            for name, value in zip(RequestRecord._fields, record, strict=True)
        )
    return buffer.getvalue()


META_SCHEMA = "pdnotes.bench.meta/1"


def meta_path(path: Path) -> Path:
    """`run.c2.jsonl` → `run.c2.jsonl.meta.json`: what the records were measured against."""
    return path.with_name(path.name + ".meta.json")


def write_meta(path: Path, meta: dict[str, object]) -> Path:
    """The run's provenance beside its records (endpoint with any key masked, model, load,
    lengths, start time): `pdnotes engine calibrate` reads it into what it fits."""
    import json

    from notes_cli import fileio

    document = {"schema": META_SCHEMA, **meta}
    return fileio.atomic_write(meta_path(path), json.dumps(document, indent=1) + "\n")


def write_records(path: Path, records: Sequence[RequestRecord]) -> Path:
    from notes_cli import fileio

    ordered = sorted(records, key=lambda record: record.request)
    return fileio.atomic_write(path, render_records(ordered, records_format(path)))
