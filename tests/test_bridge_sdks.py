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
    return openai.OpenAI(base_url=bridge.codex_base_url, api_key="x", max_retries=0, timeout=20)


def messages_client(bridge: Any) -> anthropic.Anthropic:
    return anthropic.Anthropic(
        base_url=bridge.claude_base_url, api_key="x", max_retries=0, timeout=20
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
