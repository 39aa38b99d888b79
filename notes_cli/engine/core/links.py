"""A KV-transfer link shared by concurrent transfers (processor sharing).

Each transfer first pays the link's fixed latency alpha, then joins the transfers in flight; the
link's effective bandwidth is split equally among them. A transfer of s bytes carries s +
half_bytes units of work, which reproduces the small-message penalty B_eff(s) of the cost model
when it runs alone. A node with several NICs moves each request's KV as `streams` shards in
parallel, one per rail (min(nics, the GPUs' limit the scheduler passes)): the channel then runs
at `streams` times one rail's rate and each transfer carries s + streams * half_bytes (every
shard is a message of its own), exactly s / streams + half_bytes on each rail. Completion times
are tracked with a "virtual work" counter, so starting or finishing a transfer costs O(log n)
rather than touching every transfer in flight.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable
from typing import Any

from notes_cli.engine.core.costmodel import layerwise_split_ms, link_bytes_per_ms
from notes_cli.engine.core.profiles import Link

Schedule = Callable[[float, Callable[[Any, float], None], Any], None]
_TOLERANCE_BYTES = 1.0  # plus a relative 1e-9: float error must never stall a transfer


class LinkChannel:
    """One direction of one link (a decode node's ingress)."""

    def __init__(
        self,
        name: str,
        profile: Link,
        schedule: Schedule,
        on_done: Callable[[Any, float], None],
        max_streams: int = 1,
    ) -> None:
        self.name = name
        self._schedule = schedule
        self._on_done = on_done
        self._active: list[tuple[float, int, Any]] = []
        self._seq = itertools.count()
        self._served = 0.0  # work each active transfer has received since the link was created
        self._last_ms = 0.0
        self._version = 0
        self.bytes_moved = 0
        self.transfers_done = 0
        self._max_streams = max(1, max_streams)  # the GPUs' limit; the profile's NICs cap it
        self.streams = 1
        self.use(profile, 0.0)

    def use(self, profile: Link, now_ms: float) -> None:
        """Switch the link profile (e.g. RDMA silently falling back to TCP) from `now_ms` on."""
        self._advance(now_ms)
        self.profile = profile
        self.streams = max(1, min(profile.nics, self._max_streams))
        self._rate = link_bytes_per_ms(profile) * self.streams
        self._reschedule(now_ms)

    @property
    def in_flight(self) -> int:
        return len(self._active)

    def start(self, item: Any, nbytes: int, now_ms: float, visible_ms: float | None = None) -> None:
        """Begin moving `nbytes` for `item`; `on_done(item, t)` fires when it has arrived.
        `visible_ms` (layer-wise transfer) is the link time left after the prefill, alone on
        the link; the rest of the bytes already moved while the prefill ran."""
        self.bytes_moved += nbytes
        work: float
        if visible_ms is None:
            work = nbytes + self.streams * self.profile.half_bytes
        else:
            work = visible_ms * self._rate
        self._schedule(now_ms + self.profile.alpha_ms, self._enter, (item, work))

    def layerwise_split_ms(
        self, nbytes: int, layers: int, prefill_ms: float
    ) -> tuple[float, float]:
        """costmodel.layerwise_split_ms on this link's current profile and streams."""
        return layerwise_split_ms(self.profile, nbytes, self.streams, layers, prefill_ms)

    def state(self) -> dict[str, Any]:
        """This link for GET /engine/state."""
        return {
            "name": self.name,
            "profile": self.profile.name,
            "in_flight": self.in_flight,
            "bytes_moved": self.bytes_moved,
            "transfers": self.transfers_done,
            "streams": self.streams,
        }

    def estimate_ms(self, nbytes: int, in_flight: int | None = None) -> float:
        """Expected time for a new transfer sharing the link with `in_flight` others
        (default: those moving bytes right now)."""
        share = (len(self._active) if in_flight is None else in_flight) + 1
        work = nbytes + self.streams * self.profile.half_bytes
        return self.profile.alpha_ms + work * share / self._rate

    def _enter(self, arg: tuple[Any, float], now_ms: float) -> None:
        item, work = arg
        self._advance(now_ms)
        heapq.heappush(self._active, (self._served + work, next(self._seq), item))
        self._reschedule(now_ms)

    def _advance(self, now_ms: float) -> None:
        if self._active and now_ms > self._last_ms:
            self._served += (now_ms - self._last_ms) * self._rate / len(self._active)
        self._last_ms = max(self._last_ms, now_ms)

    def _reschedule(self, now_ms: float) -> None:
        self._version += 1
        if self._active:
            remaining = self._active[0][0] - self._served
            at = now_ms + max(0.0, remaining) * len(self._active) / self._rate
            self._schedule(at, self._complete, self._version)

    def _complete(self, version: int, now_ms: float) -> None:
        if version != self._version:
            return  # superseded by a later start or finish
        self._advance(now_ms)
        done = []
        limit = self._served * (1 + 1e-9) + _TOLERANCE_BYTES
        while self._active and self._active[0][0] <= limit:
            done.append(heapq.heappop(self._active)[2])
        self._reschedule(now_ms)
        for item in done:
            self.transfers_done += 1
            self._on_done(item, now_ms)
