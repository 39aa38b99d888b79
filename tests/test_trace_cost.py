"""`pdnotes trace cost`: a trace priced at gateway rates (fresh input, cached input, output)
against the cluster the planner picks for it, with the break-even volume computed by hand; the
bundled demo trace prices with the bundled table; bad price tables and chips are exit 2."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from notes_cli.resources import template_path

PLAN = ("--model", "qwen3-8b", "--max-chips", "1", "--jobs", "1")

# Two turns of one session: 1,000 and 1,000 prompt tokens, the second with 500 of them served
# from the upstream's cache (recorded), 100 output tokens each, one second apart.
TRACE = [
    {"timestamp": 0, "input_length": 1000, "output_length": 100, "hash_ids": [0, 1],
     "session_id": "s", "turn": 1, "cached_tokens": 0},
    {"timestamp": 1000, "input_length": 1000, "output_length": 100, "hash_ids": [0, 2],
     "session_id": "s", "turn": 2, "cached_tokens": 500},
]  # fmt: skip

PRICES = """
[gateway.test-model]
input = 1.0
cached_input = 0.1
output = 10.0
source = "a test"
date = "2026-12-06"

[gateway.nearly-free]
input = 0.000001
cached_input = 0.0
output = 0.000001
source = "a test"
date = 2026-12-06

[chips."h100-sxm"]
price_per_hour = 2.4
source = "a test"
date = "2026-12-06"
"""


def _files(tmp_path: Path, prices: str = PRICES) -> tuple[Path, Path]:
    trace = tmp_path / "t.jsonl"
    trace.write_text("".join(json.dumps(row) + "\n" for row in TRACE))
    table = tmp_path / "prices.toml"
    table.write_text(prices)
    return trace, table


def test_cost_prices_cached_input_apart_and_breaks_even_where_a_replica_costs_as_much(
    cli, tmp_path: Path
) -> None:
    trace, table = _files(tmp_path)
    run = cli("trace", "cost", str(trace), "--prices", str(table), *PLAN, "--json")
    assert run.exit_code == 0, run.stderr
    doc = json.loads(run.stdout)
    # 2 requests over 1 s: 172,800 a day; 500 of the 2,000 prompt tokens recorded as cached
    assert doc["requests_per_day"] == 172_800
    assert doc["trace"]["cached_tokens"] == 500 and doc["trace"]["cached_from"] == "recorded"
    test_model, nearly_free = doc["gateway"]
    # by hand: (1,500 x $1 + 500 x $0.10 + 200 x $10) / 1e6 / 2 requests
    assert test_model["per_request"] == pytest.approx(0.001775)
    assert test_model["per_day"] == pytest.approx(0.001775 * 172_800, rel=1e-6)
    hosted = doc["self_hosted"]
    assert hosted["price_per_hour"] == 2.4 and hosted["chips"][0]["source"] == "a test"
    capacity = hosted["capacity_rps"]
    assert hosted["replicas"] == max(1, math.ceil(2 / capacity))
    assert hosted["per_day"] == pytest.approx(hosted["replicas"] * 2.4 * 24)
    # one replica ($57.60 a day) costs what 32,451 requests cost at the gateway
    assert test_model["break_even_requests_per_day"] == pytest.approx(57.6 / 0.001775, rel=1e-4)
    # a gateway cheaper per request than a fully loaded replica never breaks even
    assert nearly_free["break_even_requests_per_day"] is None


def test_a_named_volume_and_a_chip_price_on_the_command_line_win(cli, tmp_path: Path) -> None:
    trace, table = _files(tmp_path)
    run = cli(
        "trace", "cost", str(trace), "--prices", str(table), *PLAN, "--json",
        "--per-day", "1000", "--chip", "h100-sxm:4.8", "--gateway", "test-model",
    )  # fmt: skip
    assert run.exit_code == 0, run.stderr
    doc = json.loads(run.stdout)
    assert doc["requests_per_day"] == 1000 and doc["self_hosted"]["replicas"] == 1
    assert doc["self_hosted"]["chips"][0]["source"] == "--chip"
    (only,) = doc["gateway"]
    assert only["per_day"] == pytest.approx(1.775)
    assert only["break_even_requests_per_day"] == pytest.approx(4.8 * 24 / 0.001775, rel=1e-4)


def test_the_demo_trace_prints_a_break_even_volume_with_the_bundled_prices(cli) -> None:
    trace = template_path("demo", "agent-session.jsonl")
    run = cli("trace", "cost", str(trace), *PLAN)
    assert run.exit_code == 0, run.stderr
    assert "claude-sonnet-4.5" in run.stdout and "docs.anthropic.com" in run.stdout
    rows = [line for line in run.stdout.splitlines() if line.endswith("requests a day")]
    assert rows and "breaks even at" in run.stdout
    # the demo's sessions share most of their prefix: the gateway's cache serves it
    assert "prompt tokens cached 81" in run.stdout


@pytest.mark.parametrize(
    ("prices", "says"),
    [
        ("[gateway.m\ninput = 1", "not valid TOML"),
        ("[gateway.m]\ninput = 1.0\ncached_input = 0.1\noutput = 2.0\ndate = 'x'\n", "source"),
        ("[gateway.m]\ninput = -1\ncached_input = 0\noutput = 1\nsource='s'\ndate='d'\n", "input"),
        ("[gateway.m]\ninput = nan\ncached_input = 0\noutput = 1\nsource='s'\ndate='d'\n", "input"),
        ("[gateway.m]\ninput = 1\ncached_input = 0\noutput = 1\nsource='s'\ndate='d'\nx=1\n", "x"),
        ("[chips.h100-sxm]\nprice_per_hour = 1\nsource = 's'\ndate = 'd'\n", "no [gateway"),
        ("a = " + "[" * 5000 + "]" * 5000, "price table"),
    ],
)
def test_a_bad_price_table_is_exit_2_naming_it(cli, tmp_path: Path, prices: str, says: str) -> None:
    trace, table = _files(tmp_path, prices)
    run = cli("trace", "cost", str(trace), "--prices", str(table), *PLAN)
    assert run.exit_code == 2 and says in run.stderr and str(table) in run.stderr.replace("\n", "")


def test_a_chip_without_a_price_or_an_unknown_gateway_is_exit_2(cli, tmp_path: Path) -> None:
    trace, table = _files(tmp_path)
    run = cli("trace", "cost", str(trace), "--prices", str(table), *PLAN, "--chip", "h800")
    assert run.exit_code == 2 and "--chip h800:PRICE" in run.stderr
    run = cli("trace", "cost", str(trace), "--prices", str(table), *PLAN, "--gateway", "nope")
    assert run.exit_code == 2 and "test-model" in run.stderr


def test_no_deployment_meeting_the_slos_is_exit_1_saying_what_to_loosen(
    cli, tmp_path: Path
) -> None:
    trace, table = _files(tmp_path)
    run = cli("trace", "cost", str(trace), "--prices", str(table), *PLAN, "--slo-ttft-ms", "1")
    assert run.exit_code == 1 and "meets the SLOs" in run.stderr and "--max-chips" in run.stderr
