"""`gateway.pace.judge_cut`: a stream cut at its deadline is judged by the tokens that came —
slow but working, stalled, never started, or over its budget — with the figures a person
needs (rate, first token, how long the budget would take, what fits)."""

from __future__ import annotations

import pytest

from notes_cli.gateway.pace import judge_cut
from notes_cli.gateway.results import StreamResult, Timings


def cut(chunks: list[float], *, headers: float = 20.0, tokens: int | None = None) -> StreamResult:
    """The partial answer of a stream whose output chunks arrived at `chunks` ms."""
    timings = Timings(headers_ms=headers, ttft_ms=chunks[0] if chunks else None, chunk_ms=chunks)
    count = len(chunks) if tokens is None else tokens
    return StreamResult(200, "x" * count, None, False, count, None, "counted", None, timings)


def steady(first_ms: float, rate: float, until_ms: float) -> list[float]:
    """Chunks at `rate` tokens/s from `first_ms` until `until_ms`."""
    gap = 1000 / rate
    return [first_ms + i * gap for i in range(int((until_ms - first_ms) / gap) + 1)]


def test_tokens_still_coming_under_the_budget_is_slow_but_working() -> None:
    pace = judge_cut(cut(steady(800, 15, 10_000)), max_tokens=256, elapsed_ms=10_000)
    assert pace.cause == "slow" and pace.slow
    assert pace.tokens_per_s == pytest.approx(15, rel=0.01)
    assert pace.first_token_ms == 800
    # The whole budget: the first token, then 255 more at 15 tokens/s.
    assert pace.needs_s == pytest.approx(0.8 + 255 / 15, rel=0.01)
    words = pace.describe()
    assert words.startswith("slow but working: 15.0 tokens/s (first token after 800 ms)")
    assert "the 256-token budget needs about 18 s" in words
    # What fits: a timeout with room for the budget, a budget that ends within the timeout.
    assert pace.fitting_timeout() == 23  # 17.8 s / 0.8
    fit = pace.fitting_max_tokens(10)
    assert fit is not None and (0.8 + fit / 15) < 10 * 0.8 + 0.1


def test_silence_after_tokens_is_a_stall_not_slowness() -> None:
    chunks = steady(100, 50, 2_000)  # 50 tokens/s for two seconds, then nothing
    pace = judge_cut(cut(chunks), max_tokens=256, elapsed_ms=10_000)
    assert pace.cause == "stalled"
    assert "then nothing for 8.0 s" in pace.describe()


def test_one_token_then_silence_is_a_stall() -> None:
    pace = judge_cut(cut([40.0]), max_tokens=256, elapsed_ms=10_000)
    assert pace.cause == "stalled" and pace.tokens_per_s is None
    assert pace.describe() == (
        "stalled: 1 token (first token after 40 ms), then nothing for 10.0 s"
    )


def test_a_slow_engine_pausing_a_few_gaps_is_still_slow() -> None:
    """A CPU engine at 2 tokens/s: 1.5 s since the last token is three gaps, not a stall."""
    chunks = steady(500, 2, 8_500)
    pace = judge_cut(cut(chunks), max_tokens=256, elapsed_ms=chunks[-1] + 1_500)
    assert pace.cause == "slow"


def test_headers_without_a_token_never_started() -> None:
    pace = judge_cut(cut([], headers=35.0), max_tokens=256, elapsed_ms=10_000)
    assert pace.cause == "no-first-token"
    assert pace.describe() == "never started: no output token within 10.0 s (headers after 35 ms)"


def test_more_tokens_than_asked_for_is_an_endless_stream() -> None:
    chunks = steady(10, 500, 1_000)
    pace = judge_cut(cut(chunks), max_tokens=256, elapsed_ms=1_000)
    assert pace.cause == "over-budget"
    assert "more than the 256 asked for" in pace.describe()


def test_chunks_of_several_tokens_count_their_tokens() -> None:
    chunks = steady(100, 10, 5_100)  # 10 chunks/s of 3 tokens each (usage-counted)
    pace = judge_cut(cut(chunks, tokens=3 * len(chunks)), max_tokens=512, elapsed_ms=5_150)
    assert pace.tokens_per_s == pytest.approx(30, rel=0.01)
