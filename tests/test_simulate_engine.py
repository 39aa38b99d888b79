"""`pdnotes engine simulate` on the engine's real scheduler and cost model: the published
picture of PD disaggregation, determinism, and the CLI."""

from __future__ import annotations

from pathlib import Path

import pytest

from notes_cli.bench.stats import Slo
from notes_cli.bench.workload import LengthSpec
from notes_cli.engine.simulate.configs import SimConfig
from notes_cli.engine.simulate.engine_simulator import EngineSimulator
from notes_cli.engine.simulate.runner import WorkloadSpec, simulate_configs

# The same two H100s either split into a prefill and a decode node or both running both phases.
DISAGG = SimConfig("h100-disagg")
COLOCATED = SimConfig("h100-disagg", mode="colocated")
TIGHT_TPOT = Slo(ttft_ms=1000, tpot_ms=10)  # 10 ms is tight: the decode floor is about 7.5 ms


@pytest.fixture(scope="module")
def simulator() -> EngineSimulator:
    return EngineSimulator()


def goodput_ratio(simulator: EngineSimulator, input_len: int, output_len: int) -> float:
    """Disaggregated goodput per chip over colocated goodput per chip."""
    report = simulate_configs(
        [DISAGG, COLOCATED],
        WorkloadSpec(requests=400, lengths=LengthSpec(input_len, output_len)),
        slo=TIGHT_TPOT,
        goodput=True,
        simulator=simulator,
    )
    disagg, colocated = (r.goodput for r in report.results)
    assert disagg is not None and colocated is not None
    assert disagg.chips == colocated.chips == 2
    assert colocated.rate > 0  # both sustain some load, so the ratio means something
    return disagg.per_chip / colocated.per_chip


def test_disaggregation_wins_for_prompt_heavy_traffic_and_the_gap_narrows_for_long_outputs(
    simulator: EngineSimulator,
) -> None:
    # Prompt-heavy (2048 in / 64 out): every colocated prefill stalls the decoding batch, so at
    # a tight TPOT SLO colocated serving sustains far less; disaggregation isolates decode.
    prompt_heavy = goodput_ratio(simulator, 2048, 64)
    # Short prompts, long outputs (64 in / 1024 out): prefill barely interferes, and the
    # colocated pair decodes on both chips, so disaggregation's advantage shrinks.
    output_heavy = goodput_ratio(simulator, 64, 1024)
    assert prompt_heavy > 1.5
    assert output_heavy < prompt_heavy / 2


def test_prefill_interference_shows_in_colocated_tpot_and_itl(simulator: EngineSimulator) -> None:
    report = simulate_configs(
        [DISAGG, COLOCATED],
        WorkloadSpec(requests=1000, lengths=LengthSpec(2048, 64)),
        rates=[6.0],  # at 4/s only ~60% of requests meet a prefill: p99 sits on the edge
        simulator=simulator,
    )
    disagg, colocated = (r.points[0].summaries for r in report.results)
    assert colocated["tpot_ms"].p90 > disagg["tpot_ms"].p90
    assert colocated["itl_ms"].p99 > 3 * disagg["itl_ms"].p99  # a prefill-sized stall


def test_same_seed_same_numbers(cli) -> None:
    args = (
        "engine",
        "simulate",
        "--preset",
        "h100-disagg",
        "--dist",
        "lognormal",
        "--rate",
        "5",
        "-n",
        "300",
        "--seed",
        "3",
        "--json",
    )
    first, second, other = cli(*args), cli(*args), cli(*args[:-2], "4", "--json")
    assert first.exit_code == 0, first.stderr
    strip = lambda doc: {k: v for k, v in doc.items() if k != "wall_s"}  # noqa: E731
    assert strip(first.json()) == strip(second.json())
    assert strip(first.json()) != strip(other.json())


def test_cli_compares_modes_and_ratios_with_goodput(cli) -> None:
    result = cli(
        "engine",
        "simulate",
        "--preset",
        "h100-disagg",
        "--mode",
        "disagg",
        "--mode",
        "colocated",
        "--pd-ratio",
        "1:1,2:1",
        "--input-len",
        "1024",
        "--output-len",
        "32",
        "-n",
        "200",
        "--slo-ttft-ms",
        "500",
        "--slo-tpot-ms",
        "20",
        "--goodput",
        "--json",
    )
    assert result.exit_code == 0, result.stderr
    doc = result.json()
    assert doc["schema"] == "pdnotes.simulate/1"
    labels = [c["label"] for c in doc["configurations"]]
    assert labels == [
        "h100-disagg disagg 1P1D",
        "h100-disagg disagg 2P1D",
        "h100-disagg colocated x2",
        "h100-disagg colocated x3",
    ]
    assert [c["chips"] for c in doc["configurations"]] == [2, 3, 2, 3]
    assert all(c["goodput"]["per_chip"] > 0 for c in doc["configurations"])


def test_cli_human_tables_and_plot(cli, tmp_path: Path) -> None:
    plot = tmp_path / "attainment.html"
    result = cli(
        "engine",
        "simulate",
        "--preset",
        "h100-disagg",
        "--preset",
        "h100-colocated",
        "--rates",
        "2,8,16",
        "-n",
        "200",
        "--slo-ttft-ms",
        "400",
        "--slo-tpot-ms",
        "40",
        "--goodput",
        "--plot",
        str(plot),
    )
    assert result.exit_code == 0, result.stderr
    for text in (
        "h100-disagg disagg 1P1D",
        "h100-colocated colocated x1",
        "TTFT",
        "TPOT",
        "ITL",
        "E2E",
        "p99",
        "SLO attainment",
        "goodput",
        "per chip",
    ):
        assert text in result.stdout
    assert plot.read_text().count("<polyline") == 2


def test_trace_replay(cli, tmp_path: Path) -> None:
    trace = tmp_path / "trace.jsonl"
    trace.write_text(
        "".join(
            f'{{"arrival_ms": {i * 50}, "input_tokens": 512, "output_tokens": 16}}\n'
            for i in range(40)
        )
    )
    result = cli("engine", "simulate", "--preset", "h100-disagg", "--trace", str(trace), "--json")
    assert result.exit_code == 0, result.stderr
    point = result.json()["configurations"][0]["points"][0]
    assert point["completed"] == 40 and point["rate"] is None


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--goodput",), "--goodput needs an objective"),
        (("--pd-ratio", "2-1"), "PREFILL:DECODE"),
        (("--mode", "turbo"), "unknown --mode"),
        (("--rates", "1,x"), "not a number"),
        (("--preset", "nope"), "unknown engine preset"),
        (("--plot", "x.html"), "--plot draws"),
        (("--trace", "missing.jsonl"), "cannot read trace"),
    ],
)
def test_usage_errors_exit_2(cli, args: tuple[str, ...], message: str) -> None:
    result = cli("engine", "simulate", "-n", "10", *args)
    assert result.exit_code == 2
    assert message in result.stderr
    assert "Traceback" not in result.stderr


def test_closed_loop_keeps_at_most_c_requests_in_flight(simulator: EngineSimulator) -> None:
    from notes_cli.bench.closed_loop import ClosedLoop
    from notes_cli.bench.workload import ArrivalSpec, synthetic

    loop = ClosedLoop(synthetic(200, LengthSpec(512, 32), ArrivalSpec()), concurrency=4)
    spans = []
    for record in simulator.run(DISAGG, loop.requests(), 0):
        loop.finished(record)
        spans.append((record.arrival_ms, record.arrival_ms + record.e2e_ms))
    assert len(spans) == 200
    events = sorted(
        [(a, 1) for a, _ in spans] + [(f, -1) for _, f in spans], key=lambda e: (e[0], e[1])
    )
    in_flight = peak = 0
    for _, delta in events:
        in_flight += delta
        peak = max(peak, in_flight)
    assert peak == 4


def _admitted(simulator: EngineSimulator, loop: object) -> list[object]:
    records = []
    for record in simulator.run(DISAGG, loop.requests(), 0):  # type: ignore[attr-defined]
        loop.finished(record)  # type: ignore[attr-defined]
        records.append(record)
    return sorted(records, key=lambda r: int(r.request_id))  # the order they were admitted


def test_closed_loop_clients_start_at_their_start_times(simulator: EngineSimulator) -> None:
    from notes_cli.bench.closed_loop import ClosedLoop
    from notes_cli.bench.workload import ArrivalSpec, synthetic

    starts = [0.0, 20.0, 40.0, 60.0]  # within the first answer's time (about 260 ms)
    loop = ClosedLoop(synthetic(40, LengthSpec(512, 32), ArrivalSpec()), 4, starts=starts)
    records = _admitted(simulator, loop)
    assert [r.arrival_ms for r in records[:4]] == starts
    # every later request is sent when an earlier one finishes, never before
    finishes = sorted(r.arrival_ms + r.e2e_ms for r in records)
    assert all(r.arrival_ms in finishes for r in records[4:])


def test_an_answer_before_a_later_clients_start_goes_first(simulator: EngineSimulator) -> None:
    """A client that starts late must not hold up the requests of clients already answered:
    arrivals reach the simulator in time order, and no request waits for a slot it had."""
    from notes_cli.bench.closed_loop import ClosedLoop
    from notes_cli.bench.workload import ArrivalSpec, synthetic

    late = 1_000.0  # after the other three have each finished three requests (285 ms each)
    loop = ClosedLoop(synthetic(40, LengthSpec(512, 32), ArrivalSpec()), 4, [0.0, 0.0, 0.0, late])
    records = _admitted(simulator, loop)
    arrivals = [r.arrival_ms for r in records]
    assert arrivals == sorted(arrivals)
    assert late in arrivals[4:]  # the late client's first request came after earlier answers
    alone = _admitted(simulator, ClosedLoop(synthetic(3, LengthSpec(512, 32), ArrivalSpec()), 3))
    # three clients at a time: no request queues longer than the first burst's did
    assert max(r.ttft_ms for r in records) <= max(r.ttft_ms for r in alone) + 1e-9


def test_closed_loop_wants_one_start_per_client() -> None:
    from notes_cli.bench.closed_loop import ClosedLoop

    with pytest.raises(ValueError, match="3 start times for 4 clients"):
        ClosedLoop([], 4, starts=[0.0, 1.0, 2.0])


def _ttft_mean(cli, *extra: str) -> tuple[dict, float]:
    result = cli(
        "engine", "simulate", "-p", "h100-disagg", "-c", "16", "--input-len", "4096",
        "--output-len", "256", "-n", "160", "--json", *extra,
    )  # fmt: skip
    assert result.exit_code == 0, result.stderr
    doc = result.json()
    point = doc["configurations"][0]["points"][0]
    assert point["completed"] == 160
    return doc["workload"], point["metrics"]["ttft_ms"]["mean"]


def test_spread_clients_queue_less_than_clients_in_step(cli) -> None:
    """16 clients of 4,096-token prompts on one prefill node: in step, every round is a burst
    of 16 prompts; spread, only the first round is, so the mean TTFT falls."""
    together, in_step = _ttft_mean(cli)
    spread, drifted = _ttft_mean(cli, "--clients", "spread")
    assert together["clients"] == "together" and spread["clients"] == "spread"
    assert drifted < 0.8 * in_step  # 191 against 273 ms


def test_spread_clients_are_the_validation_harness_closed_loop() -> None:
    """`engine simulate --clients spread` and the measured-run harness (round seven) pose the
    same closed loop: the same mean TTFT and TPOT for one row's deployment."""
    import sys
    from dataclasses import replace

    harness = Path(__file__).resolve().parents[1] / "benchmarks" / "validation"
    sys.path.insert(0, str(harness))
    import silicon

    from notes_cli.bench.stats import Slo
    from notes_cli.engine.core.profiles import load_catalog
    from notes_cli.engine.simulate.runner import measure

    row = dict.fromkeys(silicon.KEPT_COLUMNS, "")
    row.update(
        id="r", backend="trtllm", backend_version="1.0.0rc3", system="h200_sxm", mode="agg",
        model_path="meta-llama/Llama-3.1-8B-Instruct", isl="4096", osl="64", concurrency="16",
        batch_size="16", tp_size="1", silicon_ttft_ms="50", silicon_tpot_ms="8",
    )  # fmt: skip
    catalog = load_catalog(user=False)
    scored = silicon.score(row, catalog, "calibration")
    deployment = silicon.deployment_for(row, ["trtllm"], catalog=catalog)
    catalog = replace(catalog, deployments={**catalog.deployments, deployment.name: deployment})
    workload = WorkloadSpec(
        requests=silicon.requests_for(16),
        lengths=LengthSpec(4096, 64),
        concurrency=16,
        clients="spread",
    )
    point = measure(EngineSimulator(catalog), SimConfig(deployment.name), workload, Slo(), None)
    assert point.summaries["ttft_ms"].mean == pytest.approx(scored.ttft_ms, rel=1e-9)
    assert point.summaries["tpot_ms"].mean == pytest.approx(scored.tpot_ms, rel=1e-9)


def test_clients_without_a_closed_loop_is_a_usage_error(cli) -> None:
    result = cli("engine", "simulate", "-p", "h100-disagg", "--clients", "spread", "-n", "10")
    assert result.exit_code == 2
    assert "--concurrency" in result.stderr


def test_cli_concurrency(cli) -> None:
    result = cli(
        "engine", "simulate", "--preset", "h100-disagg", "--concurrency", "8", "-n", "100", "--json"
    )
    assert result.exit_code == 0, result.stderr
    doc = result.json()
    assert doc["workload"]["concurrency"] == 8
    assert doc["configurations"][0]["points"][0]["completed"] == 100
