"""`pdnotes trace import`: Claude Code's and Codex's own session logs as a trace, without text.

Claude Code writes `$CLAUDE_CONFIG_DIR/projects/<project>/<session>.jsonl`: one line per event;
an `assistant` line carries `message.usage` (`input_tokens`, `cache_creation_input_tokens`,
`cache_read_input_tokens`, `output_tokens`) and a `timestamp`; one API answer may span several
lines with the same `message.id`, counted once. The prompt was input + cache creation + cache
read tokens, of which the cache read was served from the prefix cache.

Codex writes `$CODEX_HOME/sessions/YYYY/MM/DD/rollout-*.jsonl`: a `session_meta` line (its
`payload.id` the session), and per model call an `event_msg` whose `payload.type` is
`token_count` with `payload.info.last_token_usage` (`input_tokens`, the cached part included as
in OpenAI's usage, `cached_input_tokens`, `output_tokens`); `info` is null on rate-limit-only
events, and a repeated event (same running total) is counted once.

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
    """One model call found in a log: when, in which session, and its token counts."""

    at_ms: float  # Unix time, ms
    session: str
    input_tokens: int
    output_tokens: int
    cached_tokens: int
    client: str


def claude_calls(folder: Path) -> Iterator[Call]:
    """Every model call of the Claude Code session logs under `folder` (its `projects/`, or a
    folder of session files itself)."""
    root = folder / "projects" if (folder / "projects").is_dir() else folder
    for path in _files(root, "*.jsonl"):
        seen: set[str] = set()
        for where, row in _lines(path):
            message = row.get("message")
            if row.get("type") != "assistant" or not isinstance(message, dict):
                continue
            usage = message.get("usage")
            if not isinstance(usage, dict):
                continue
            key = f"{message.get('id')}/{row.get('requestId')}"
            if key in seen:
                continue  # one answer, several lines (a line per content block)
            seen.add(key)
            fresh = _tokens(usage, "input_tokens", where)
            written = _tokens(usage, "cache_creation_input_tokens", where)
            read = _tokens(usage, "cache_read_input_tokens", where)
            session = str(row.get("sessionId") or path.stem)
            if row.get("isSidechain"):
                session += "/" + str(row.get("agentId") or "sidechain")
            yield Call(
                _time(row.get("timestamp"), where),
                session,
                fresh + written + read,
                _tokens(usage, "output_tokens", where),
                read,
                "claude",
            )


def codex_calls(folder: Path) -> Iterator[Call]:
    """Every model call of the Codex rollouts under `folder` (its `sessions/`, or a folder of
    rollout files itself)."""
    root = folder / "sessions" if (folder / "sessions").is_dir() else folder
    for path in _files(root, "rollout-*.jsonl"):
        session = path.stem
        last_total: object = None
        for where, row in _lines(path):
            payload = row.get("payload")
            if not isinstance(payload, dict):
                continue
            if row.get("type") == "session_meta" and payload.get("id"):
                session = str(payload["id"])
                continue
            if row.get("type") != "event_msg" or payload.get("type") != "token_count":
                continue
            info = payload.get("info")
            if not isinstance(info, dict) or not isinstance(info.get("last_token_usage"), dict):
                continue  # a rate-limit-only event
            total = info.get("total_token_usage")
            if total is not None and total == last_total:
                continue  # the same call reported twice
            last_total = total
            usage = info["last_token_usage"]
            yield Call(
                _time(row.get("timestamp"), where),
                session,
                _tokens(usage, "input_tokens", where),
                _tokens(usage, "output_tokens", where),
                _tokens(usage, "cached_input_tokens", where),
                "codex",
            )


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
        rows.append(
            TraceRow(
                round(call.at_ms - start, 3),
                call.input_tokens,
                max(1, call.output_tokens),
                ids,
                hasher.secret_id(f"{call.client}:{call.session}".encode()),
                turn,
                cached,
            )
        )
    return rows


def _within(at_ms: float, since: date | None, until: date | None) -> bool:
    day = datetime.fromtimestamp(at_ms / 1000.0, tz=UTC).date()
    return (since is None or day >= since) and (until is None or day <= until)


def _files(root: Path, pattern: str) -> list[Path]:
    if not root.is_dir():
        raise InputError(f"{root} is not a folder of session logs")
    found = []
    for path in sorted(root.rglob(pattern)):
        if path.is_file():
            found.append(path)
            if len(found) > MAX_FILES:
                raise InputError(f"{root}: more than {MAX_FILES:,} log files; choose a folder")
    return found


def _lines(path: Path) -> Iterator[tuple[str, dict[str, object]]]:
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


def _tokens(usage: dict[str, object], name: str, where: str) -> int:
    value = usage.get(name, 0)
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise InputError(f"{where}: usage {name} is not a token count: {value!r}")
    return value


def _time(value: object, where: str) -> float:
    if not isinstance(value, str):
        raise InputError(f"{where}: a model call without a timestamp")
    try:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise InputError(f"{where}: timestamp {value[:40]!r} is not ISO 8601") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.timestamp() * 1000.0
