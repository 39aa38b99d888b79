"""`usage.pd_timing.speed` lets a client turn simulated milliseconds into wall time, and bench
does so by itself."""

from __future__ import annotations

from typing import Any

import httpx


def test_pd_timing_reports_the_engine_speed(start_engine_server: Any) -> None:
    engine = start_engine_server(speed=25.0)
    body = httpx.post(
        f"{engine.base_url}/chat/completions",
        json={"model": "pd-mock-1", "messages": [{"role": "user", "content": "say pong"}]},
        timeout=10,
    ).json()
    assert body["usage"]["pd_timing"]["speed"] == 25.0


def test_bench_converts_server_times_with_the_reported_speed(cli, start_engine_server) -> None:
    engine = start_engine_server(speed=25.0)
    args = ["bench", "--base-url", engine.base_url, "--model", "pd-mock-1", "-n", "6",
            "--concurrency", "1", "--output-len", "16", "--json"]  # fmt: skip
    report = cli(*args).json()
    server = report["server"]["ttft_ms"]["median"]
    client = report["metrics"]["ttft_ms"]["median"]
    # In wall ms the server's TTFT is part of what the client measured, not 25x more.
    assert 0 < server <= client
