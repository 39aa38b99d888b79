"""bench against a llama.cpp-like server with one slot and a prompt cache that keeps every prompt
(tests/one_slot_llama.py, a real loopback socket): each sweep point and each run sends prompts
the cache has not seen (unless a fixed --seed or --shared-prefix asks for them), the table shows
the cache hit rate the server reports, and the time a request waits for the busy slot is shown
as the server's queue, not as client overhead."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from one_slot_llama import MODEL, OneSlotLlama


def sweep(cli, llama: OneSlotLlama, *args: str) -> list[dict[str, Any]]:  # type: ignore[no-untyped-def]
    result = cli(
        *("bench", "--base-url", llama.base_url, "--model", MODEL, "--metrics-url", "off"),
        *("-c", "1,2", "-n", "4", "--input-len", "40", "--output-len", "2", "--json", *args),
    )
    assert result.exit_code == 0, result.stderr
    return [point["prompt_cache"] for point in result.json()["points"]]


def test_each_point_and_each_run_sends_prompts_the_server_has_not_cached(cli) -> None:
    with OneSlotLlama() as llama:
        first = sweep(cli, llama)
        second = sweep(cli, llama)  # the same command again, against the same warm cache
    for cache in first + second:
        assert cache["source"] == "timings.cache_n" and cache["requests"] == 4
        # (two random prompts may open with the same common word: a token, not a prompt)
        assert cache["hit_rate"] < 0.1, cache
    assert len(llama.prompts) == 16 and len({tuple(p) for p in llama.prompts}) == 16


def test_a_fixed_seed_repeats_a_run_but_not_a_point(cli) -> None:
    with OneSlotLlama() as llama:
        first = sweep(cli, llama, "--seed", "5")
        again = sweep(cli, llama, "--seed", "5")
    # Within a run the c=2 point does not reuse the c=1 point's prompts ...
    assert all(cache["hit_rate"] < 0.1 for cache in first), first
    # ... and the same seed sends the same prompts again: reproducible, so all cached.
    assert all(cache["hit_rate"] == 1.0 for cache in again), again


def test_a_shared_prefix_is_cached_on_purpose_at_every_point(cli) -> None:
    with OneSlotLlama() as llama:
        points = sweep(cli, llama, "--shared-prefix", "30")
    for cache in points:
        # The first request of a point brings its prefix; the three after it find it cached.
        assert cache["cached_tokens"] >= 3 * 30 and cache["hit_rate"] < 1.0, cache


def test_the_sweep_table_shows_the_servers_cache_hit_rate(cli) -> None:
    with OneSlotLlama() as llama:
        args = ("-c", "1,2", "-n", "3", "--output-len", "2", "--metrics-url", "off")
        fresh = cli("bench", "--base-url", llama.base_url, "--model", MODEL, *args)
        shared = cli(
            *("bench", "--base-url", llama.base_url, "--model", MODEL, *args),
            *("--shared-prefix", "100", "--input-len", "128"),
        )
    assert fresh.exit_code == 0 and shared.exit_code == 0, fresh.stderr + shared.stderr
    assert "cache hit" in fresh.stdout and "timings.cache_n" in fresh.stdout
    rows = [line for line in fresh.stdout.splitlines() if line.strip().startswith("c=")]
    assert len(rows) == 2 and all(row.split()[-1].endswith("%") for row in rows), fresh.stdout
    # 2 of 3 prompts find their 100 shared tokens: 200 of 384 prompt tokens, 52.1% (and a
    # random word after the prefix may match another prompt's: a token or two more)
    hits = [
        float(line.split()[-1].rstrip("%"))
        for line in shared.stdout.splitlines()
        if line.strip().startswith("c=")
    ]
    assert len(hits) == 2 and all(52.0 <= hit < 54.0 for hit in hits), shared.stdout


def bench_one_point(cli, llama: OneSlotLlama, tmp_path: Path, *args: str, n: int = 4):  # type: ignore[no-untyped-def]
    records = tmp_path / f"run{len(list(tmp_path.iterdir()))}.jsonl"
    result = cli(
        *("bench", "--base-url", llama.base_url, "--model", MODEL, "-n", str(n)),
        *("--output-len", "4", "--records", str(records), *args),
    )
    assert result.exit_code == 0, result.stderr
    return result, [json.loads(line) for line in records.read_text().splitlines()]


@pytest.mark.timeout(60)
def test_a_request_waiting_for_the_busy_slot_waited_in_the_servers_queue(cli, tmp_path) -> None:
    # Two sent together, one slot: the server serves one and the other waits the whole of it
    # (OneSlotLlama(together=2) makes exactly one wait, however loaded the machine is). The
    # client is not told: bench must find it from when the other request's answer ended.
    def point(*args: str) -> tuple[Any, list[dict[str, Any]]]:
        with OneSlotLlama(prompt_s=0.3, tpot_s=0.05, together=2) as llama:
            result, rows = bench_one_point(cli, llama, tmp_path, *args, n=2)
        assert llama.waited == 1
        return result, rows

    done, rows = point("-c", "2", "--json")
    human, human_rows = point("-c", "2")
    with OneSlotLlama(prompt_s=0.05, tpot_s=0.05) as llama:
        alone, alone_rows = bench_one_point(cli, llama, tmp_path, "-c", "1", "--json")
    server = done.json()["server"]
    assert server["queued_requests"] == 1 and server["queue_source"] == "slot freed", server
    assert server["queue_ms"]["count"] == 2
    assert len([row for row in rows if row["server_queue_ms"] > 0]) == 1
    for row in rows + human_rows:
        # What the client waited before the server's prompt started is the queue plus the
        # rest, and the rest is what the report calls overhead (never the queue again).
        rest = row["ttft_ms"] - row["server_ttft_ms"] - row["server_queue_ms"]
        assert rest >= 0, row
    assert "1 of 2 requests waited in the server's queue" in human.stdout
    # One at a time, nothing waits: none of it is called queue.
    assert alone.json()["server"]["queued_requests"] == 0
    assert all(row["server_queue_ms"] == 0 for row in alone_rows)
