"""`pdnotes bench --concurrency 1,2,4` / `--rates`: one run per load point in one command, a table,
per-point records and a self-contained plot. A real engine app on port 0 (scripted core)."""

from __future__ import annotations

import json
import re

import pytest
from test_bench_cli import scripted  # noqa: F401 - the fixture

from notes_cli.bench.sweep import pareto_front


def test_a_concurrency_sweep_runs_each_point_and_writes_its_plot(cli, scripted, tmp_path) -> None:  # noqa: F811
    base_url, engine = scripted
    plot, records = tmp_path / "sweep.svg", tmp_path / "run.jsonl"
    args = ("-c", "1,3", "-n", "6", "--output-len", "4", "--gpus", "2")
    result = cli(
        "bench", "--base-url", base_url, *args, "--plot", str(plot), "--records", str(records)
    )
    assert result.exit_code == 0, result.stderr
    assert "bench sweep" in result.stdout and "c=1" in result.stdout and "c=3" in result.stdout
    assert len(engine.requests) == 12  # -n requests at each point
    svg = plot.read_text()
    assert svg.startswith("<svg") and svg.rstrip().endswith("</svg>")
    for text in ("TTFT vs throughput", "TPOT vs throughput", "Pareto front (2 GPUs)", "c=3"):
        assert text in svg
    assert "<script" not in svg and "http://" not in svg.replace("http://www.w3.org/2000/svg", "")
    for tag in ("c1", "c3"):
        rows = (tmp_path / f"run.{tag}.jsonl").read_text().splitlines()
        assert len(rows) == 6 and json.loads(rows[0])["ok"]


def test_a_rate_sweep_in_json_has_one_document_per_point(cli, scripted, tmp_path) -> None:  # noqa: F811
    base_url, engine = scripted
    plot = tmp_path / "sweep.html"
    result = cli(
        "bench", "--base-url", base_url, "--rates", "50,200", "-n", "4", "--output-len", "3",
        "--plot", str(plot), "--json",
    )  # fmt: skip
    assert result.exit_code == 0, result.stderr
    doc = result.json()
    assert doc["schema"] == "pdnotes.bench.sweep/1" and doc["ok"] is True
    assert [p["rate"] for p in doc["points"]] == [50.0, 200.0]
    assert all(p["plan"]["concurrency"] is None for p in doc["points"])
    assert all(p["completed"] == 4 for p in doc["points"])
    assert doc["target"]["model"] == "pd-mock-1"
    page = plot.read_text()
    assert page.startswith("<!doctype html>") and "<svg" in page and "Pareto" not in page
    # The same lengths at every point, but each point its own prompts: the second point's
    # would otherwise all be in the server's prefix cache from the first.
    texts = [r.messages[-1].text for r in engine.requests]
    assert [len(t.split()) for t in texts[:4]] == [len(t.split()) for t in texts[4:]]
    assert not set(texts[:4]) & set(texts[4:])


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("-c", "1,x"), "whole numbers"),
        (("-c", "0,2"), "positive"),
        (("-c", "2,2"), "twice"),
        (("--rates", "1,2", "--rate", "3"), "--rates"),
        (("--rates", "1,2", "-c", "1,2"), "not both"),
        (("--plot", "p.svg"), "sweep"),
        (("-c", "1,2", "--plot", "p.png"), ".svg"),
    ],
)
def test_bad_sweep_flags_are_usage_errors_before_any_request(cli, scripted, args, message) -> None:  # noqa: F811
    base_url, engine = scripted
    result = cli("bench", "--base-url", base_url, "-n", "2", *args)
    assert result.exit_code == 2, result.stdout + result.stderr
    assert message in result.stderr and "Traceback" not in result.stderr
    assert engine.requests == []


def test_the_pareto_front_keeps_the_points_nothing_beats_on_both_axes() -> None:
    points = [(10.0, 50.0), (20.0, 40.0), (15.0, 30.0), (30.0, 10.0), (20.0, 20.0)]
    assert pareto_front(points) == [(10.0, 50.0), (20.0, 40.0), (30.0, 10.0)]


def test_a_plot_marks_every_point(cli, scripted, tmp_path) -> None:  # noqa: F811
    base_url, _ = scripted
    plot = tmp_path / "p.svg"
    args = ("-c", "1,2,4", "-n", "4", "--output-len", "3", "--plot", str(plot))
    assert cli("bench", "--base-url", base_url, *args).exit_code == 0
    svg = plot.read_text()
    # Two panels x two series (median, P99) x three points.
    assert len(re.findall(r"<circle ", svg)) == 12


def test_input_lens_runs_the_grid_calibrate_needs_with_fresh_prompts_and_provenance(
    cli,
    scripted,  # noqa: F811
    tmp_path,
) -> None:
    base_url, engine = scripted
    records = tmp_path / "run.jsonl"
    result = cli(
        "bench", "--base-url", base_url, "--input-lens", "32,96", "-c", "1,2", "-n", "3",
        "--output-len", "3", "--records", str(records),
    )  # fmt: skip
    assert result.exit_code == 0, result.stderr
    assert len(engine.requests) == 12  # 2 lengths x 2 levels x -n
    assert "point(s) left, about" in result.stderr  # the time still to go, from its answers
    points = set()
    for length in (32, 96):
        for level in (1, 2):
            path = tmp_path / f"run.i{length}.c{level}.jsonl"
            assert len(path.read_text().splitlines()) == 3
            meta = json.loads((tmp_path / f"run.i{length}.c{level}.jsonl.meta.json").read_text())
            assert meta["schema"] == "pdnotes.bench.meta/1"
            assert (meta["input_len"], meta["concurrency"]) == (length, level)
            assert meta["base_url"] == base_url and meta["model"] == "pd-mock-1"
            assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", meta["started"])
            points.add(meta["prompt_point"])
    assert points == {0, 1, 2, 3}  # numbered across the grid, not restarting per length
    # no point repeats another's prompts: a prefix cache cannot serve one from the last
    # (a longer prompt of the same point number would start with a shorter one's words)
    starts = [" ".join(r.messages[-1].text.split()[:8]) for r in engine.requests]
    assert len(set(starts)) == len(starts)


def test_input_lens_needs_concurrency_levels(cli, scripted) -> None:  # noqa: F811
    base_url, _ = scripted
    result = cli("bench", "--base-url", base_url, "--input-lens", "32,96", "-n", "2")
    assert result.exit_code == 2 and "--input-lens runs a grid" in result.stderr
