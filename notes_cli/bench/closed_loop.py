"""Fixed concurrency on a virtual clock: the next request arrives when an earlier one finishes.

An open-loop workload knows every arrival time in advance; a closed loop of C clients does not,
because a client sends again only when its previous answer is complete. The simulator pulls
requests lazily and, after yielding each finished record, reads the next request's
`arrival_ms` again before deciding what to do. So a `ClosedLoop` hands out `PendingRequest`s
whose arrival time stays +inf ("not yet") until a slot is free, and the runner frees a slot
for each record it receives, at that record's finish time (arrival + E2E) — which is the
simulator's current time, so the request is admitted right then.

Clients may also start at given times (`starts`, one per client) instead of all at t = 0. A
request then reads the earliest free slot each time it is asked, and takes it only when the
simulator asks for the request after it (it reads the next request only after admitting this
one): an answer that finishes before a later client's start frees a slot that the waiting
request takes instead, so arrivals reach the simulator in time order.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from notes_cli.bench.workload import WorkItem


class PendingRequest:
    """A request whose arrival is the earliest free slot until the request after it is read;
    then that slot is its own (`fix`)."""

    __slots__ = ("_arrival", "_loop", "input_tokens", "output_tokens")

    def __init__(self, loop: ClosedLoop, input_tokens: int, output_tokens: int) -> None:
        self._loop = loop
        self._arrival: float | None = None
        self.input_tokens = input_tokens
        self.output_tokens = output_tokens

    @property
    def arrival_ms(self) -> float:
        return self._loop.earliest_slot() if self._arrival is None else self._arrival

    def fix(self) -> None:
        """Take the slot this request was admitted at (the simulator has moved past it)."""
        if self._arrival is None:
            self._arrival = self._loop.take_slot()


class ClosedLoop:
    """`concurrency` clients sending `items` (their lengths; arrival times are ignored), all
    starting at t = 0, or at `starts` (one time per client)."""

    def __init__(
        self,
        items: Iterable[WorkItem],
        concurrency: int,
        starts: Sequence[float] | None = None,
    ) -> None:
        if concurrency < 1:
            raise ValueError("concurrency must be at least 1")
        if starts is not None and len(starts) != concurrency:
            raise ValueError(f"{len(starts)} start times for {concurrency} clients")
        self._items = items
        self._free: list[float] = sorted(starts) if starts is not None else [0.0] * concurrency

    def earliest_slot(self) -> float:
        return self._free[0] if self._free else math.inf

    def take_slot(self) -> float:
        if not self._free:
            raise RuntimeError(
                "the simulator admitted a closed-loop request before a slot was free"
            )
        return heapq.heappop(self._free)

    def requests(self) -> Iterator[PendingRequest]:
        current: PendingRequest | None = None
        for item in self._items:
            if current is not None:
                current.fix()
            current = PendingRequest(self, item.input_tokens, item.output_tokens)
            yield current
        if current is not None:
            current.fix()

    def finished(self, record: Any) -> None:
        """Free the finished request's slot at its finish time."""
        if math.isinf(record.arrival_ms):
            raise RuntimeError(
                "the simulator admitted a closed-loop request before a slot was free"
            )
        heapq.heappush(self._free, record.arrival_ms + record.e2e_ms)


def spread_starts(cycle_ms: float, clients: int) -> list[float]:
    """Start times that spread `clients` evenly over one request's cycle (`cycle_ms`, the mean
    time from a request's arrival to its last token): the clients of a measured closed loop
    after its first round. A deterministic simulation keeps clients that started together in
    step for the whole run; a measured loop drifts apart (docs/validation.md, round seven)."""
    return [i * cycle_ms / clients for i in range(clients)]
