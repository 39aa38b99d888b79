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
    into this. `max_tokens` None means the engine's default output budget."""

    model: str
    messages: tuple[ChatMessage, ...]
    max_tokens: int | None = None
    request_id: str = ""
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class PdTiming:
    """`usage.pd_timing` of DESIGN.md."""

    queue_ms: float
    prefill_ms: float
    transfer_ms: float
    decode_ms: float
    ttft_ms: float
    tpot_ms: float
    prefill_node: str
    decode_node: str
    mode: str

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        return {k: (round(v, 3) if isinstance(v, float) else v) for k, v in data.items()}


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

    def generate(self, request: GenerationRequest) -> AsyncIterator[TokenChunk | Completion]:
        """Yield each TokenChunk at the (scaled) wall time the scheduler emits it, then one
        Completion. Raises `QueueFull` when admission control rejects the request."""
        ...

    def state(self) -> dict[str, Any]:
        """JSON for GET /engine/state: mode, nodes, queues, batch sizes, KV usage, config."""
        ...


class QueueFull(Exception):
    """Admission control: the waiting queue is at its limit (HTTP 429 with Retry-After)."""

    def __init__(self, retry_after_s: float) -> None:
        super().__init__(f"engine queue is full; retry after {retry_after_s:.1f}s")
        self.retry_after_s = retry_after_s
