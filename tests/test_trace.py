"""The trace format reads strictly, `trace show` summarises sessions, growth, reuse and
burstiness as computed by hand, and the LRU prefix cache hits what a hand count says."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from notes_cli.errors import InputError
from notes_cli.trace.format import TraceRow, read_rows, render_rows
from notes_cli.trace.prefix_cache import replay


def _write(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


def _row(t: float, n_in: int, blocks: list[int], session: str | None = None, turn=None) -> dict:
    row: dict = {"timestamp": t, "input_length": n_in, "output_length": 10, "hash_ids": blocks}
    if session is not None:
        row.update(session_id=session, turn=turn)
    return row


# Two sessions: a grows 1000 → 1600 → 2100 tokens on a shared prefix, b is one turn alone.
SESSIONS = [
    _row(0, 1000, [0, 1], "a", 1),
    _row(1000, 300, [9], "b", 1),
    _row(2000, 1600, [0, 1, 2, 3], "a", 2),
    _row(6000, 2100, [0, 1, 2, 3, 4], "a", 3),
]


def test_rows_round_trip_through_the_writer(tmp_path: Path) -> None:
    rows = [TraceRow(0.0, 5, 2, (1, 2), "s", 1, 0), TraceRow(12.5, 7, 3)]
    path = tmp_path / "t.jsonl"
    path.write_text(render_rows(rows))
    assert list(read_rows(path)) == rows
    assert json.loads(path.read_text().splitlines()[0])["timestamp"] == 0  # ms, as Mooncake


def test_show_counts_sessions_growth_reuse_and_burstiness(cli, tmp_path: Path) -> None:
    doc = cli("trace", "show", str(_write(tmp_path / "t.jsonl", SESSIONS)), "--json").json()
    assert (doc["requests"], doc["sessions"], doc["max_turns"]) == (4, 2, 3)
    assert doc["turns_per_session"] == 2.0
    # a: 1000 → 1600 → 2100, growth 600 then 500
    assert doc["mean_prompt_growth_per_turn"] == 550.0
    # 12 blocks; seen before: 0, 1 in turn 2 and 0, 1, 2, 3 in turn 3
    assert (doc["blocks"], doc["reused_blocks"]) == (12, 6)
    # gaps 1000, 1000, 4000 ms: mean 2000, std sqrt(2e6)
    assert doc["arrival_gap_cv"] == pytest.approx(2**0.5 / 2, abs=1e-3)
    text = cli("trace", "show", str(tmp_path / "t.jsonl")).stdout
    assert "50.0% of 12 blocks" in text and "2, 2.0 turns each" in text


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ('{"timestamp": -1, "input_length": 5, "output_length": 1}', "timestamp must be"),
        ('{"timestamp": 0, "input_length": 0, "output_length": 1}', "input_length must be"),
        ('{"timestamp": 0, "input_length": 5, "output_length": 1, "hash_ids": [-3]}', "hash_ids"),
        ('{"timestamp": 0, "input_length": 5, "output_length": 1, "hash_ids": 4}', "hash_ids"),
        ('{"timestamp": 0, "input_length": 5, "output_length": 1, "turn": 0}', "turn must be"),
        ("[1, 2]", "a JSON object"),
        ("{nope", "not JSON"),
    ],
)
def test_bad_rows_name_the_line_and_exit_2(cli, tmp_path: Path, line: str, message: str) -> None:
    good = json.dumps(_row(0, 5, [0]))
    path = tmp_path / "bad.jsonl"
    path.write_text(good + "\n" + line + "\n")
    result = cli("trace", "show", str(path))
    assert result.exit_code == 2 and f"{path}:2: " in result.stderr and message in result.stderr
    assert "Traceback" not in result.stderr


def test_backwards_time_and_overlong_lines_are_refused(tmp_path: Path, monkeypatch) -> None:
    from notes_cli.trace import format as trace_format

    back = _write(tmp_path / "back.jsonl", [_row(5, 5, []), _row(1, 5, [])])
    with pytest.raises(InputError, match="backwards"):
        list(read_rows(back))
    monkeypatch.setattr(trace_format, "MAX_LINE_BYTES", 64)
    long = _write(tmp_path / "long.jsonl", [_row(0, 5, list(range(100)))])
    with pytest.raises(InputError, match="longer than"):
        list(read_rows(long))


def test_lru_prefix_cache_hits_the_hand_counted_tokens() -> None:
    rows = [TraceRow(**{**r, "hash_ids": tuple(r["hash_ids"])}) for r in SESSIONS]
    # unbounded: turn 2 reuses blocks 0, 1 (1024 tokens), turn 3 blocks 0-3 (2048 tokens)
    big = replay(rows, capacity_blocks=100, block_tokens=512)
    assert (big.cached_tokens, big.prompt_tokens) == (1024 + 2048, 5000)
    # 3 blocks: after turn 2, LRU keeps 1, 2, 3 (0 was evicted first): turn 3 misses at block 0
    small = replay(rows, capacity_blocks=3, block_tokens=512)
    assert small.cached_tokens == 1024
    # a whole prompt cached still computes its last token
    again = [TraceRow(0, 512, 1, (7,)), TraceRow(1, 512, 1, (7,))]
    assert replay(again, 10, 512).cached_tokens == 511


def test_kv_aware_routing_keeps_a_session_on_the_node_with_its_prefix() -> None:
    rows = [TraceRow(**{**r, "hash_ids": tuple(r["hash_ids"])}) for r in SESSIONS]
    # round robin over 2 nodes: a1 → 0, b1 → 1, a2 → 0 (hits 0, 1), a3 → 1 (holds only b's)
    assert replay(rows, 100, 512, nodes=2, kv_aware=False).cached_tokens == 1024
    # KV-aware: a3 follows its prefix to node 0
    assert replay(rows, 100, 512, nodes=2, kv_aware=True).cached_tokens == 1024 + 2048


def _simulate(cli, trace: Path, *flags: str) -> dict:
    args = ("engine", "simulate", "--trace", str(trace), "--preset", "h100-disagg", *flags)
    return cli(*args, "--json").json()["configurations"][0]


def test_simulate_replays_hash_ids_through_the_prefix_cache(cli, tmp_path: Path) -> None:
    trace = _write(tmp_path / "t.jsonl", SESSIONS)
    cached = _simulate(cli, trace)
    assert cached["prefix_cache"]["cached_tokens"] == 1024 + 2048
    assert cached["prefix_cache_hit"] == pytest.approx(3072 / 5000)
    off = _simulate(cli, trace, "--no-prefix-cache")
    assert off["prefix_cache"]["cached_tokens"] == 0 and off["prefix_cache_hit"] == 0
    ttft = lambda c: c["points"][0]["metrics"]["ttft_ms"]["mean"]  # noqa: E731
    assert ttft(cached) < ttft(off)
    # without hash_ids the trace replays lengths only, exactly as with the cache off
    bare = [{k: v for k, v in row.items() if k != "hash_ids"} for row in SESSIONS]
    plain = _simulate(cli, _write(tmp_path / "bare.jsonl", bare))
    assert "prefix_cache" not in plain and ttft(plain) == ttft(off)


PLAN = (
    "engine", "plan", "--model", "qwen3-8b", "--chip", "h800", "--link", "roce-200g",
    "--max-chips", "2", "--max-instances", "1", "--max-tp", "1", "--modes", "disagg",
    "-n", "40", "--window-s", "2", "--tolerance", "0.1", "--jobs", "1",
    "--slo-ttft-ms", "600", "--slo-tpot-ms", "40", "--json",
)  # fmt: skip


def test_plan_plans_with_the_traces_measured_reuse(cli, tmp_path: Path) -> None:
    shared = cli(*PLAN, "--trace", str(_write(tmp_path / "t.jsonl", SESSIONS))).json()
    assert shared["workload"]["prefix_cache_hit"] == pytest.approx(3072 / 5000, abs=1e-4)
    bare = [{k: v for k, v in row.items() if k != "hash_ids"} for row in SESSIONS]
    plain = cli(*PLAN, "--trace", str(_write(tmp_path / "bare.jsonl", bare))).json()
    assert plain["workload"]["prefix_cache_hit"] == 0
    # the same lengths, three fifths of each prompt cached: the same nodes serve more
    assert shared["best"]["capacity_rps"] > plain["best"]["capacity_rps"]


def test_a_fifo_is_refused_not_waited_on(tmp_path: Path) -> None:
    import os
    import subprocess
    import sys

    fifo = tmp_path / "trace.jsonl"
    os.mkfifo(fifo)
    run = subprocess.run(
        [sys.executable, "-m", "notes_cli", "trace", "show", str(fifo)],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert run.returncode == 2 and "FIFO" in run.stderr


def test_show_plots_prompt_length_by_turn_per_session(cli, tmp_path: Path) -> None:
    trace = _write(tmp_path / "t.jsonl", SESSIONS)
    plot = tmp_path / "growth.svg"
    assert cli("trace", "show", str(trace), "--plot", str(plot)).exit_code == 0
    lines = [line for line in plot.read_text().splitlines() if "<polyline" in line]
    # session a: three turns rising to the top (2,100 tokens, y = 24); b: one turn
    assert [line.split('points="')[1].count(",") for line in lines] == [3, 1]
    assert lines[0].rstrip('"/>').endswith(",24.0")
    bad = cli("trace", "show", str(trace), "--plot", str(tmp_path / "g.png"))
    assert bad.exit_code == 2 and "use a .svg or .html" in bad.stderr


def test_recorded_blocks_count_the_rows_own_tokens_per_block() -> None:
    # a recording cuts blocks by characters: 8 blocks of a 1,200-token prompt are 150 tokens
    # each, not 512, so 6 shared blocks are 900 cached tokens
    rows = [TraceRow(0, 900, 1, tuple(range(6))), TraceRow(1, 1200, 1, tuple(range(8)))]
    assert replay(rows, 100, 512).cached_tokens == 900


def test_the_prefix_cache_lowers_ttft_by_the_prefill_its_cached_tokens_cost(
    cli, tmp_path: Path
) -> None:
    """One session of six turns, 10 s apart (each alone on the engine), each resending the
    previous prompt (two 512-token blocks a turn) and adding two blocks: turn i finds
    1,024 x (i - 1) tokens cached. The TTFT the cache saves is exactly the cost model's prefill
    of those tokens: prefill at no hit minus prefill at the measured hit."""
    from dataclasses import replace

    from notes_cli.engine.core.costmodel import NodeCost
    from notes_cli.engine.core.profiles import load_catalog

    blocks: list[int] = []
    rows = []
    for i in range(6):
        blocks = [*blocks, 2 * i, 2 * i + 1]
        rows.append(_row(i * 10_000.0, 1024 * (i + 1), list(blocks), "a", i + 1))
    trace = _write(tmp_path / "t.jsonl", rows)
    args = ("engine", "simulate", "--trace", str(trace), "--preset", "h100-disagg", "--json")
    on, off = (json.loads(cli(*args, *flag).stdout) for flag in ((), ("--no-prefix-cache",)))
    hit = on["configurations"][0]["prefix_cache_hit"]
    assert hit == pytest.approx(1024 * 15 / (1024 * 21))  # the hand count
    assert off["configurations"][0]["prefix_cache_hit"] == 0

    def ttft(doc: dict) -> float:
        return doc["configurations"][0]["points"][0]["metrics"]["ttft_ms"]["mean"]

    catalog = load_catalog()
    deployment = catalog.deployments["h100-disagg"]
    ((_, group),) = [(r, g) for r, g in deployment.worker_groups() if r == "prefill"]
    model, chip = catalog.models[deployment.model], catalog.chips[group.chip]
    cold, warm = (
        NodeCost.for_group(model, chip, group, replace(deployment, prefix_cache_hit=h))
        for h in (0.0, hit)
    )
    saved = [cold.prefill_time_ms(r["input_length"]) - warm.prefill_time_ms(r["input_length"])
             for r in rows]  # fmt: skip
    assert ttft(off) - ttft(on) == pytest.approx(sum(saved) / len(saved), abs=2e-3)
    assert ttft(off) - ttft(on) > 10.0  # and that is a real saving
