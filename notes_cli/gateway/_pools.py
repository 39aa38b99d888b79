"""Small httpx connection pools for many concurrent streams.

httpcore's pool re-scans its connections, once for every idle one, whenever a request starts or
finishes (encode/httpcore#1035, fixed upstream only in forks so far). At 64 open connections
that costs about 0.3 ms per scan, and one scan sits between "send" and the request's first
byte, so it lands in every measured TTFT. `Pools` keeps each httpx client at a few connections
and opens another client only when the busy ones are full, so a scan stays short, and a
request reuses an idle connection while one exists.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable, Iterator

import httpx

CONNECTIONS_PER_POOL = 4


class Pools:
    """httpx AsyncClients of at most `CONNECTIONS_PER_POOL` connections each, created as
    concurrency needs them, `ceil(max_connections / CONNECTIONS_PER_POOL)` at most.

    `make(connections)` builds one client limited to that many connections. With `shared`
    (an injected transport, which every client would share) there is only ever one client."""

    def __init__(
        self,
        make: Callable[[int], httpx.AsyncClient],
        max_connections: int,
        *,
        shared: bool = False,
    ) -> None:
        self._make = make
        self._per_pool = max_connections if shared else min(CONNECTIONS_PER_POOL, max_connections)
        self._max_pools = 1 if shared else max(1, math.ceil(max_connections / self._per_pool))
        self._clients = [make(self._per_pool)]
        self._busy = [0]

    @contextlib.contextmanager
    def client(self) -> Iterator[httpx.AsyncClient]:
        """A client with a free connection (the least busy one when all are full), counted
        as busy until the block ends."""
        index = self._pick()
        self._busy[index] += 1
        try:
            yield self._clients[index]
        finally:
            self._busy[index] -= 1

    def _pick(self) -> int:
        busy = self._busy
        for index, in_use in enumerate(busy):
            if in_use < self._per_pool:
                return index
        if len(self._clients) < self._max_pools:
            self._clients.append(self._make(self._per_pool))
            busy.append(0)
            return len(busy) - 1
        return min(range(len(busy)), key=busy.__getitem__)

    async def aclose(self) -> None:
        """Close every client (each closes its connections)."""
        for client in self._clients:
            await client.aclose()
