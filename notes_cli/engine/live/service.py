"""The live engine: the scheduler on a scaled wall clock, feeding token streams to the HTTP app.

A background driver task sleeps until the scheduler's next event is due (in wall time, scaled
by --speed), processes every due event, and hands each request its newly produced tokens. A
request's tokens therefore reach its stream at the wall time the cost model says they exist.

A request arrives (in simulated time) when the driver next runs after it was admitted. What the
engine did before that (reading and parsing the body, the answer, the prompt's token count, the
driver's turn) is wall time the hardware model knows nothing of; it is reported as
`pd_timing.admission_wall_ms`, counted from the moment the server received the request
(`GenerationRequest.received_s`), so that it is neither hidden nor passed off as queueing.
Admission work runs in arrival order, at most ~1 ms of it per loop turn, so a burst of arrivals
cannot hold up a token release for long. If the process was starved
(a step's tokens would be released more than a few milliseconds late), simulated time is held at
that step's end instead of replaying the lost time as a burst of tokens: the client then sees
the stall the server really had, and pd_timing stays the hardware model's. A late event that
releases nothing (an arrival, a prefill, a KV transfer) is simply processed at its own time.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import time
from collections import deque
from collections.abc import AsyncIterator, Callable
from dataclasses import asdict
from typing import Any, TypeVar

from notes_cli.engine.core.api import (
    ADMITTED,
    Admitted,
    Completion,
    EngineStopped,
    FinishReason,
    GenerationRequest,
    QueueFull,
    RequestRecord,
    StepStats,
    TokenChunk,
)
from notes_cli.engine.core.config import EngineConfig
from notes_cli.engine.core.deployment_file import resolve_preset
from notes_cli.engine.core.profiles import Catalog
from notes_cli.engine.core.responder import Responder
from notes_cli.engine.core.scheduler import Scheduler
from notes_cli.engine.core.tokens import count_tokens
from notes_cli.engine.core.workers import SchedRequest
from notes_cli.engine.live.clock import WallClock
from notes_cli.notes.knowledge import answer_messages

Observer = Callable[[RequestRecord | StepStats], None]
log = logging.getLogger(__name__)
_MAX_LAG_WALL_MS = 5.0  # a driver later than this was starved: hold simulated time, no burst
_ADMISSION_BUDGET_S = 0.001  # admission work per loop turn before the loop checks its timers
# The driver wakes this long before its next event and goes round the event loop (serving I/O)
# until the event is due: waking an idle CPU takes ~0.2 ms, which at --speed X would be 0.2·X
# simulated ms of lateness on every token. Costs at most this much CPU per event.
_SPIN_S = 0.0002
_T = TypeVar("_T")


class _Stream:
    """Per-request state shared by the driver (producer) and the generator (consumer)."""

    __slots__ = ("ready", "waiter", "record", "error", "received_s", "submitted_s")

    def __init__(self, received_s: float) -> None:
        self.ready = 0  # tokens produced so far
        self.waiter: asyncio.Future[None] | None = None
        self.record: RequestRecord | None = None
        self.error: BaseException | None = None
        self.received_s = received_s  # time.monotonic(): the server received the request
        self.submitted_s = received_s  # ... and the driver handed it to the scheduler

    @property
    def admission_wall_ms(self) -> float:
        return max(0.0, (self.submitted_s - self.received_s) * 1000.0)

    def wake(self) -> None:
        waiter, self.waiter = self.waiter, None
        if waiter is not None and not waiter.done():
            waiter.set_result(None)


class _Admissions:
    """Runs requests' synchronous admission work (their answer, their prompt's token count) in
    arrival order, at most `budget_s` of wall time per event-loop turn (at least one request).

    A burst of arrivals doing that work back to back would hold up the driver's next token
    release; in batches, the loop checks its timers in between, and a busy loop still admits
    many requests per turn."""

    def __init__(self, budget_s: float) -> None:
        self._budget_s = budget_s
        self._queue: deque[tuple[Callable[[], Any], asyncio.Future[Any]]] = deque()
        self._scheduled = False

    def __len__(self) -> int:
        return len(self._queue)

    async def run(self, work: Callable[[], _T]) -> _T:
        """`work()`, run in its turn; a caller cancelled while waiting never runs it."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[_T] = loop.create_future()
        self._queue.append((work, future))
        if not self._scheduled:
            self._scheduled = True
            loop.call_soon(self._run_some)
        return await future

    def _run_some(self) -> None:
        deadline = time.perf_counter() + self._budget_s
        queue = self._queue
        while queue:
            work, future = queue.popleft()
            if future.done():  # its caller went away
                continue
            try:
                future.set_result(work())
            except Exception as error:  # the caller's error, raised where it awaits
                future.set_exception(error)
            if time.perf_counter() >= deadline:
                break
        self._scheduled = bool(queue)
        if queue:
            asyncio.get_running_loop().call_soon(self._run_some)


class LiveEngineService:
    """`notes_cli.engine.core.api.EngineService` backed by the real scheduler and a wall clock."""

    def __init__(self, config: EngineConfig, catalog: Catalog | None = None) -> None:
        base, catalog = resolve_preset(config.preset, catalog)  # a name or a deployment file
        self.config = config
        self.deployment = base.with_mode(config.mode)
        self.served_models = config.served_models
        self.max_context_tokens = config.max_context_tokens
        # the mock answers a note kit's request from the notes' own knowledge base
        self.responder = Responder(config.seed, answer_messages)
        self.clock = WallClock(config.speed)
        self.scheduler = Scheduler(
            self.deployment, catalog, keep_gaps=True, link_fallback=config.link_fallback_tcp
        )
        self.scheduler.on_tokens = self._on_tokens
        self.scheduler.on_finish = self._on_finish
        self._observers: list[Observer] = []
        self._streams: dict[SchedRequest, _Stream] = {}
        self._ids = itertools.count(1)
        self._arrivals: list[SchedRequest] = []  # submitted at the driver's next turn
        self._admission = _Admissions(_ADMISSION_BUDGET_S)
        self._task: asyncio.Task[None] | None = None
        self._wake: asyncio.Future[None] | None = None

    # ---- lifecycle ------------------------------------------------------------------------
    async def start(self) -> None:
        """Start the driver task on the running loop."""
        if self._task is None:
            self.responder.warm_up()
            self.clock = WallClock(self.config.speed)
            self.scheduler.now = 0.0
            self._task = asyncio.get_running_loop().create_task(self._drive())

    async def stop(self) -> None:
        """Stop the driver and fail every request still in flight with EngineStopped."""
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        for stream in self._streams.values():
            stream.error = EngineStopped("the engine is shutting down")
            stream.wake()

    @property
    def running(self) -> bool:
        return self._task is not None and not self._task.done()

    async def _drive(self) -> None:
        loop = asyncio.get_running_loop()
        scheduler, clock = self.scheduler, self.clock
        max_lag_ms = _MAX_LAG_WALL_MS * clock.speed
        while True:
            now = clock.now_ms()
            reached = scheduler.catch_up(now, max_lag_ms)
            if reached < now:
                clock.hold_at(reached)  # the loop was blocked: resume from the missed step
                now = reached
            arrivals, self._arrivals = self._arrivals, []
            if arrivals:
                submitted_s = time.monotonic()
                for request in arrivals:
                    scheduler.submit(request, now)
                    stream = self._streams.get(request)
                    if stream is not None:
                        stream.submitted_s = submitted_s
            scheduler.run_until(now)
            wake: asyncio.Future[None] = loop.create_future()
            self._wake = wake
            due = scheduler.next_event_time()
            timer = None
            if due is not None:
                delay = clock.wall_delay_s(due)
                timer = loop.call_later(delay - _SPIN_S, _resolve_at, wake, loop.time() + delay)
            await wake
            if timer is not None:
                timer.cancel()

    def _kick(self) -> None:
        if self._wake is not None:
            _resolve(self._wake)

    # ---- the EngineService surface ----------------------------------------------------------
    def count_tokens(self, text: str) -> int:
        return count_tokens(text)

    def prompt_tokens(self, request: GenerationRequest) -> int:
        """Prompt size: the sum of the tokens of every message's text (at least 1)."""
        return max(1, sum(count_tokens(m.text) for m in request.messages))

    async def generate(
        self, request: GenerationRequest
    ) -> AsyncIterator[Admitted | TokenChunk | Completion]:
        """Yield ADMITTED, each TokenChunk when the scheduler produces it, then one Completion.

        Admission control runs when the stream is first advanced: `QueueFull` (the waiting
        queue is at max_queue) or `EngineStopped` comes from the first `anext()`, before
        ADMITTED, so the HTTP layer can still answer 429 / 503."""
        if not self.running:
            raise EngineStopped("the engine is not running")
        received_s = time.monotonic() if request.received_s is None else request.received_s
        waiting = self.scheduler.waiting + len(self._arrivals) + len(self._admission)
        if waiting >= self.config.max_queue:
            raise QueueFull(self._retry_after_s())
        tokens, finish, prompt_tokens = await self._admission.run(lambda: self._prepare(request))
        if not self.running:
            raise EngineStopped("the engine is not running")
        request_id = request.request_id or f"req-{next(self._ids)}"
        sched_request = SchedRequest(request_id, 0.0, prompt_tokens, max(1, len(tokens)))
        stream = _Stream(received_s)
        self._streams[sched_request] = stream
        self._arrivals.append(sched_request)  # submitted at the driver's next turn
        self._kick()
        try:
            yield ADMITTED
            sent = 0
            while sent < len(tokens) or stream.record is None:
                available = min(stream.ready, len(tokens))
                if available == sent:
                    await self._wait(stream)
                    continue
                for index in range(sent, available):
                    yield TokenChunk(tokens[index], index)
                sent = available
            # Let the other streams of this step take their tokens before this one's
            # completion work (closing the response, metrics) runs: it would delay them.
            await asyncio.sleep(0)
            yield _completion(finish, prompt_tokens, len(tokens), stream, self.config.speed)
        finally:
            self._streams.pop(sched_request, None)
            if sched_request in self._arrivals:
                self._arrivals.remove(sched_request)
            elif stream.record is None:
                self.scheduler.cancel(sched_request)

    def _prepare(self, request: GenerationRequest) -> tuple[list[str], FinishReason, int]:
        """The answer's tokens, why it ends, and the prompt's size in tokens."""
        budget = request.max_tokens
        if budget is None:
            budget = self.config.default_max_tokens
        tokens, finish = self.responder.respond(
            request.messages, budget, answer=request.answer, ignore_eos=request.ignore_eos
        )
        return tokens, finish, self.prompt_tokens(request)

    @staticmethod
    async def _wait(stream: _Stream) -> None:
        """Until the driver has news for this stream: tokens, its record or an error."""
        if stream.error is not None:
            raise stream.error
        if stream.record is not None:
            return
        stream.waiter = asyncio.get_running_loop().create_future()
        await stream.waiter
        if stream.error is not None:
            raise stream.error

    def _retry_after_s(self) -> float:
        """A guess at how long the queue takes to drain, in wall seconds."""
        busy = [w.busy_until - self.scheduler.now for w in self.scheduler.workers if w.busy]
        return max(1.0, round(max(busy, default=0.0) / 1000.0 / self.config.speed, 1))

    # ---- scheduler hooks ----------------------------------------------------------------------
    def _on_tokens(self, requests: Any, now_ms: float) -> None:
        # All of a step's tokens are due at the same simulated instant. First tokens are woken
        # at once and the other streams on the next loop turn: waking ~40 streams takes ~0.1 ms,
        # and a new request's TTFT should not wait for it, nor for the rest of the driver's turn.
        streams = self._streams
        first = False
        later: list[_Stream] = []
        for request in requests:
            stream = streams.get(request)
            if stream is None:
                continue
            stream.ready += 1
            if stream.waiter is None:
                continue
            if stream.ready == 1:
                stream.wake()
                first = True
            else:
                later.append(stream)
        if first and later:  # a woken stream means the driver runs inside the event loop
            asyncio.get_running_loop().call_soon(_wake_all, later)
        else:
            _wake_all(later)

    def _on_finish(self, request: SchedRequest, record: RequestRecord) -> None:
        stream = self._streams.get(request)
        if stream is not None:
            stream.record = record
            stream.wake()
        # Observers run after the streams woken by this step have taken their tokens (and
        # before this stream's Completion, which waits one more loop turn).
        try:
            asyncio.get_running_loop().call_soon(self._notify, record)
        except RuntimeError:  # driven outside the event loop (no streams to protect)
            self._notify(record)

    def _on_step(self, stats: StepStats) -> None:
        self._notify(stats)

    def _notify(self, item: RequestRecord | StepStats) -> None:
        for observer in self._observers:
            try:
                observer(item)
            except Exception:  # an observer must never stop the engine
                log.exception("engine observer %r failed", observer)

    # ---- control and inspection ------------------------------------------------------------
    def add_observer(self, callback: Observer) -> None:
        """Call `callback` with each finished request's RequestRecord and each step's StepStats."""
        self._observers.append(callback)
        self.scheduler.on_step = self._on_step

    def set_link_fallback(self, enabled: bool) -> None:
        """The "KV link silently falls back to TCP" fault (and its repair)."""
        self.scheduler.run_until(self.clock.now_ms())
        self.scheduler.set_link_fallback(enabled)
        self._kick()

    def state(self) -> dict[str, Any]:
        """JSON for GET /engine/state."""
        data = self.scheduler.state()
        data.update(
            preset=self.deployment.name,
            description=self.deployment.description,
            link=self.scheduler.link_profile.name if self.deployment.mode == "disagg" else None,
            speed=self.config.speed,
            config={**asdict(self.config), "served_models": list(self.config.served_models)},
        )
        return data


def _wake_all(streams: list[_Stream]) -> None:
    for stream in streams:
        stream.wake()


def _resolve(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


def _resolve_at(future: asyncio.Future[None], when: float) -> None:
    """Resolve `future` at loop time `when`, going round the loop until then (see _SPIN_S)."""
    if future.done():
        return
    loop = asyncio.get_running_loop()
    if loop.time() >= when:
        future.set_result(None)
    else:
        loop.call_soon(_resolve_at, future, when)


def _completion(
    finish: FinishReason, prompt_tokens: int, completion_tokens: int, stream: _Stream, speed: float
) -> Completion:
    assert stream.record is not None
    return Completion(
        finish_reason=finish,
        prompt_tokens=prompt_tokens,
        completion_tokens=completion_tokens,
        pd_timing=stream.record.pd_timing(speed, stream.admission_wall_ms),
    )


def create_service(config: EngineConfig) -> LiveEngineService:
    """The live engine for `config`; `await service.start()` inside a running event loop."""
    return LiveEngineService(config)
