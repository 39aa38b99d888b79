"""The bench load generator: send a workload to an OpenAI-compatible endpoint, measure each
streamed response with vLLM's metric definitions (`vllm bench serve`; docs/simulate-bench.md,
"Metric definitions"), and summarise.

The HTTP side is one injected coroutine, `send(item) -> Outcome`; `gateway_sender()` builds it
over the gateway's async client (the only HTTP code in pdnotes), tests inject their own. The run
is bounded three ways: a request count, an optional duration, and a per-request timeout. A stop
event (Ctrl-C) ends it early; requests still in flight are cancelled and the report covers what
completed, marked `interrupted`.

Metric rules, per request:
- TTFT: send → first chunk carrying output text (the gateway's `ttft_ms`; sglang's rule, which
  differs from vLLM's "first chunk with a choice" only for role-only first chunks).
- ITL: gaps between successive text chunks, pooled over all requests.
- E2E: send → last text chunk (a trailing usage-only chunk does not count).
- TPOT: (E2E − TTFT) / (output_tokens − 1), only when output_tokens > 1.
- output_tokens: `usage.completion_tokens` when the server sends it, else the number of text
  chunks, and the report says how many requests were counted that way.
"""

from __future__ import annotations

import asyncio
import bisect
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, NamedTuple

from notes_cli.bench.stats import ExactSample, LatencyStats, Slo, Summary
from notes_cli.bench.workload import WorkItem

if TYPE_CHECKING:
    from notes_cli.bench.prompts import PromptSpec
    from notes_cli.bench.server_metrics import MetricsView
    from notes_cli.clients.endpoint import Endpoint

TokensSource = Literal["usage", "counted"]
TTFT_RULE = "send to the first streamed chunk carrying output text"


@dataclass(frozen=True)
class Outcome:
    """One request as the client saw it. `chunk_ms` are arrival times (ms since send) of the
    chunks that carried text; `pd_timing` is the server's `usage.pd_timing`, if it sent one."""

    ok: bool
    e2e_ms: float
    chunk_ms: tuple[float, ...] = ()
    ttft_ms: float | None = None
    output_tokens: int = 0
    tokens_source: TokensSource = "counted"
    error: str | None = None
    pd_timing: dict[str, Any] | None = None
    server_timings: dict[str, Any] | None = None  # llama.cpp's `timings`
    input_tokens: int | None = None  # usage's prompt tokens
    cached_tokens: int | None = None  # usage's cached prompt tokens (0 also when not said)


SendFn = Callable[[WorkItem], Awaitable[Outcome]]


@dataclass(frozen=True)
class BenchPlan:
    """How much load, and for how long. `rate` None means as fast as `concurrency` allows."""

    requests: int
    concurrency: int | None = None
    duration_s: float | None = None
    timeout_s: float = 60.0
    slo: Slo = field(default_factory=Slo)
    # `engine serve --speed X`: server times are X times the wall. None: use the speed the
    # server reports in pd_timing (the bundled engine does), else 1.
    server_speed: float | None = None
    # Keep one record per request (BenchReport.records, `--records FILE`).
    keep_records: bool = False

    def __post_init__(self) -> None:
        if self.requests < 1:
            from notes_cli.errors import UsageError

            raise UsageError("-n must be at least 1")


@dataclass(frozen=True)
class ServerView:
    """The server's own account of each request and the client's overhead (client TTFT −
    server TTFT − time waited in the server's queue) per request. From the bundled engine's
    `usage.pd_timing`, converted to wall ms (its TTFT includes its queue and its admission
    time, `admission_wall_ms`, the engine's own handling before its simulated hardware has the
    request), or from llama.cpp's `timings` (TTFT is its prompt time `prompt_ms`, TPOT its
    `predicted_per_token_ms`). llama.cpp reports no queue time: a request that waited for a
    busy slot started its prompt later than it arrived, and bench attributes that wait to the
    server's queue (`queue_source` "slot freed", see `_slot_waits`), not to the client.
    `overhead_negative` counts requests whose server TTFT exceeded the client's (their
    overhead counts as 0): for pd_timing, the server's speed is not what the conversion
    assumed."""

    source: str  # "usage.pd_timing" or "timings"
    requests: int
    ttft_ms: Summary
    tpot_ms: Summary
    queue_ms: Summary
    transfer_ms: Summary
    admission_ms: Summary
    overhead_ms: Summary
    modes: dict[str, int]
    overhead_negative: int = 0
    queued: int = 0  # requests that waited in the server's queue (queue_ms > 0)
    queue_source: str = "usage.pd_timing"

    def to_json(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "requests": self.requests,
            "ttft_ms": self.ttft_ms.to_json(),
            "tpot_ms": self.tpot_ms.to_json(),
            "queue_ms": self.queue_ms.to_json(),
            "queued_requests": self.queued,
            "queue_source": self.queue_source,
            "transfer_ms": self.transfer_ms.to_json(),
            "admission_ms": self.admission_ms.to_json(),
            "client_overhead_ms": self.overhead_ms.to_json(),
            "client_overhead_negative": self.overhead_negative,
            "modes": self.modes,
        }


@dataclass(frozen=True)
class BenchReport:
    plan: BenchPlan
    duration_s: float
    sent: int
    completed: int
    failed: int
    cancelled: int
    interrupted: bool
    stats: LatencyStats
    counted_requests: int  # requests whose output tokens were counted, not read from usage
    errors: dict[str, int]
    server: ServerView | None
    cache: PromptCache | None = None
    records: list[RequestRecord] | None = None
    # The server's Prometheus metrics sampled during the run (notes_cli.bench.server_metrics),
    # and why there are none when a scrape was tried and failed.
    server_metrics: MetricsView | None = None
    server_metrics_error: str | None = None

    @property
    def ok(self) -> bool:
        """Every request that was meant to run completed."""
        return bool(self.completed) and not (self.failed or self.cancelled or self.interrupted)

    @property
    def request_throughput(self) -> float:
        return self.completed / self.duration_s if self.duration_s > 0 else 0.0

    @property
    def output_throughput(self) -> float:
        return self.stats.output_tokens / self.duration_s if self.duration_s > 0 else 0.0

    @property
    def goodput(self) -> float:
        """Requests per second that met every SLO (vLLM's goodput)."""
        return self.stats.met_all_slos / self.duration_s if self.duration_s > 0 else 0.0

    def to_json(self) -> dict[str, Any]:
        """The `pdnotes.bench/1` body (the CLI adds the target: URL, model, API)."""
        plan = self.plan
        return {
            "schema": "pdnotes.bench/1",
            "ok": self.ok,
            "plan": {
                "requests": plan.requests,
                "concurrency": plan.concurrency,
                "duration_s": plan.duration_s,
                "timeout_s": plan.timeout_s,
                "server_speed": plan.server_speed,
            },
            "slo": plan.slo.to_json(),
            "duration_s": round(self.duration_s, 3),
            "sent": self.sent,
            "completed": self.completed,
            "failed": self.failed,
            "cancelled": self.cancelled,
            "interrupted": self.interrupted,
            "errors": self.errors,
            "ttft_rule": TTFT_RULE,
            "tokens_source": {
                "usage": self.completed - self.counted_requests,
                "counted": self.counted_requests,
            },
            "metrics": {name: s.to_json() for name, s in self.stats.summaries().items()},
            "attainment": self.stats.attainment().to_json(),
            "request_throughput": round(self.request_throughput, 4),
            "output_throughput": round(self.output_throughput, 3),
            "goodput": round(self.goodput, 4),
            "output_tokens": self.stats.output_tokens,
            "server": None if self.server is None else self.server.to_json(),
            "prompt_cache": None if self.cache is None else self.cache.to_json(),
            "server_metrics": None
            if self.server_metrics is None
            else self.server_metrics.to_json(),
            "server_metrics_error": self.server_metrics_error,
        }


@dataclass(frozen=True)
class PromptCache:
    """Prompt tokens the server said it served from its cache, over the requests that said
    (llama.cpp's `timings.cache_n`, else usage `cached_tokens` when a server reports some)."""

    requests: int
    prompt_tokens: int
    cached_tokens: int
    source: str

    @property
    def hit_rate(self) -> float:
        return self.cached_tokens / self.prompt_tokens if self.prompt_tokens else 0.0

    def to_json(self) -> dict[str, Any]:
        return {
            "requests": self.requests,
            "prompt_tokens": self.prompt_tokens,
            "cached_tokens": self.cached_tokens,
            "hit_rate": round(self.hit_rate, 4),
            "source": self.source,
        }


class RequestRecord(NamedTuple):
    """One request as measured (docs/simulate-bench.md, "Per-request records"). Times are ms;
    `sent_ms` counts from the run's start, the others from the request's send. `itl_ms` are
    the gaps between its text chunks. None where it does not apply (a failed request has no
    TTFT; one output token has no TPOT; a server that sends no timings has no server_*)."""

    request: int  # sending order, from 0
    sent_ms: float
    ok: bool
    error: str | None
    ttft_ms: float | None
    tpot_ms: float | None
    e2e_ms: float
    itl_ms: list[float]
    output_tokens: int
    input_tokens: int | None
    cached_tokens: int | None
    server_ttft_ms: float | None
    server_tpot_ms: float | None
    server_queue_ms: float | None = None  # waited in the server's queue (see ServerView)


class _Collector:
    """Folds outcomes into flat-memory statistics as they arrive."""

    def __init__(self, plan: BenchPlan) -> None:
        self.plan = plan
        self.stats = LatencyStats(plan.slo, exact=True)
        self.failed = 0
        self.counted = 0
        self.errors: Counter[str] = Counter()
        keys = ("ttft", "tpot", "queue", "transfer", "admission")
        self.server = {k: ExactSample() for k in keys}
        self.overhead = ExactSample()
        self.overhead_negative = 0
        self.modes: Counter[str] = Counter()
        self.server_source = "usage.pd_timing"
        self.cache_requests = self.prompt_tokens = self.cached_tokens = 0
        self.cache_source = "usage cached_tokens"
        self.records: list[RequestRecord] | None = [] if plan.keep_records else None
        # request → (sent, finished), ms from the run's start: when each freed its slot.
        self.spans: dict[int, tuple[float, float]] = {}
        # llama.cpp requests: (request, sent, client TTFT − prompt_ms, client TTFT), ms,
        # split into queue and overhead at the end.
        self.waits: list[tuple[int, float, float, float]] = []
        self.queued = 0  # requests that waited in the server's queue
        self.queue_source = "usage.pd_timing"

    def add(self, outcome: Outcome, sent_ms: float = 0.0, request: int = 0) -> None:
        self.spans[request] = (sent_ms, sent_ms + outcome.e2e_ms)
        if not outcome.ok or not outcome.chunk_ms:
            self.failed += 1
            error = outcome.error or "no output text"
            self.errors[error] += 1
            if self.records is not None:
                self._record(outcome, request, sent_ms, error, None, None, outcome.e2e_ms, [])
            return
        chunks = outcome.chunk_ms
        ttft = outcome.ttft_ms if outcome.ttft_ms is not None else chunks[0]
        e2e = chunks[-1]
        n_out = outcome.output_tokens or len(chunks)
        tpot = (e2e - ttft) / (n_out - 1) if n_out > 1 else None
        gaps = [after - before for before, after in zip(chunks, chunks[1:], strict=False)]
        self.stats.add(ttft, tpot, e2e, n_out, max(gaps) if gaps else None)
        for gap in gaps:
            self.stats.add_itl(gap)
        if outcome.tokens_source == "counted":
            self.counted += 1
        server: tuple[float | None, float | None] = (None, None)
        if outcome.pd_timing:
            server = self._add_server(outcome.pd_timing, ttft)
        elif outcome.server_timings:
            server = self._add_timings(outcome.server_timings, ttft, n_out, sent_ms, request)
        self._add_cache(outcome)
        if self.records is not None:
            self._record(outcome, request, sent_ms, None, ttft, tpot, e2e, gaps, *server)

    def _record(
        self,
        outcome: Outcome,
        request: int,
        sent_ms: float,
        error: str | None,
        ttft: float | None,
        tpot: float | None,
        e2e: float,
        gaps: list[float],
        server_ttft: float | None = None,
        server_tpot: float | None = None,
    ) -> None:
        assert self.records is not None
        ok = error is None
        timings = outcome.server_timings or {}
        cached = timings.get("cache_n", outcome.cached_tokens)
        self.records.append(
            RequestRecord(
                request=request,
                sent_ms=sent_ms,
                ok=ok,
                error=error,
                ttft_ms=ttft,
                tpot_ms=tpot,
                e2e_ms=e2e,
                itl_ms=gaps,
                output_tokens=(outcome.output_tokens or len(outcome.chunk_ms)) if ok else 0,
                input_tokens=outcome.input_tokens,
                cached_tokens=cached if isinstance(cached, int) else None,
                server_ttft_ms=server_ttft,
                server_tpot_ms=server_tpot,
            )
        )

    def _add_cache(self, outcome: Outcome) -> None:
        timings = outcome.server_timings
        if timings is not None and isinstance(timings.get("cache_n"), int):
            # llama.cpp: cache_n reused + prompt_n processed = the whole prompt.
            cached = int(timings["cache_n"])
            prompt = cached + int(timings.get("prompt_n") or 0)
            self.cache_source = "timings.cache_n"
        elif outcome.cached_tokens and outcome.input_tokens:
            cached, prompt = outcome.cached_tokens, outcome.input_tokens
        else:
            return
        self.cache_requests += 1
        self.prompt_tokens += prompt
        self.cached_tokens += cached

    def cache(self) -> PromptCache | None:
        if not self.cache_requests:
            return None
        return PromptCache(
            self.cache_requests, self.prompt_tokens, self.cached_tokens, self.cache_source
        )

    def _add_timings(
        self,
        timings: dict[str, Any],
        client_ttft: float,
        n_out: int,
        sent_ms: float,
        request: int,
    ) -> tuple[float | None, float | None]:
        """llama.cpp's `timings`: prompt_ms is its prefill, predicted_per_token_ms its TPOT
        ((predicted_ms) / (predicted_n - 1), the client's definition). What the client waited
        before the prefill is split into queue and overhead at the end (`_slot_waits`)."""
        prompt_ms = timings.get("prompt_ms")
        if not isinstance(prompt_ms, int | float):
            return None, None
        self.server_source = "timings"
        self.server["ttft"].add(float(prompt_ms))
        tpot = timings.get("predicted_per_token_ms")
        server_tpot = float(tpot) if isinstance(tpot, int | float) and n_out > 1 else None
        if server_tpot is not None:
            self.server["tpot"].add(server_tpot)
        before_prompt = client_ttft - float(prompt_ms)
        if before_prompt < 0:
            self.overhead_negative += 1
        self.waits.append((request, sent_ms, max(before_prompt, 0.0), client_ttft))
        self.modes["llama.cpp"] += 1
        return float(prompt_ms), server_tpot

    def _add_server(
        self, timing: dict[str, Any], client_ttft: float
    ) -> tuple[float | None, float | None]:
        scale = 1.0 / (self.plan.server_speed or float(timing.get("speed") or 1.0))
        admission = float(timing.get("admission_wall_ms") or 0.0)  # wall ms already
        server_ttft = float(timing.get("ttft_ms", 0.0)) * scale + admission
        self.server["ttft"].add(server_ttft)
        self.server["admission"].add(admission)
        server_tpot = float(timing.get("tpot_ms", 0.0)) * scale
        self.server["tpot"].add(server_tpot)
        queue = float(timing.get("queue_ms", 0.0)) * scale
        self.server["queue"].add(queue)
        self.queued += queue > 0
        self.server["transfer"].add(float(timing.get("transfer_ms", 0.0)) * scale)
        # Overhead is never negative in a correct measurement; clamp, but count, clock skew.
        overhead = client_ttft - server_ttft
        if overhead < 0:
            self.overhead_negative += 1
        self.overhead.add(max(overhead, 0.0))
        self.modes[str(timing.get("mode", "?"))] += 1
        return server_ttft, server_tpot

    def _slot_waits(self) -> None:
        """Split each llama.cpp request's wait before its prefill (client TTFT − prompt_ms)
        into the time it waited in the server's queue and the rest (the client, the network,
        the server's own handling). llama.cpp says nothing about its queue, but a server busy
        with every slot takes a waiting request the moment one frees: when another request of
        this run finished after this one was sent and before this one's prompt started, this
        one waited for that slot until then (the latest such finish; two requests sent
        together may reach the server in either order, so the other may have been sent after
        it). The client reads the freeing request's end late under load (and this one's first
        token too): a finish read after this one's prompt began, but before its first token
        arrived, still counts, with the whole wait before the prompt as queue. (On a server
        with free slots a request whose prefill overlapped another's end is then counted as
        queued for its few ms of client + network time: the error is at most that.)"""
        if not self.waits:
            return
        self.queue_source = "slot freed"
        ends = sorted((finished, request) for request, (_sent, finished) in self.spans.items())
        finishes = [finished for finished, _request in ends]
        queues: dict[int, float] = {}
        for request, sent, before_prompt, first_token in self.waits:
            started = sent + before_prompt
            # the latest other finish in (sent, started], else any before the first token
            at = bisect.bisect_right(finishes, started) - 1
            while at >= 0 and ends[at][1] == request:
                at -= 1
            after = bisect.bisect_right(finishes, started)
            while after < len(ends) and ends[after][1] == request:
                after += 1
            if at >= 0 and finishes[at] > sent:
                queue = finishes[at] - sent
            elif after < len(ends) and finishes[after] <= sent + first_token:
                queue = before_prompt  # it waited until its prompt began
            else:
                queue = 0.0
            queues[request] = queue
            self.queued += queue > 0
            self.server["queue"].add(queue)
            self.overhead.add(before_prompt - queue)
        if self.records is not None:
            self.records[:] = [
                r._replace(server_queue_ms=queues[r.request]) if r.request in queues else r
                for r in self.records
            ]
        self.waits = []  # attributed once

    def server_view(self) -> ServerView | None:
        if not self.server["ttft"].count:
            return None
        self._slot_waits()
        s = self.server
        return ServerView(
            source=self.server_source,
            requests=s["ttft"].count,
            ttft_ms=s["ttft"].summary(),
            tpot_ms=s["tpot"].summary(),
            queue_ms=s["queue"].summary(),
            transfer_ms=s["transfer"].summary(),
            admission_ms=s["admission"].summary(),
            overhead_ms=self.overhead.summary(),
            modes=dict(self.modes),
            overhead_negative=self.overhead_negative,
            queued=self.queued,
            queue_source=self.queue_source,
        )


ProgressFn = Callable[[int, int], None]  # (finished, total)


async def run_bench(
    items: Iterable[WorkItem],
    send: SendFn,
    plan: BenchPlan,
    *,
    stop: asyncio.Event | None = None,
    on_progress: ProgressFn | None = None,
) -> BenchReport:
    """Send `items` (at most `plan.requests`) at their `arrival_ms`, at most `plan.concurrency`
    at once, and measure them. Returns when all finished, the duration ran out, or `stop` was
    set (then in-flight requests are cancelled and the report is `interrupted`)."""
    stop = stop or asyncio.Event()
    collector = _Collector(plan)
    limit = asyncio.Semaphore(plan.concurrency or plan.requests)
    in_flight: set[asyncio.Task[None]] = set()
    finished = 0
    start = time.perf_counter()
    deadline = start + plan.duration_s if plan.duration_s else None

    async def one(item: WorkItem, request: int) -> None:
        nonlocal finished
        sent_ms = (time.perf_counter() - start) * 1000
        try:
            # asyncio.timeout, not wait_for: on 3.11 wait_for runs `send` in a new task, and
            # a new task starts only after everything already runnable (under load, after the
            # other streams' pending chunks), which delays the request before it is sent.
            async with asyncio.timeout(plan.timeout_s):
                outcome = await send(item)
        except TimeoutError:
            outcome = Outcome(ok=False, e2e_ms=plan.timeout_s * 1000, error="timeout")
        except Exception as exc:  # a failed request is data for the report, not a crash
            outcome = Outcome(ok=False, e2e_ms=0.0, error=_short_error(exc))
        collector.add(outcome, sent_ms, request)
        finished += 1
        if on_progress:
            on_progress(finished, plan.requests)

    sent = 0
    for item in _bounded(items, plan.requests):
        if not await _wait_turn(start + item.arrival_ms / 1000, deadline, limit, stop):
            break
        task = asyncio.create_task(one(item, sent))
        in_flight.add(task)
        task.add_done_callback(in_flight.discard)
        task.add_done_callback(lambda _task: limit.release())
        sent += 1
    cancelled = await _drain(in_flight, deadline, stop)
    return BenchReport(
        plan=plan,
        duration_s=time.perf_counter() - start,
        sent=sent,
        completed=collector.stats.completed,
        failed=collector.failed,
        cancelled=cancelled,
        interrupted=stop.is_set(),
        stats=collector.stats,
        counted_requests=collector.counted,
        errors=dict(collector.errors.most_common(10)),
        server=collector.server_view(),
        cache=collector.cache(),
        records=collector.records,
    )


def _bounded(items: Iterable[WorkItem], n: int) -> Iterator[WorkItem]:
    for count, item in enumerate(items):
        if count >= n:
            return
        yield item


async def _wait_turn(
    due: float, deadline: float | None, limit: asyncio.Semaphore, stop: asyncio.Event
) -> bool:
    """Wait until `due` (perf_counter seconds) and a free concurrency slot. False when the
    deadline comes first or `stop` is set: the caller then sends nothing more."""
    wake = due if deadline is None else min(due, deadline)
    if await _sleep_or_stop(wake - time.perf_counter(), stop):
        return False
    if deadline is not None and due > deadline:
        return False
    remaining = None if deadline is None else deadline - time.perf_counter()
    return await _acquire_or_stop(limit, stop, remaining)


async def _sleep_or_stop(delay: float, stop: asyncio.Event) -> bool:
    """Sleep `delay` seconds; True if `stop` was set meanwhile."""
    if delay <= 0:
        return stop.is_set()
    try:
        await asyncio.wait_for(stop.wait(), delay)
    except TimeoutError:
        return False
    return True


async def _acquire_or_stop(
    limit: asyncio.Semaphore, stop: asyncio.Event, timeout: float | None
) -> bool:
    """Take a slot of `limit`; False (holding nothing) on stop or timeout."""
    if not limit.locked() and not stop.is_set():
        await limit.acquire()
        return True
    acquire = asyncio.ensure_future(limit.acquire())
    stopped = asyncio.ensure_future(stop.wait())
    try:
        await asyncio.wait({acquire, stopped}, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
    finally:
        stopped.cancel()
        if not acquire.done():
            acquire.cancel()
    if acquire.done() and not acquire.cancelled():
        if not stop.is_set():
            return True
        limit.release()
    return False


async def _drain(
    tasks: set[asyncio.Task[None]], deadline: float | None, stop: asyncio.Event
) -> int:
    """Wait for in-flight requests; cancel them at the deadline or on stop. Returns how many
    were cancelled."""
    if not tasks:
        return 0
    pending: set[asyncio.Future[Any]] = set(tasks)
    stopper: asyncio.Future[Any] = asyncio.ensure_future(stop.wait())
    timeout = None if deadline is None else max(0.0, deadline - time.perf_counter())
    try:
        while pending:
            if stop.is_set():
                break
            done, pending = await asyncio.wait(
                pending | {stopper}, timeout=timeout, return_when=asyncio.FIRST_COMPLETED
            )
            pending.discard(stopper)
            if not done:
                break  # the deadline
            if deadline is not None:
                timeout = max(0.0, deadline - time.perf_counter())
    finally:
        stopper.cancel()
    for task in pending:
        task.cancel()
    if pending:
        await asyncio.gather(*pending, return_exceptions=True)
    return len(pending)


def gateway_sender(
    endpoint: Endpoint,
    *,
    timeout_s: float,
    prompts: PromptSpec | None = None,
    requests: int = 1,
    extra_body: dict[str, Any] | None = None,
) -> tuple[SendFn, Callable[[], Awaitable[None]]]:
    """A `send` over the gateway's async client, and the coroutine that closes it. Request i
    (in sending order) carries prompt i of `prompts` (notes_cli.bench.prompts). With
    `prompts.turns` > 1 the `requests` are turns of ceil(requests / turns) conversations, all
    first turns first: turn t of a conversation waits for its turn t - 1 and resends the
    history, its answer included. `extra_body` is merged into every request (`ignore_eos`)."""
    from notes_cli.bench.prompts import PromptMaker, PromptSpec
    from notes_cli.gateway.client import AsyncGatewayClient

    client = AsyncGatewayClient(endpoint, timeout=timeout_s)
    maker = PromptMaker(prompts or PromptSpec())
    turns = maker.spec.turns
    conversations = -(-requests // turns)
    histories: dict[int, list[dict[str, str]]] = {}
    answered: dict[int, asyncio.Event] = {}
    counter = iter(range(1 << 62))

    async def send(item: WorkItem) -> Outcome:
        index = next(counter)
        user = {"role": "user", "content": maker.text(index, item.input_tokens)}
        if turns == 1:
            return await _stream(client, [user], item.output_tokens, extra_body)
        conversation, turn = index % conversations, index // conversations
        if turn:
            await answered[conversation].wait()
        answered[conversation] = asyncio.Event()
        history = histories.setdefault(conversation, [])
        history.append(user)
        try:
            outcome, text = await _stream_turn(client, history, item.output_tokens, extra_body)
            history.append({"role": "assistant", "content": text})
        finally:
            answered[conversation].set()
        return outcome

    return send, client.aclose


async def _stream(
    client: Any, messages: list[dict[str, str]], max_tokens: int, extra: dict[str, Any] | None
) -> Outcome:
    return (await _stream_turn(client, messages, max_tokens, extra))[0]


async def _stream_turn(
    client: Any, messages: list[dict[str, str]], max_tokens: int, extra: dict[str, Any] | None
) -> tuple[Outcome, str]:
    chunk_ms: list[float] = []
    result = await client.stream(
        list(messages),
        max_tokens=max_tokens,
        on_chunk=lambda _text, elapsed_ms: chunk_ms.append(elapsed_ms),
        extra_body=extra,
    )
    return _outcome(result, chunk_ms), result.text


# How each protocol says "stopped at max tokens": chat completions, Responses, Anthropic.
_LIMIT_REACHED = ("length", "max_output_tokens", "max_tokens")


def _outcome(result: Any, chunk_ms: list[float]) -> Outcome:
    timings = result.timings
    chunks = tuple(timings.chunk_ms or chunk_ms)
    # The bench asks for exactly max_tokens, so stopping at the limit is a complete answer too.
    finished = bool(result.completed) or result.finish_reason in _LIMIT_REACHED
    ok = finished and 200 <= int(result.status) < 300
    return Outcome(
        ok=ok,
        e2e_ms=float(timings.total_ms),
        chunk_ms=chunks,
        ttft_ms=timings.ttft_ms,
        output_tokens=int(result.output_tokens or 0),
        tokens_source=result.tokens_source,
        error=None if ok else f"HTTP {result.status}" if result.status >= 300 else "incomplete",
        pd_timing=result.pd_timing,
        server_timings=result.server_timings,
        input_tokens=result.input_tokens,
        cached_tokens=result.cached_input_tokens,
    )


def _short_error(exc: BaseException) -> str:
    name = type(exc).__name__
    text = str(exc).splitlines()[0] if str(exc) else ""
    return f"{name}: {text[:120]}" if text else name
