"""`pdnotes engine plan` end to end through the real entry point: the report, --json, progress
on stderr, --plot, --out (a deployment file `engine simulate` runs) and --sketch."""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import CliResult

SMALL = (
    "engine", "plan", "--model", "qwen3-8b", "--chip", "h800", "--chip", "h20",
    "--link", "roce-200g", "--max-chips", "2", "--max-instances", "1", "--max-tp", "1",
    "--modes", "disagg,colocated", "--input-len", "1024", "--output-len", "32",
    "-n", "40", "--window-s", "2", "--tolerance", "0.1", "--jobs", "1",
    "--slo-ttft-ms", "600", "--slo-tpot-ms", "40",
)  # fmt: skip

Cli = Callable[..., CliResult]


def test_json_has_the_whole_table_and_the_best(cli: Cli) -> None:
    result = cli(*SMALL, "--rate", "30", "--json")
    assert result.exit_code == 0, result.stderr
    doc = result.json()
    assert doc["schema"] == "pdnotes.plan/1"
    # 2 chips x 2 chips disagg (1P1D at TP1) + 2 colocated: every one in the table.
    assert doc["counts"]["candidates"] == 6 == len(doc["candidates"])
    best = doc["best"]
    assert best["id"] == doc["ranking"][0]
    assert best["replicas"] == -(-30 // best["capacity_rps"])  # ceil(target / capacity)
    row = next(c for c in doc["candidates"] if c["id"] == best["id"])
    assert row["capacity_rps"] == best["capacity_rps"] > 0
    assert row["probes"] and all("met" in p for p in row["probes"])
    assert doc["slo"]["ttft_ms"] == 600 and doc["score"] == "req/s per chip"
    # Progress is drawn only on a terminal (test_plan_processes.py): none in a pipe or a log.
    assert "candidates searched" not in result.stderr


def test_human_report_names_the_best_the_runner_ups_and_the_front(cli: Cli) -> None:
    result = cli(*SMALL, "--chip", "h800:2.5", "--chip", "h20:1.1", "--top", "3")
    assert result.exit_code == 0, result.stderr
    out = result.stdout
    assert re.search(r"^Best .* req/s per \$/h", out, re.M)
    assert "Why the runner-ups lose" in out
    assert "below the best; at higher load:" in out
    assert "Pareto front" in out
    assert "Searched 6 candidates" in out


def test_plot_is_one_self_contained_page(cli: Cli, tmp_path: Path) -> None:
    page = tmp_path / "plan.html"
    result = cli(*SMALL, "--plot", str(page))
    assert result.exit_code == 0, result.stderr
    html = page.read_text(encoding="utf-8")
    assert html.count("<svg") == 2  # attainment curves and the front
    assert "Attainment vs rate" in html and "Pareto front" in html
    assert "<script" not in html and "http://" not in html.replace("http://www.w3.org", "")
    svg = tmp_path / "plan.svg"
    assert cli(*SMALL, "--plot", str(svg)).exit_code == 0
    assert svg.read_text(encoding="utf-8").startswith("<svg")


def test_out_writes_a_deployment_file_simulate_runs(cli: Cli, tmp_path: Path) -> None:
    target = tmp_path / "best.toml"
    planned = cli(*SMALL, "--out", str(target), "--json")
    assert planned.exit_code == 0, planned.stderr
    doc = planned.json()
    assert doc["deployment_file"] == str(target)
    text = target.read_text(encoding="utf-8")
    assert f"[deployments.plan-{doc['best']['id']}]" in text
    simulated = cli("engine", "simulate", "-p", str(target), "-n", "20", "--json")
    assert simulated.exit_code == 0, simulated.stderr
    config = simulated.json()["configurations"][0]
    best = next(c for c in doc["candidates"] if c["id"] == doc["best"]["id"])
    assert config["chips"] == best["chips"] and config["mode"] == best["mode"]


def test_sketch_prints_the_launch_commands_and_says_not_launched(cli: Cli) -> None:
    result = cli(*SMALL, "--sketch", "lmdeploy")
    assert result.exit_code == 0, result.stderr
    assert "lmdeploy serve api_server" in result.stdout
    assert "NOT LAUNCHED" in result.stdout


def test_input_errors_exit_2(cli: Cli) -> None:
    mixed = cli(*SMALL, "--chip", "h800:2.5")
    assert mixed.exit_code == 2 and "price for every --chip or for none" in mixed.stderr
    unknown = cli(*SMALL, "--chip", "tpu-v9")
    assert unknown.exit_code == 2 and "unknown chip 'tpu-v9'" in unknown.stderr
    assert "h800" in unknown.stderr  # the fix lists the known ones
    assert cli(*SMALL, "--percentile", "120").exit_code == 2
    assert cli(*SMALL, "--slo-percentile", "40").exit_code == 2  # one range in plan and simulate
    both = cli(*SMALL, "--slo-percentile", "90", "--percentile", "99")
    assert both.exit_code == 2 and "former name of --slo-percentile" in both.stderr
    assert cli(*SMALL, "--sketch", "tgi").exit_code == 2
    assert cli(*SMALL, "--modes", "pipelined").exit_code == 2


def test_no_candidate_meets_the_slos_exits_1(cli: Cli) -> None:
    # 2 ms for a first token: no prefill of 1024 tokens on these chips is that fast.
    args = [*SMALL]
    args[args.index("--slo-ttft-ms") + 1] = "2"
    result = cli(*args)
    assert result.exit_code == 1
    assert "No candidate meets the SLOs" in result.stdout
    assert "even alone on idle nodes" in result.stdout


def test_a_trace_supplies_the_lengths(cli: Cli, tmp_path: Path) -> None:
    trace = tmp_path / "trace.jsonl"
    trace.write_text(
        "".join(
            json.dumps({"prompt_tokens": 512 + 64 * i, "completion_tokens": 16}) + "\n"
            for i in range(30)
        ),
        encoding="utf-8",
    )
    result = cli(*SMALL, "--trace", str(trace), "--json")
    assert result.exit_code == 0, result.stderr
    workload = result.json()["workload"]
    assert workload["source"] == "trace trace.jsonl"
    assert workload["requests"] == 30 and workload["max_input_tokens"] == 512 + 64 * 29


def test_ray_without_ray_installed_says_how_to_get_it(
    cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` raises ImportError
    args = list(SMALL)
    del args[args.index("--jobs") : args.index("--jobs") + 2]  # --ray replaces --jobs
    result = cli(*args, "--ray", "auto")
    assert result.exit_code == 2
    assert "--ray needs Ray" in result.stderr and "pdnotes[ray]" in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize("name", ["--slo-percentile", "--percentile"])
def test_the_percentile_flag_has_one_name_in_plan_and_simulate(cli: Cli, name: str) -> None:
    # --slo-percentile as in `engine simulate`; --percentile, the former name, still works.
    result = cli(*SMALL, "--modes", "colocated", name, "99", "--json")
    assert result.exit_code == 0, result.stderr
    assert result.json()["slo"]["percentile"] == 0.99


def test_a_built_in_workload_is_a_dist(cli: Cli) -> None:
    # --help says --dist takes the built-in workloads `engine simulate` knows; it refused them.
    result = cli(*SMALL, "--modes", "colocated", "--dist", "sharegpt", "--json")
    assert result.exit_code == 0, result.stderr
    assert result.json()["workload"]["source"] == "workload sharegpt"


@pytest.mark.parametrize("price", ["1.7e308", "inf", "-inf", "nan", "0", "1e7"])
def test_a_price_that_is_not_a_finite_positive_number_in_range_is_refused(
    cli: Cli, price: str
) -> None:
    # Issue 36: `--chip h800:1.7e308 --json` printed `Infinity` ($/h of a 2-chip instance),
    # which strict JSON parsers reject.
    result = cli(*SMALL, "--chip", f"h800:{price}", "--chip", "h20:1", "--json")
    assert result.exit_code == 2, result.stdout
    error = result.json()  # still one strict document: the error
    assert error["schema"] == "pdnotes.error/1"
    assert "the price must be a number above 0 and at most 1,000,000" in error["error"]


def test_every_json_document_is_strict_json(capsys: pytest.CaptureFixture[str]) -> None:
    # The one writer of --json documents: a number that is not finite becomes null, wherever
    # it sits, so `Infinity` and `NaN` never reach a strict parser.
    from notes_cli import render

    def strict(text: str) -> Any:
        def refuse(constant: str) -> None:
            raise ValueError(f"not strict JSON: {constant}")

        return json.loads(text, parse_constant=refuse)

    render.emit_json(
        {
            "schema": "test/1",
            "rate": float("inf"),
            "rows": [{"ttft_ms": float("nan")}, (1.5, float("-inf"))],
            "ok": 2.0,
        }
    )
    document = strict(capsys.readouterr().out)
    assert document == {"schema": "test/1", "rate": None, "rows": [{"ttft_ms": None}, [1.5, None]],
                        "ok": 2.0}  # fmt: skip
