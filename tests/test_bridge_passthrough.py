"""`POST /v1/chat/completions` passed through the bridge (`bridge.passthrough`): the official
`openai` SDK's chat client against the real engine in chat-only mode behind the bridge, streamed
and not, and scripted upstreams for the model map, the bridge's key, fallbacks, and a stream
that breaks."""

from __future__ import annotations

import socket
from typing import Any

import httpx
import openai
import pytest
from bridge_support import bridge_over, bridge_to, chunk
from loopback import LoopbackServer, Reply, chat_stream


def _refused_url() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{sock.getsockname()[1]}/v1"


def _client(base_url: str, key: str = "x") -> openai.OpenAI:
    return openai.OpenAI(base_url=base_url, api_key=key, max_retries=0, timeout=20)


@pytest.fixture
def chat_engine(start_engine_server: Any) -> Any:
    return start_engine_server(protocols=("chat",))


def test_the_openai_chat_client_streams_through_a_fallback(chat_engine: Any) -> None:
    # the first upstream is down: the engine, the fallback, answers; the SDK sees plain chat
    with (
        bridge_over([(_refused_url(), None), (chat_engine.base_url, None)]) as bridge,
        _client(bridge.v1_base_url) as client,
    ):
        stream = client.chat.completions.create(
            model="pd-mock-1",
            messages=[{"role": "user", "content": "say pong"}],
            stream=True,
            stream_options={"include_usage": True},
        )
        chunks = list(stream)
        whole = client.chat.completions.create(
            model="pd-mock-1", messages=[{"role": "user", "content": "say pong"}]
        )
        models = client.models.list()
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text.strip()
    assert chunks[-1].usage is not None and chunks[-1].usage.completion_tokens > 0
    assert whole.choices[0].message.content and whole.choices[0].finish_reason
    assert [m.id for m in models.data]


def test_the_body_goes_as_it_came_but_for_the_mapped_model() -> None:
    with (
        LoopbackServer(Reply.sse(chat_stream(["a"]))) as upstream,
        bridge_to(upstream.url + "/v1", model_map={"gpt-x": "up-model"}) as bridge,
    ):
        body = b'{"model": "gpt-x", "stream": true, "messages": [], "extra_field": 1}'
        mapped = httpx.post(bridge.v1_base_url + "/chat/completions", content=body)
        plain = b'{"model": "other", "stream": true, "messages": [], "top_k": 3}'
        unmapped = httpx.post(bridge.v1_base_url + "/chat/completions", content=plain)
    assert mapped.status_code == 200 and unmapped.status_code == 200
    assert mapped.content == b"".join(chat_stream(["a"]))  # the upstream's bytes, as sent
    assert upstream.requests[0].json() == {
        "model": "up-model",
        "stream": True,
        "messages": [],
        "extra_field": 1,
    }
    assert upstream.requests[1].body == plain  # nothing to rename: not even re-encoded
    assert upstream.requests[0].path == "/v1/chat/completions"


def test_the_bridges_key_guards_the_route() -> None:
    with (
        LoopbackServer(Reply.sse(chat_stream(["a"]))) as upstream,
        bridge_to(upstream.url + "/v1", local_key="local-secret") as bridge,
    ):
        with (
            _client(bridge.v1_base_url, key="wrong") as denied,
            pytest.raises(openai.AuthenticationError),
        ):
            denied.chat.completions.create(model="m", messages=[])
        with _client(bridge.v1_base_url, key="local-secret") as allowed:
            answer = allowed.chat.completions.create(model="m", messages=[], stream=True)
            said = "".join(c.choices[0].delta.content or "" for c in answer if c.choices)
        assert said == "a"
    assert len(upstream.requests) == 1  # the refused one never went upstream


@pytest.mark.parametrize(
    "body", [b"not json", b"[1, 2]", b'{"messages": []}', b'{"model": 5, "messages": []}']
)
def test_a_body_that_is_no_chat_request_is_a_400(body: bytes) -> None:
    with (
        LoopbackServer(Reply.sse(chat_stream(["a"]))) as upstream,
        bridge_to(upstream.url + "/v1") as bridge,
    ):
        answer = httpx.post(bridge.v1_base_url + "/chat/completions", content=body)
    assert answer.status_code == 400
    assert answer.json()["error"]["type"] == "invalid_request_error"
    assert upstream.requests == []


def test_an_upstream_error_keeps_its_status_and_message() -> None:
    refusal = Reply.json({"error": {"message": "context too long"}}, status=400)
    with (
        LoopbackServer(refusal) as upstream,
        bridge_to(upstream.url + "/v1") as bridge,
        _client(bridge.v1_base_url) as client,
        pytest.raises(openai.BadRequestError) as caught,
    ):
        client.chat.completions.create(model="m", messages=[])
    assert "context too long" in str(caught.value)


def test_a_stream_that_breaks_ends_with_an_error_event_and_no_done() -> None:
    events = [chunk({"content": "half"}), 0.05]
    with (
        LoopbackServer(Reply.sse(events, abort=True)) as upstream,
        bridge_to(upstream.url + "/v1") as bridge,
    ):
        raw = httpx.post(
            bridge.v1_base_url + "/chat/completions",
            json={"model": "m", "stream": True, "messages": []},
            timeout=20,
        )
        with _client(bridge.v1_base_url) as client, pytest.raises(openai.APIError) as caught:
            list(client.chat.completions.create(model="m", messages=[], stream=True))
    assert raw.status_code == 200
    assert raw.content.startswith(chunk({"content": "half"}))
    assert b'data: {"error":' in raw.content and upstream.url in raw.text
    assert b"[DONE]" not in raw.content
    assert "broke off" in str(caught.value)
