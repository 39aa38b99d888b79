"""Recording traffic as a trace, without its text (`bridge serve --record`, `engine serve
--record`).

Per request the file gets: the session (a salted hash of the client's own session header, never
the header's value), the turn within it, the arrival time, the think time since the session's
previous answer ended (`delay`; none for a turn sent before it ended), the upstream's input,
output and cached-prefix token counts, and the prompt's block ids. Nothing else of the request
or the answer is kept.

Block ids follow Mooncake's `hash_ids`: the prompt (its tools, then each message, in order) is
cut into blocks of BLOCK_CHARS characters (about BLOCK_TOKENS tokens at 4 characters a token;
the bridge has no tokenizer), each block hashed with BLAKE2b together with the previous block's
hash and a random salt made for this recording and never written, so a block's id depends on
its whole prefix and two prompts share an id exactly when they share that prefix. Each new hash
gets the next small integer (Mooncake's numbering); the file holds those integers only, so
neither the text nor its hashes can be recovered or checked against a guess.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO

from notes_cli.trace.format import BLOCK_TOKENS, TraceRow, dumps

if TYPE_CHECKING:
    from notes_cli.wire.turn import Message, Turn

BLOCK_CHARS = BLOCK_TOKENS * 4
MAX_KNOWN_BLOCKS = 1 << 20  # block hashes kept for numbering (past this, the oldest forgotten)
MAX_KNOWN_SESSIONS = 1 << 16
# The headers clients name their session in, first match wins: Claude Code's, Codex's (0.171
# sends `session-id`; older releases `session_id` / `conversation_id`), OpenCode's.
SESSION_HEADERS = (
    b"x-claude-code-session-id",
    b"session-id",
    b"session_id",
    b"conversation_id",
    b"x-session-id",
)


class BlockHasher:
    """Salted, chained block ids for one recording."""

    def __init__(self, salt: bytes | None = None, block_chars: int = BLOCK_CHARS) -> None:
        self._salt = salt if salt is not None else os.urandom(32)
        self.block_chars = block_chars
        self._ids: OrderedDict[bytes, int] = OrderedDict()
        self._next = 0

    def hash_ids(self, pieces: Iterable[str]) -> list[int]:
        text = "".join(pieces)
        ids = []
        previous = b""
        for start in range(0, len(text), self.block_chars):
            block = text[start : start + self.block_chars].encode("utf-8", "surrogatepass")
            previous = hashlib.blake2b(previous + block, key=self._salt, digest_size=16).digest()
            ids.append(self._number(previous))
        return ids

    def secret_id(self, value: bytes) -> str:
        """A session header's value as a short salted hash (the value itself is never kept)."""
        return hashlib.blake2b(value, key=self._salt, digest_size=6, person=b"session").hexdigest()

    def _number(self, digest: bytes) -> int:
        known = self._ids
        number = known.get(digest)
        if number is not None:
            known.move_to_end(digest)
            return number
        number = known[digest] = self._next
        self._next += 1
        if len(known) > MAX_KNOWN_BLOCKS:
            known.popitem(last=False)
        return number


class TraceRecorder:
    """Writes one trace row per finished request to a new file (fileio.create_new), in order of
    arrival: a request that finishes before an earlier one waits for it (`begin` numbers the
    arrivals, `finish` or `drop` ends each). Safe from the engine's worker threads and the
    bridge's event loop alike."""

    def __init__(
        self,
        handle: BinaryIO,
        *,
        hasher: BlockHasher | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._handle = handle
        self._hasher = hasher or BlockHasher()
        self._clock = clock
        self._start: float | None = None  # the first arrival: the trace's time 0
        # session → (turns so far, when its last answer ended in ms), the oldest forgotten
        self._turns: OrderedDict[str, tuple[int, float]] = OrderedDict()
        self._lock = threading.Lock()
        self._issued = 0  # arrivals numbered so far
        self._written = 0  # the arrival whose row is written next
        self._done: dict[int, TraceRow | None] = {}  # finished, waiting for earlier arrivals
        self.rows = 0

    @classmethod
    def create(cls, path: Path) -> TraceRecorder:
        from notes_cli.fileio import create_new

        return cls(create_new(path))

    def begin(self) -> tuple[int, float]:
        """A request arrived: its ticket (arrival number, ms since the first arrival)."""
        with self._lock:
            now = self._clock()
            if self._start is None:
                self._start = now
            ticket = (self._issued, round((now - self._start) * 1000.0, 3))
            self._issued += 1
            return ticket

    def session(self, headers: Iterable[tuple[bytes, bytes]]) -> str | None:
        """The salted id of the client's session header, if it sent one."""
        found = {name.lower(): value for name, value in headers}
        for name in SESSION_HEADERS:
            value = found.get(name)
            if value:
                return self._hasher.secret_id(value)
        return None

    def finish(
        self,
        ticket: tuple[int, float],
        *,
        session: str | None,
        prompt: Iterable[str],
        input_tokens: int,
        output_tokens: int,
        cached_tokens: int | None,
    ) -> None:
        hash_ids = self._hasher.hash_ids(prompt)
        with self._lock:
            turn = delay = None
            if session is not None:
                ended = round((self._clock() - (self._start or 0.0)) * 1000.0, 3)
                before, answered = self._turns.pop(session, (0, None))
                turn = before + 1
                if answered is not None and answered <= ticket[1]:
                    delay = round(ticket[1] - answered, 3)  # think time after the last answer
                self._turns[session] = (turn, ended)
                if len(self._turns) > MAX_KNOWN_SESSIONS:
                    self._turns.popitem(last=False)
            row = TraceRow(
                ticket[1],
                max(1, input_tokens),
                max(1, output_tokens),
                tuple(hash_ids),
                session,
                turn,
                cached_tokens,
                delay,
            )
            self._settle(ticket[0], row)

    def drop(self, ticket: tuple[int, float]) -> None:
        """The request failed: no row, but later arrivals need not wait for it."""
        with self._lock:
            self._settle(ticket[0], None)

    def _settle(self, number: int, row: TraceRow | None) -> None:
        self._done[number] = row
        while self._written in self._done:
            ready = self._done.pop(self._written)
            self._written += 1
            if ready is not None:
                self._handle.write(dumps(ready).encode())
                self.rows += 1

    def close(self) -> None:
        """Write what finished (in arrival order, skipping requests still open) and close."""
        with self._lock:
            for number in sorted(self._done):
                ready = self._done[number]
                if ready is not None:
                    self._handle.write(dumps(ready).encode())
            self._done.clear()
            self._handle.close()


def prompt_pieces(turn: Turn, message_text: Callable[[Message], str]) -> Iterator[str]:
    """The prompt in the order a prefix cache sees it: the tools, then each message (its role
    and `message_text`, the engine's reading of it: engine.core.prompt)."""
    for tool in turn.tools:
        schema = json.dumps(tool.parameters, sort_keys=True) if tool.parameters else ""
        yield f"tool {tool.kind} {tool.name}\n{tool.description}\n{schema}\n"
    for message in turn.messages:
        yield f"{message.role}\n{message_text(message)}\n"
