"""bench's prompts (unique per request unless a shared prefix is asked for; conversations),
its per-request records (the summary is numpy's over exactly them) and what it reads from a
llama.cpp-style server (`timings`, cached prompt tokens). Real HTTP servers on port 0."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pytest
from loopback import LoopbackServer, Received, Reply, sse_event
from test_bench_cli import scripted  # noqa: F401 - the fixture

from notes_cli.bench.prompts import PromptMaker, PromptSpec


def bench(cli, base_url: str, *args: str):  # type: ignore[no-untyped-def]
    result = cli("bench", "--base-url", base_url, "--model", "pd-mock-1", "--json", *args)
    assert result.exit_code == 0, result.stderr
    return result.json()


def prompts(engine) -> list[str]:  # type: ignore[no-untyped-def]
    return [request.messages[-1].text for request in engine.requests]


def test_every_prompt_is_unique_and_the_same_seed_sends_the_same_ones(cli, scripted) -> None:  # noqa: F811
    base_url, engine = scripted
    args = ("-n", "12", "--input-len", "64", "--output-len", "2")
    bench(cli, base_url, *args, "-c", "4", "--seed", "3")
    first = prompts(engine)
    assert len(set(first)) == 12  # no two requests share text a prefix cache could reuse
    assert len({text.split()[0] for text in first}) > 1
    assert all(60 <= len(text.split()) <= 64 for text in first)
    engine.requests.clear()
    bench(cli, base_url, *args, "-c", "1", "--seed", "3")
    assert sorted(prompts(engine)) == sorted(first)  # reproducible from the seed
    engine.requests.clear()
    bench(cli, base_url, *args, "--seed", "1")
    assert not set(prompts(engine)) & set(first)


def test_without_a_seed_no_run_repeats_an_earlier_runs_prompts(cli, scripted) -> None:  # noqa: F811
    base_url, engine = scripted
    args = ("-n", "6", "--input-len", "32", "--output-len", "2")
    bench(cli, base_url, *args)
    first = prompts(engine)
    engine.requests.clear()
    bench(cli, base_url, *args)
    # A server keeps the first run's prompts in its prefix cache: the second sends its own.
    assert len(set(first)) == 6 and not set(prompts(engine)) & set(first)


def test_a_shared_prefix_opens_every_prompt_of_its_group() -> None:
    maker = PromptMaker(PromptSpec(seed=3, shared_prefix=20, prefix_groups=2))
    texts = [maker.text(i, 50).split() for i in range(6)]
    assert all(len(words) == 50 for words in texts)
    even, odd = {tuple(t[:20]) for t in texts[::2]}, {tuple(t[:20]) for t in texts[1::2]}
    assert len(even) == 1 and len(odd) == 1 and even != odd
    assert len({tuple(t[20:]) for t in texts}) == 6  # each request's own part differs


def test_turns_resend_the_growing_history_with_each_answer(cli, scripted) -> None:  # noqa: F811
    base_url, engine = scripted
    doc = bench(cli, base_url, "-n", "6", "-c", "2", "--turns", "3", "--output-len", "3")
    assert doc["completed"] == 6
    by_length: dict[int, list] = {}
    for request in engine.requests:
        by_length.setdefault(len(request.messages), []).append(request)
    # 2 conversations x 3 turns: histories of 1, 3 and 5 messages.
    assert {n: len(r) for n, r in by_length.items()} == {1: 2, 3: 2, 5: 2}
    for request in by_length[5]:
        roles = [m.role for m in request.messages]
        assert roles == ["user", "assistant", "user", "assistant", "user"]
        assert request.messages[1].text == " t0 t1 t2"  # the engine's earlier answer
        first_turn = request.messages[0].text
        assert any(r.messages[0].text == first_turn for r in by_length[3])


def test_records_reproduce_the_summary_with_numpy(cli, scripted, tmp_path: Path) -> None:  # noqa: F811
    base_url, _ = scripted
    path = tmp_path / "run.jsonl"
    args = ("-n", "9", "-c", "3", "--output-len", "6", "--records", str(path))
    doc = bench(cli, base_url, *args)
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    assert [row["request"] for row in rows] == list(range(9))
    assert all(row["schema"] == "pdnotes.bench.record/1" and row["ok"] for row in rows)
    assert all(len(row["itl_ms"]) == row["output_tokens"] - 1 == 5 for row in rows)
    assert all(row["sent_ms"] >= 0 and row["error"] is None for row in rows)
    pooled = {
        "ttft_ms": [row["ttft_ms"] for row in rows],
        "tpot_ms": [row["tpot_ms"] for row in rows],
        "e2e_ms": [row["e2e_ms"] for row in rows],
        "itl_ms": [gap for row in rows for gap in row["itl_ms"]],
    }
    for name, values in pooled.items():
        summary = doc["metrics"][name]
        assert summary["count"] == len(values)
        for key, q in (("median", 50), ("p90", 90), ("p99", 99)):
            assert summary[key] == pytest.approx(np.percentile(values, q), abs=5e-4), name
        assert summary["mean"] == pytest.approx(np.mean(values), abs=5e-4)


def test_records_as_csv_hold_the_same_rows(cli, scripted, tmp_path: Path) -> None:  # noqa: F811
    base_url, _ = scripted
    path = tmp_path / "run.csv"
    doc = bench(cli, base_url, "-n", "4", "--output-len", "3", "--records", str(path))
    with path.open(newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert len(rows) == 4 and rows[0]["ok"] == "True"
    ttft = [float(row["ttft_ms"]) for row in rows]
    assert doc["metrics"]["ttft_ms"]["median"] == pytest.approx(np.median(ttft), abs=5e-4)
    assert [len(json.loads(row["itl_ms"])) for row in rows] == [2] * 4


def test_a_records_file_of_unknown_kind_is_refused_before_any_request(
    cli,
    scripted,  # noqa: F811
    tmp_path: Path,
) -> None:
    base_url, engine = scripted
    result = cli("bench", "--base-url", base_url, "-n", "2", "--records", str(tmp_path / "r.xls"))
    assert result.exit_code == 2 and ".jsonl" in result.stderr and "Traceback" not in result.stderr
    assert engine.requests == []


def llama_like(prompt_ms: float, cache_n: int, prompt_n: int) -> list[bytes | float]:
    """A llama.cpp chat stream: text chunks, then its finish chunk carrying `timings`."""
    base = {"id": "c1", "object": "chat.completion.chunk", "model": "m"}
    events: list[bytes | float] = []
    for word in ("a", "b", "c", "d"):
        chunk = {**base, "choices": [{"index": 0, "delta": {"content": word}}]}
        events += [0.005, sse_event(chunk)]
    usage = {
        "prompt_tokens": cache_n + prompt_n,
        "completion_tokens": 4,
        "total_tokens": cache_n + prompt_n + 4,
        "prompt_tokens_details": {"cached_tokens": cache_n},
    }
    timings = {
        "cache_n": cache_n,
        "prompt_n": prompt_n,
        "prompt_ms": prompt_ms,
        "predicted_n": 4,
        "predicted_ms": 15.0,
        "predicted_per_token_ms": 5.0,
    }
    finish = {"index": 0, "delta": {}, "finish_reason": "length"}
    events += [
        sse_event({**base, "choices": [finish]}),
        sse_event({**base, "choices": [], "usage": usage, "timings": timings}),
        b"data: [DONE]\n\n",
    ]
    return events


def test_llama_cpp_timings_and_cached_tokens_are_reported(cli, tmp_path: Path) -> None:
    def handler(request: Received) -> Reply:
        return Reply.sse(llama_like(prompt_ms=1.5, cache_n=30, prompt_n=10))

    path = tmp_path / "r.jsonl"
    with LoopbackServer(handler) as server:
        doc = bench(cli, server.url + "/v1", "-n", "3", "--output-len", "4", "--records", str(path))
    assert doc["server"]["source"] == "timings" and doc["server"]["requests"] == 3
    assert doc["server"]["ttft_ms"]["median"] == 1.5
    assert doc["server"]["tpot_ms"]["median"] == 5.0
    assert doc["prompt_cache"] == {
        "requests": 3,
        "prompt_tokens": 120,
        "cached_tokens": 90,
        "hit_rate": 0.75,
        "source": "timings.cache_n",
    }
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    assert [(r["cached_tokens"], r["server_ttft_ms"], r["server_tpot_ms"]) for r in rows] == [
        (30, 1.5, 5.0)
    ] * 3


def test_the_human_report_shows_the_prompt_cache(cli) -> None:
    with LoopbackServer(lambda _r: Reply.sse(llama_like(1.5, 30, 10))) as server:
        result = cli("bench", "--base-url", server.url + "/v1", "--model", "m", "-n", "2")
    assert result.exit_code == 0, result.stderr
    assert "prompt cache" in result.stdout and "75.0%" in result.stdout
    assert "llama.cpp timings" in result.stdout


def test_ignore_eos_asks_the_server_for_every_output_token(cli) -> None:
    with LoopbackServer(lambda _r: Reply.sse(llama_like(1.5, 30, 10))) as server:
        url = server.url + "/v1"
        assert cli("bench", "--base-url", url, "--model", "m", "-n", "2").exit_code == 0
        asked = cli("bench", "--base-url", url, "--model", "m", "-n", "2", "--ignore-eos")
        bodies = [r.json() for r in server.requests if r.path.endswith("/chat/completions")]
    assert asked.exit_code == 0, asked.stderr
    assert ["ignore_eos" in body for body in bodies] == [False, False, True, True]
    assert all(body["ignore_eos"] is True for body in bodies[2:])
