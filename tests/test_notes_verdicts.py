"""Honest verdicts on real-shaped model output (issue 29, point 3): "no table", "table cut off"
and "complete table but stopped at the limit" are told apart, each with its own repair request
and fix, and `--json` of a failed run carries every answer's verdict, finish reason, token
counts and text. The answers below are shaped like a small base model's (Gemma 3 270M on
llama.cpp): prose that rambles into the token limit, a table that runs out of tokens."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import respx
from conftest import CliResult
from loopback import chat_stream

from notes_cli.notes.check import check_text
from notes_cli.notes.kits import load_kit

BASE = "https://gw.example/api"
URL = f"{BASE}/chat/completions"

RAMBLE = (
    "Okay, let's break down PD disaggregation step by step.\n\n"
    "**1. Understanding the Stages**\n\n"
    "* **Prefill:** The prefill stage processes the prompt. It is compute-bound because the "
    "prompt is processed in parallel.\n"
    "* **Decode:** The decode stage generates tokens one by one. It is memory-bound because "
    "each token needs the KV cache.\n\n"
    "**2. Why Disaggregate?**\n\n"
    "Disaggregation means that the prefill and the decode run on different machines, and the "
    "KV cache is sent from the prefill machine to the decode machine, which means that the "
    "prefill machine can"
)
TABLE = (
    "| Stage | Bottleneck | Optimisation | Component |\n"
    "|---|---|---|---|\n"
    "| Prefill | Compute-bound, TTFT | High-compute chips; Graph mode whole-graph offload / "
    "subgraph fusion | DLInfer |\n"
    "| Decode | Memory-bound, TPOT | High-bandwidth / large-memory chips; TP interconnect; "
    "PagedAttention | LMDeploy |\n"
    "| Cross-node KV cache transfer | latency | RDMA or chip-to-chip links | DLSlime |\n"
)
CUT_TABLE = "Here is the table:\n\n" + TABLE[: TABLE.index("TP interconnect")]
CUT_HEADER = 'Here is the table:\n\n```json\n[{"Stage": "Prefill", "Bottleneck": "Compute'  # cut
WHOLE_THEN_CUT = TABLE + "\nA few notes on the table:\n1. Prefill runs once per request and is"


def _answer(text: str, finish: str = "length") -> httpx.Response:
    body = b"".join(chat_stream(text.splitlines(keepends=True), finish=finish))
    return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=body)


def _generate(cli: Callable[..., CliResult], *args: str) -> CliResult:
    return cli("notes", "generate", "--base-url", BASE, "--model", "gemma-3-270m", "--lang", "en",
               "-o", "note.md", "--max-tokens", "128", *args)  # fmt: skip


def _failed(cli: Callable[..., CliResult], text: str, tmp_path: Path) -> dict:  # type: ignore[type-arg]
    respx.post(URL).mock(side_effect=lambda request: _answer(text))
    result = _generate(cli, "--no-repair", "--json")
    assert result.exit_code == 1 and "Traceback" not in result.stderr
    assert not (tmp_path / "note.md").exists()
    document = result.json()
    assert document["schema"] == "pdnotes.error/1"
    return document  # type: ignore[no-any-return]


@respx.mock
def test_no_table_at_the_limit_is_no_table_not_truncated(
    cli: Callable[..., CliResult], tmp_path: Path
) -> None:
    document = _failed(cli, RAMBLE, tmp_path)
    assert document["verdict"] == "no-table"
    assert "reached the token limit before any table began" in document["error"]
    assert "truncated" not in document["error"]
    assert "instruction-tuned" in document["fix"] and "--max-tokens (now 128)" in document["fix"]
    [attempt] = document["attempts"]
    assert attempt["finish_reason"] == "length" and attempt["max_tokens"] == 128
    assert attempt["output_tokens"] > 0 and attempt["answer"] == RAMBLE
    assert attempt["verdict"] == "no-table"
    assert "before any table began" in attempt["problems"][0]


@respx.mock
def test_a_table_cut_off_is_truncated(cli: Callable[..., CliResult], tmp_path: Path) -> None:
    document = _failed(cli, CUT_TABLE, tmp_path)
    assert document["verdict"] == "truncated"
    assert "stops in the middle of the table at the token limit" in document["error"]
    assert document["fix"] == "the table did not fit: raise --max-tokens (now 128)"
    assert document["attempts"][0]["answer"] == CUT_TABLE


@respx.mock
def test_a_header_cut_off_at_the_limit_names_the_limit(
    cli: Callable[..., CliResult], tmp_path: Path
) -> None:
    document = _failed(cli, CUT_HEADER, tmp_path)
    assert document["verdict"] == "truncated"
    assert "before its table's header ends at the token limit" in document["error"]
    assert "--max-tokens (now 128)" in document["fix"]
    assert document["attempts"][0]["finish_reason"] == "length"


@respx.mock
def test_a_whole_looking_table_stopped_at_the_limit_is_its_own_verdict(
    cli: Callable[..., CliResult], tmp_path: Path
) -> None:
    document = _failed(cli, WHOLE_THEN_CUT, tmp_path)
    assert document["verdict"] == "at-limit"
    assert "looks complete (3 rows)" in document["error"] and "truncated" in document["error"]
    assert "so the answer can end on its own" in document["fix"]
    # the same text that ended by itself is a note
    assert check_text(WHOLE_THEN_CUT, load_kit("pd-disagg"), finish_reason="stop").passed


@respx.mock
def test_each_cause_gets_its_own_repair_request(
    cli: Callable[..., CliResult], tmp_path: Path
) -> None:
    repairs: dict[str, str] = {}
    for name, text in (("ramble", RAMBLE), ("cut", CUT_TABLE), ("whole", WHOLE_THEN_CUT)):
        respx.post(URL).mock(side_effect=lambda request, t=text: _answer(t))
        result = _generate(cli, "--max-repairs", "1", "--json")
        assert result.exit_code == 1
        attempts = result.json()["attempts"]
        assert [a["kind"] for a in attempts] == ["initial", "repair"]
        repairs[name] = attempts[1]["request"]
    assert "before any table began" in repairs["ramble"]
    assert "cut off" not in repairs["ramble"] and "looked complete" not in repairs["ramble"]
    assert "cut off in the middle of the table" in repairs["cut"]
    assert "looked complete" in repairs["whole"]
    assert len(set(repairs.values())) == 3


@respx.mock
def test_a_repaired_answer_passes_and_the_report_keeps_the_failed_one(
    cli: Callable[..., CliResult], tmp_path: Path
) -> None:
    respx.post(URL).mock(side_effect=[_answer(RAMBLE), _answer(TABLE, finish="stop")])
    result = _generate(cli, "--json")
    assert result.exit_code == 0, result.stderr
    first, second = result.json()["attempts"]
    assert (first["verdict"], first["finish_reason"], first["answer"]) == (
        "no-table", "length", RAMBLE,
    )  # fmt: skip
    assert (second["verdict"], second["finish_reason"]) == ("pass", "stop")


def test_on_the_bundled_engine_a_table_stopped_at_the_limit_is_repaired_to_a_pass(
    start_engine_server: Callable[..., Any], cli: Callable[..., CliResult], tmp_path: Path
) -> None:
    from notes_cli.engine.core.tokens import tokenize
    from notes_cli.notes.knowledge import answer_for, answer_messages

    prompt = load_kit("pd-disagg").prompt("en")
    first = answer_for(prompt, 0)  # seed 0: the table, then a closing sentence
    assert first is not None
    repair = [("user", prompt), ("assistant", first), ("user", "Stage | Bottleneck | "
              "Optimisation | Component")]  # fmt: skip
    table_only = answer_messages(repair, 0)
    assert table_only is not None
    full, short = len(tokenize(first)), len(tokenize(table_only))
    assert short < full - 2  # the limit falls in the closing sentence, after the table
    limit = short + 1
    engine = start_engine_server(seed=0)
    result = cli("notes", "generate", "--base-url", engine.base_url, "--model", "pd-mock-1",
                 "--lang", "en", "--max-tokens", str(limit), "-o", "note.md", "--json")  # fmt: skip
    assert result.exit_code == 0, result.stderr
    first_attempt, second = result.json()["attempts"]
    assert (first_attempt["verdict"], first_attempt["finish_reason"]) == ("at-limit", "length")
    assert "looked complete" in second["request"]
    assert (second["verdict"], second["finish_reason"]) == ("pass", "stop")
    assert (tmp_path / "note.md").exists()


def _echo(request: httpx.Request) -> httpx.Response:
    """A base model continuing its prompt: it writes the last user message out again (and
    would go on until the limit)."""
    import json

    messages = json.loads(request.content)["messages"]
    return _answer(messages[-1]["content"] + "\n\n" + messages[-1]["content"])


@respx.mock
def test_an_echo_of_the_repair_request_is_no_table_and_gets_the_base_model_advice(
    cli: Callable[..., CliResult], tmp_path: Path
) -> None:
    answers = iter([_answer(RAMBLE)])
    respx.post(URL).mock(side_effect=lambda request: next(answers, None) or _echo(request))
    result = _generate(cli, "--max-repairs", "1", "--json")
    assert result.exit_code == 1 and not (tmp_path / "note.md").exists()
    document = result.json()
    echo = document["attempts"][1]
    # The repair request names the columns as `Stage | Bottleneck | Optimisation | Component`
    # in its sentences: repeated back, those lines split on their pipes like a table.
    assert "Stage | Bottleneck | Optimisation | Component" in echo["answer"]
    assert echo["verdict"] == "no-table" and document["verdict"] == "no-table"
    assert "repeats pdnotes' own request" in document["error"]
    assert "complete" not in document["error"] and "truncated" not in document["error"]
    # The advice for a model that never stops: not more tokens, another kind of model.
    assert "instruction-tuned" in document["fix"] and "will not help" in document["fix"]
    assert "so the answer can end on its own" not in document["fix"]


def test_a_real_header_with_the_columns_as_cells_is_still_a_table() -> None:
    kit = load_kit("pd-disagg")
    assert check_text(TABLE, kit, finish_reason="stop").passed
    # without outer pipes, the header line is the column list itself: a header, not an echo
    loose = "\n".join(line.strip("|").strip() for line in TABLE.splitlines())
    assert loose.startswith("Stage | Bottleneck | Optimisation | Component\n")
    assert check_text(loose, kit, finish_reason="stop").passed
