"""`notes generate` against respx-mocked gateways: a 401, a truncated stream and a refusal each
end with a clear message and exit 1 and leave no note behind; a repair request quotes exactly
what was missing and a fixed table then passes; the key is sent but never shown."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest
import respx
from conftest import CliResult
from loopback import chat_stream

BASE = "https://gw.example/api"
URL = f"{BASE}/chat/completions"

GOOD = (
    "Here is the note:\n\n"
    "| Stage | Bottleneck | Optimisation | Component |\n"
    "|---|---|---|---|\n"
    "| Prefill | Compute-bound, TTFT | High-compute chips; Graph mode whole-graph offload / "
    "subgraph fusion | DLInfer |\n"
    "| Decode | Memory-bound, TPOT | High-bandwidth / large-memory chips; TP interconnect; "
    "PagedAttention | LMDeploy |\n"
    "| Cross-node KV cache transfer | latency | RDMA or chip-to-chip links | DLSlime |\n"
)
NO_PAGED_ATTENTION = GOOD.replace("; PagedAttention", "; continuous batching")


def answer(text: str, *, finish: str | None = "stop", done: bool = True) -> httpx.Response:
    """A chat-completions SSE response streaming `text` in line-sized chunks."""
    chunks = text.splitlines(keepends=True)
    return httpx.Response(
        200,
        headers={"content-type": "text/event-stream"},
        content=b"".join(chat_stream(chunks, finish=finish, done=done, usage=done)),
    )


def generate(cli: Callable[..., CliResult], *args: str) -> CliResult:
    return cli(
        "notes",
        "generate",
        "--base-url",
        BASE,
        "--model",
        "gw-model",
        "--lang",
        "en",
        "-o",
        "note.md",
        *args,
    )


def assert_no_note(folder: Path) -> None:
    assert not (folder / "note.md").exists()
    assert not [p.name for p in folder.iterdir() if p.name.startswith(".note.md")]


@respx.mock
def test_401_is_a_clear_error_and_no_note(
    cli: Callable[..., CliResult],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    sentinel_key: str,
) -> None:
    monkeypatch.setenv("GW_KEY", sentinel_key)
    respx.post(URL).mock(
        return_value=httpx.Response(
            401,
            json={
                "error": {
                    "message": "Invalid API key",
                    "type": "invalid_request_error",
                    "code": "invalid_api_key",
                }
            },
        )
    )
    result = generate(cli, "--key-env", "GW_KEY")
    assert result.exit_code == 1
    assert "401" in result.stderr and "Traceback" not in result.stderr
    assert sentinel_key not in result.stderr + result.stdout
    assert_no_note(tmp_path)


@respx.mock
def test_truncated_stream_leaves_no_note(cli: Callable[..., CliResult], tmp_path: Path) -> None:
    cut = GOOD[: GOOD.index("| Decode")]
    respx.post(URL).mock(return_value=answer(cut, finish=None, done=False))
    result = generate(cli, "--json")
    assert result.exit_code == 1
    assert result.json()["schema"] == "pdnotes.error/1"
    assert "ended without its completion event" in result.json()["error"]
    assert_no_note(tmp_path)


@respx.mock
def test_answer_cut_by_the_token_limit_leaves_no_note(
    cli: Callable[..., CliResult], tmp_path: Path
) -> None:
    cut = GOOD[: GOOD.index("PagedAttention")]
    respx.post(URL).mock(return_value=answer(cut, finish="length"))
    result = generate(cli, "--no-repair")
    assert result.exit_code == 1
    assert "no note written" in result.stderr and "truncated" in result.stderr
    assert_no_note(tmp_path)


@respx.mock
def test_a_whole_looking_table_stopped_by_the_token_limit_is_not_a_pass(
    cli: Callable[..., CliResult], tmp_path: Path
) -> None:
    # The table's last row closed before the limit hit, in the paragraph after it: nothing in
    # the text looks cut, only finish_reason "length" says the answer is not whole.
    stopped = GOOD + "\nA few notes on the table:\n1. Prefill runs once per request and is"
    respx.post(URL).mock(return_value=answer(stopped, finish="length"))
    result = generate(cli, "--no-repair", "--json")
    assert result.exit_code == 1
    document = result.json()
    assert document["schema"] == "pdnotes.error/1"
    assert "truncated" in document["error"] and "PASS" not in result.stderr
    assert_no_note(tmp_path)
    # The same answer with finish_reason "stop" is a passing note: the limit alone decided.
    respx.post(URL).mock(return_value=answer(stopped, finish="stop"))
    assert generate(cli, "--no-repair").exit_code == 0
    assert (tmp_path / "note.md").exists()


@respx.mock
def test_refusal_is_not_repaired_and_leaves_no_note(
    cli: Callable[..., CliResult], tmp_path: Path
) -> None:
    route = respx.post(URL).mock(
        return_value=answer("I'm sorry, but I can't help with that request.")
    )
    result = generate(cli)
    assert result.exit_code == 1
    assert "the model declined to write the note" in result.stderr
    assert route.call_count == 1
    assert_no_note(tmp_path)


@respx.mock
def test_repair_quotes_the_missing_concept_and_the_fixed_table_passes(
    cli: Callable[..., CliResult], tmp_path: Path
) -> None:
    route = respx.post(URL).mock(side_effect=[answer(NO_PAGED_ATTENTION), answer(GOOD)])
    result = generate(cli, "--json")
    assert result.exit_code == 0, result.stderr
    sent = json.loads(route.calls[1].request.content)
    assert [m["role"] for m in sent["messages"]] == ["user", "assistant", "user"]
    assert sent["messages"][1]["content"] == NO_PAGED_ATTENTION
    repair = sent["messages"][2]["content"]
    assert "The row “Decode” does not mention: PagedAttention." in repair
    assert "Stage | Bottleneck | Optimisation | Component" in repair
    report = result.json()
    assert report["note"]["repairs"] == 1 and report["note"]["passed"] is True
    assert "PagedAttention" in (tmp_path / "note.md").read_text(encoding="utf-8")


@respx.mock
def test_no_repair_writes_the_failing_note_and_exits_1(
    cli: Callable[..., CliResult], tmp_path: Path
) -> None:
    route = respx.post(URL).mock(return_value=answer(NO_PAGED_ATTENTION))
    result = generate(cli, "--no-repair")
    assert result.exit_code == 1
    assert route.call_count == 1
    assert result.stdout.startswith("FAIL")
    note = (tmp_path / "note.md").read_text(encoding="utf-8")
    assert "**FAIL**" in note and "missing: PagedAttention" in note


@respx.mock
def test_key_is_sent_but_never_written_or_printed(
    cli: Callable[..., CliResult],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    sentinel_key: str,
) -> None:
    monkeypatch.setenv("GW_KEY", sentinel_key)
    route = respx.post(URL).mock(return_value=answer(GOOD))
    result = generate(cli, "--key-env", "GW_KEY", "--format", "json", "--json")
    assert result.exit_code == 0
    assert route.calls[0].request.headers["authorization"] == f"Bearer {sentinel_key}"
    written = (tmp_path / "note.md").read_text(encoding="utf-8")
    for text in (written, result.stdout, result.stderr):
        assert sentinel_key not in text


def test_unset_key_env_is_a_usage_error(cli: Callable[..., CliResult]) -> None:
    result = generate(cli, "--key-env", "NOT_SET_ANYWHERE")
    assert result.exit_code == 2
    assert "NOT_SET_ANYWHERE" in result.stderr


def test_no_configured_client_tells_how_to_fix(cli: Callable[..., CliResult]) -> None:
    result = cli("notes", "generate")
    assert result.exit_code == 2
    assert "pdnotes config codex --preset mock" in result.stderr
