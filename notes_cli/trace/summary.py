"""`pdnotes trace show`: what a trace holds, in one pass and memory bounded by its sessions and
distinct blocks (never by its requests)."""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from notes_cli.trace.format import TraceRow


@dataclass(frozen=True)
class TraceSummary:
    requests: int
    sessions: int  # distinct session_id values (rows without one are not counted)
    max_turns: int
    duration_ms: float
    mean_input: float
    mean_output: float
    mean_growth: float | None  # mean prompt growth from one turn of a session to its next
    blocks: int
    reused_blocks: int  # blocks whose id an earlier request already had
    cached_tokens: int | None  # the upstream's own count, summed, when the trace records it
    gap_cv: float | None  # coefficient of variation of inter-arrival gaps (1 ≈ Poisson)

    session_requests: int = 0  # requests that carry a session_id

    @property
    def turns_per_session(self) -> float | None:
        return self.session_requests / self.sessions if self.sessions else None

    @property
    def prefix_reuse(self) -> float:
        return self.reused_blocks / self.blocks if self.blocks else 0.0

    def to_json(self) -> dict[str, Any]:
        def rounded(value: float | None, digits: int = 1) -> float | None:
            return None if value is None else round(value, digits)

        return {
            "schema": "pdnotes.trace-summary/1",
            "requests": self.requests,
            "sessions": self.sessions,
            "turns_per_session": rounded(self.turns_per_session, 2),
            "max_turns": self.max_turns,
            "duration_s": round(self.duration_ms / 1000.0, 3),
            "mean_input_tokens": rounded(self.mean_input),
            "mean_output_tokens": rounded(self.mean_output),
            "mean_prompt_growth_per_turn": rounded(self.mean_growth),
            "blocks": self.blocks,
            "reused_blocks": self.reused_blocks,
            "prefix_reuse": round(self.prefix_reuse, 4),
            "upstream_cached_tokens": self.cached_tokens,
            "arrival_gap_cv": rounded(self.gap_cv, 3),
        }


def summarise(rows: Iterable[TraceRow]) -> TraceSummary:
    requests = total_in = total_out = blocks = reused = growth_n = 0
    growth_sum = 0.0
    first = last = None
    gaps_n, gaps_sum, gaps_sq = 0, 0.0, 0.0
    seen: set[int] = set()
    turns: dict[str, int] = {}
    last_input: dict[str, int] = {}
    cached: int | None = None
    for row in rows:
        requests += 1
        total_in += row.input_length
        total_out += row.output_length
        if last is not None:
            gap = row.timestamp - last
            gaps_n, gaps_sum, gaps_sq = gaps_n + 1, gaps_sum + gap, gaps_sq + gap * gap
        first = row.timestamp if first is None else first
        last = row.timestamp
        for block in row.hash_ids:
            blocks += 1
            if block in seen:
                reused += 1
        seen.update(row.hash_ids)
        if row.cached_tokens is not None:
            cached = (cached or 0) + row.cached_tokens
        if row.session_id is not None:
            turns[row.session_id] = turns.get(row.session_id, 0) + 1
            before = last_input.get(row.session_id)
            if before is not None:
                growth_sum += row.input_length - before
                growth_n += 1
            last_input[row.session_id] = row.input_length
    n = requests or 1
    return TraceSummary(
        requests=requests,
        sessions=len(turns),
        max_turns=max(turns.values(), default=0),
        duration_ms=(last or 0.0) - (first or 0.0),
        mean_input=total_in / n,
        mean_output=total_out / n,
        mean_growth=growth_sum / growth_n if growth_n else None,
        blocks=blocks,
        reused_blocks=reused,
        cached_tokens=cached,
        gap_cv=_cv(gaps_n, gaps_sum, gaps_sq),
        session_requests=sum(turns.values()),
    )


def _cv(n: int, total: float, squares: float) -> float | None:
    """Standard deviation over mean of the gaps: 0 for a metronome, 1 for Poisson, above 1
    bursty. None with fewer than two gaps or all at once."""
    if n < 2 or total <= 0:
        return None
    mean = total / n
    variance = max(0.0, squares / n - mean * mean)
    return math.sqrt(variance) / mean
