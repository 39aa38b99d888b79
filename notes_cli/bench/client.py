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
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from notes_cli.bench.stats import ExactSample, LatencyStats, Slo, Summary
from notes_cli.bench.workload import WorkItem

if TYPE_CHECKING:
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

    def __post_init__(self) -> None:
        if self.requests < 1:
            from notes_cli.errors import UsageError

            raise UsageError("-n must be at least 1")


@dataclass(frozen=True)
class ServerView:
    """The server's own `usage.pd_timing`, converted to wall ms, and the client's overhead
    (client TTFT − server TTFT) per request. The server's TTFT includes its admission time
    (`admission_wall_ms`, the bundled engine's own handling before its simulated hardware has
    the request). `overhead_negative` counts requests whose server TTFT exceeded the client's
    (their overhead counts as 0): the server's speed is not what the conversion assumed."""

    requests: int
    ttft_ms: Summary
    tpot_ms: Summary
    queue_ms: Summary
    transfer_ms: Summary
    admission_ms: Summary
    overhead_ms: Summary
    modes: dict[str, int]
    overhead_negative: int = 0

    def to_json(self) -> dict[str, Any]:
        return {
            "requests": self.requests,
            "ttft_ms": self.ttft_ms.to_json(),
            "tpot_ms": self.tpot_ms.to_json(),
            "queue_ms": self.queue_ms.to_json(),
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
        }


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

    def add(self, outcome: Outcome) -> None:
        if not outcome.ok or not outcome.chunk_ms:
            self.failed += 1
            self.errors[outcome.error or "no output text"] += 1
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
        if outcome.pd_timing:
            self._add_server(outcome.pd_timing, ttft)

    def _add_server(self, timing: dict[str, Any], client_ttft: float) -> None:
        scale = 1.0 / (self.plan.server_speed or float(timing.get("speed") or 1.0))
        admission = float(timing.get("admission_wall_ms") or 0.0)  # wall ms already
        server_ttft = float(timing.get("ttft_ms", 0.0)) * scale + admission
        self.server["ttft"].add(server_ttft)
        self.server["admission"].add(admission)
        self.server["tpot"].add(float(timing.get("tpot_ms", 0.0)) * scale)
        self.server["queue"].add(float(timing.get("queue_ms", 0.0)) * scale)
        self.server["transfer"].add(float(timing.get("transfer_ms", 0.0)) * scale)
        # Overhead is never negative in a correct measurement; clamp, but count, clock skew.
        overhead = client_ttft - server_ttft
        if overhead < 0:
            self.overhead_negative += 1
        self.overhead.add(max(overhead, 0.0))
        self.modes[str(timing.get("mode", "?"))] += 1

    def server_view(self) -> ServerView | None:
        if not self.server["ttft"].count:
            return None
        s = self.server
        return ServerView(
            requests=s["ttft"].count,
            ttft_ms=s["ttft"].summary(),
            tpot_ms=s["tpot"].summary(),
            queue_ms=s["queue"].summary(),
            transfer_ms=s["transfer"].summary(),
            admission_ms=s["admission"].summary(),
            overhead_ms=self.overhead.summary(),
            modes=dict(self.modes),
            overhead_negative=self.overhead_negative,
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

    async def one(item: WorkItem) -> None:
        nonlocal finished
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
        collector.add(outcome)
        finished += 1
        if on_progress:
            on_progress(finished, plan.requests)

    sent = 0
    for item in _bounded(items, plan.requests):
        if not await _wait_turn(start + item.arrival_ms / 1000, deadline, limit, stop):
            break
        task = asyncio.create_task(one(item))
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


def synthetic_prompt(n_tokens: int) -> str:
    """A prompt of about `n_tokens` tokens for common tokenizers: one short word per token."""
    words = ("alpha", "beta", "gamma", "delta", "kappa", "sigma", "omega", "theta")
    return " ".join(words[i % len(words)] for i in range(n_tokens))


def gateway_sender(
    endpoint: Endpoint, *, timeout_s: float
) -> tuple[SendFn, Callable[[], Awaitable[None]]]:
    """A `send` over the gateway's async client, and the coroutine that closes it."""
    from notes_cli.gateway.client import AsyncGatewayClient

    client = AsyncGatewayClient(endpoint, timeout=timeout_s)

    async def send(item: WorkItem) -> Outcome:
        chunk_ms: list[float] = []
        messages = [{"role": "user", "content": synthetic_prompt(item.input_tokens)}]
        result = await client.stream(
            messages,
            max_tokens=item.output_tokens,
            on_chunk=lambda _text, elapsed_ms: chunk_ms.append(elapsed_ms),
        )
        return _outcome(result, chunk_ms)

    return send, client.aclose


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
    )


def _short_error(exc: BaseException) -> str:
    name = type(exc).__name__
    text = str(exc).splitlines()[0] if str(exc) else ""
    return f"{name}: {text[:120]}" if text else name
