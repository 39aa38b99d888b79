"""How a stream was going when its wall clock ran out: slow but working, stalled, never
started, or over its budget (issue 27, "defaults that adapt").

A probe with a fixed deadline cannot tell a healthy slow engine (a CPU llama.cpp at 15 tokens/s)
from a broken one by the timeout alone; the tokens that did arrive can. `judge_cut` reads the
partial answer a `GatewayTimeout` carries (`timings.chunk_ms`, the arrival of every output
chunk) and names the cause:

- `slow`: tokens were still arriving at the deadline, at a steady rate, and fewer than the
  request's `max_tokens` had come: the answer was on its way, just not finished in time. The
  rate and the first token's time say how long the whole budget would take.
- `stalled`: tokens came, then nothing for longer than `STALL_GAPS` x the usual gap (and at
  least `STALL_FLOOR_MS`): the server or a proxy stopped sending mid-answer. A single token
  followed by silence is `stalled` too (there is no rate to judge it by).
- `no-first-token`: the headers came but no output token before the deadline: the model is
  still reading the prompt (a long prefill on a slow engine), or the stream carries only
  keep-alives or events the client does not understand.
- `over-budget`: more tokens than `max_tokens` arrived and the stream still did not end: the
  server ignores the budget (an endless stream).

Pure: no clock, no IO. Counted tokens are output chunks (one token each on vLLM, SGLang,
llama.cpp and the bundled engine), since a cut stream never reaches its usage.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import asdict, dataclass
from typing import Any, Literal

from notes_cli.gateway.results import StreamResult

Cause = Literal["slow", "stalled", "no-first-token", "over-budget"]
STALL_GAPS = 5.0  # silence over this many median gaps is a stall, not a slow token
STALL_FLOOR_MS = 1000.0  # ...and never less than this (a slow token on a CPU engine)
FIT_SHARE = 0.8  # a budget sized to a timeout leaves this share of it for the answer


@dataclass(frozen=True)
class Pace:
    """The judged state of a stream cut at `elapsed_ms`. Times are ms from the request's
    start; `tokens_per_s` is the decode rate after the first token (None with fewer than two
    tokens); `needs_s` the time the whole `max_tokens` budget would take at that rate."""

    cause: Cause
    elapsed_ms: float
    headers_ms: float | None
    first_token_ms: float | None
    tokens: int
    max_tokens: int | None
    tokens_per_s: float | None
    silent_ms: float | None
    needs_s: float | None

    @property
    def slow(self) -> bool:
        return self.cause == "slow"

    def describe(self) -> str:
        """One sentence naming the cause with its figures."""
        seconds = f"{self.elapsed_ms / 1000:.1f} s"
        if self.cause == "slow":
            need = (
                f"; the {self.max_tokens}-token budget needs about {self.needs_s:.0f} s"
                if self.needs_s is not None and self.max_tokens
                else ""
            )
            return (
                f"slow but working: {self.rate_words()}, {self.tokens} tokens in {seconds} "
                f"and still coming{need}"
            )
        if self.cause == "stalled":
            rate = f" at {self.rate_words()}" if self.tokens_per_s else ""
            silent = (self.silent_ms or 0) / 1000
            return (
                f"stalled: {self.tokens} token{'s' if self.tokens != 1 else ''}{rate} "
                f"(first token after {self.first_token_ms or 0:.0f} ms), then nothing for "
                f"{silent:.1f} s"
            )
        if self.cause == "over-budget":
            return (
                f"never finished: {self.tokens} tokens arrived, more than the {self.max_tokens} "
                f"asked for, and the stream went on"
            )
        headers = f" (headers after {self.headers_ms:.0f} ms)" if self.headers_ms else ""
        return f"never started: no output token within {seconds}{headers}"

    def rate_words(self) -> str:
        rate = f"{self.tokens_per_s:.1f} tokens/s" if self.tokens_per_s else "? tokens/s"
        return f"{rate} (first token after {self.first_token_ms or 0:.0f} ms)"

    def fitting_timeout(self) -> int | None:
        """Whole seconds that would let the whole budget finish at this rate (with room)."""
        if self.needs_s is None:
            return None
        return math.ceil(self.needs_s / FIT_SHARE)

    def fitting_max_tokens(self, timeout_s: float) -> int | None:
        """A `max_tokens` that finishes within `timeout_s` at this rate (with room)."""
        if not self.tokens_per_s or self.first_token_ms is None:
            return None
        decode_s = timeout_s * FIT_SHARE - self.first_token_ms / 1000
        return max(1, int(decode_s * self.tokens_per_s)) if decode_s > 0 else None

    def to_json(self) -> dict[str, Any]:
        return {k: (round(v, 1) if isinstance(v, float) else v) for k, v in asdict(self).items()}


def judge_cut(partial: StreamResult, *, max_tokens: int | None, elapsed_ms: float) -> Pace:
    """The cause of a stream that was still open after `elapsed_ms` (its deadline)."""
    t = partial.timings
    chunks = t.chunk_ms
    tokens = max(partial.output_tokens, len(chunks))
    rate = _rate(chunks, tokens)
    first = chunks[0] if chunks else t.ttft_ms
    silent = elapsed_ms - chunks[-1] if chunks else None
    needs = None
    if rate and first is not None and max_tokens:
        needs = (first + (max_tokens - 1) / rate * 1000) / 1000

    def pace(cause: Cause) -> Pace:
        return Pace(cause, elapsed_ms, t.headers_ms, first, tokens, max_tokens, rate, silent,
                    needs)  # fmt: skip

    if not chunks:
        return pace("no-first-token")
    if max_tokens is not None and tokens >= max_tokens:
        return pace("over-budget")
    if len(chunks) < 2 or silent is None or silent > _stall_ms(chunks):
        return pace("stalled")
    return pace("slow")


def _rate(chunks: list[float], tokens: int) -> float | None:
    """Tokens per second after the first chunk."""
    if len(chunks) < 2 or chunks[-1] <= chunks[0]:
        return None
    per_chunk = tokens / len(chunks)
    return (len(chunks) - 1) * per_chunk / (chunks[-1] - chunks[0]) * 1000


def _stall_ms(chunks: list[float]) -> float:
    gaps = [b - a for a, b in zip(chunks, chunks[1:], strict=False)]
    return max(STALL_GAPS * statistics.median(gaps), STALL_FLOOR_MS)
