"""Reading one answer the way its client does, on the wire layer's client-side decoders.

What the answer says comes from `notes_cli.wire`: `<protocol>.StreamDecoder` turns each event
into neutral events, `decode_reply` a whole JSON answer into a neutral Reply; each decoder also
keeps the protocol's own finish word (`native_finish`: `completed`, `end_turn`, `length`, …),
which is what smoke, doctor and bench show. This module keeps only what the gateway client
measures and judges on top: when each output chunk arrived (TTFT and the gaps between chunks),
the text and token counts, whether the protocol's completion event came, and the ways the real
client would still fail on the answer (`client_issues`). No IO: the sync and async drivers
share it.
"""

from __future__ import annotations

from typing import Any

from notes_cli.gateway._requests import WIRE
from notes_cli.gateway.results import StreamResult, Timings
from notes_cli.gateway.sse import ServerSentEvent
from notes_cli.wire import ReasoningPart, TextPart, Usage
from notes_cli.wire import responses as wire_responses
from notes_cli.wire.codec import StreamDecoder
from notes_cli.wire.events import (
    ErrorEvent,
    ReasoningDelta,
    StartEvent,
    TextDelta,
    UsageEvent,
)

# Finish words that mean "the model stopped by itself" (not cut by the token limit).
NATURAL_STOPS = frozenset({"stop", "end_turn", "stop_sequence", "completed", "eos", "STOP"})
"""The finish reasons of a natural end; `STOP` is Gemini's (its reasons are upper case)."""


class StreamFailed(Exception):
    """The answer reported an error (an error event or a 2xx error body); the driver turns it
    into UpstreamError."""


class StreamReader:
    """One stream: feed it each SSE event with the time it arrived (ms since the request
    started). `closed` means the stream's last event arrived (stop reading), `done` that the
    protocol's completion event was seen."""

    __slots__ = (
        "decoder",
        "_feed",
        "_issues",
        "text_parts",
        "chunk_ms",
        "content_chunks",
        "reasoning_chars",
        "events",
        "usage",
        "model",
        "sentinel",
        "first_event_ms",
        "last_event_ms",
        "max_gap_ms",
    )

    def __init__(self, protocol: str) -> None:
        self.decoder: StreamDecoder = WIRE[protocol].StreamDecoder()
        self._feed = self.decoder.feed  # bound once: this runs for every event
        self._issues = CLIENT_CHECKS.get(protocol)
        self.text_parts: list[str] = []
        self.chunk_ms: list[float] = []  # when each event carrying output arrived
        self.content_chunks = 0  # events that carried text: the token count without usage
        self.reasoning_chars = 0
        self.events = 0
        self.usage: Usage | None = None
        self.model: str | None = None
        self.sentinel = False  # `data: [DONE]`, which gateways append to every protocol
        self.first_event_ms: float | None = None  # the silences a client's idle timeout sees
        self.last_event_ms: float | None = None
        self.max_gap_ms = 0.0

    @property
    def done(self) -> bool:
        return self.decoder.done

    @property
    def closed(self) -> bool:
        return self.sentinel or self.decoder.closed

    def handle(self, event: ServerSentEvent, now_ms: float) -> str | None:
        """Read one event. Returns the text it carried ("" for reasoning-only output), or None
        when it carried no output. Raises StreamFailed on the protocol's error event."""
        self.events += 1
        last = self.last_event_ms
        if last is None:
            self.first_event_ms = now_ms
        elif now_ms - last > self.max_gap_ms:
            self.max_gap_ms = now_ms - last
        self.last_event_ms = now_ms
        data = event.data
        if data == "[DONE]":
            self.sentinel = True
        got: str | None = None
        # Any: each event is told by `type(item) is`, read once (cheaper per event than an
        # isinstance chain), which mypy does not narrow through a variable
        items: list[Any] = self._feed(data, event.event)
        for item in items:
            kind = type(item)
            if kind is TextDelta:
                text = item.text
                self.text_parts.append(text)
                self.content_chunks += 1
                got = text if got is None else got + text
            elif kind is ReasoningDelta:
                if item.text:
                    self.reasoning_chars += len(item.text)
                    if got is None:
                        got = ""
            elif kind is UsageEvent:
                self.usage = item.usage
            elif kind is StartEvent:
                self.model = item.model or self.model
            elif kind is ErrorEvent:
                raise StreamFailed(item.message)
        if got is not None:
            self.chunk_ms.append(now_ms)
        return got

    def result(self, status: int, timings: Timings) -> StreamResult:
        timings.chunk_ms = self.chunk_ms
        timings.last_event_ms = self.last_event_ms
        if self.first_event_ms is not None:
            lead = self.first_event_ms - (timings.headers_ms or 0.0)
            timings.max_gap_ms = max(self.max_gap_ms, lead)
        if self.chunk_ms:
            timings.ttft_ms = self.chunk_ms[0]
        return _result(
            status,
            timings,
            text="".join(self.text_parts),
            text_chunks=self.content_chunks,
            finish=self.decoder.native_finish,
            done=self.done,
            usage=self.usage,
            model=self.model,
            events=self.events,
            reasoning_chars=self.reasoning_chars,
            client_issues=self._issues(self) if self._issues else [],
            server_timings=getattr(self.decoder, "server_timings", None),
        )


def reply_result(
    protocol: str, payload: dict[str, Any], status: int, timings: Timings
) -> StreamResult:
    """A non-streamed answer, read with the same rules as a stream. A 2xx body that carries
    an error object raises StreamFailed."""
    wire = WIRE[protocol]
    if (
        payload.get("error")
        or (payload.get("type") == "error")
        or payload.get("status") == "failed"
    ):
        raise StreamFailed(wire.decode_error(status, payload).message)
    reply = wire.decode_reply(payload)
    finish = wire.native_finish(payload)
    texts = [p for p in reply.parts if isinstance(p, TextPart) and p.text]
    return _result(
        status,
        timings,
        text=reply.text,
        text_chunks=len(texts),
        finish=finish,
        done=finish is not None,
        usage=reply.usage,
        model=reply.model or None,
        events=1,
        reasoning_chars=sum(len(p.text) for p in reply.parts if isinstance(p, ReasoningPart)),
        client_issues=[],
        server_timings=llama if isinstance(llama := payload.get("timings"), dict) else None,
    )


def _result(
    status: int,
    timings: Timings,
    *,
    text: str,
    text_chunks: int,
    finish: str | None,
    done: bool,
    usage: Usage | None,
    model: str | None,
    events: int,
    reasoning_chars: int,
    client_issues: list[str],
    server_timings: dict[str, Any] | None = None,
) -> StreamResult:
    # Usage that reports no output tokens for an answer that has text is a server that does
    # not count them: the text chunks are the better estimate.
    counted = usage is None or (usage.output_tokens == 0 and text_chunks > 0)
    pd_timing = usage.extra.get("pd_timing") if usage is not None else None
    return StreamResult(
        status=status,
        text=text,
        finish_reason=finish,
        completed=done and finish in NATURAL_STOPS,
        output_tokens=text_chunks if counted or usage is None else usage.output_tokens,
        input_tokens=usage.input_tokens if usage is not None else None,
        tokens_source="counted" if counted else "usage",
        model=model,
        timings=timings,
        pd_timing=pd_timing if isinstance(pd_timing, dict) else None,
        server_timings=server_timings,
        cached_input_tokens=usage.cached_input_tokens if usage is not None else None,
        raw_events_count=events,
        reasoning_chars=reasoning_chars,
        client_issues=client_issues,
    )


# --------------------------------------------------------------------------- client issues
# What the real client would still do wrong with an answer the protocol accepts: knowledge of
# the client (Codex, Claude Code), not of the protocol, so it stays here.


def _responses_client_issues(reader: StreamReader) -> list[str]:
    decoder = reader.decoder
    if not isinstance(decoder, wire_responses.StreamDecoder):
        return []
    if reader.text_parts and not decoder.item_text_seen and reader.events > 1:
        return [
            "text arrived only as deltas, with no response.output_item.done message item: "
            "Codex prints an empty answer for this stream"
        ]
    return []


CLIENT_CHECKS = {"responses": _responses_client_issues}
