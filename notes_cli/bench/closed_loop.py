"""Fixed concurrency on a virtual clock: the next request arrives when an earlier one finishes.

An open-loop workload knows every arrival time in advance; a closed loop of C clients does not,
because a client sends again only when its previous answer is complete. The simulator pulls
requests lazily and, after yielding each finished record, reads the next request's
`arrival_ms` again before deciding what to do. So a `ClosedLoop` hands out `PendingRequest`s
whose arrival time stays +inf ("not yet") until a slot is free, and the runner frees a slot
for each record it receives, at that record's finish time (arrival + E2E) — which is the
simulator's current time, so the request is admitted right then.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Iterable, Iterator
from typing import Any

from notes_cli.bench.workload import WorkItem


class PendingRequest:
    """A request whose arrival is fixed the first time it is read while a slot is free."""

    __slots__ = ("_arrival", "_loop", "input_tokens", "output_tokens")

    def __init__(self, loop: ClosedLoop, input_tokens: int, output_tokens: int) -> None:
        self._loop = loop
        self._arrival: float | None = None
        self.input_tokens = input_tokens
        self.output_tokens = output_tokens

    @property
    def arrival_ms(self) -> float:
        if self._arrival is None:
            slot = self._loop.take_slot()
            if slot is None:
                return math.inf
            self._arrival = slot
        return self._arrival


class ClosedLoop:
    """`concurrency` clients sending `items` (their lengths; arrival times are ignored)."""

    def __init__(self, items: Iterable[WorkItem], concurrency: int) -> None:
        if concurrency < 1:
            raise ValueError("concurrency must be at least 1")
        self._items = items
        self._free: deque[float] = deque([0.0] * concurrency)

    def take_slot(self) -> float | None:
        return self._free.popleft() if self._free else None

    def requests(self) -> Iterator[PendingRequest]:
        for item in self._items:
            yield PendingRequest(self, item.input_tokens, item.output_tokens)

    def finished(self, record: Any) -> None:
        """Free the finished request's slot at its finish time."""
        if math.isinf(record.arrival_ms):
            raise RuntimeError(
                "the simulator admitted a closed-loop request before a slot was free"
            )
        self._free.append(record.arrival_ms + record.e2e_ms)
