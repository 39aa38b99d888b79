"""Helpers for the wire-layer tests: run neutral events through a protocol's StreamEncoder,
the gateway's SSE parser (at any byte splits) and the protocol's StreamDecoder, and summarise
an event list so two can be compared whatever their delta boundaries."""

from __future__ import annotations

from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

from notes_cli.gateway.sse import SSEParser
from notes_cli.wire import (
    ErrorEvent,
    Event,
    FinishEvent,
    ReasoningDelta,
    StartEvent,
    TextDelta,
    ToolCallBegin,
    ToolCallDelta,
    ToolCallEnd,
    UsageEvent,
)


def encode(module: ModuleType, events: list[Event], **options: Any) -> bytes:
    encoder = module.StreamEncoder("id_1", "model-x", created=1, **options)
    out = encoder.head()
    for event in events:
        out += encoder.encode(event)
    return out + encoder.close()


def decode(module: ModuleType, chunks: list[bytes]) -> list[Event]:
    parser = SSEParser()
    decoder = module.StreamDecoder()
    events: list[Event] = []
    for chunk in chunks:
        for sse in parser.feed(chunk):
            events.extend(decoder.feed(sse.data, sse.event))
    for sse in parser.close():
        events.extend(decoder.feed(sse.data, sse.event))
    return events


@dataclass
class Summary:
    """What a stream said, independent of how it was cut into deltas."""

    text: str = ""
    reasoning: str = ""
    signatures: list[str] = field(default_factory=list)
    calls: list[tuple[str, str, str]] = field(default_factory=list)  # (id, name, arguments)
    ended: list[int] = field(default_factory=list)
    finish: str | None = None
    usage: tuple[int, int] | None = None
    errors: list[str] = field(default_factory=list)


def summarise(events: list[Event]) -> Summary:
    summary = Summary()
    calls: dict[int, list[str]] = {}
    for event in events:
        if isinstance(event, TextDelta):
            summary.text += event.text
        elif isinstance(event, ReasoningDelta):
            summary.reasoning += event.text
            if event.signature:
                summary.signatures.append(event.signature)
        elif isinstance(event, ToolCallBegin):
            calls[event.index] = [event.call_id, event.name, ""]
        elif isinstance(event, ToolCallDelta):
            calls[event.index][2] += event.arguments
        elif isinstance(event, ToolCallEnd):
            summary.ended.append(event.index)
        elif isinstance(event, FinishEvent):
            summary.finish = event.finish
        elif isinstance(event, UsageEvent):
            summary.usage = (event.usage.input_tokens, event.usage.output_tokens)
        elif isinstance(event, ErrorEvent):
            summary.errors.append(event.message)
        elif isinstance(event, StartEvent):
            pass
    summary.calls = [(c[0], c[1], c[2]) for _, c in sorted(calls.items())]
    summary.ended.sort()
    return summary
