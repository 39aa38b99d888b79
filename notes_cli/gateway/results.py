"""Typed results of gateway calls. All times are milliseconds measured from the moment the
request was started (so `ttft_ms` includes connect and time to headers)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

TokensSource = Literal["usage", "counted"]


@dataclass
class Timings:
    """Where the time of one call went.

    `connect_ms` is DNS + TCP (+ TLS) when a new connection was opened, None when a pooled one
    was reused or the transport cannot tell (mocked). `headers_ms` is when the response headers
    arrived, `ttft_ms` when the first chunk carrying output (text or reasoning) arrived,
    `total_ms` when the stream ended, and `chunk_ms` the arrival of every output chunk.
    `max_gap_ms` is the longest silence between the headers and the first event or between
    two events of any kind (what a client's idle timeout measures), `last_event_ms` when the
    last event arrived, and `ended_ms` when the body ended (a cut stream: the cut)."""

    connect_ms: float | None = None
    headers_ms: float | None = None
    ttft_ms: float | None = None
    total_ms: float | None = None
    chunk_ms: list[float] = field(default_factory=list)
    max_gap_ms: float | None = None
    last_event_ms: float | None = None
    ended_ms: float | None = None


@dataclass
class StreamResult:
    """One streamed (or non-streamed) turn. `completed` is True only when the protocol's
    completion event arrived and the model stopped by itself (not cut by the token limit)."""

    status: int
    text: str
    finish_reason: str | None
    completed: bool
    output_tokens: int
    input_tokens: int | None
    tokens_source: TokensSource
    model: str | None
    timings: Timings
    pd_timing: dict[str, Any] | None = None
    # llama.cpp's `timings` object (prompt_ms, cache_n, predicted_per_token_ms, ...), if sent.
    server_timings: dict[str, Any] | None = None
    # Prompt tokens the server says it served from its cache (usage.*_tokens_details), if any.
    cached_input_tokens: int | None = None
    raw_events_count: int = 0
    reasoning_chars: int = 0
    client_issues: list[str] = field(default_factory=list)
    """Ways the real client would still fail on this answer (e.g. Codex shows nothing when a
    Responses stream has text deltas but no `response.output_item.done`)."""

    @property
    def tokens_per_s(self) -> float | None:
        """Decode rate: output tokens after the first, over the time after the first."""
        t = self.timings
        if t.ttft_ms is None or t.total_ms is None or self.output_tokens < 2:
            return None
        decode_ms = t.total_ms - t.ttft_ms
        return (self.output_tokens - 1) / decode_ms * 1000 if decode_ms > 0 else None


@dataclass
class ModelsResult:
    """`GET /models`: the ids the gateway says it serves, and each entry as it sent it (the
    limits some gateways add: `context_length`, `max_model_len`, …)."""

    status: int
    ids: list[str]
    timings: Timings
    entries: list[dict[str, Any]] = field(default_factory=list)
