"""The engine HTTP app over a real socket, against a fixed-delay fake engine: routes, wire
formats each client needs, errors in each API's own format, auth and limits."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Callable
from typing import Any

import httpx
import pytest
from fake_engine import FakeEngine

from notes_cli.engine.http.app import Limits

CHAT = {"model": "pd-mock-1", "messages": [{"role": "user", "content": "say pong"}]}
RESPONSES = {"model": "pd-mock-1", "input": "say pong"}
MESSAGES = {
    "model": "pd-mock-1",
    "max_tokens": 64,
    "messages": [{"role": "user", "content": [{"type": "text", "text": "say pong"}]}],
}


@pytest.fixture
def fake() -> FakeEngine:
    return FakeEngine(reply="pong from the mock")


@pytest.fixture
def engine(start_engine_server: Callable[..., Any], fake: FakeEngine) -> Any:
    return start_engine_server(service=fake)


def sse_data(text: str) -> list[Any]:
    """The `data:` payloads of an SSE body, JSON-decoded where they are JSON."""
    out = []
    for line in text.splitlines():
        if line.startswith("data: "):
            payload = line[6:]
            out.append(payload if payload == "[DONE]" else json.loads(payload))
    return out


PD_TIMING_KEYS = {
    "queue_ms",
    "prefill_ms",
    "transfer_ms",
    "decode_ms",
    "ttft_ms",
    "tpot_ms",
    "prefill_node",
    "decode_node",
    "mode",
    "speed",  # the engine's --speed, beyond the documented base fields
    "overhead_ms",  # fixed per-request cost, docs/engine.md
    "transfer_overlap_ms",  # layer-wise KV transfer, docs/engine.md
    "max_itl_ms",  # the largest inter-token gap, docs/engine.md
    "admission_wall_ms",  # the engine's own handling, in wall ms, beyond the documented base fields
}


# --- OpenAI chat ----------------------------------------------------------------------------


def test_chat_completion_returns_the_answer_and_pd_timing(engine: Any, http: httpx.Client) -> None:
    body = http.post(f"{engine.base_url}/chat/completions", json=CHAT).json()

    assert body["object"] == "chat.completion"
    assert body["choices"][0]["message"] == {"role": "assistant", "content": "pong from the mock"}
    assert body["choices"][0]["finish_reason"] == "stop"
    assert body["system_fingerprint"]  # labels the answer as the mock engine's
    assert body["usage"]["completion_tokens"] == 4
    assert set(body["usage"]["pd_timing"]) == PD_TIMING_KEYS


def test_chat_stream_sends_tokens_then_usage_chunk_then_done(
    engine: Any, http: httpx.Client
) -> None:
    request = {**CHAT, "stream": True, "stream_options": {"include_usage": True}}
    response = http.post(f"{engine.base_url}/chat/completions", json=request)

    assert response.headers["content-type"].startswith("text/event-stream")
    events = sse_data(response.text)
    assert events[-1] == "[DONE]"
    usage_chunk = events[-2]
    assert usage_chunk["choices"] == []
    assert usage_chunk["usage"]["completion_tokens"] == 4
    assert set(usage_chunk["usage"]["pd_timing"]) == PD_TIMING_KEYS
    text = "".join(e["choices"][0]["delta"].get("content") or "" for e in events[:-2])
    assert text == "pong from the mock"
    assert events[-3]["choices"][0]["finish_reason"] == "stop"


def test_chat_stream_without_include_usage_has_no_usage_chunk(
    engine: Any, http: httpx.Client
) -> None:
    events = sse_data(
        http.post(f"{engine.base_url}/chat/completions", json={**CHAT, "stream": True}).text
    )

    assert all("usage" not in e for e in events[:-1])
    assert events[-1] == "[DONE]"


def test_max_tokens_caps_the_answer_with_finish_reason_length(
    engine: Any, http: httpx.Client
) -> None:
    body = http.post(f"{engine.base_url}/chat/completions", json={**CHAT, "max_tokens": 2}).json()

    assert body["choices"][0]["message"]["content"] == "pong from"
    assert body["choices"][0]["finish_reason"] == "length"


# --- OpenAI Responses -----------------------------------------------------------------------


def test_responses_stream_follows_the_sequence_codex_expects(
    engine: Any, http: httpx.Client
) -> None:
    text = http.post(f"{engine.base_url}/responses", json={**RESPONSES, "stream": True}).text
    types = [e["type"] for e in sse_data(text)]

    assert types == [
        "response.created",
        "response.in_progress",
        "response.output_item.added",
        "response.content_part.added",
        *["response.output_text.delta"] * 4,
        "response.output_text.done",
        "response.content_part.done",
        "response.output_item.done",
        "response.completed",
    ]
    events = sse_data(text)
    assert events[-2]["item"]["content"][0]["text"] == "pong from the mock"
    usage = events[-1]["response"]["usage"]
    assert usage["input_tokens"] == 2 and usage["output_tokens"] == 4
    assert usage["total_tokens"] == 6
    assert set(usage["pd_timing"]) == PD_TIMING_KEYS


def test_responses_accepts_codex_shaped_body(
    engine: Any, http: httpx.Client, fake: FakeEngine
) -> None:
    body = {
        "model": "pd-mock-1",
        "stream": True,
        "input": [
            {
                "type": "message",
                "role": "developer",
                "content": [{"type": "input_text", "text": "be brief"}],
            },
            {
                "type": "message",
                "role": "user",
                "content": [{"type": "input_text", "text": "say pong"}],
            },
            {"type": "reasoning", "summary": [], "encrypted_content": "xyz"},
            {"type": "function_call", "call_id": "c1", "name": "exec_command", "arguments": "{}"},
            {"type": "function_call_output", "call_id": "c1", "output": "hi"},
        ],
        "tools": [
            {"type": "namespace", "name": "x"},
            {"type": "web_search", "external_web_access": False},
        ],
        "tool_choice": "auto",
        "parallel_tool_calls": True,
        "reasoning": {"summary": "auto"},
        "store": False,
        "include": ["reasoning.encrypted_content"],
        "prompt_cache_key": "k",
        "client_metadata": {"a": "b"},
    }
    response = http.post(f"{engine.base_url}/responses", json=body)

    assert response.status_code == 200
    assert sse_data(response.text)[-1]["type"] == "response.completed"
    roles = [m.role for m in fake.requests[-1].messages]
    assert roles == ["developer", "user", "assistant", "tool"]


def test_responses_over_budget_ends_incomplete(engine: Any, http: httpx.Client) -> None:
    request = {**RESPONSES, "stream": True, "max_output_tokens": 1}
    last = sse_data(http.post(f"{engine.base_url}/responses", json=request).text)[-1]

    assert last["type"] == "response.incomplete"
    assert last["response"]["incomplete_details"] == {"reason": "max_output_tokens"}


def test_responses_non_streamed(engine: Any, http: httpx.Client) -> None:
    body = http.post(f"{engine.base_url}/responses", json=RESPONSES).json()

    assert body["object"] == "response" and body["status"] == "completed"
    assert body["output"][0]["content"][0]["text"] == "pong from the mock"
    assert set(body["usage"]["pd_timing"]) == PD_TIMING_KEYS


# --- Anthropic Messages ---------------------------------------------------------------------


CLAUDE_CODE_BODY = {
    "model": "pd-mock-1",
    "messages": [
        {"role": "system", "content": "mid-conversation system note"},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "say pong", "cache_control": {"type": "ephemeral"}}
            ],
        },
    ],
    "system": [
        {"type": "text", "text": "x-anthropic-billing-header: cc_version=2.1.197.495;"},
        {"type": "text", "text": "You are Claude Code."},
    ],
    "tools": [
        {"name": f"Tool{i}", "description": "d", "input_schema": {"type": "object"}}
        for i in range(24)
    ],
    "metadata": {"user_id": json.dumps({"device_id": "abc"})},
    "max_tokens": 64000,
    "thinking": {"type": "adaptive"},
    "context_management": {"edits": [{"type": "clear_thinking_20251015", "keep": "all"}]},
    "output_config": {"effort": "high"},
    "stream": True,
}


def test_messages_stream_accepts_claude_code_body(engine: Any, http: httpx.Client) -> None:
    response = http.post(
        f"{engine.anthropic_base_url}/v1/messages?beta=true", json=CLAUDE_CODE_BODY
    )

    assert response.status_code == 200
    events = sse_data(response.text)
    types = [e["type"] for e in events]
    assert types[:3] == ["message_start", "content_block_start", "ping"]
    assert types[-3:] == ["content_block_stop", "message_delta", "message_stop"]
    text = "".join(e["delta"]["text"] for e in events if e["type"] == "content_block_delta")
    assert text == "pong from the mock"
    delta = events[-2]
    assert delta["delta"]["stop_reason"] == "end_turn"
    assert delta["usage"]["output_tokens"] == 4
    assert set(delta["usage"]["pd_timing"]) == PD_TIMING_KEYS
    assert "event: message_start\n" in response.text


def test_messages_non_streamed_fallback(engine: Any, http: httpx.Client) -> None:
    body = {k: v for k, v in CLAUDE_CODE_BODY.items() if k != "stream"}
    message = http.post(f"{engine.anthropic_base_url}/v1/messages?beta=true", json=body).json()

    assert message["type"] == "message"
    assert message["content"] == [{"type": "text", "text": "pong from the mock"}]
    assert message["stop_reason"] == "end_turn"
    assert set(message["usage"]["pd_timing"]) == PD_TIMING_KEYS


def test_messages_over_budget_stops_with_max_tokens(engine: Any, http: httpx.Client) -> None:
    message = http.post(
        f"{engine.anthropic_base_url}/v1/messages", json={**MESSAGES, "max_tokens": 1}
    ).json()

    assert message["stop_reason"] == "max_tokens"


# --- models, probes, ops routes -------------------------------------------------------------


def test_model_lists_in_both_formats(engine: Any, http: httpx.Client) -> None:
    openai = http.get(f"{engine.base_url}/models").json()
    anthropic = http.get(f"{engine.anthropic_base_url}/v1/models").json()

    assert [m["id"] for m in openai["data"]] == ["pd-mock-1"]
    assert openai["object"] == "list"
    assert anthropic["data"][0]["type"] == "model" and anthropic["has_more"] is False


@pytest.mark.parametrize("path", ["/api", "/api/anthropic", "/api/hello", "/api/responses", "/"])
def test_head_probes_answer_without_a_server_error(
    engine: Any, http: httpx.Client, path: str
) -> None:
    assert http.head(engine.url(path)).status_code < 500


def test_health_state_and_metrics(engine: Any, http: httpx.Client) -> None:
    http.post(f"{engine.base_url}/chat/completions", json={**CHAT, "stream": True})

    assert http.get(engine.url("/health")).json()["status"] == "ok"
    assert http.get(engine.url("/engine/state")).json()["mode"] == "disagg"
    metrics = http.get(engine.url("/metrics"))
    assert metrics.headers["content-type"].startswith("text/plain")
    text = metrics.text
    assert 'pdnotes_engine_requests_total{route="chat",status="200"} 1.0' in text
    assert "pdnotes_engine_ttft_seconds_count 1.0" in text
    assert "pdnotes_engine_itl_seconds_count 3.0" in text  # 4 tokens, 3 gaps
    assert 'pdnotes_engine_queue_depth{node="prefill-0",role="prefill"}' in text


def test_each_app_has_its_own_metrics(
    start_engine_server: Callable[..., Any], http: httpx.Client
) -> None:
    first = start_engine_server(service=FakeEngine())
    second = start_engine_server(service=FakeEngine())
    http.post(f"{first.base_url}/chat/completions", json=CHAT)

    assert "pdnotes_engine_ttft_seconds_count 1.0" in http.get(first.url("/metrics")).text
    assert "pdnotes_engine_ttft_seconds_count 0.0" in http.get(second.url("/metrics")).text


# --- errors in each API's format ------------------------------------------------------------


def test_doubled_v1_is_a_404_openai_error(engine: Any, http: httpx.Client) -> None:
    response = http.post(f"{engine.base_url}/v1/chat/completions", json=CHAT)

    assert response.status_code == 404
    error = response.json()["error"]
    assert set(error) >= {"message", "type", "code"}
    assert "/v1" in error["message"]


def test_doubled_v1_on_anthropic_is_a_404_anthropic_error(engine: Any, http: httpx.Client) -> None:
    response = http.post(f"{engine.anthropic_base_url}/v1/v1/messages?beta=true", json=MESSAGES)

    assert response.status_code == 404
    assert response.json()["type"] == "error"
    assert response.json()["error"]["type"] == "not_found_error"


@pytest.mark.parametrize("model", ["PD-Mock-1", "pd_mock_1", "pd-mock-2"])
def test_model_ids_match_exactly(engine: Any, http: httpx.Client, model: str) -> None:
    response = http.post(f"{engine.base_url}/chat/completions", json={**CHAT, "model": model})

    assert response.status_code == 404
    assert response.json()["error"]["code"] == "model_not_found"
    assert "pd-mock-1" in response.json()["error"]["message"]


def test_unknown_model_on_anthropic_is_not_found_error(engine: Any, http: httpx.Client) -> None:
    response = http.post(
        f"{engine.anthropic_base_url}/v1/messages", json={**MESSAGES, "model": "claude-opus-4-8"}
    )

    assert response.status_code == 404
    assert response.json()["error"]["type"] == "not_found_error"


@pytest.mark.parametrize(
    ("body", "param"),
    [
        (b"{not json", None),
        (b"[1, 2]", None),
        (json.dumps({**CHAT, "model": 5}).encode(), "model"),
        (json.dumps({**CHAT, "messages": "hi"}).encode(), "messages"),
        (json.dumps({**CHAT, "messages": []}).encode(), "messages"),
        (json.dumps({**CHAT, "max_tokens": "10"}).encode(), "max_tokens"),
        (json.dumps({**CHAT, "max_tokens": True}).encode(), "max_tokens"),
        (json.dumps({**CHAT, "stream": "yes"}).encode(), "stream"),
        (
            json.dumps({**CHAT, "messages": [{"role": "user", "content": 7}]}).encode(),
            "messages[0].content",
        ),
    ],
)
def test_bad_chat_bodies_are_400_invalid_request(
    engine: Any, http: httpx.Client, body: bytes, param: str | None
) -> None:
    response = http.post(f"{engine.base_url}/chat/completions", content=body)

    assert response.status_code == 400
    error = response.json()["error"]
    assert error["type"] == "invalid_request_error"
    assert error["param"] == param
    assert http.post(f"{engine.base_url}/chat/completions", json=CHAT).status_code == 200


def test_bad_messages_body_is_an_anthropic_400(engine: Any, http: httpx.Client) -> None:
    response = http.post(
        f"{engine.anthropic_base_url}/v1/messages", json={**MESSAGES, "messages": {}}
    )

    assert response.status_code == 400
    assert response.json()["error"]["type"] == "invalid_request_error"


def test_context_length_is_a_400(engine: Any, http: httpx.Client) -> None:
    long_prompt = "word " * 1500  # the fake's context is 1000 words
    request = {**CHAT, "messages": [{"role": "user", "content": long_prompt}]}
    response = http.post(f"{engine.base_url}/chat/completions", json=request)

    assert response.status_code == 400
    assert response.json()["error"]["code"] == "context_length_exceeded"


def test_oversized_body_is_413(start_engine_server: Callable[..., Any], http: httpx.Client) -> None:
    engine = start_engine_server(service=FakeEngine(), limits=Limits(max_body_bytes=2000))
    request = {**CHAT, "messages": [{"role": "user", "content": "x" * 5000}]}

    response = http.post(f"{engine.base_url}/chat/completions", json=request)

    assert response.status_code == 413
    assert response.json()["error"]["code"] == "request_too_large"
    assert http.post(f"{engine.base_url}/chat/completions", json=CHAT).status_code == 200


def test_full_queue_is_429_with_retry_after(
    engine: Any, http: httpx.Client, fake: FakeEngine
) -> None:
    fake.queue_full = True

    chat = http.post(f"{engine.base_url}/chat/completions", json={**CHAT, "stream": True})
    claude = http.post(f"{engine.anthropic_base_url}/v1/messages", json=MESSAGES)

    assert chat.status_code == 429 and chat.headers["retry-after"] == "3"
    assert chat.json()["error"]["code"] == "rate_limit_exceeded"
    assert claude.status_code == 429 and claude.json()["error"]["type"] == "rate_limit_error"


# --- auth -----------------------------------------------------------------------------------


@pytest.fixture
def keyed_engine(start_engine_server: Callable[..., Any], monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setenv("MOCK_API_KEY", "sk-right-key-0123456789")
    return start_engine_server(service=FakeEngine(), api_key_env="MOCK_API_KEY")


def test_right_key_as_bearer_or_x_api_key_is_accepted(
    keyed_engine: Any, http: httpx.Client
) -> None:
    bearer = {"authorization": "Bearer sk-right-key-0123456789"}
    x_api_key = {"x-api-key": "sk-right-key-0123456789"}

    assert (
        http.post(
            f"{keyed_engine.base_url}/chat/completions", json=CHAT, headers=bearer
        ).status_code
        == 200
    )
    assert (
        http.post(
            f"{keyed_engine.anthropic_base_url}/v1/messages", json=MESSAGES, headers=x_api_key
        ).status_code
        == 200
    )
    assert http.get(f"{keyed_engine.base_url}/models", headers=bearer).status_code == 200


def test_wrong_key_is_401_with_a_masked_key(
    keyed_engine: Any, http: httpx.Client, sentinel_key: str
) -> None:
    response = http.post(
        f"{keyed_engine.base_url}/chat/completions",
        json=CHAT,
        headers={"authorization": f"Bearer {sentinel_key}"},
    )

    assert response.status_code == 401
    assert response.json()["error"]["code"] == "invalid_api_key"
    assert sentinel_key not in response.text
    assert "sk-…XYZW" in response.json()["error"]["message"]


def test_wrong_key_on_anthropic_says_invalid_x_api_key(
    keyed_engine: Any, http: httpx.Client
) -> None:
    response = http.post(
        f"{keyed_engine.anthropic_base_url}/v1/messages?beta=true",
        json=MESSAGES,
        headers={"x-api-key": "nope"},
    )

    assert response.status_code == 401
    assert response.json() == {
        "type": "error",
        "error": {"type": "authentication_error", "message": "invalid x-api-key"},
    }


def test_missing_key_is_401(keyed_engine: Any, http: httpx.Client) -> None:
    assert http.post(f"{keyed_engine.base_url}/responses", json=RESPONSES).status_code == 401
    assert http.get(f"{keyed_engine.base_url}/models").status_code == 401


def test_unset_api_key_env_refuses_to_start(start_engine_server: Callable[..., Any]) -> None:
    with pytest.raises(ValueError, match="NOT_SET_ANYWHERE"):
        start_engine_server(service=FakeEngine(), api_key_env="NOT_SET_ANYWHERE")


def test_custom_prefix(start_engine_server: Callable[..., Any], http: httpx.Client) -> None:
    engine = start_engine_server(service=FakeEngine(), prefix="/gw/")

    assert engine.base_url.endswith("/gw")
    assert http.post(f"{engine.base_url}/chat/completions", json=CHAT).status_code == 200
    assert http.post(engine.url("/api/chat/completions"), json=CHAT).status_code == 404


@pytest.mark.parametrize(
    ("path", "body"),
    [
        ("/chat/completions", {**CHAT, "stream": True}),
        ("/responses", {**RESPONSES, "stream": True}),
        ("/anthropic/v1/messages", {**MESSAGES, "stream": True}),
    ],
)
def test_each_token_is_sent_when_the_engine_makes_it(
    start_engine_server: Callable[..., Any], path: str, body: dict[str, Any]
) -> None:
    # The engine makes no second token until the client has seen the first: a server that held
    # tokens back until the answer was complete would keep the engine waiting (10 s) instead.
    engine = FakeEngine(reply="a b c d e", first_seen=threading.Event())
    server = start_engine_server(service=engine)
    tokens = []
    with (
        httpx.Client(timeout=30) as client,
        client.stream("POST", server.base_url + path, json=body) as response,
    ):
        for line in response.iter_lines():
            if '"a"' in line:
                engine.first_seen.set()  # type: ignore[union-attr]
            tokens += [t for t in ("a", " e") if f'"{t}"' in line]

    assert engine.first_arrived is True
    assert tokens == ["a", " e"]


def test_real_engine_queue_limit_answers_429_and_keeps_serving(
    start_engine_server: Callable[..., Any],
) -> None:
    engine = start_engine_server(max_queue=2, speed=4.0)
    long_prompt = {**CHAT, "max_tokens": 1, "messages": [{"role": "user", "content": "x " * 8000}]}

    async def flood() -> list[httpx.Response]:
        async with httpx.AsyncClient(timeout=30) as client:
            url = f"{engine.base_url}/chat/completions"
            return list(
                await asyncio.gather(*(client.post(url, json=long_prompt) for _ in range(8)))
            )

    statuses = sorted(r.status_code for r in asyncio.run(flood()))

    assert 200 in statuses and 429 in statuses
    assert set(statuses) == {200, 429}
    with httpx.Client(timeout=30) as client:
        rejected = next(r for r in asyncio.run(flood()) if r.status_code == 429)
        assert int(rejected.headers["retry-after"]) >= 1
        assert client.post(f"{engine.base_url}/chat/completions", json=CHAT).status_code == 200


@pytest.mark.parametrize(
    ("path", "body"),
    [
        ("/chat/completions", CHAT),
        ("/responses", {**RESPONSES, "stream": True}),
        ("/anthropic/v1/messages", {**MESSAGES, "stream": True}),
        ("/anthropic/v1/messages", MESSAGES),
    ],
)
def test_every_answer_is_labelled_as_the_mock_engines(
    engine: Any, http: httpx.Client, path: str, body: dict[str, Any]
) -> None:
    response = http.post(engine.base_url + path, json=body)

    assert response.headers["x-pdnotes-engine"]
    assert response.headers["x-request-id"]


def test_responses_objects_carry_the_fingerprint(engine: Any, http: httpx.Client) -> None:
    text = http.post(f"{engine.base_url}/responses", json={**RESPONSES, "stream": True}).text
    events = sse_data(text)

    fingerprints = {
        e["response"]["metadata"]["system_fingerprint"] for e in events if "response" in e
    }
    assert len(fingerprints) == 1 and fingerprints != {""}
