"""`bench --trace` against a real llama.cpp server (tests/real_engine.py: one slot, a prompt
cache in host memory): the server's own account of each request's cached prompt tokens
(`timings.cache_n`) rises exactly where the trace's requests share blocks, and stays at the
chat template's few tokens where they share none."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from real_engine import MODEL_ID, LlamaServer

pytestmark = [pytest.mark.real_engine, pytest.mark.timeout(600)]

# Session a grows on its own prefix (512-token blocks, Mooncake's); b, in between, shares
# nothing. All at t=0 under one request in flight: sent in this order, one after the other.
ROWS = [
    {"timestamp": 0, "input_length": 600, "output_length": 2, "hash_ids": [0, 1]},
    {"timestamp": 0, "input_length": 1100, "output_length": 2, "hash_ids": [0, 1, 2]},
    {"timestamp": 0, "input_length": 600, "output_length": 2, "hash_ids": [5, 6]},
    {"timestamp": 0, "input_length": 1600, "output_length": 2, "hash_ids": [0, 1, 2, 3]},
]


def test_the_servers_prefix_cache_hits_where_the_trace_shares_blocks(
    llama: LlamaServer, tmp_path: Path
) -> None:
    trace, records = tmp_path / "t.jsonl", tmp_path / "records.jsonl"
    trace.write_text("".join(json.dumps(row) + "\n" for row in ROWS))
    done = subprocess.run(
        [sys.executable, "-m", "notes_cli", "bench", "--base-url", llama.base_url,
         "--model", MODEL_ID, "--trace", str(trace), "-c", "1", "--timeout", "120",
         "--records", str(records), "--json"],
        capture_output=True, text=True, timeout=400, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert json.loads(done.stdout)["prompt_cache"]["source"] == "timings.cache_n"
    a1, a2, b1, a3 = (json.loads(line) for line in records.read_text().splitlines())
    for fresh in (a1, b1):  # only the chat template's opening tokens can be cached
        assert fresh["cached_tokens"] <= 0.1 * fresh["input_tokens"], fresh
    # a2 resends all of a1 (blocks 0 and 1); a3 resends a2's three blocks, after b1
    assert a2["cached_tokens"] >= 0.8 * a1["input_tokens"], (a1, a2)
    assert a3["cached_tokens"] >= 0.8 * a2["input_tokens"], (a2, a3)
