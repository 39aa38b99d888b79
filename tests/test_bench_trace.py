"""`bench --trace`: prompts share text exactly where the trace's requests share hash_ids, so a
server's prefix cache sees the trace's reuse. Checked on the prompt maker, and end to end on the
bundled engine, whose own `--record` (block ids of the prompts it received, by characters) shows
the same sharing, and none when the trace's requests share no block."""

from __future__ import annotations

import json
from pathlib import Path

from notes_cli.bench.prompts import PromptMaker, PromptSpec
from notes_cli.trace.format import read_rows
from notes_cli.trace.record import TraceRecorder

# Session a grows on its own prefix (two 512-token blocks a turn); b shares nothing.
ROWS = [
    {"timestamp": 0, "input_length": 1024, "output_length": 4, "hash_ids": [0, 1]},
    {"timestamp": 300, "input_length": 700, "output_length": 4, "hash_ids": [6, 7]},
    {"timestamp": 600, "input_length": 2048, "output_length": 4, "hash_ids": [0, 1, 2, 3]},
    {"timestamp": 900, "input_length": 3072, "output_length": 4, "hash_ids": [0, 1, 2, 3, 4, 5]},
]


def _shared(a: tuple[int, ...], b: tuple[int, ...]) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


def test_prompts_share_words_exactly_where_requests_share_blocks() -> None:
    spec = PromptSpec(seed=1, blocks=((0, 1), (0, 1, 2, 3), (0, 5, 2, 3), (7,)), block_words=8)
    maker = PromptMaker(spec)
    first, second, third, alone = (maker.text(i, n).split() for i, n in enumerate((16, 32, 32, 5)))
    assert len(first) == 16 and len(second) == 32 and len(alone) == 5
    assert second[:16] == first  # blocks 0 and 1
    assert third[:8] == first[:8] and third[8:16] != second[8:16]  # block 0, then another
    assert third[16:] == second[16:]  # an id is always the same words (2, 3 again)
    assert alone != first[:5]
    # the same ids in another run (another salt) are other words: no cache carried over
    other = PromptMaker(PromptSpec(seed=1, salt="x", blocks=spec.blocks, block_words=8))
    assert other.text(0, 16).split() != first


def _replay(cli, tmp_path: Path, rows: list[dict], name: str) -> list[tuple[int, ...]]:
    """The block ids the bundled engine recorded for the prompts `bench --trace` sent."""
    from notes_cli.engine.core.config import EngineConfig
    from notes_cli.engine.http.server import start_engine

    trace = tmp_path / f"{name}.jsonl"
    trace.write_text("".join(json.dumps(row) + "\n" for row in rows))
    recorded = tmp_path / f"{name}-recorded.jsonl"
    recorder = TraceRecorder.create(recorded)
    with start_engine(EngineConfig(speed=50), recorder=recorder) as engine:
        args = ("--trace", str(trace), "--seed", "3", "--metrics-url", "off", "--json")
        run = cli("bench", "--base-url", engine.base_url, "--model", "pd-mock-1", *args)
    recorder.close()
    assert run.exit_code == 0, run.stderr
    assert json.loads(run.stdout)["completed"] == len(rows)
    got = list(read_rows(recorded))
    assert [r.input_length for r in got] == [r["input_length"] for r in rows]  # in order
    return [r.hash_ids for r in got]


def test_the_engine_receives_the_traces_shared_prefixes(cli, tmp_path: Path) -> None:
    a1, b1, a2, a3 = _replay(cli, tmp_path, ROWS, "shared")
    # 1,024 words are about 6,000 characters: three whole 2,048-character blocks in common
    assert _shared(a2, a1) >= 2 and _shared(a3, a2) > _shared(a2, a1)
    assert not set(b1) & set(a1 + a2 + a3)
    # the same lengths with no block in common: the engine sees no reuse at all
    fresh = [{**row, "hash_ids": [10 * i + k for k in range(len(row["hash_ids"]))]}
             for i, row in enumerate(ROWS)]  # fmt: skip
    ids = _replay(cli, tmp_path, fresh, "fresh")
    assert all(not set(x) & set(y) for i, x in enumerate(ids) for y in ids[:i])


def test_trace_takes_no_dataset_or_shared_prefix(cli, tmp_path: Path) -> None:
    trace = tmp_path / "t.jsonl"
    trace.write_text(json.dumps(ROWS[0]) + "\n")
    run = cli("bench", "--base-url", "http://127.0.0.1:9/api", "--trace", str(trace),
              "--shared-prefix", "10")  # fmt: skip
    assert run.exit_code == 2 and "drop --shared-prefix" in run.stderr
