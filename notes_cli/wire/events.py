"""The neutral stream vocabulary: what a streamed answer says, one event at a time.

A `StreamDecoder` turns a protocol's SSE events into these; a `StreamEncoder` turns these into
a protocol's SSE bytes. Tool calls are numbered by `index` in order of appearance (0, 1, …)
whatever the protocol numbers them by, so parallel calls interleave safely.
"""

from __future__ import annotations

from dataclasses import dataclass

from notes_cli.wire.turn import FinishReason, Usage


@dataclass(frozen=True, slots=True)
class StartEvent:
    """The answer's id and model, when the protocol announces them up front."""

    id: str
    model: str


@dataclass(frozen=True, slots=True)
class TextDelta:
    text: str


@dataclass(frozen=True, slots=True)
class ReasoningDelta:
    """Reasoning text; a `signature` (Anthropic `signature_delta`, Responses
    `encrypted_content`) may arrive alone with empty text."""

    text: str
    signature: str | None = None


@dataclass(frozen=True, slots=True)
class ToolCallBegin:
    index: int
    call_id: str
    name: str
    kind: str = "function"


@dataclass(frozen=True, slots=True)
class ToolCallDelta:
    index: int
    arguments: str


@dataclass(frozen=True, slots=True)
class ToolCallEnd:
    index: int


@dataclass(frozen=True, slots=True)
class UsageEvent:
    usage: Usage


@dataclass(frozen=True, slots=True)
class FinishEvent:
    finish: FinishReason


@dataclass(frozen=True, slots=True)
class ErrorEvent:
    """The stream reported an error (an `error` event, `response.failed`, an error chunk)."""

    message: str
    status: int | None = None
    code: str | None = None


Event = (
    StartEvent
    | TextDelta
    | ReasoningDelta
    | ToolCallBegin
    | ToolCallDelta
    | ToolCallEnd
    | UsageEvent
    | FinishEvent
    | ErrorEvent
)
