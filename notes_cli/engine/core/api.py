"""The boundary between the engine core (cost model, scheduler, responder) and its HTTP adapter.

The HTTP app only ever calls `EngineService.generate()` and reads `EngineService.state()`; the
core never knows about HTTP. Times in `PdTiming` are simulated hardware milliseconds.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import asdict, dataclass, field
from typing import Any, Literal, Protocol

FinishReason = Literal["stop", "length"]


@dataclass(frozen=True)
class ChatMessage:
    role: str
    text: str


@dataclass(frozen=True)
class GenerationRequest:
    """A protocol-neutral request: the HTTP layer flattens chat / Responses / Messages bodies
    into this. `max_tokens` None means the engine's default output budget. `received_s` is the
    `time.monotonic()` at which the server received the request (None: when `generate()` is
    first advanced); the wall time from there until the simulated hardware has the request is
    reported as `PdTiming.admission_wall_ms`. `answer`, when set, is the exact text to
    generate (the HTTP layer's tool rule decided it: a tool call's arguments, or the answer to
    a tool's result) instead of what the responder would say. `ignore_eos` makes the answer
    run to its budget (`max_tokens`) instead of stopping by itself, like a base model."""

    model: str
    messages: tuple[ChatMessage, ...]
    max_tokens: int | None = None
    request_id: str = ""
    metadata: dict[str, Any] = field(default_factory=dict)
    received_s: float | None = None
    answer: str | None = None
    ignore_eos: bool = False


@dataclass(frozen=True)
class PdTiming:
    """`usage.pd_timing` (docs/engine.md). Times are simulated hardware ms; `speed` is the
    engine's --speed (wall time = simulated time / speed), so clients can convert without being
    told.
    `admission_wall_ms` is the one wall-clock field: the engine's own handling of the request
    (reading and parsing it, admission, the driver's turn) before its simulated hardware had
    it, so a server's TTFT in wall time is `ttft_ms / speed + admission_wall_ms`."""

    queue_ms: float
    prefill_ms: float
    transfer_ms: float
    decode_ms: float
    ttft_ms: float
    tpot_ms: float
    prefill_node: str
    decode_node: str
    mode: str
    speed: float = 1.0
    admission_wall_ms: float = 0.0
    transfer_overlap_ms: float = 0.0
    overhead_ms: float = 0.0
    max_itl_ms: float = 0.0  # the largest gap between two of the request's tokens

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        return {k: (round(v, 3) if isinstance(v, float) else v) for k, v in data.items()}


@dataclass(frozen=True)
class Admitted:
    """The first item of every generation stream: admission control accepted the request and
    it is queued, so no 429 or 503 can follow. The HTTP layer sends its response headers and the
    stream's opening event now, before the first token exists, as vLLM, SGLang and the OpenAI
    API do; a client can then tell the server's answer apart from the model's first token."""


ADMITTED = Admitted()


@dataclass(frozen=True)
class TokenChunk:
    """One output token, delivered when the scheduler produces it."""

    text: str
    index: int


@dataclass(frozen=True)
class Completion:
    """The last item of every generation stream."""

    finish_reason: FinishReason
    prompt_tokens: int
    completion_tokens: int
    pd_timing: PdTiming


class EngineService(Protocol):
    """What the HTTP app needs from the engine."""

    served_models: tuple[str, ...]
    max_context_tokens: int

    def count_tokens(self, text: str) -> int: ...

    def generate(
        self, request: GenerationRequest
    ) -> AsyncIterator[Admitted | TokenChunk | Completion]:
        """Yield `ADMITTED` once the request is accepted, then each TokenChunk at the (scaled)
        wall time the scheduler emits it, then one Completion. `QueueFull` (admission control
        rejects the request) and `EngineStopped` come before `ADMITTED`."""
        ...

    def state(self) -> dict[str, Any]:
        """JSON for GET /engine/state: mode, nodes, queues, batch sizes, KV usage, config."""
        ...


@dataclass(slots=True)
class RequestRecord:
    """What happened to one finished request, in simulated milliseconds.

    ttft_ms = overhead_ms + queue_ms + prefill_ms + transfer_ms (the first token comes from the
    prefill pass); e2e_ms = ttft_ms +
    decode_ms; tpot_ms = decode_ms / (output_tokens - 1) (0 for a single token), which is what a
    client measures as (E2E - TTFT) / (output tokens - 1). Inter-token gaps are summarised by
    max_itl_ms, itl_sum_ms and itl_count; `itl_ms` lists every gap in live mode only (the
    simulator keeps no per-token objects)."""

    request_id: str
    arrival_ms: float
    input_tokens: int
    output_tokens: int
    queue_ms: float
    prefill_ms: float
    transfer_ms: float
    decode_ms: float
    ttft_ms: float
    tpot_ms: float
    e2e_ms: float
    max_itl_ms: float
    itl_sum_ms: float
    itl_count: int
    transfer_bytes: int
    prefill_node: str
    decode_node: str
    mode: str
    itl_ms: tuple[float, ...] = ()
    transfer_overlap_ms: float = 0.0  # KV link time hidden under the prefill (layer-wise)
    overhead_ms: float = 0.0  # fixed per-request time outside the GPUs, part of ttft_ms

    def pd_timing(self, speed: float = 1.0, admission_wall_ms: float = 0.0) -> PdTiming:
        return PdTiming(
            queue_ms=self.queue_ms,
            prefill_ms=self.prefill_ms,
            transfer_ms=self.transfer_ms,
            decode_ms=self.decode_ms,
            ttft_ms=self.ttft_ms,
            tpot_ms=self.tpot_ms,
            prefill_node=self.prefill_node,
            decode_node=self.decode_node,
            mode=self.mode,
            speed=speed,
            admission_wall_ms=admission_wall_ms,
            transfer_overlap_ms=self.transfer_overlap_ms,
            overhead_ms=self.overhead_ms,
            max_itl_ms=self.max_itl_ms,
        )


@dataclass(frozen=True, slots=True)
class StepStats:
    """One scheduler step on one node: `phase` is "prefill", "decode" or "mixed" (chunked)."""

    node: str
    phase: str
    start_ms: float
    duration_ms: float
    batch_size: int  # sequences in the step
    new_tokens: int  # query tokens processed (prompt tokens + one per decoding sequence)
    kv_used_tokens: int
    kv_capacity_tokens: int

    @property
    def kv_usage(self) -> float:
        return self.kv_used_tokens / self.kv_capacity_tokens if self.kv_capacity_tokens else 0.0


class EngineStopped(Exception):
    """The engine shut down while the request was still running (HTTP 503)."""


class QueueFull(Exception):
    """Admission control: the waiting queue is at its limit (HTTP 429 with Retry-After)."""

    def __init__(self, retry_after_s: float) -> None:
        super().__init__(f"engine queue is full; retry after {retry_after_s:.1f}s")
        self.retry_after_s = retry_after_s
