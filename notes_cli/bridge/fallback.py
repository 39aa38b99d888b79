"""Ordered fallback upstreams: a request goes to the first upstream that answers.

    upstreams = Upstreams([Upstream(a, key_a), Upstream(b, key_b)])
    choice = upstreams.choice()                       # one per request
    await choice.stream("/chat/completions", body, sink)
    choice.url                                        # the upstream that answered (or failed last)

The next upstream is tried only while nothing of the answer has reached the client: the
upstream is down (refused, DNS, TLS, no connection or no response head in time: any transport
failure before a status line), answers 5xx or 429, or answers a 2xx that is not the API's
answer (an HTML page, binary bytes: `gateway.relay` says so before passing any of it on).
Once an upstream's 2xx head has arrived the answer is its own: a stream that breaks later ends
with the client protocol's error event, never switching mid-answer (the client would get two
answers spliced together). Other 4xx answers are the request's fault and go to the client as
they are: another upstream would say the same.

Cool-down: an upstream that was down, or answered 429 / 502 / 503 / 504, is put last in the
order for `COOL_DOWN_S` (an upstream's Retry-After, up to `MAX_COOL_DOWN_S`, when it gave one),
so requests do not each wait on a dead host's connect timeout. It is still tried, last, when
everything before it fails: a request is never refused without asking every upstream. A 500 or
another 5xx switches this request but puts no cool-down (it may be this request's own fault).

Each choice is logged (the URLs only; keys never): every switch with the reason, the start of
a cool-down, and each change of the upstream that answers (so a log shows when traffic moved to
a fallback and when it came back), not one line per request.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import TypeVar

from notes_cli.gateway import errors as gw
from notes_cli.gateway.relay import RelaySink, Upstream
from notes_cli.secrets import scrub

log = logging.getLogger("pdnotes.bridge")

COOL_DOWN_S = 15.0
MAX_COOL_DOWN_S = 60.0
_COOLING_STATUSES = frozenset({429, 502, 503, 504})
T = TypeVar("T")


class NoUpstreamAnswered(gw.GatewayError):
    """Every upstream was tried and none answered; `tried` holds each URL and its failure."""

    def __init__(self, tried: list[tuple[str, gw.GatewayError]]) -> None:
        said = "; ".join(f"{url}: {_reason(error)}" for url, error in tried)
        super().__init__(
            f"no upstream answered ({len(tried)} tried): {said}",
            fix="check the upstreams named above; the bridge tries them in order",
        )
        self.tried = tried


class Upstreams:
    """The upstreams in order, with each one's cool-down. One per bridge."""

    def __init__(
        self,
        upstreams: Sequence[Upstream],
        *,
        cool_down_s: float = COOL_DOWN_S,
        clock: Callable[[], float] = time.monotonic,
        keys: Sequence[str] = (),
    ) -> None:
        if not upstreams:
            raise ValueError("at least one upstream")
        self.upstreams = list(upstreams)
        self.cool_down_s = cool_down_s
        self.clock = clock
        self.down_until = [0.0] * len(self.upstreams)
        self.answering: Upstream | None = None  # who answered last (logged when it changes)
        self.keys = [k for k in keys if k]  # masked in the log lines (an upstream may echo one)

    def scrub(self, text: str) -> str:
        return scrub(text, self.keys)

    @property
    def first(self) -> Upstream:
        return self.upstreams[0]

    def choice(self) -> Choice:
        return Choice(self)

    def order(self) -> list[int]:
        """Indexes to try: the ones not cooling down in their order, then the cooling ones
        (soonest back first)."""
        if len(self.upstreams) == 1:
            return [0]
        now = self.clock()
        until = self.down_until
        ready = [i for i in range(len(until)) if until[i] <= now]
        if len(ready) == len(until):
            return ready
        cooling = sorted((i for i in range(len(until)) if until[i] > now), key=until.__getitem__)
        return ready + cooling

    def failed(self, index: int, error: gw.GatewayError) -> float:
        """Note a failure that switches; the cool-down it starts, in seconds (0 for none)."""
        if isinstance(error, gw.HttpStatusError):
            if error.status not in _COOLING_STATUSES:
                return 0.0
            wait = self.cool_down_s
            if error.retry_after is not None:
                wait = min(max(error.retry_after, 1.0), MAX_COOL_DOWN_S)
        else:
            wait = self.cool_down_s
        self.down_until[index] = self.clock() + wait
        return wait

    def answered(self, index: int) -> None:
        self.down_until[index] = 0.0
        upstream = self.upstreams[index]
        if upstream is not self.answering:
            if self.answering is not None or index != 0:
                which = "the first upstream" if index == 0 else f"fallback {index}"
                log.info("upstream: now answered by %s, %s", which, upstream.base_url)
            self.answering = upstream

    async def aclose(self) -> None:
        for upstream in self.upstreams:
            await upstream.aclose()


class Choice:
    """One request's way through the upstreams: the same calls as `Upstream`, with fallbacks.
    `url` is the upstream that answered, or the last one tried."""

    __slots__ = ("owner", "url", "_status", "_index")

    def __init__(self, owner: Upstreams) -> None:
        self.owner = owner
        self.url = owner.first.base_url
        self._status = 0
        self._index = 0

    async def stream(self, path: str, body: bytes, sink: RelaySink) -> None:
        def call(upstream: Upstream) -> Awaitable[None]:
            return upstream.stream(path, body, sink, on_status=self._seen)

        await self._run(call)

    async def fetch(self, method: str, path: str, body: bytes | None = None) -> tuple[int, bytes]:
        def call(upstream: Upstream) -> Awaitable[tuple[int, bytes]]:
            return upstream.fetch(method, path, body, on_status=self._seen)

        return await self._run(call)

    def _seen(self, status: int) -> None:
        self._status = status
        if status < 300:  # the answer is this upstream's from here (logged as it starts)
            self.owner.answered(self._index)

    async def _run(self, call: Callable[[Upstream], Awaitable[T]]) -> T:
        owner = self.owner
        order = owner.order()
        tried: list[tuple[str, gw.GatewayError]] = []
        for position, index in enumerate(order):
            upstream = owner.upstreams[index]
            self.url = upstream.base_url
            self._status, self._index = 0, index
            try:
                result = await call(upstream)
            except gw.GatewayError as error:
                if not self._switches(error):
                    raise
                wait = owner.failed(index, error)
                tried.append((upstream.base_url, error))
                if position + 1 == len(order):
                    if len(tried) == 1:
                        raise  # one upstream: its own error, as without fallbacks
                    log.warning("upstream: %s", owner.scrub(NoUpstreamAnswered(tried).message))
                    raise NoUpstreamAnswered(tried) from error
                then = owner.upstreams[order[position + 1]].base_url
                cooling = f"; not tried first for {wait:g} s" if wait else ""
                said = owner.scrub(f"{upstream.base_url} {_reason(error)}")
                log.warning("upstream %s%s; trying %s", said, cooling, then)
                continue
            return result
        raise AssertionError("unreachable: order() is never empty")

    def _switches(self, error: gw.GatewayError) -> bool:
        """Whether the next upstream may answer instead: nothing of this answer reached the
        client (no 2xx head: an error status never reaches the sink), and the failure is the
        upstream's (down, 5xx, 429), not the request's."""
        if isinstance(error, gw.HttpStatusError):
            return error.status >= 500 or error.status == 429
        if isinstance(error, gw.AnswerTimeout):
            return True  # a whole answer: none of it went to the client, whatever its head
        return self._status == 0 and not isinstance(error, gw.UnsendableHeader)


def _reason(error: gw.GatewayError) -> str:
    if isinstance(error, gw.HttpStatusError):
        said = error.error_message or ""
        return f"answered {error.status}" + (f": {said}" if said else "")
    return error.message
