"""A trace replayed in session order on a virtual clock: a turn waits for its session's previous
answer, then for the recorded think time (`delay`, 0 when not recorded), and never arrives
before its recorded timestamp: arrival = max(timestamp, previous answer's end + delay). So a
deployment that answers slower than the recording pushes each session's later turns later, as
a real agent would send them; one that answers faster keeps the recorded pace. Rows without a
`session_id` arrive at their timestamp.

Like bench/closed_loop.py, the arrival times are not known in advance: the simulator pulls one
request at a time and reads its `arrival_ms` again after each finished record, which the runner
hands back through `finished`. The request it is handed is a stand-in for "the next arrival":
its `arrival_ms` is the earliest turn ready to go (+inf while every remaining turn waits for an
answer), and reading its `input_tokens` commits it to that turn (the simulator reads the
lengths only once it admits the request). Records are matched to turns by the simulator's
request ids, which number the admitted requests from 0.
"""

from __future__ import annotations

import heapq
import math
from collections import deque
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from notes_cli.trace.format import TraceRow


class SessionOrder:
    """The rows of a trace (in timestamp order) as session-ordered arrivals."""

    def __init__(self, rows: Iterable[TraceRow]) -> None:
        self._rows = iter(rows)
        self._lookahead: TraceRow | None = next(self._rows, None)
        self._ready: list[tuple[float, int, TraceRow]] = []  # (arrival, file order, row)
        self._order = 0
        self._waiting: dict[str, deque[TraceRow]] = {}  # behind a turn not yet answered
        self._open: dict[str, int] = {}  # a session's turns placed and not yet answered
        self._ended: dict[str, float] = {}  # when each session's last answer ended
        self._admitted: dict[int, str | None] = {}  # session of each request in flight, by id
        self._taken = 0
        self._waiting_rows = 0

    def requests(self) -> Iterator[NextTurn]:
        while self._lookahead is not None or self._ready or self._waiting_rows:
            turn = NextTurn(self)
            yield turn
            if not turn.taken:
                return  # the simulator stopped pulling

    def finished(self, record: Any) -> None:
        """The admitted request `record.request_id` was answered at arrival + E2E: its session's
        next turn, if one waits, is ready after the recorded think time."""
        session = self._admitted.pop(int(record.request_id))
        if session is None:
            return
        end = record.arrival_ms + record.e2e_ms
        self._ended[session] = end
        self._open[session] -= 1
        queue = self._waiting.get(session)
        if queue:
            row = queue.popleft()
            self._waiting_rows -= 1
            if not queue:
                del self._waiting[session]
            self._push(self._after(row, end), row)
        elif not self._open[session]:
            del self._open[session]

    def next_arrival(self) -> float:
        """The earliest ready turn's arrival (+inf while all remaining turns wait)."""
        self._place_due()
        return self._ready[0][0] if self._ready else math.inf

    def take(self) -> TraceRow:
        self._place_due()
        _, _, row = heapq.heappop(self._ready)
        self._admitted[self._taken] = row.session_id
        self._taken += 1
        return row

    def _place_due(self) -> None:
        """Place the trace's rows up to the earliest ready arrival (a row arrives no earlier
        than its timestamp, so later rows cannot come first)."""
        while self._lookahead is not None and (
            not self._ready or self._lookahead.timestamp <= self._ready[0][0]
        ):
            row, self._lookahead = self._lookahead, next(self._rows, None)
            session = row.session_id
            if session is None:
                self._push(row.timestamp, row)
            elif self._open.get(session):
                self._waiting.setdefault(session, deque()).append(row)
                self._waiting_rows += 1
                self._open[session] += 1
            else:
                self._open[session] = 1
                ended = self._ended.get(session)
                self._push(row.timestamp if ended is None else self._after(row, ended), row)

    @staticmethod
    def _after(row: TraceRow, ended: float) -> float:
        """A turn's arrival after its session's previous answer ended at `ended`."""
        return max(row.timestamp, ended + (row.delay or 0.0))

    def _push(self, arrival: float, row: TraceRow) -> None:
        heapq.heappush(self._ready, (arrival, self._order, row))
        self._order += 1


class NextTurn:
    """The simulator's next request: see the module docstring."""

    __slots__ = ("_arrival", "_order", "_row")

    def __init__(self, order: SessionOrder) -> None:
        self._order = order
        self._row: TraceRow | None = None
        self._arrival = math.inf

    @property
    def taken(self) -> bool:
        return self._row is not None

    @property
    def arrival_ms(self) -> float:
        if self._row is not None:
            return self._arrival
        return self._order.next_arrival()

    @property
    def input_tokens(self) -> int:
        if self._row is None:
            self._arrival = self._order.next_arrival()
            self._row = self._order.take()
        return self._row.input_length

    @property
    def output_tokens(self) -> int:
        assert self._row is not None, "the simulator reads input_tokens first"
        return self._row.output_length


def has_sessions(trace: Path) -> bool:
    """Whether `trace` is a trace in this format whose first row names its session (other
    traces, and rows without sessions, keep their timestamps)."""
    from notes_cli.errors import InputError
    from notes_cli.trace.format import read_rows

    try:
        first = next(read_rows(trace), None)
    except InputError:
        return False  # the trace reader says what is wrong with it
    return first is not None and first.session_id is not None
