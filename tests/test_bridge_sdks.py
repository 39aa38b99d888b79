"""The official `openai` (Responses) and `anthropic` SDKs against a real bridge in front of the
engine in chat-only mode: streamed and not, history via previous_response_id, models."""

from __future__ import annotations

from typing import Any

import anthropic
import httpx
import openai
import pytest
from bridge_support import bridge_to


@pytest.fixture
def chat_only_engine(start_engine_server: Any) -> Any:
    return start_engine_server(**CHAT_ONLY)


CHAT_ONLY: dict[str, Any] = {"protocols": ("chat",)}


@pytest.fixture
def bridge(chat_only_engine: Any) -> Any:
    with bridge_to(chat_only_engine.base_url, key=None) as running:
        yield running


def responses_client(bridge: Any) -> openai.OpenAI:
    return openai.OpenAI(base_url=bridge.v1_base_url, api_key="x", max_retries=0, timeout=20)


def messages_client(bridge: Any) -> anthropic.Anthropic:
    return anthropic.Anthropic(
        base_url=bridge.anthropic_base_url, api_key="x", max_retries=0, timeout=20
    )


def _pong(text: str) -> bool:
    return text.strip().lower().rstrip(".!") == "pong"


def test_the_upstream_really_has_no_responses_api(chat_only_engine: Any) -> None:
    reply = httpx.post(chat_only_engine.base_url + "/responses", json={}, timeout=5)
    assert reply.status_code == 404


def test_openai_responses_streamed(bridge: Any) -> None:
    with (
        responses_client(bridge) as client,
        client.responses.stream(model="pd-mock-1", input="say pong") as stream,
    ):
        deltas = [e.delta for e in stream if e.type == "response.output_text.delta"]
        final = stream.get_final_response()
    assert len(deltas) >= 1 and "".join(deltas) == final.output_text
    assert _pong(final.output_text)
    assert final.usage is not None and final.usage.output_tokens >= 1


def test_openai_responses_not_streamed_and_continued_by_previous_response_id(bridge: Any) -> None:
    with responses_client(bridge) as client:
        first = client.responses.create(model="pd-mock-1", input="say pong")
        assert _pong(first.output_text)
        second = client.responses.create(
            model="pd-mock-1", input="say pong", previous_response_id=first.id
        )
        assert _pong(second.output_text)
        with pytest.raises(openai.BadRequestError) as caught:
            client.responses.create(
                model="pd-mock-1", input="hi", previous_response_id="resp_never_seen"
            )
    assert "previous_response_id" in str(caught.value)


def test_anthropic_messages_streamed(bridge: Any) -> None:
    with (
        messages_client(bridge) as client,
        client.messages.stream(
            model="pd-mock-1", max_tokens=64, messages=[{"role": "user", "content": "say pong"}]
        ) as stream,
    ):
        text = "".join(stream.text_stream)
        final = stream.get_final_message()
    assert _pong(text) and final.stop_reason == "end_turn"
    assert final.usage.output_tokens >= 1


def test_anthropic_messages_not_streamed(bridge: Any) -> None:
    with messages_client(bridge) as client:
        message = client.messages.create(
            model="pd-mock-1", max_tokens=64, messages=[{"role": "user", "content": "say pong"}]
        )
    assert _pong(message.content[0].text)  # type: ignore[union-attr]


def test_both_sdks_list_the_upstreams_models(bridge: Any) -> None:
    with responses_client(bridge) as client:
        assert "pd-mock-1" in [m.id for m in client.models.list()]
    with messages_client(bridge) as client:
        assert "pd-mock-1" in [m.id for m in client.models.list()]


# A Claude Code-shaped history: system prompt, a tool call and its result, a follow-up.
COUNTED_TURN: dict[str, Any] = {
    "model": "pd-mock-1",
    "system": "You are a careful assistant. Answer in one word.",
    "messages": [
        {"role": "user", "content": "list the files, then say pong"},
        {
            "role": "assistant",
            "content": [
                {"type": "tool_use", "id": "toolu_1", "name": "ls", "input": {"path": "."}}
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "toolu_1", "content": "a.py b.py"},
                {"type": "text", "text": "now say pong"},
            ],
        },
    ],
}


def test_count_tokens_through_the_bridge_is_what_the_turn_is_charged(
    bridge: Any, start_engine_server: Any
) -> None:
    """Claude Code's gateway requirement: the bridge answers the SDK's count_tokens (no
    max_tokens in the request) with the count the engine then reports as input tokens, the
    same count the engine's own Anthropic base gives."""
    engine = start_engine_server()
    direct = anthropic.Anthropic(
        base_url=engine.anthropic_base_url, api_key="x", max_retries=0, timeout=20
    )
    with messages_client(bridge) as client, direct:
        counted = client.messages.count_tokens(**COUNTED_TURN).input_tokens
        charged = client.messages.create(max_tokens=64, **COUNTED_TURN).usage.input_tokens
        assert direct.messages.count_tokens(**COUNTED_TURN).input_tokens == counted
        short = client.messages.count_tokens(
            model="pd-mock-1", messages=[{"role": "user", "content": "hi"}]
        ).input_tokens
    assert counted == charged and counted > short >= 1


def test_count_tokens_refuses_a_body_without_messages(
    bridge: Any, start_engine_server: Any
) -> None:
    engine = start_engine_server()
    for url in (bridge.anthropic_base_url, engine.anthropic_base_url):
        reply = httpx.post(
            url + "/v1/messages/count_tokens", json={"model": "pd-mock-1"}, timeout=5
        )
        assert reply.status_code == 400, url
        assert reply.json()["type"] == "error" and "messages" in reply.json()["error"]["message"]
