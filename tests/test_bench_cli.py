"""`pdnotes bench` end to end: a real HTTP server (the engine app over a scripted fake core) on
port 0, the real gateway client, the real CLI entry point."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest

from notes_cli.engine.core.api import (
    ADMITTED,
    Admitted,
    Completion,
    GenerationRequest,
    PdTiming,
    TokenChunk,
)

TTFT_MS, ITL_MS = 20.0, 2.0


class ScriptedEngine:
    """An EngineService answering every request with a fixed timeline and a pd_timing."""

    served_models = ("pd-mock-1",)
    max_context_tokens = 32768

    def __init__(self) -> None:
        self.requests: list[GenerationRequest] = []

    def count_tokens(self, text: str) -> int:
        return len(text.split())

    async def generate(
        self, request: GenerationRequest
    ) -> AsyncIterator[Admitted | TokenChunk | Completion]:
        self.requests.append(request)
        yield ADMITTED
        n = request.max_tokens or 16
        await asyncio.sleep(TTFT_MS / 1000)
        for i in range(n):
            if i:
                await asyncio.sleep(ITL_MS / 1000)
            yield TokenChunk(text=f" t{i}", index=i)
        prompt = sum(self.count_tokens(m.text) for m in request.messages)
        timing = PdTiming(1.0, 15.0, 2.0, ITL_MS * (n - 1), 18.0, ITL_MS, "p0", "d0", "disagg")
        yield Completion("length", prompt, n, timing)

    def state(self) -> dict[str, Any]:
        return {"mode": "disagg"}


@pytest.fixture
def scripted() -> Iterator[tuple[str, ScriptedEngine]]:
    from notes_cli.engine.core.config import EngineConfig
    from notes_cli.engine.http.server import start_engine

    engine = ScriptedEngine()
    with start_engine(EngineConfig(), port=0, service=engine) as running:
        yield running.base_url, engine


def test_bench_json_reports_vllm_metrics_and_the_server_view(cli, scripted) -> None:
    base_url, engine = scripted
    result = cli(
        "bench",
        "--base-url",
        base_url,
        "-n",
        "6",
        "-c",
        "3",
        "--input-len",
        "40",
        "--output-len",
        "8",
        "--slo-ttft-ms",
        "5000",
        "--json",
    )
    assert result.exit_code == 0, result.stderr
    doc = result.json()
    assert doc["schema"] == "pdnotes.bench/1"
    assert doc["completed"] == 6 and doc["failed"] == 0
    assert doc["target"]["model"] == "pd-mock-1"  # first served model, asked from /models
    assert doc["tokens_source"] == {"usage": 6, "counted": 0}
    assert doc["output_tokens"] == 48
    metrics = doc["metrics"]
    assert metrics["ttft_ms"]["median"] >= TTFT_MS
    assert metrics["itl_ms"]["count"] == 6 * 7
    assert metrics["tpot_ms"]["median"] >= ITL_MS
    assert doc["server"]["ttft_ms"]["median"] == pytest.approx(18.0, rel=0.02)
    assert doc["server"]["modes"] == {"disagg": 6}
    assert doc["attainment"]["all"] == 1.0 and doc["goodput"] > 0
    assert all(r.max_tokens == 8 for r in engine.requests)
    assert 30 <= engine.count_tokens(engine.requests[0].messages[-1].text) <= 50


def test_bench_human_output_shows_tables(cli, scripted) -> None:
    base_url, _ = scripted
    result = cli(
        "bench", "--base-url", base_url, "--model", "pd-mock-1", "-n", "3", "--output-len", "4"
    )
    assert result.exit_code == 0, result.stderr
    for text in (
        "TTFT",
        "TPOT",
        "ITL",
        "E2E",
        "median",
        "p99",
        "server view",
        "client + network overhead",
        "waited in the server's queue",
        "output tok/s",
    ):
        assert text in result.stdout


def test_unset_key_env_is_a_usage_error(cli) -> None:
    result = cli("bench", "--base-url", "http://127.0.0.1:9/api", "--key-env", "NOPE_KEY")
    assert result.exit_code == 2
    assert "NOPE_KEY" in result.stderr


def test_key_is_never_printed(cli, scripted, sentinel_key, monkeypatch) -> None:
    base_url, _ = scripted
    monkeypatch.setenv("BENCH_KEY", sentinel_key)
    result = cli(
        "bench",
        "--base-url",
        base_url,
        "--key-env",
        "BENCH_KEY",
        "-n",
        "2",
        "--output-len",
        "2",
        "--json",
    )
    assert result.exit_code == 0, result.stderr
    assert sentinel_key not in result.stdout + result.stderr
    assert result.json()["target"]["key"] == "sk-…XYZW"


def test_unreachable_endpoint_fails_every_request_with_exit_1(cli) -> None:
    import socket

    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    result = cli(
        "bench",
        "--base-url",
        f"http://127.0.0.1:{port}/api",
        "--model",
        "m",
        "-n",
        "2",
        "--timeout",
        "5",
        "--json",
    )
    assert result.exit_code == 1
    doc = result.json()
    assert doc["failed"] == 2 and doc["completed"] == 0
    assert doc["errors"]


def test_ctrl_c_stops_cleanly_with_the_results_so_far(scripted) -> None:
    import json
    import os
    import signal
    import subprocess
    import sys
    import time

    base_url, engine = scripted
    # Each request streams 300 tokens 2 ms apart: about 0.6 s, so 20 requests two at a time
    # take ~6 s unless stopped.
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "notes_cli",
            "bench",
            "--base-url",
            base_url,
            "--model",
            "pd-mock-1",
            "-n",
            "20",
            "-c",
            "2",
            "--output-len",
            "300",
            "--json",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 30
        while len(engine.requests) < 3 and time.monotonic() < deadline:  # one has finished
            time.sleep(0.02)
        proc.send_signal(signal.SIGINT)
        stdout, stderr = proc.communicate(timeout=20)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(5)
    assert proc.returncode == 130, stderr
    assert "Traceback" not in stderr
    doc = json.loads(stdout)
    assert doc["interrupted"] is True
    assert 1 <= doc["completed"] < 20
    assert doc["cancelled"] >= 1
    assert doc["metrics"]["ttft_ms"]["count"] == doc["completed"]


def test_responses_api_stopped_at_the_token_limit_counts_as_complete(cli, scripted) -> None:
    base_url, engine = scripted
    result = cli(
        "bench",
        "--base-url",
        base_url,
        "--api",
        "responses",
        "-n",
        "3",
        "--output-len",
        "5",
        "--json",
    )
    assert result.exit_code == 0, result.stdout
    doc = result.json()
    assert doc["completed"] == 3 and doc["target"]["api"] == "responses"
    assert doc["output_tokens"] == 15


def test_dataset_lengths_are_sent(cli, scripted, tmp_path) -> None:
    base_url, engine = scripted
    dataset = tmp_path / "lengths.jsonl"
    dataset.write_text(
        '{"input_tokens": 30, "output_tokens": 3}\n{"prompt_tokens": 60, "completion_tokens": 6}\n'
    )
    result = cli("bench", "--base-url", base_url, "--dataset", str(dataset), "--json")
    assert result.exit_code == 0, result.stdout
    assert result.json()["completed"] == 2
    assert sorted(r.max_tokens for r in engine.requests) == [3, 6]


def test_malformed_dataset_is_exit_2_naming_the_line(cli, tmp_path) -> None:
    dataset = tmp_path / "bad.jsonl"
    dataset.write_text('{"input_tokens": 30, "output_tokens": 3}\n{"input_tokens": 30}\n')
    result = cli("bench", "--base-url", "http://127.0.0.1:9/api", "--dataset", str(dataset))
    assert result.exit_code == 2
    assert "bad.jsonl:2: missing output_tokens" in result.stderr


def test_output_tokens_come_from_usage_when_a_chunk_carries_several(cli) -> None:
    """A server may pack several tokens into one chunk: TPOT divides by usage's token count."""
    from tests.loopback import LoopbackServer, Reply, sse_event

    base = {"id": "c1", "object": "chat.completion.chunk", "model": "m"}
    chunks: list[bytes | float] = []
    for i in range(4):  # 4 chunks x 4 tokens each, 20 ms apart
        delta = {"content": f" a{i} b{i} c{i} d{i}"}
        chunks += [0.02] if i else []
        chunks.append(sse_event({**base, "choices": [{"index": 0, "delta": delta}]}))
    usage = {"prompt_tokens": 5, "completion_tokens": 16, "total_tokens": 21}
    done = {"index": 0, "delta": {}, "finish_reason": "length"}
    chunks += [
        sse_event({**base, "choices": [done]}),
        sse_event({**base, "choices": [], "usage": usage}),
    ]
    chunks.append(b"data: [DONE]\n\n")

    with LoopbackServer(Reply.sse(chunks)) as server:
        result = cli(
            "bench", "--base-url", server.url, "--model", "m", "-n", "2", "-c", "1",
            "--output-len", "16", "--json",
        )  # fmt: skip

    assert result.exit_code == 0, result.stderr
    doc = result.json()
    assert doc["tokens_source"] == {"usage": 2, "counted": 0}
    assert doc["output_tokens"] == 32
    metrics = doc["metrics"]
    assert metrics["itl_ms"]["count"] == 2 * 3  # gaps between chunks, not tokens
    # TPOT = (E2E - TTFT) / (16 - 1): three 20 ms gaps over 15 tokens, about 4 ms, where
    # counting chunks would give (E2E - TTFT) / 3, the whole 20 ms gap.
    assert metrics["tpot_ms"]["median"] < metrics["itl_ms"]["median"] / 3


def test_bench_tbt_slo_judges_each_requests_largest_gap(cli, scripted) -> None:
    base_url, _ = scripted
    args = ("bench", "--base-url", base_url, "-n", "3", "--output-len", "6", "--json")
    strict = cli(*args, "--slo-tbt-ms", "0.5").json()  # every gap is about ITL_MS = 2 ms
    assert strict["slo"]["tbt_ms"] == 0.5
    assert strict["attainment"]["tbt"] == 0.0 and strict["goodput"] == 0
    loose = cli(*args, "--slo-tbt-ms", "1000").json()
    assert loose["attainment"]["tbt"] == 1.0 and loose["goodput"] > 0
