"""The engine's four protocols over the wire layer: a request body becomes a neutral `Turn`
(`notes_cli.wire.<protocol>.decode_request`), the turn becomes the core's
`GenerationRequest`, and the core's tokens go back out through the protocol's
`StreamEncoder` as text deltas, or as the argument deltas of one tool call when the tool rule
(`engine/core/tool_rule.py`) says so.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, replace
from typing import Any, Protocol

from notes_cli.engine.core import prompt, tool_rule
from notes_cli.engine.core.api import ChatMessage, Completion, GenerationRequest
from notes_cli.wire import anthropic, chat, gemini, responses
from notes_cli.wire.codec import Codec, StreamEncoderFactory
from notes_cli.wire.errors import WireError, invalid
from notes_cli.wire.events import FinishEvent, ToolCallBegin, ToolCallDelta, ToolCallEnd, UsageEvent
from notes_cli.wire.turn import (
    FinishReason,
    Message,
    Part,
    Reply,
    TextPart,
    ToolCallPart,
    Turn,
    Usage,
)

PROTOCOLS = ("chat", "responses", "anthropic", "gemini")


@dataclass(frozen=True)
class Dialect:
    """One wire protocol as the engine serves it."""

    name: (
        str  # "chat" | "responses" | "anthropic" | "gemini": the --protocols word, metadata["api"]
    )
    route: str  # the metrics label
    wire: Codec
    call_prefix: str  # tool call ids in the protocol's style


CHAT = Dialect("chat", "chat", chat, "call_")
RESPONSES = Dialect("responses", "responses", responses, "call_")
MESSAGES = Dialect("anthropic", "messages", anthropic, "toolu_")
GEMINI = Dialect("gemini", "gemini", gemini, "call_")


@dataclass(frozen=True)
class EngineCall:
    """A request understood: the neutral turn, what the core generates, and the tool plan."""

    turn: Turn
    request: GenerationRequest
    tool_call: tool_rule.ToolCallPlan | None = None
    call_id: str = ""

    @property
    def stream(self) -> bool:
        return self.turn.stream


def parse(
    dialect: Dialect, raw: bytes, *, model: str | None = None, stream: bool = False
) -> EngineCall:
    """The body → EngineCall; WireError (400 naming the param) on bad input. `model` and
    `stream` are the URL's, for Gemini (whose body says neither)."""
    turn = dialect.wire.decode_request(raw)
    if model is not None:
        turn = replace(turn, model=model.removeprefix("models/"), stream=stream)
    n = turn.extra.get("n", 1)
    if n != 1:
        raise invalid(f"This engine answers with one choice; 'n' must be 1, got {n}.", param="n")
    count = turn.extra.get("candidateCount", 1)
    if count != 1:
        message = f"This engine answers with one candidate; candidateCount must be 1, got {count}."
        raise invalid(message, param="generationConfig.candidateCount")
    plan = tool_rule.plan(turn)
    answer = None
    tool_call = None
    call_id = ""
    if isinstance(plan, tool_rule.ToolCallPlan):
        tool_call, answer = plan, plan.arguments
        call_id = f"{dialect.call_prefix}{uuid.uuid4().hex[:24]}"
    elif isinstance(plan, tool_rule.TextPlan):
        answer = plan.text
    request = GenerationRequest(
        model=turn.model,
        messages=tuple(_flatten(m) for m in turn.messages),
        max_tokens=turn.sampling.max_tokens,
        request_id=dialect.wire.new_id(),
        metadata={"api": dialect.name},
        answer=answer,
    )
    return EngineCall(turn, request, tool_call, call_id)


def _flatten(message: Message) -> ChatMessage:
    """A message as the core reads it (`prompt.message_text`)."""
    return ChatMessage(message.role, prompt.message_text(message))


def _usage(completion: Completion) -> Usage:
    return Usage(
        input_tokens=completion.prompt_tokens,
        output_tokens=completion.completion_tokens,
        extra={"pd_timing": completion.pd_timing.to_json()},
    )


def _finish(call: EngineCall, completion: Completion) -> FinishReason:
    if call.tool_call is not None and completion.finish_reason == "stop":
        return "tool_calls"
    return completion.finish_reason


def body(
    dialect: Dialect, call: EngineCall, text: str, completion: Completion, fingerprint: str
) -> dict[str, Any]:
    """The non-streamed answer in the dialect's own form."""
    parts: list[Part]
    if call.tool_call is not None:
        parts = [ToolCallPart(call.call_id, call.tool_call.tool, text)]
    else:
        parts = [TextPart(text)]
    reply = Reply(
        call.request.request_id,
        call.turn.model,
        parts,
        _finish(call, completion),
        _usage(completion),
    )
    return dialect.wire.encode_reply(reply, fingerprint=fingerprint)


def error_body(dialect: Dialect, error: WireError) -> dict[str, Any]:
    return dialect.wire.encode_error(error)


class StreamEncoder(Protocol):
    """What the app's stream loop calls: `head` with the response headers (only what the real
    API sends before the model has produced anything), `opening` + `token` with the first
    token, `token` per later token, `closing` with the completion."""

    def head(self) -> bytes: ...

    def opening(self) -> bytes: ...

    def token(self, text: str) -> bytes: ...

    def closing(self, completion: Completion) -> bytes: ...


class EngineStream:
    """The core's tokens as one protocol's SSE. A text answer's `token` is the wire encoder's
    own `text` method (bound once: the per-token hot path has no wrapper); a tool call's
    tokens are its argument deltas."""

    def __init__(
        self,
        dialect: Dialect,
        call: EngineCall,
        fingerprint: str,
        prompt_tokens: int,
        encoder: StreamEncoderFactory | None = None,
    ) -> None:
        """`encoder`: another framing of the dialect's stream (Gemini's JSON array)."""
        self._call = call
        self._encoder = (encoder or dialect.wire.StreamEncoder)(
            call.request.request_id,
            call.turn.model,
            include_usage=call.turn.include_usage,
            fingerprint=fingerprint,
            input_tokens=prompt_tokens,
        )
        self.head = self._encoder.head
        self._begun = False
        if call.tool_call is None:
            self.token = self._encoder.text
        else:
            self.token = self._argument

    def opening(self) -> bytes:
        return b""  # the wire encoders open their first item with the first output

    def _begin(self) -> bytes:
        self._begun = True
        assert self._call.tool_call is not None
        return self._encoder.encode(ToolCallBegin(0, self._call.call_id, self._call.tool_call.tool))

    def _argument(self, text: str) -> bytes:
        head = b"" if self._begun else self._begin()
        return head + self._encoder.encode(ToolCallDelta(0, text))

    def closing(self, completion: Completion) -> bytes:
        out = b""
        if self._call.tool_call is not None:
            out = (b"" if self._begun else self._begin()) + self._encoder.encode(ToolCallEnd(0))
        encode = self._encoder.encode
        out += encode(FinishEvent(_finish(self._call, completion)))
        out += encode(UsageEvent(_usage(completion)))
        return out + self._encoder.close()
