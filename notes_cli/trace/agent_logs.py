"""`pdnotes trace import`: the clients' own session logs as a trace, without text.

Each client reads its own logs, in its folder (`Client.session_logs`).
Each call's `delay` is the think time from its session's previous answer's end to its sending.

Only those counts and times are read; no text leaves the logs. The logs hold no block hashes,
so reuse is rebuilt from the cache reads (synthetic `hash_ids`): a request's first
floor(cached / 512) blocks are the leading blocks of the session's previous request (of the
client's previous request, for a session's first call: its cached system prompt and tools came
from another session), and its other blocks are new ids. A replay then finds exactly the prefix
the provider's cache served.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, date, datetime
from pathlib import Path

from notes_cli.errors import InputError
from notes_cli.trace.format import BLOCK_TOKENS, TraceRow
from notes_cli.trace.record import BlockHasher

MAX_LOG_LINE_BYTES = 64 * 1024 * 1024  # a line holds a whole tool output (a file read in full)
MAX_FILES = 100_000


@dataclass(frozen=True)
class Call:
    """One model call found in a log: when it was sent and when its answer ended, in which
    session, and its token counts."""

    at_ms: float  # sent, Unix time in ms
    ended_ms: float  # its answer logged in full
    session: str
    input_tokens: int
    output_tokens: int
    cached_tokens: int
    client: str


def to_rows(
    calls: Iterable[Call],
    *,
    since: date | None = None,
    until: date | None = None,
    hasher: BlockHasher | None = None,
) -> list[TraceRow]:
    """The calls between `since` and `until` (UTC dates, both included) as trace rows in time
    order, with session ids hashed and synthetic hash_ids (module docstring)."""
    hasher = hasher or BlockHasher()
    chosen = sorted(
        (c for c in calls if c.input_tokens > 0 and _within(c.at_ms, since, until)),
        key=lambda c: (c.at_ms, c.session),
    )
    if not chosen:
        return []
    start = chosen[0].at_ms
    previous: dict[str, tuple[int, ...]] = {}  # session → its last call's blocks
    ended: dict[str, float] = {}  # session → when its last call's answer ended
    last_of_client: dict[str, tuple[int, ...]] = {}
    turns: dict[str, int] = {}
    next_id = 0
    rows = []
    for call in chosen:
        before = previous.get(call.session, last_of_client.get(call.client, ()))
        blocks = -(-call.input_tokens // BLOCK_TOKENS)
        cached = min(call.cached_tokens, call.input_tokens)
        reused = min(cached // BLOCK_TOKENS, len(before), blocks)
        fresh = blocks - reused
        ids = before[:reused] + tuple(range(next_id, next_id + fresh))
        next_id += fresh
        previous[call.session] = last_of_client[call.client] = ids
        turns[call.session] = turn = turns.get(call.session, 0) + 1
        answered = ended.get(call.session)
        delay = None if answered is None or answered > call.at_ms else call.at_ms - answered
        ended[call.session] = call.ended_ms
        rows.append(
            TraceRow(
                round(call.at_ms - start, 3),
                call.input_tokens,
                max(1, call.output_tokens),
                ids,
                hasher.secret_id(f"{call.client}:{call.session}".encode()),
                turn,
                cached,
                None if delay is None else round(delay, 3),
            )
        )
    return rows


def _within(at_ms: float, since: date | None, until: date | None) -> bool:
    day = datetime.fromtimestamp(at_ms / 1000.0, tz=UTC).date()
    return (since is None or day >= since) and (until is None or day <= until)


def log_files(root: Path, pattern: str) -> list[Path]:
    if not root.is_dir():
        raise InputError(f"{root} is not a folder of session logs")
    found = []
    for path in sorted(root.rglob(pattern)):
        if path.is_file():
            found.append(path)
            if len(found) > MAX_FILES:
                raise InputError(f"{root}: more than {MAX_FILES:,} log files; choose a folder")
    return found


def log_lines(path: Path) -> Iterator[tuple[str, dict[str, object]]]:
    """(where, object) per line; a line that is not a JSON object is skipped (a client killed
    mid-write leaves a torn last line), an undecodable file is an input error."""
    try:
        handle = path.open(encoding="utf-8")
    except OSError as exc:
        raise InputError(f"cannot read {path}: {exc.strerror}") from exc
    from notes_cli.fileio import text_lines

    with handle:
        for number, line in text_lines(path, handle, MAX_LOG_LINE_BYTES):
            try:
                value = json.loads(line)
            except json.JSONDecodeError:
                continue
            if isinstance(value, dict):
                yield f"{path}:{number}", value


def log_tokens(usage: dict[str, object], name: str, where: str) -> int:
    value = usage.get(name, 0)
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise InputError(f"{where}: usage {name} is not a token count: {value!r}")
    return value


def log_time(value: object, where: str) -> float:
    if not isinstance(value, str):
        raise InputError(f"{where}: a model call without a timestamp")
    try:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise InputError(f"{where}: timestamp {value[:40]!r} is not ISO 8601") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.timestamp() * 1000.0
