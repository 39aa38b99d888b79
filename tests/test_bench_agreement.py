"""Agreement: for the same preset and workload, what `pdnotes engine simulate` predicts and what
`pdnotes bench` measures against `pdnotes engine serve` agree (median TTFT and TPOT within 10%).

Both sides replay the same seeded Poisson arrivals: simulate at RATE in simulated time, bench
at RATE x SPEED against an engine whose clock runs SPEED times faster, then scaled back. The
bench numbers include the HTTP round trip (about 5-10 ms for a 2048-token prompt on a small
machine), so the workload is DistServe's reference deployment (13B on A100), whose 2048-token
prefill takes about 490 ms: the round trip stays a few percent of TTFT."""

from __future__ import annotations

import pytest

# Speed 1 keeps the event loop's ~1 ms timer granularity small next to the ~20 ms TPOT.
PRESET, SPEED, RATE, N = "a100-13b-disagg", 1.0, 1.5, 10
WORKLOAD = ("--input-len", "2048", "--output-len", "16", "-n", str(N), "--seed", "1")


def test_simulate_predicts_what_bench_measures(cli, start_engine_server) -> None:
    predicted = cli(
        "engine", "simulate", "--preset", PRESET, "--rate", str(RATE), *WORKLOAD, "--json"
    )
    assert predicted.exit_code == 0, predicted.stderr
    sim = predicted.json()["configurations"][0]["points"][0]["metrics"]

    engine = start_engine_server(preset=PRESET, speed=SPEED)
    measured = cli(
        "bench",
        "--base-url",
        engine.base_url,
        "--rate",
        str(RATE * SPEED),
        "--server-speed",
        str(SPEED),
        "--timeout",
        "20",
        *WORKLOAD,
        "--json",
    )
    assert measured.exit_code == 0, measured.stdout + measured.stderr
    doc = measured.json()
    assert doc["completed"] == N and doc["tokens_source"]["usage"] == N
    bench = doc["metrics"]
    for metric in ("ttft_ms", "tpot_ms"):
        assert bench[metric]["median"] * SPEED == pytest.approx(sim[metric]["median"], rel=0.10)
