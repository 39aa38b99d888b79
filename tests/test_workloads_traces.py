"""Built-in length distributions reproduce their sources; traces in pdnotes', vLLM's, SGLang's
and the Mooncake format replay their lengths; bad traces are clear input errors."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from notes_cli.bench import length_tables
from notes_cli.bench.length_tables import builtin_workloads, named_workload
from notes_cli.bench.workload import ArrivalSpec, LengthSpec, WorkItem, read_trace, synthetic
from notes_cli.errors import InputError, UsageError

QUANTILE_WORKLOADS = ("sharegpt", "arxiv-sum", "azure-conv", "azure-code")


def _draw(name: str, n: int = 40_000, seed: int = 3) -> tuple[np.ndarray, np.ndarray]:
    items = list(synthetic(n, LengthSpec(workload=name), ArrivalSpec(), seed=seed))
    return (
        np.array([w.input_tokens for w in items]),
        np.array([w.output_tokens for w in items]),
    )


def test_every_builtin_workload_names_its_source() -> None:
    workloads = builtin_workloads()
    assert set(workloads) == {"sharegpt", "longbench", "arxiv-sum", "azure-conv", "azure-code"}
    for table in workloads.values():
        assert table.source and table.description


@pytest.mark.parametrize("name", QUANTILE_WORKLOADS)
def test_quantile_workloads_reproduce_the_sources_statistics(name: str) -> None:
    table = named_workload(name)
    ins, outs = _draw(name)
    for drawn, stats in ((ins, table.input_stats), (outs, table.output_stats)):
        assert np.median(drawn) == pytest.approx(stats["median"], rel=0.03, abs=1)
        assert np.percentile(drawn, 90) == pytest.approx(stats["p90"], rel=0.03, abs=1)
        assert np.percentile(drawn, 99) == pytest.approx(stats["p99"], rel=0.05, abs=2)
        assert drawn.mean() == pytest.approx(stats["mean"], rel=0.05)


def test_published_figures_hold_in_the_bundled_tables() -> None:
    # Splitwise (ISCA'24): median prompt 1020 / output 129 for conversation, 1500 / 13 for code
    conv, code = named_workload("azure-conv"), named_workload("azure-code")
    assert (conv.input_stats["median"], conv.output_stats["median"]) == (1020, 129)
    assert code.input_stats["median"] == pytest.approx(1500, rel=0.03)
    assert code.output_stats["median"] == 13
    # DistServe's ShareGPT set: prompt + output under OPT's 2048-token context
    sharegpt = named_workload("sharegpt")
    assert sharegpt.input_quantiles[-1] + sharegpt.output_quantiles[0] < 2048


def test_longbench_is_long_and_capped() -> None:
    ins, outs = _draw("longbench", n=20_000)
    assert np.median(ins) == pytest.approx(7900, rel=0.03)
    assert ins.mean() == pytest.approx(9500, rel=0.05)  # LongBench's 7,154 words x 1.33
    assert ins.max() <= 32_000 and outs.max() <= 512
    assert np.median(outs) == pytest.approx(256, rel=0.05)


def test_workload_draws_are_deterministic_and_rate_independent() -> None:
    spec = LengthSpec(workload="sharegpt")
    a = [(w.input_tokens, w.output_tokens) for w in synthetic(500, spec, ArrivalSpec(1.0), seed=5)]
    b = [(w.input_tokens, w.output_tokens) for w in synthetic(500, spec, ArrivalSpec(9.0), seed=5)]
    c = [(w.input_tokens, w.output_tokens) for w in synthetic(500, spec, ArrivalSpec(1.0), seed=6)]
    assert a == b and a != c


def test_unknown_workload_is_a_usage_error_listing_the_names() -> None:
    with pytest.raises(UsageError) as caught:
        LengthSpec(workload="mmlu")
    assert "sharegpt" in (caught.value.fix or "")


def test_a_broken_workloads_file_is_an_input_error(tmp_path: Path, monkeypatch) -> None:
    bad = tmp_path / "workloads.toml"
    bad.write_text(
        "percentiles = [0, 50, 100]\n"
        '[workloads.x]\nsource = "s"\nkind = "quantiles"\ninput = [1, 5, 3]\noutput = [1, 2, 3]\n'
    )
    monkeypatch.setattr(length_tables, "template_path", lambda *_: bad)
    builtin_workloads.cache_clear()
    try:
        with pytest.raises(InputError, match="non-decreasing"):
            builtin_workloads()
    finally:
        builtin_workloads.cache_clear()


# -- traces ---------------------------------------------------------------------------------


def _items(path: Path, **kwargs) -> list[WorkItem]:
    return list(read_trace(path, **kwargs))


def test_mooncake_timestamps_are_ms(tmp_path: Path) -> None:
    trace = tmp_path / "mooncake.jsonl"
    trace.write_text(
        '{"timestamp": 0, "input_length": 6955, "output_length": 52, "hash_ids": [1, 2]}\n'
        '{"timestamp": 27482, "input_length": 6472, "output_length": 26, "hash_ids": [3]}\n'
    )
    assert _items(trace) == [WorkItem(0.0, 6955, 52), WorkItem(27482.0, 6472, 26)]
    rows = tmp_path / "rows.jsonl"
    rows.write_text('{"prompt_len": 100, "output_len": 7}\n')
    assert _items(rows) == [WorkItem(0.0, 100, 7)]


def _vllm_result(**extra) -> dict:
    """The shape `vllm bench serve --save-result --save-detailed` writes (vllm/benchmarks/
    serve.py): run-level fields plus one entry per request in each list."""
    return {
        "date": "20250101-000000",
        "backend": "vllm",
        "completed": 3,
        "total_input_tokens": 1200,
        "input_lens": [200, 400, 600],
        "output_lens": [10, 4, 30],  # the failed one still counted some tokens
        "ttfts": [0.1, 0.0, 0.2],
        "errors": ["", "Bad Request", ""],
        **extra,
    }


def test_vllm_result_json_replays_its_requests_at_a_rate(tmp_path: Path) -> None:
    result = tmp_path / "vllm.json"
    result.write_text(json.dumps(_vllm_result()))
    assert [(w.input_tokens, w.output_tokens) for w in _items(result)] == [(200, 10), (600, 30)]
    timed = _items(result, arrivals=ArrivalSpec(rate=10.0), seed=1)
    assert 0 < timed[0].arrival_ms < timed[1].arrival_ms


def test_pretty_printed_vllm_result_is_read_whole(tmp_path: Path) -> None:
    result = tmp_path / "vllm.json"
    result.write_text(json.dumps(_vllm_result(), indent=2))
    assert len(_items(result)) == 2


def test_sglang_output_file_jsonl_with_several_runs(tmp_path: Path) -> None:
    # sglang bench_serving --output-file F --output-details appends one JSON line per run
    runs = tmp_path / "sglang.jsonl"
    first = {"backend": "sglang", "completed": 2, "input_lens": [5, 6], "output_lens": [7, 8]}
    second = {"backend": "sglang", "completed": 1, "input_lens": [9], "output_lens": [10]}
    runs.write_text(json.dumps(first) + "\n" + json.dumps(second) + "\n")
    assert [(w.input_tokens, w.output_tokens) for w in _items(runs)] == [(5, 7), (6, 8), (9, 10)]
    assert len(_items(runs, limit=2)) == 2


def test_a_json_array_of_requests(tmp_path: Path) -> None:
    trace = tmp_path / "rows.json"
    trace.write_text(json.dumps([{"input_tokens": 3, "output_tokens": 4}] * 3, indent=1))
    assert len(_items(trace)) == 3


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (json.dumps({"completed": 3, "total_input_tokens": 9}), "--save-detailed"),
        (json.dumps({"input_lens": [1, 2], "output_lens": [1]}), "same length"),
        (json.dumps({"input_lens": [1], "output_lens": [-1]}), "output_lens[0]"),
        (json.dumps({"input_lens": [1], "output_lens": [0]}), "every request of this run failed"),
        (json.dumps({"input_lens": [1], "output_lens": [1], "errors": []}), "errors must be"),
        ('{"input_tokens": 5, "output_tokens": 5, "timestamp": "soon"}', "arrival_ms"),
        ('{"input_length": 0, "output_length": 5}', "input_length must be a positive"),
        ("[1, 2", "not JSON"),
        ('{"input_tokens": 5, "output_tokens": 2}\n{"input_tokens": 5,', ":2: not JSON"),
    ],
)
def test_bad_traces_are_input_errors(tmp_path: Path, text: str, message: str) -> None:
    trace = tmp_path / "bad.json"
    trace.write_text(text)
    with pytest.raises(InputError) as caught:
        _items(trace)
    assert message in f"{caught.value} {caught.value.fix}"


def test_an_overlong_line_is_refused_without_reading_on(tmp_path: Path, monkeypatch) -> None:
    from notes_cli.bench import workload

    monkeypatch.setattr(workload, "MAX_TRACE_LINE_BYTES", 100)
    trace = tmp_path / "long.jsonl"
    trace.write_text(json.dumps({"input_lens": [1] * 200, "output_lens": [1] * 200}) + "\n")
    with pytest.raises(InputError, match="longer than"):
        _items(trace)


def test_an_oversized_document_is_refused(tmp_path: Path, monkeypatch) -> None:
    from notes_cli.bench import workload

    monkeypatch.setattr(workload, "MAX_TRACE_DOCUMENT_BYTES", 50)
    trace = tmp_path / "big.json"
    trace.write_text(json.dumps(_vllm_result(), indent=2))
    with pytest.raises(InputError, match="too large") as caught:
        _items(trace)
    assert "JSON Lines" in (caught.value.fix or "")


# -- the CLI --------------------------------------------------------------------------------


def test_cli_runs_a_builtin_workload_and_names_it_in_json(cli) -> None:
    args = ("engine", "simulate", "--preset", "h100-disagg", "-n", "200", "--rate", "4")
    doc = cli(*args, "--workload", "sharegpt", "--json").json()
    assert doc["workload"]["workload"]["name"] == "sharegpt"
    assert "DistServe" in doc["workload"]["workload"]["source"]
    tpot = doc["configurations"][0]["points"][0]["metrics"]["tpot_ms"]
    fixed = cli(*args, "--json").json()["configurations"][0]["points"][0]["metrics"]["tpot_ms"]
    # ShareGPT has one-token answers (no TPOT); 64 fixed output tokens have none
    assert tpot["count"] < 200 == fixed["count"]


def test_cli_replays_a_vllm_result(cli, tmp_path: Path) -> None:
    result = tmp_path / "vllm.json"
    result.write_text(json.dumps(_vllm_result()))
    doc = cli("engine", "simulate", "--trace", str(result), "--rate", "2", "--json").json()
    assert doc["configurations"][0]["points"][0]["completed"] == 2


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--workload", "sharegpt", "--input-len", "100"), "drop --input-len"),
        (("--workload", "sharegpt", "--dist", "lognormal"), "drop --dist"),
        (("--workload", "nope"), "unknown --workload"),
    ],
)
def test_cli_workload_usage_errors(cli, args: tuple[str, ...], message: str) -> None:
    result = cli("engine", "simulate", "-n", "5", *args)
    assert result.exit_code == 2 and message in result.stderr
    assert "Traceback" not in result.stderr


def test_cli_bad_trace_exits_2(cli, tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"completed": 3, "total_input_tokens": 9}))
    result = cli("engine", "simulate", "--trace", str(bad), "-n", "5")
    assert result.exit_code == 2 and "--save-detailed" in result.stderr
