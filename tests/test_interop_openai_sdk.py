"""The official `openai` Python SDK against the engine: streamed chat completions and Responses
with `pd_timing` visible, and the article's errors as the SDK's own exception types."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import openai
import pytest

pytestmark = pytest.mark.interop

PD_TIMING_KEYS = {
    "queue_ms", "prefill_ms", "transfer_ms", "decode_ms", "ttft_ms", "tpot_ms",
    "prefill_node", "decode_node", "mode",
    "speed",  # the engine's --speed, beyond the documented base fields
    "overhead_ms",  # fixed per-request cost, docs/engine.md
    "transfer_overlap_ms",  # layer-wise KV transfer, docs/engine.md
    "max_itl_ms",  # the largest inter-token gap, docs/engine.md
    "admission_wall_ms",  # the engine's own handling in wall ms, beyond the documented base fields
}  # fmt: skip


def sdk(base_url: str, api_key: str = "unused") -> openai.OpenAI:
    return openai.OpenAI(base_url=base_url, api_key=api_key, max_retries=0, timeout=20)


def test_chat_completions_stream_with_usage(engine_server: Any) -> None:
    with sdk(engine_server.base_url) as client:
        stream = client.chat.completions.create(
            model="pd-mock-1",
            messages=[{"role": "user", "content": "say pong"}],
            stream=True,
            stream_options={"include_usage": True},
        )
        chunks = list(stream)

    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text.strip().lower().rstrip(".!") == "pong"
    usage = chunks[-1].usage
    assert usage is not None and usage.completion_tokens >= 1
    assert set(usage.model_extra["pd_timing"]) == PD_TIMING_KEYS
    assert chunks[0].system_fingerprint


def test_responses_stream_helper_gets_the_final_response(engine_server: Any) -> None:
    with (
        sdk(engine_server.base_url) as client,
        client.responses.stream(model="pd-mock-1", input="say pong") as stream,
    ):
        deltas = [e.delta for e in stream if e.type == "response.output_text.delta"]
        final = stream.get_final_response()

    assert "".join(deltas) == final.output_text
    assert final.output_text.strip().lower().rstrip(".!") == "pong"
    assert final.usage is not None
    assert set(final.usage.model_extra["pd_timing"]) == PD_TIMING_KEYS


def test_responses_non_streamed(engine_server: Any) -> None:
    with sdk(engine_server.base_url) as client:
        response = client.responses.create(model="pd-mock-1", input="say pong")

    assert response.output_text.strip().lower().rstrip(".!") == "pong"
    assert response.usage is not None and response.usage.output_tokens >= 1


def test_models_list(engine_server: Any) -> None:
    with sdk(engine_server.base_url) as client:
        assert [m.id for m in client.models.list()] == ["pd-mock-1"]


def test_doubled_v1_is_not_found(engine_server: Any) -> None:
    with sdk(engine_server.base_url + "/v1") as client, pytest.raises(openai.NotFoundError):
        client.chat.completions.create(
            model="pd-mock-1", messages=[{"role": "user", "content": "hi"}]
        )


def test_wrong_model_id_is_model_not_found(engine_server: Any) -> None:
    with sdk(engine_server.base_url) as client, pytest.raises(openai.NotFoundError) as caught:
        client.responses.create(model="pd-mock-1 ", input="hi")

    assert caught.value.code == "model_not_found"


def test_wrong_key_is_authentication_error(
    start_engine_server: Callable[..., Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ENGINE_KEY", "sk-right-0123456789")
    engine = start_engine_server(api_key_env="ENGINE_KEY")

    with (
        sdk(engine.base_url, "sk-wrong-0123456789") as client,
        pytest.raises(openai.AuthenticationError),
    ):
        client.models.list()
    with sdk(engine.base_url, "sk-right-0123456789") as client:
        assert client.models.list().data


def test_injected_faults_surface_as_sdk_errors(start_engine_server: Callable[..., Any]) -> None:
    engine = start_engine_server(faults=["429@first:1", "503@first:2"])
    messages = [{"role": "user", "content": "hi"}]

    with sdk(engine.base_url) as client:
        with pytest.raises(openai.RateLimitError):
            client.chat.completions.create(model="pd-mock-1", messages=messages)
        with pytest.raises(openai.InternalServerError) as caught:
            client.chat.completions.create(model="pd-mock-1", messages=messages)
        assert caught.value.status_code == 503
        assert client.chat.completions.create(model="pd-mock-1", messages=messages).choices
