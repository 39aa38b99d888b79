"""`pdnotes engine calibrate`: the fit's mechanics on records captured once from llama.cpp's
server (tests/fixtures/calibrate/llama-server, PROVENANCE.md says how), its refusals, and the
file it writes going into `engine simulate` and `engine plan` unchanged. No wall clock: the
records are fixed and the simulator runs on its own clock."""

from __future__ import annotations

import json
import shutil
from dataclasses import replace
from pathlib import Path

import pytest

from notes_cli.engine.simulate.calibrate import LoadPoint, decode_law, least_squares, read_point

FIXTURES = Path(__file__).parent / "fixtures" / "calibrate" / "llama-server"
GRID = sorted(FIXTURES.glob("llama.i*.c*.jsonl"))


def _copy(tmp_path: Path, names: list[str], *, meta: bool = True) -> list[Path]:
    out = []
    for name in names:
        shutil.copy(FIXTURES / name, tmp_path / name)
        if meta:
            shutil.copy(FIXTURES / f"{name}.meta.json", tmp_path / f"{name}.meta.json")
        out.append(tmp_path / name)
    return out


def test_the_fixture_is_a_grid_of_two_lengths_by_three_concurrencies() -> None:
    points = [read_point(p) for p in GRID]
    assert sorted({p.concurrency for p in points}) == [1, 2, 4]
    assert len({round(p.prompt_tokens, -1) for p in points}) == 2
    assert all(len(p.ttfts) >= 3 for p in points)


def test_calibrate_fits_holds_back_the_highest_load_and_writes_a_deployment_file(
    cli, tmp_path
) -> None:
    out = tmp_path / "my-engine.toml"
    result = cli("engine", "calibrate", *map(str, GRID), "--out", str(out), "--json")
    assert result.exit_code == 0, result.stderr
    doc = result.json() if hasattr(result, "json") else json.loads(result.stdout)
    assert doc["schema"] == "pdnotes.calibrate/1"
    # fitted on c=1 and c=2 of both lengths; the c=4 points predicted without being seen
    assert sorted({p["concurrency"] for p in doc["fit"]}) == [1, 2]
    assert [p["concurrency"] for p in doc["held_out"]] == [4, 4]
    # the fit error is reported beside the held-back error (how close is the engine-exact
    # test below: a real machine's noise is what these records show)
    for metric in ("ttft", "tpot"):
        fit = doc["fit_error"][metric]
        assert fit["requests"] == 32 and fit["p10"] <= fit["median"] <= fit["p90"]
    for point in doc["held_out"]:
        assert point["predicted_ttft_ms"] > 0 and point["predicted_tpot_ms"] > 0
    held = doc["held_out_error"]
    assert held["ttft"]["p10"] <= held["ttft"]["median"] <= held["ttft"]["p90"]
    # provenance: the records, when, the endpoint and the model, in the file
    text = out.read_text()
    for part in ("llama.i64.c1.jsonl", "endpoint http://127.0.0.1:", "model gemma-3-270m"):
        assert part in doc["provenance"] and part in text
    assert "measured 20" in text


def test_a_calibrated_file_runs_in_engine_simulate_with_its_provenance(cli, tmp_path) -> None:
    out = tmp_path / "my-engine.toml"
    assert cli("engine", "calibrate", *map(str, GRID), "--out", str(out)).exit_code == 0
    args = ("-c", "2", "--input-len", "64", "--output-len", "16", "-n", "8")
    shown = cli("engine", "simulate", "-p", str(out), *args)
    assert shown.exit_code == 0, shown.stderr
    assert "calibrated:" in shown.stdout and "model gemma-3-270m" in shown.stdout
    doc = json.loads(cli("engine", "simulate", "-p", str(out), *args, "--json").stdout)
    (config,) = doc["configurations"]
    assert "endpoint http://127.0.0.1:" in config["provenance"]


def test_a_calibrated_file_is_a_chip_engine_plan_takes(cli, tmp_path) -> None:
    out = tmp_path / "my-engine.toml"
    assert cli("engine", "calibrate", *map(str, GRID), "--out", str(out)).exit_code == 0
    args = (
        "--model", "gemma-3-270m", "--chip", str(out), "--modes", "chunked", "--max-chips", "1",
        "--max-batch", "4", "--input-len", "64", "--output-len", "16", "--slo-ttft-ms", "60000",
        "--requests", "40", "--jobs", "1", "--json",
    )  # fmt: skip
    result = cli("engine", "plan", *args)
    assert result.exit_code in (0, 1), result.stderr
    assert "engine as calibrated" in result.stderr  # the provenance note
    assert "model gemma-3-270m" in result.stderr
    wrong = cli("engine", "plan", *args[:1], "llama-3-8b", *args[2:])
    assert wrong.exit_code == 2 and "fitted serving gemma-3-270m" in wrong.stderr


def test_one_concurrency_level_is_refused_naming_what_is_missing(cli, tmp_path) -> None:
    files = _copy(tmp_path, ["llama.i64.c1.jsonl", "llama.i256.c1.jsonl"])
    result = cli("engine", "calibrate", *map(str, files), "--out", str(tmp_path / "x.toml"))
    assert result.exit_code == 2
    assert "the records hold one concurrency level only (c=1)" in result.stderr
    assert "--concurrency 1,2,3,4" in result.stderr  # the fix
    assert not (tmp_path / "x.toml").exists()
    # two levels, but the default hold-out takes the higher: it says so and how to keep it
    files = _copy(tmp_path, ["llama.i64.c1.jsonl", "llama.i256.c1.jsonl", "llama.i64.c2.jsonl"])
    result = cli("engine", "calibrate", *map(str, files), "--out", str(tmp_path / "x.toml"))
    assert result.exit_code == 2
    assert "the records fitted hold one concurrency level only (c=1)" in result.stderr
    assert "--hold-out none keeps them" in result.stderr


def test_one_prompt_length_and_too_few_requests_are_refused(cli, tmp_path) -> None:
    files = _copy(tmp_path, ["llama.i64.c1.jsonl", "llama.i64.c2.jsonl"])
    result = cli("engine", "calibrate", *map(str, files), "--out", str(tmp_path / "x.toml"),
                 "--hold-out", "none")  # fmt: skip
    assert result.exit_code == 2 and "one prompt length only" in result.stderr
    files = _copy(tmp_path, [p.name for p in GRID])
    short = files[0]
    short.write_text("".join(short.read_text().splitlines(keepends=True)[:2]))
    result = cli("engine", "calibrate", *map(str, files), "--out", str(tmp_path / "x.toml"))
    assert result.exit_code == 2 and f"too few requests in {short}" in result.stderr


def test_without_bench_meta_the_concurrency_is_read_from_the_requests_in_flight(
    tmp_path,
) -> None:
    for name in ("llama.i64.c1.jsonl", "llama.i64.c2.jsonl", "llama.i64.c4.jsonl"):
        (bare,) = _copy(tmp_path, [name], meta=False)
        with_meta = read_point(FIXTURES / name)
        assert read_point(bare).concurrency == with_meta.concurrency
        assert read_point(bare).meta == {}


def test_an_existing_out_file_is_kept_and_hostile_records_are_refused(cli, tmp_path) -> None:
    out = tmp_path / "mine.toml"
    out.write_text("not a deployment")
    result = cli("engine", "calibrate", *map(str, GRID), "--out", str(out))
    assert result.exit_code == 2 and "exists" in result.stderr
    assert out.read_text() == "not a deployment"
    junk = tmp_path / "junk.jsonl"
    junk.write_text('{"hello": 1}\n')
    result = cli("engine", "calibrate", str(junk), "--out", str(tmp_path / "y.toml"))
    assert result.exit_code == 2 and "not a pdnotes.bench.record/1 row" in result.stderr


@pytest.mark.parametrize(
    ("rows", "beta"),
    [
        ([[1.0, x, x * x] for x in range(6)], [2.0, -1.0, 0.5]),
        ([[1.0, x] for x in (1, 2, 4, 8)], [30.0, 80.0]),
    ],
)
def test_least_squares_recovers_known_coefficients(rows, beta) -> None:
    targets = [sum(b * x for b, x in zip(beta, row, strict=True)) for row in rows]
    got = least_squares(rows, targets)
    assert got == pytest.approx(beta, rel=1e-9, abs=1e-9)


def test_the_batch_is_what_the_server_saw_running_else_the_highest_load(cli, tmp_path) -> None:
    files = _copy(tmp_path, [p.name for p in GRID])
    out = tmp_path / "a.toml"
    assert cli("engine", "calibrate", *map(str, files), "--out", str(out)).exit_code == 0
    assert "max_batch = 4" in out.read_text()  # every client of the highest load
    for path in files:  # the server said it never ran more than 3 at once
        side = path.with_name(path.name + ".meta.json")
        meta = json.loads(side.read_text())
        meta["server_metrics"] = {"running": {"mean": 1.5, "max": 3.0}}
        side.write_text(json.dumps(meta))
    out = tmp_path / "b.toml"
    assert cli("engine", "calibrate", *map(str, files), "--out", str(out)).exit_code == 0
    assert "max_batch = 3" in out.read_text()
    out = tmp_path / "c.toml"
    given = cli("engine", "calibrate", *map(str, files), "--out", str(out), "--max-batch", "2")
    assert given.exit_code == 0 and "max_batch = 2" in out.read_text()


LINEAR_TRUTH = (
    '[deployments.truth]\nmode = "chunked"\nmodel = "gemma-3-270m"\nlink = "tcp-25g"\n'
    'max_batch = 4\nchunk_tokens = 2048\ndecode_exec = "eager"\nrequest_overhead_ms = 40.0\n'
    "step_overhead_ms = 0.0\nseq_overhead_us = 30000.0\n"
    'colocated = { count = 1, chip = "box" }\n'
    "[chips.box]\ntflops = 0.05\nhbm_gb = 64.0\nhbm_tbps = 0.004\nmfu = 1.0\nbw_eff = 1.0\n"
    "decode_mfu = 1.0\neager_us_per_layer = 0.0\ngraph_step_ms = 0.0\n"
)
"""A known engine of 4 slots whose decode step grows linearly with the batch (the simulator runs
it to make records a fit must recover)."""


def _simulated_grid(
    folder: Path,
    truth: Path,
    levels: tuple[int, ...] = (1, 2, 4),
    *,
    gaps: bool = False,
    runs: int = 1,
) -> list[Path]:
    """Records as bench would write them, but produced by the simulator running `truth`: an
    engine whose every number is known, so a fit has something exact to recover. `gaps`: each
    record lists its inter-token gaps, as bench's do. `runs`: each point's 12 requests sent as
    that many separate bench runs, their records appended to one file (request numbers start
    again at 0 in each), as benchmarks/calibrate's --rounds pools them."""
    from notes_cli.bench.closed_loop import ClosedLoop
    from notes_cli.bench.workload import ArrivalSpec, LengthSpec, synthetic
    from notes_cli.engine.simulate.configs import SimConfig
    from notes_cli.engine.simulate.engine_simulator import EngineSimulator

    simulator = EngineSimulator(exact_gaps=gaps)
    files = []
    for length in (64, 256):
        for level in levels:
            rows = []
            for run in range(runs):
                items = synthetic(12 // runs, LengthSpec(length, 16), ArrivalSpec())
                loop = ClosedLoop(items, level)
                for number, record in enumerate(
                    simulator.run(SimConfig(str(truth)), loop.requests(), run)
                ):
                    loop.finished(record)
                    rows.append(
                        {"schema": "pdnotes.bench.record/1", "request": number,
                         "sent_ms": record.arrival_ms, "ok": True, "error": None,
                         "ttft_ms": record.ttft_ms, "tpot_ms": record.tpot_ms,
                         "e2e_ms": record.e2e_ms, "itl_ms": list(record.itl_ms),
                         "output_tokens": 16, "input_tokens": length, "cached_tokens": 0,
                         "server_ttft_ms": None, "server_tpot_ms": None}
                    )  # fmt: skip
            path = folder / f"sim.i{length}.c{level}.jsonl"
            path.write_text("".join(json.dumps(r) + "\n" for r in rows))
            meta = {"base_url": "simulated", "model": "gemma-3-270m", "concurrency": level,
                    "started": "2026-01-01T00:00:00Z"}  # fmt: skip
            path.with_name(path.name + ".meta.json").write_text(json.dumps(meta))
            files.append(path)
    return files


def test_on_an_engine_the_model_describes_exactly_the_fit_predicts_the_held_back_load(
    cli, tmp_path
) -> None:
    truth = tmp_path / "truth.toml"
    truth.write_text(LINEAR_TRUTH)
    files = _simulated_grid(tmp_path, truth)
    out = tmp_path / "fit.toml"
    result = cli("engine", "calibrate", *map(str, files), "--out", str(out), "--json")
    assert result.exit_code == 0, result.stderr
    doc = result.json()
    assert [p["concurrency"] for p in doc["held_out"]] == [4, 4]
    for point in doc["fit"] + doc["held_out"]:
        for metric in ("ttft", "tpot"):
            predicted, measured = point[f"predicted_{metric}_ms"], point[f"measured_{metric}_ms"]
            assert predicted == pytest.approx(measured, rel=0.05), (point, metric)
    fitted = doc["fitted"]
    assert fitted["request_overhead_ms"] == pytest.approx(40.0, abs=15.0)
    assert fitted["seq_overhead_us"] == pytest.approx(30000.0, rel=0.1)


def test_a_decode_cost_per_sequence_that_falls_with_the_batch_is_recovered(cli, tmp_path) -> None:
    # The truth: a step of c sequences costs 300 ms x c^0.3 beside its weights' read, as a CPU
    # engine's batched decode shares its pass over the weights. Fitted on c = 1, 2, 3 (three
    # levels show the bend), the held-back c = 4 comes out right; a straight line through
    # c = 1..3 would over-predict it.
    truth = tmp_path / "truth.toml"
    truth.write_text(
        '[deployments.truth]\nmode = "chunked"\nmodel = "gemma-3-270m"\nlink = "tcp-25g"\n'
        'max_batch = 4\nchunk_tokens = 2048\ndecode_exec = "eager"\nrequest_overhead_ms = 40.0\n'
        "step_overhead_ms = 0.0\nseq_overhead_us = 300000.0\nseq_overhead_exponent = 0.3\n"
        'colocated = { count = 1, chip = "box" }\n'
        "[chips.box]\ntflops = 0.05\nhbm_gb = 64.0\nhbm_tbps = 0.001\nmfu = 1.0\nbw_eff = 1.0\n"
        "decode_mfu = 1.0\neager_us_per_layer = 0.0\ngraph_step_ms = 0.0\n"
    )
    files = _simulated_grid(tmp_path, truth, (1, 2, 3, 4), gaps=True)
    out = tmp_path / "fit.toml"
    result = cli("engine", "calibrate", *map(str, files), "--out", str(out), "--json")
    assert result.exit_code == 0, result.stderr
    doc = result.json()
    assert sorted({p["concurrency"] for p in doc["fit"]}) == [1, 2, 3]
    assert doc["fitted"]["seq_exponent"] == pytest.approx(0.3, abs=0.1)
    assert "seq_overhead_exponent = 0." in out.read_text()  # the law is in the file
    assert doc["warnings"] == []  # the simulator's requests do not spread: no busy machine
    for point in doc["held_out"]:
        for metric in ("step", "tpot", "ttft"):
            predicted, measured = point[f"predicted_{metric}_ms"], point[f"measured_{metric}_ms"]
            assert predicted == pytest.approx(measured, rel=0.03), (point, metric)


def test_a_busy_machine_is_named_in_the_result(cli, tmp_path) -> None:
    # The recorded llama-server run was measured with the machine's load at 13-15 on 2 cores:
    # one client's identical 261-token prompts took 2.0 to 5.2 s. The fit still runs; the
    # output says which points carry that noise and what to do.
    result = cli("engine", "calibrate", *map(str, GRID), "--out", str(tmp_path / "a.toml"))
    assert result.exit_code == 0, result.stderr
    assert "warning:" in result.stdout and "llama.i256.c1.jsonl" in result.stdout
    assert "the machine was busy while measuring" in result.stdout
    doc = cli("engine", "calibrate", *map(str, GRID), "--out", str(tmp_path / "b.toml"), "--json")
    warnings = doc.json()["warnings"]
    assert any("llama.i256.c1.jsonl" in w and "in TTFT" in w for w in warnings)
    assert all("c=1" in w for w in warnings)  # a loaded point is judged where it can be


def test_a_bend_only_a_negative_fixed_cost_explains_is_not_fitted() -> None:
    # Decode steps as a busy machine measured them (llama-server, 2 cores at load 10-14: the
    # c=2 points ran during a busy minute). The closest curve s0 + s1*c^p needs s0 = -738 ms:
    # noise, not a law. The fit keeps both parts at least 0 and says what the step costs.
    measured = {(1, 261): 228.0, (2, 261): 531.0, (3, 261): 546.0,
                (1, 71): 194.0, (2, 69): 252.0, (3, 69): 476.0}  # fmt: skip
    points = [
        LoadPoint(Path(f"p{c}.{n}"), c, float(n), 16.0, None, (1.0,) * 3, (step,) * 3, gaps=(step,))
        for (c, n), step in measured.items()
    ]
    s0, s1, exponent = decode_law(points)
    assert s0 >= 0 and s1 > 0 and 0.2 <= exponent <= 1.0
    # what it predicts for one sequence stays near what one sequence measured
    assert s0 + s1 == pytest.approx(211.0, rel=0.25)


def test_runs_pooled_in_one_records_file_are_replayed_as_the_runs_they_were(cli, tmp_path) -> None:
    # An engine of 4 slots measured at 6 clients in two separate runs of 6 requests each, pooled
    # into one file: in each run two requests queue for a slot and decode after the first four,
    # alone. Replayed as one closed loop of 12, a finished client's next 256-token prompt would
    # be prefilled beside the others' decode and the held-back TPOT predicted far too slow.
    truth = tmp_path / "truth.toml"
    truth.write_text(LINEAR_TRUTH)
    files = _simulated_grid(tmp_path, truth, (1, 2, 4, 6), gaps=True, runs=2)
    assert read_point(files[-1]).runs == (6, 6)
    result = cli("engine", "calibrate", *map(str, files), "--out", str(tmp_path / "fit.toml"),
                 "--json", "--max-batch", "4")  # fmt: skip
    assert result.exit_code == 0, result.stderr
    held = result.json()["held_out"]
    assert [p["concurrency"] for p in held] == [6, 6]
    for point in held:
        for metric in ("ttft", "tpot"):
            predicted, measured = point[f"predicted_{metric}_ms"], point[f"measured_{metric}_ms"]
            assert predicted == pytest.approx(measured, rel=0.05), (point, metric)


def test_many_pooled_runs_replay_in_bounded_work(tmp_path, monkeypatch) -> None:
    # 2,000 one-request runs appended to one file (every request number 0) are replayed as one
    # run of one request counted 2,000 times, not as 2,000 simulations: the simulator is
    # deterministic, so runs of one size replay alike.
    from notes_cli.engine.simulate import calibrate as calibrate_module

    row = {"schema": "pdnotes.bench.record/1", "request": 0, "ok": True, "ttft_ms": 50.0,
           "tpot_ms": 5.0, "itl_ms": [5.0], "input_tokens": 64, "output_tokens": 2}  # fmt: skip
    path = tmp_path / "pooled.jsonl"
    path.write_text((json.dumps(row) + "\n") * 2000)
    point = read_point(path)
    assert point.runs == (1,) * 2000
    document = calibrate_module.calibrate(GRID).document
    replayed: list[int] = []
    original = calibrate_module._closed_loop

    def counting(simulator, config, point, count, seed):  # type: ignore[no-untyped-def]
        replayed.append(count)
        return original(simulator, config, point, count, seed)

    monkeypatch.setattr(calibrate_module, "_closed_loop", counting)
    (pooled,) = calibrate_module.predict(document, [point])
    assert replayed == [1]
    (single,) = calibrate_module.predict(document, [replace(point, runs=(1,))])
    assert (pooled.ttft_ms, pooled.tpot_ms) == (single.ttft_ms, single.tpot_ms)
