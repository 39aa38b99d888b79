"""Session-ordered replay on the simulator's virtual clock: a turn arrives after its session's
previous answer plus the recorded think time (`delay`), never before its timestamp, and other
sessions are not held up behind a waiting turn; `engine simulate --trace` replays that way
unless told not to."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from notes_cli.engine.simulate.configs import SimConfig
from notes_cli.engine.simulate.engine_simulator import EngineSimulator
from notes_cli.errors import InputError
from notes_cli.trace.format import TraceRow, read_rows
from notes_cli.trace.session_order import SessionOrder

PRESET = SimConfig("h100-disagg")


def _replay(rows: list[TraceRow]) -> dict[int, object]:
    """Each request's simulator record, by its (distinct) prompt length."""
    order = SessionOrder(rows)
    records = {}
    for record in EngineSimulator().run(PRESET, order.requests(), 0):
        order.finished(record)
        records[record.input_tokens] = record
    assert len(records) == len(rows)
    return records


def _session(first_output: int, second_at: float = 10.0) -> list[TraceRow]:
    # session a: turn 1 at 0 ms, turn 2 recorded at `second_at` ms with 100 ms of think time;
    # session b: one turn at 5 ms, which must not wait for a's second turn
    return [
        TraceRow(0.0, 1000, first_output, session_id="a", turn=1),
        TraceRow(5.0, 700, 8, session_id="b", turn=1),
        TraceRow(second_at, 1600, 8, session_id="a", turn=2, delay=100.0),
    ]


def test_a_turn_arrives_after_its_previous_answer_plus_the_think_time() -> None:
    records = _replay(_session(first_output=64))
    first, other, second = records[1000], records[700], records[1600]
    answered = first.arrival_ms + first.e2e_ms
    assert answered > 10.0  # the recorded timestamp came before the answer ended
    assert second.arrival_ms == pytest.approx(answered + 100.0)
    assert other.arrival_ms == 5.0  # another session's turn keeps its own time


def test_a_slow_previous_answer_pushes_the_next_turn_later_by_as_much() -> None:
    quick, slow = _replay(_session(first_output=16)), _replay(_session(first_output=400))
    slower_by = slow[1000].e2e_ms - quick[1000].e2e_ms
    assert slower_by > 1000.0  # 384 more decode steps
    assert slow[1600].arrival_ms - quick[1600].arrival_ms == pytest.approx(slower_by)


def test_a_turn_recorded_after_its_think_time_keeps_its_timestamp() -> None:
    records = _replay(_session(first_output=16, second_at=60_000.0))
    assert records[1600].arrival_ms == 60_000.0


def test_delay_round_trips_and_is_read_strictly(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    row = {"timestamp": 0, "input_length": 5, "output_length": 2, "session_id": "a"}
    path.write_text(json.dumps({**row, "delay": 250}) + "\n")
    (read,) = read_rows(path)
    assert read.delay == 250.0 and read.to_json()["delay"] == 250
    path.write_text(json.dumps({**row, "delay": -1}) + "\n")
    with pytest.raises(InputError, match="delay must be a non-negative"):
        list(read_rows(path))


def test_engine_simulate_replays_a_session_trace_in_session_order(cli, tmp_path: Path) -> None:
    trace = tmp_path / "t.jsonl"
    trace.write_text("".join(json.dumps(r.to_json()) + "\n" for r in _session(400)))
    args = ("engine", "simulate", "--trace", str(trace), "--preset", "h100-disagg", "--json")
    ordered, stamped = cli(*args), cli(*args, "--no-session-order")
    assert ordered.exit_code == 0 and stamped.exit_code == 0, ordered.stderr + stamped.stderr
    doc, plain = json.loads(ordered.stdout), json.loads(stamped.stdout)
    assert doc["workload"]["session_order"] and not plain["workload"]["session_order"]

    def e2e_mean(document: dict) -> float:
        return document["configurations"][0]["points"][0]["metrics"]["e2e_ms"]["mean"]

    # at its timestamp, a's second turn queues behind its own first answer's decode; in
    # session order it arrives once that answer is done, so it is not slowed by it
    assert e2e_mean(doc) < e2e_mean(plain)


def test_engine_plan_checks_its_pick_on_the_trace_in_session_order(cli, tmp_path: Path) -> None:
    """A session of six turns growing by two 512-token blocks each: the pick is replayed on the
    trace itself, in session order, through its finite prefix cache (the hand count: turn i
    finds 1,024 x (i - 1) tokens, 15 of 21 thousand-odd)."""
    rows, blocks = [], []
    for i in range(6):
        blocks = [*blocks, 2 * i, 2 * i + 1]
        rows.append(TraceRow(i * 50.0, 1024 * (i + 1), 32, tuple(blocks), "a", i + 1, None, 20.0))
    trace = tmp_path / "t.jsonl"
    trace.write_text("".join(json.dumps(r.to_json()) + "\n" for r in rows))
    plan = ("engine", "plan", "--model", "qwen3-8b", "--chip", "h100-sxm", "--max-chips", "1",
            "--slo-ttft-ms", "2000", "--slo-tpot-ms", "100", "--jobs", "1", "--json")  # fmt: skip
    picked = tmp_path / "pick.toml"
    run = cli(*plan, "--trace", str(trace), "--out", str(picked))
    assert run.exit_code == 0, run.stderr
    check = json.loads(run.stdout)["trace_check"]
    assert check["requests"] == 6 and check["session_order"] and check["met"]
    assert check["prefix_cache_hit"] == pytest.approx(15 / 21, abs=1e-4)
    # the same numbers as `engine simulate` of the pick in session order, not at the timestamps
    simulate = ("engine", "simulate", "--preset", str(picked), "--trace", str(trace), "--json")

    def ttft_p90(*flags: str) -> float:
        doc = json.loads(cli(*simulate, *flags).stdout)
        return doc["configurations"][0]["points"][0]["metrics"]["ttft_ms"]["p90"]

    assert check["ttft_ms"] == pytest.approx(ttft_p90(), abs=1e-3)
    assert ttft_p90("--no-session-order") != pytest.approx(check["ttft_ms"], abs=1e-3)
    lengths_only = tmp_path / "lengths.jsonl"
    lengths_only.write_text('{"input_tokens": 900, "output_tokens": 30}\n' * 3)
    plain = cli(*plan, "--trace", str(lengths_only))
    assert plain.exit_code == 0 and "trace_check" not in json.loads(plain.stdout)
