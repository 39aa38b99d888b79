"""bench against a real llama.cpp server (tests/real_engine.py: one slot, a prompt cache kept
in host memory, metrics on) on what issue 36 found there: a sweep's second point and a second
run hit the server's prefix cache with the first one's prompts, and a request waiting for the
one slot was reported as client overhead.

The figures are checked against the server's own account of each request (`timings.cache_n`,
`prompt_ms`) and, for the queue, only as causality bounds it: one slot cannot start a request
before it has processed the one ahead of it. No two clocks are raced.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from real_engine import MODEL_ID, LlamaServer

pytestmark = [pytest.mark.real_engine, pytest.mark.timeout(600)]


def bench(llama: LlamaServer, records: Path, *args: str) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-m", "notes_cli", "bench", "--base-url", llama.base_url,
         "--model", MODEL_ID, "--ignore-eos", "--timeout", "120", "--records", str(records),
         "--json", *args],
        capture_output=True, text=True, timeout=400, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    return json.loads(done.stdout)  # type: ignore[no-any-return]


def rows(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_a_sweep_run_twice_finds_none_of_its_prompts_in_the_servers_cache(
    llama: LlamaServer, tmp_path: Path
) -> None:
    args = ("-c", "1,2", "-n", "2", "--input-len", "96", "--output-len", "2")
    for run in ("first", "second"):  # the second against the cache the first filled
        sweep = bench(llama, tmp_path / f"{run}.jsonl", *args)
        for point in sweep["points"]:
            cache = point["prompt_cache"]
            assert cache["source"] == "timings.cache_n" and cache["requests"] == 2, cache
            assert cache["hit_rate"] < 0.1, (run, point["concurrency"], cache)
        for tag in ("c1", "c2"):
            for row in rows(tmp_path / f"{run}.{tag}.jsonl"):
                # Only the chat template's opening tokens are shared; the prompt is prefilled.
                assert row["cached_tokens"] <= 0.1 * row["input_tokens"], (run, tag, row)


def test_a_fixed_seed_asks_for_the_same_prompts_and_gets_them_from_the_cache(
    llama: LlamaServer, tmp_path: Path
) -> None:
    args = ("-c", "1", "-n", "2", "--input-len", "96", "--output-len", "2", "--seed", "11")
    first = bench(llama, tmp_path / "first.jsonl", *args)
    again = bench(llama, tmp_path / "again.jsonl", *args)
    assert first["prompt_cache"]["hit_rate"] < 0.1, first["prompt_cache"]
    assert again["prompt_cache"]["hit_rate"] > 0.9, again["prompt_cache"]


def test_a_request_waiting_for_the_one_slot_waited_in_the_servers_queue(
    llama: LlamaServer, tmp_path: Path
) -> None:
    records = tmp_path / "queue.jsonl"
    report = bench(llama, records, "-c", "2", "-n", "3", "--input-len", "32", "--output-len", "4")
    server = report["server"]
    assert server["source"] == "timings" and server["queue_source"] == "slot freed"
    # Two in flight on one slot: the one served second, and the third (sent when the first
    # ended, while the second held the slot) waited; the first did not.
    assert server["queued_requests"] == 2, server
    table = rows(records)
    by_end = sorted(table, key=lambda row: row["sent_ms"] + row["e2e_ms"])
    assert by_end[0]["server_queue_ms"] == 0, by_end[0]
    for ahead, row in zip(by_end, by_end[1:], strict=False):
        # The slot could not take this request before it had prefilled the one ahead of it
        # (the server's own prompt time), however the client read either stream.
        queue = row["server_queue_ms"]
        assert queue >= ahead["sent_ms"] + ahead["server_ttft_ms"] - row["sent_ms"], (ahead, row)
        # What the client waited before the server's prompt began is queue plus overhead.
        overhead = row["ttft_ms"] - row["server_ttft_ms"] - queue
        assert overhead >= 0, row
    # The report's overhead is what is left: none of the queue is in it.
    assert server["client_overhead_ms"]["count"] == 3
    total_wait = sum(r["ttft_ms"] - r["server_ttft_ms"] for r in table)
    queued = sum(r["server_queue_ms"] for r in table)
    assert server["client_overhead_ms"]["mean"] == pytest.approx(
        (total_wait - queued) / 3, abs=0.01
    )
