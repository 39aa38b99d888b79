"""When the engine's bytes go out, as a client sees them over a real socket.

- The response headers go out when the request is admitted, as vLLM, SGLang and the OpenAI API
  send them, so a client can tell the server's answer from the model's first token.
- Body bytes go out before the first token only where the real API sends them that early:
  Responses' `response.created`, Anthropic's `message_start`. A chat stream's first bytes carry
  the first token, because vLLM's benchmark times TTFT at the first chunk with a choice.
- `pd_timing` stays the simulated hardware's; the engine's own handling of a request, from its
  HTTP app receiving it to the simulated hardware having it, is the wall-clock
  `admission_wall_ms`. With it, the server's TTFT always fits inside what the client measured;
  an injected delay is the fault's, not admission.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import httpx
import pytest

LONG_PROMPT = "context " * 6000  # a prefill of a few hundred ms of wall time at --speed 1


def timeline(url: str, body: dict[str, Any]) -> tuple[float, list[tuple[float, bytes]]]:
    """(seconds to the response headers, [(seconds, raw bytes) as they arrived])."""
    with httpx.Client(timeout=30) as http:
        started = time.perf_counter()
        with http.stream("POST", url, json=body, headers={"x-api-key": "k"}) as response:
            assert response.status_code == 200
            headers_s = time.perf_counter() - started
            arrivals = [(time.perf_counter() - started, raw) for raw in response.iter_raw()]
    return headers_s, arrivals


def first_arrival(arrivals: list[tuple[float, bytes]], marker: bytes) -> float:
    return next(t for t, raw in arrivals if marker in raw)


@pytest.fixture
def slow_engine(start_engine_server: Callable[..., Any]) -> Any:
    # A fifth of real speed: the prefill holds the first token back for over a second of wall
    # time, so the 0.1 s gaps asserted below hold however loaded the machine is.
    return start_engine_server(speed=0.2)


@pytest.mark.parametrize(
    ("path", "body", "head", "token"),
    [
        (
            "/chat/completions",
            {"messages": [{"role": "user", "content": LONG_PROMPT}]},
            None,
            b'"content":"',
        ),
        (
            "/responses",
            {"input": LONG_PROMPT},
            b"response.created",
            b"response.output_text.delta",
        ),
        (
            "/anthropic/v1/messages",
            {"messages": [{"role": "user", "content": LONG_PROMPT}], "max_tokens": 8},
            b"message_start",
            b"text_delta",
        ),
    ],
    ids=["chat", "responses", "anthropic"],
)
def test_headers_go_out_on_admission_and_only_the_real_apis_early_events_with_them(
    slow_engine: Any, path: str, body: dict[str, Any], head: bytes | None, token: bytes
) -> None:
    payload = {"model": "pd-mock-1", "stream": True, "max_tokens": 8, **body}
    headers_s, arrivals = timeline(slow_engine.base_url + path, payload)
    first_token_s = first_arrival(arrivals, token)
    assert first_token_s - headers_s > 0.1  # the prefill ran between the two
    first_bytes_s, first_bytes = arrivals[0]
    if head is None:  # chat: nothing before the first token, which comes with the role chunk
        assert token in first_bytes and b'"role":"assistant"' in first_bytes
    else:
        assert head in first_bytes and token not in first_bytes
        assert first_token_s - first_bytes_s > 0.1


def test_an_idle_engine_reports_no_queueing_and_its_own_handling_as_wall_time(
    start_engine_server: Callable[..., Any],
) -> None:
    engine = start_engine_server(speed=20.0)  # 1 ms of wall time = 20 simulated ms
    body = {"model": "pd-mock-1", "messages": [{"role": "user", "content": "hi"}]}
    started = time.perf_counter()
    reply = httpx.post(engine.base_url + "/chat/completions", json=body, timeout=10)
    span_ms = (time.perf_counter() - started) * 1000
    pd = reply.json()["usage"]["pd_timing"]
    assert pd["queue_ms"] == 0.0  # the simulated hardware was idle: no wall time leaks in
    # Wall time, not simulated (x20): it fits inside the client's wait with the simulated
    # hardware's share of it, whatever the load (load stretches the client's wait as well).
    assert pd["admission_wall_ms"] > 0.0
    assert pd["admission_wall_ms"] + (pd["ttft_ms"] + pd["decode_ms"]) / 20.0 <= span_ms


def test_an_injected_slow_headers_delay_is_not_reported_as_admission(
    start_engine_server: Callable[..., Any],
) -> None:
    engine = start_engine_server(speed=1.0, faults=["slow-headers:0.4"])
    body = {"model": "pd-mock-1", "messages": [{"role": "user", "content": "hi"}]}
    started = time.perf_counter()
    answer = httpx.post(engine.base_url + "/chat/completions", json=body, timeout=10).json()
    span_ms = (time.perf_counter() - started) * 1000
    pd = answer["usage"]["pd_timing"]
    # The client's wait holds three disjoint spans: the fault's 400 ms, the engine's admission
    # and the simulated hardware's time (at speed 1). Counting the fault as admission would
    # count it twice; load can only lengthen the wait, so this cannot fail by chance.
    hardware_ms = pd["ttft_ms"] + pd["decode_ms"]
    assert 400 + pd["admission_wall_ms"] + hardware_ms <= span_ms
    assert pd["queue_ms"] == 0.0


def test_the_engines_ttft_always_fits_inside_the_clients(engine_server: Any) -> None:
    # Admission counts from when the app received the request and the first token is never
    # early, so a client that started timing before sending always measures at least as much.
    url = engine_server.base_url + "/chat/completions"
    with httpx.Client(timeout=10) as http:
        for i in range(12):
            body = {
                "model": "pd-mock-1",
                "stream": True,
                "stream_options": {"include_usage": True},
                "messages": [{"role": "user", "content": f"{i} " + "alpha " * (50 * i)}],
            }
            started = time.perf_counter()
            client_ttft_ms = None
            usage = None
            with http.stream("POST", url, json=body) as response:
                for line in response.iter_lines():
                    if client_ttft_ms is None and '"content":"' in line and '""' not in line:
                        client_ttft_ms = (time.perf_counter() - started) * 1000
                    if '"usage":{' in line:
                        usage = line
            assert client_ttft_ms is not None and usage is not None
            timing = httpx.Response(200, content=usage.removeprefix("data: ")).json()["usage"]
            pd = timing["pd_timing"]
            assert pd["ttft_ms"] / pd["speed"] + pd["admission_wall_ms"] <= client_ttft_ms
