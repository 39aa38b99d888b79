"""The simulate runner, report, JSON and plot, on a tiny stand-in simulator (a FIFO prefill
server and a fixed-TPOT decoder), so these tests do not depend on the engine's cost model."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from notes_cli.bench.stats import Slo
from notes_cli.bench.workload import LengthSpec, WorkItem
from notes_cli.engine.simulate.configs import Resolved, SimConfig
from notes_cli.engine.simulate.plot import write_plot
from notes_cli.engine.simulate.runner import WorkloadSpec, simulate_configs
from notes_cli.errors import UsageError


@dataclass
class Record:
    ttft_ms: float
    tpot_ms: float
    e2e_ms: float
    output_tokens: int


class FifoStandIn:
    """Prefill: one FIFO server per prefill chip at `ms_per_token`; decode: a fixed TPOT."""

    def __init__(self, ms_per_token: float = 0.1, tpot_ms: float = 20.0) -> None:
        self.ms_per_token, self.tpot_ms = ms_per_token, tpot_ms
        self.runs = 0

    def resolve(self, config: SimConfig) -> Resolved:
        p, d = config.pd_ratio or (1, 1)
        return Resolved(f"{config.preset} {p}P{d}D", "disagg", p, d)

    def run(self, config: SimConfig, items: Iterable[WorkItem], seed: int) -> Iterator[Record]:
        self.runs += 1
        servers = [0.0] * (config.pd_ratio or (1, 1))[0]
        for item in items:
            k = min(range(len(servers)), key=servers.__getitem__)
            start = max(servers[k], item.arrival_ms)
            servers[k] = start + item.input_tokens * self.ms_per_token
            ttft = servers[k] - item.arrival_ms
            e2e = ttft + self.tpot_ms * (item.output_tokens - 1)
            yield Record(ttft, self.tpot_ms, e2e, item.output_tokens)


WORKLOAD = WorkloadSpec(requests=400, lengths=LengthSpec(1000, 16, "lognormal"))


def test_metrics_and_attainment_per_rate() -> None:
    report = simulate_configs(
        [SimConfig("toy")],
        WORKLOAD,
        rates=[1.0, 20.0],
        slo=Slo(ttft_ms=500, tpot_ms=50),
        simulator=FifoStandIn(),
    )
    (result,) = report.results
    light, heavy = result.points
    assert light.summaries["ttft_ms"].median == pytest.approx(100, rel=0.2)  # 1000 tok x 0.1
    assert light.summaries["tpot_ms"].median == pytest.approx(20.0, rel=0.01)
    assert light.attainment.both == pytest.approx(1.0, abs=0.02)
    assert heavy.attainment.both < 0.2  # 20 req/s x 100 ms prefill: the queue explodes
    assert light.meets_p90 and not heavy.meets_p90
    assert report.simulated_requests == 800


def test_goodput_is_per_chip_and_scales_with_prefill_nodes() -> None:
    report = simulate_configs(
        [SimConfig("toy", pd_ratio=(1, 1)), SimConfig("toy", pd_ratio=(2, 1))],
        WORKLOAD,
        slo=Slo(ttft_ms=500),
        goodput=True,
        simulator=FifoStandIn(),
    )
    one, two = (r.goodput for r in report.results)
    assert one is not None and two is not None
    assert 5 < one.rate < 11  # a 100 ms server saturates just under 10 req/s
    assert two.rate > 1.7 * one.rate  # two prefill servers, nearly double the rate
    assert one.per_chip == pytest.approx(one.rate / 2)
    assert two.per_chip == pytest.approx(two.rate / 3)


def test_same_seed_same_report_other_seed_differs() -> None:
    def run(seed: int) -> dict:
        report = simulate_configs(
            [SimConfig("toy")],
            WORKLOAD,
            rates=[8.0],
            seed=seed,
            slo=Slo(ttft_ms=300),
            simulator=FifoStandIn(),
        )
        doc = report.to_json()
        doc.pop("wall_s")
        return doc

    assert run(1) == run(1)
    assert run(1) != run(2)


def test_json_document_shape() -> None:
    report = simulate_configs(
        [SimConfig("toy")],
        WORKLOAD,
        rates=[2.0],
        slo=Slo(ttft_ms=300),
        goodput=True,
        simulator=FifoStandIn(),
    )
    doc = json.loads(json.dumps(report.to_json()))
    assert doc["schema"] == "pdnotes.simulate/1"
    (config,) = doc["configurations"]
    assert config["label"] == "toy 1P1D" and config["chips"] == 2
    point = config["points"][0]
    assert set(point["metrics"]) == {"ttft_ms", "tpot_ms", "itl_ms", "e2e_ms"}
    assert set(point["metrics"]["ttft_ms"]) == {"count", "mean", "median", "p90", "p99"}
    assert point["rate_per_chip"] == 1.0
    assert config["goodput"]["per_chip"] > 0


def test_plot_is_self_contained_html_with_one_line_per_configuration(tmp_path: Path) -> None:
    report = simulate_configs(
        [SimConfig("toy", pd_ratio=(1, 1)), SimConfig("toy", pd_ratio=(2, 1))],
        WORKLOAD,
        rates=[2.0, 6.0, 12.0],
        slo=Slo(ttft_ms=500),
        simulator=FifoStandIn(),
    )
    page = write_plot(report, tmp_path / "att.html").read_text()
    assert page.startswith("<!doctype html>")
    assert page.count("<polyline") == 2
    assert "toy 1P1D" in page and "toy 2P1D" in page
    assert "<script" not in page and "http://" not in page.replace("http://www.w3.org", "")


def test_plot_refuses_png(tmp_path: Path) -> None:
    report = simulate_configs(
        [SimConfig("toy")], WORKLOAD, rates=[1.0, 2.0], simulator=FifoStandIn()
    )
    with pytest.raises(UsageError, match=".html or .svg"):
        write_plot(report, tmp_path / "att.png")


def test_closed_loop_concurrency_one_serialises_requests() -> None:
    seen: list[tuple[float, float]] = []

    @dataclass
    class TimedRecord(Record):
        arrival_ms: float = 0.0

    class Timed(FifoStandIn):
        def run(self, config, items, seed):  # type: ignore[no-untyped-def]
            # The stand-in pulls one request at a time and finishes it before pulling the next,
            # which is what a closed loop of one client must see.
            for item in items:
                arrival = item.arrival_ms
                assert arrival != float("inf")
                record = TimedRecord(
                    100.0,
                    20.0,
                    100.0 + 20.0 * (item.output_tokens - 1),
                    item.output_tokens,
                    arrival,
                )
                seen.append((arrival, arrival + record.e2e_ms))
                yield record

    workload = WorkloadSpec(requests=5, lengths=LengthSpec(100, 3), concurrency=1)
    report = simulate_configs([SimConfig("toy")], workload, simulator=Timed())
    assert report.results[0].points[0].completed == 5
    arrivals = [a for a, _ in seen]
    finishes = [f for _, f in seen]
    assert arrivals == [0.0, *finishes[:-1]]  # each request starts when the previous ends
