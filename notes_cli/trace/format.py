"""The trace format: Mooncake-style JSON Lines, one request per line.

    {"timestamp": 0, "input_length": 6955, "output_length": 52, "hash_ids": [0, 1, 2],
     "session_id": "a1", "turn": 1, "cached_tokens": 0}
    {"timestamp": 4200, "input_length": 7400, "output_length": 40, "hash_ids": [0, 1, 2, 3],
     "session_id": "a1", "turn": 2, "delay": 1500}

`timestamp` is the arrival in ms from the trace's start; `hash_ids` names the prompt's blocks of
BLOCK_TOKENS tokens (Mooncake's convention: a block's id depends on its whole prefix, so two
prompts share a block id only when they share everything up to and including that block; the
last block may be partial). `session_id`, `turn` and `cached_tokens` (the cached prefix the
upstream reported) are optional additions; aiperf's and SGLang's Mooncake readers ignore them.
`delay` (aiperf's multi-turn field) is the think time in ms between the session's previous
answer ending and this turn's arrival; a replay in session order (session_order.py) keeps it.

Reading is strict and streaming: a line at a time, each at most MAX_LINE_BYTES, every field
checked, an error names the file and line.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from notes_cli.errors import InputError

BLOCK_TOKENS = 512  # Mooncake's block size (its published traces use 512-token blocks)
MAX_LINE_BYTES = 4 * 1024 * 1024  # a 2M-token prompt's hash_ids fit many times over
MAX_HASH_IDS = 1 << 16
MAX_ID_CHARS = 200


@dataclass(frozen=True)
class TraceRow:
    """One request of a trace."""

    timestamp: float  # ms since the trace's start
    input_length: int
    output_length: int
    hash_ids: tuple[int, ...] = ()
    session_id: str | None = None
    turn: int | None = None
    cached_tokens: int | None = None
    delay: float | None = None  # ms from the session's previous answer to this arrival

    def to_json(self) -> dict[str, Any]:
        stamp = int(self.timestamp) if float(self.timestamp).is_integer() else self.timestamp
        data: dict[str, Any] = {
            "timestamp": stamp,
            "input_length": self.input_length,
            "output_length": self.output_length,
            "hash_ids": list(self.hash_ids),
        }
        if self.session_id is not None:
            data["session_id"] = self.session_id
        if self.turn is not None:
            data["turn"] = self.turn
        if self.cached_tokens is not None:
            data["cached_tokens"] = self.cached_tokens
        if self.delay is not None:
            data["delay"] = int(self.delay) if float(self.delay).is_integer() else self.delay
        return data


def dumps(row: TraceRow) -> str:
    """One trace line, newline included."""
    return json.dumps(row.to_json(), separators=(", ", ": ")) + "\n"


def render_rows(rows: Iterable[TraceRow]) -> str:
    return "".join(dumps(row) for row in rows)


def read_rows(path: Path) -> Iterator[TraceRow]:
    """The rows of a trace file, lazily. Raises InputError naming the line for anything that is
    not a trace row, and for timestamps that go backwards."""
    from notes_cli.fileio import text_lines

    last = 0.0
    with open_trace(path) as handle:
        for number, line in text_lines(path, handle, MAX_LINE_BYTES):
            where = f"{path}:{number}"
            try:
                value = json.loads(line)
            except json.JSONDecodeError as exc:
                raise InputError(f"{where}: not JSON ({exc.msg})", fix=_FIX) from exc
            row = parse_row(value, where)
            if row.timestamp < last:
                raise InputError(f"{where}: timestamp goes backwards; sort the trace")
            last = row.timestamp
            yield row


def open_trace(path: Path) -> TextIO:
    """`path` open for reading, if it is a regular file (a FIFO or a device would hang or
    never end: fileio.require_regular refuses them)."""
    from notes_cli.fileio import require_regular

    try:
        require_regular(path, os.stat(path))
        return path.open(encoding="utf-8")
    except OSError as exc:
        raise InputError(f"cannot read trace {path}: {exc.strerror}") from exc


_FIX = (
    'one JSON object per line, e.g. {"timestamp": 0, "input_length": 512, "output_length": 64, '
    '"hash_ids": [0]}'
)


def parse_row(value: object, where: str) -> TraceRow:
    if not isinstance(value, dict):
        raise InputError(f"{where}: expected a JSON object per line", fix=_FIX)
    stamp = value.get("timestamp")
    if isinstance(stamp, bool) or not isinstance(stamp, int | float) or not stamp >= 0:
        raise InputError(f"{where}: timestamp must be a non-negative number of ms", fix=_FIX)
    n_in = _count(value, "input_length", where, low=1)
    n_out = _count(value, "output_length", where, low=1)
    hashes = value.get("hash_ids", [])
    if not isinstance(hashes, list) or len(hashes) > MAX_HASH_IDS:
        raise InputError(f"{where}: hash_ids must be a list of at most {MAX_HASH_IDS} integers")
    for item in hashes:
        if isinstance(item, bool) or not isinstance(item, int) or item < 0:
            raise InputError(f"{where}: hash_ids must hold non-negative integers, got {item!r}")
    session = value.get("session_id")
    if session is not None and (not isinstance(session, str | int) or isinstance(session, bool)):
        raise InputError(f"{where}: session_id must be a string")
    if session is not None and len(str(session)) > MAX_ID_CHARS:
        raise InputError(f"{where}: session_id longer than {MAX_ID_CHARS} characters")
    turn = _count(value, "turn", where, low=1, optional=True)
    cached = _count(value, "cached_tokens", where, low=0, optional=True)
    delay = value.get("delay")
    if delay is not None and (
        isinstance(delay, bool) or not isinstance(delay, int | float) or not 0 <= delay < 1e12
    ):
        raise InputError(f"{where}: delay must be a non-negative number of ms, got {delay!r}")
    return TraceRow(
        float(stamp),
        n_in,
        n_out,
        tuple(hashes),
        None if session is None else str(session),
        turn,
        cached,
        None if delay is None else float(delay),
    )


def _count(row: dict[str, Any], name: str, where: str, *, low: int, optional: bool = False) -> Any:
    value = row.get(name)
    if value is None and optional:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise InputError(f"{where}: {name} must be an integer of at least {low}, got {value!r}")
    return value
