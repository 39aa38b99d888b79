"""`bench --trace`: a Mooncake-style trace (notes_cli.trace.format) as bench's workload, with
each request's block ids for the prompt maker (bench/prompts.py), so that the prompts sent share
text exactly where the trace's requests share blocks.

A block holds BLOCK_TOKENS words when the trace's blocks are Mooncake's (ceil(n / 512) blocks a
prompt); a recording cuts blocks by characters (trace/record.py), so there a block holds the
trace's own mean tokens per block, one size for every block so that a shared id is shared text.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from itertools import islice
from pathlib import Path

from notes_cli.bench.workload import ArrivalSpec, WorkItem, arrival_times_ms
from notes_cli.errors import UsageError
from notes_cli.trace.format import BLOCK_TOKENS, TraceRow, read_rows


@dataclass(frozen=True)
class TraceWorkload:
    items: tuple[WorkItem, ...]
    blocks: tuple[tuple[int, ...], ...]  # request i's block ids
    block_words: int


def trace_workload(
    path: Path, *, limit: int, rate: float | None, burstiness: float, seed: int
) -> TraceWorkload:
    """The first `limit` rows of `path`, at their own times (or drawn at `rate`)."""
    rows = list(islice(read_rows(path), limit))
    if not rows:
        raise UsageError(f"trace {path} has no requests")
    if rate is None:
        times = [row.timestamp for row in rows]
    else:
        draw = arrival_times_ms(
            ArrivalSpec(rate=rate, burstiness=burstiness), random.Random(seed + 0x9E3779B9)
        )
        times = [next(draw) for _ in rows]
    items = tuple(
        WorkItem(at, row.input_length, row.output_length)
        for at, row in zip(times, rows, strict=True)
    )
    return TraceWorkload(items, tuple(row.hash_ids for row in rows), block_words(rows))


def block_words(rows: list[TraceRow]) -> int:
    blocked = [row for row in rows if row.hash_ids]
    if all(len(row.hash_ids) == -(-row.input_length // BLOCK_TOKENS) for row in blocked):
        return BLOCK_TOKENS
    tokens = sum(row.input_length for row in blocked)
    return max(1, round(tokens / sum(len(row.hash_ids) for row in blocked)))
