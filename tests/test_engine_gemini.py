"""The engine's Gemini routes over real sockets, driven by Google's own Python SDK
(`google-genai`): generateContent, streamGenerateContent (SSE, and the JSON array without
`?alt=sse`), countTokens, the model list, a tool turn both ways, keys by `x-goog-api-key` and
`?key=`, and Google's error objects."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import httpx
import pytest
from google import genai
from google.genai import errors as genai_errors
from google.genai import types

from notes_cli.engine.http.server import RunningEngine

MODEL = "pd-mock-1"
SHELL = types.Tool(
    function_declarations=[
        types.FunctionDeclaration(
            name="run_shell_command",
            description="Runs a shell command.",
            parameters_json_schema={
                "type": "object",
                "properties": {"command": {"type": "string"}},
                "required": ["command"],
            },
        )
    ]
)
NO_AUTO_CALLS = types.AutomaticFunctionCallingConfig(disable=True)


def client(engine: RunningEngine, key: str = "any-key") -> genai.Client:
    options = types.HttpOptions(
        base_url=engine.gemini_base_url,
        timeout=20_000,
        retry_options=types.HttpRetryOptions(attempts=1),
    )
    return genai.Client(api_key=key, http_options=options)


def url(engine: RunningEngine, method: str, model: str = MODEL) -> str:
    return f"{engine.gemini_base_url}/v1beta/models/{model}:{method}"


BODY = {"contents": [{"role": "user", "parts": [{"text": "say pong"}]}]}


def test_generate_content_answers_with_text_finish_and_usage(engine_server: RunningEngine) -> None:
    sdk = client(engine_server)
    reply = sdk.models.generate_content(model=MODEL, contents="What is disaggregation?")
    counted = sdk.models.count_tokens(model=MODEL, contents="What is disaggregation?")

    assert (reply.text or "").startswith("This answer comes from the pdnotes mock PD engine.")
    assert reply.candidates and reply.candidates[0].finish_reason == types.FinishReason.STOP
    usage = reply.usage_metadata
    assert usage is not None and usage.candidates_token_count and usage.prompt_token_count
    assert usage.prompt_token_count == counted.total_tokens
    assert usage.total_token_count == usage.prompt_token_count + usage.candidates_token_count
    assert reply.response_id and reply.model_version == MODEL
    metrics = httpx.get(engine_server.url("/metrics"), timeout=10).text
    assert 'pdnotes_engine_requests_total{route="gemini",status="200"} 1.0' in metrics


def test_the_stream_says_what_the_whole_answer_says(engine_server: RunningEngine) -> None:
    sdk = client(engine_server)
    config = types.GenerateContentConfig(max_output_tokens=40)
    ask = "What is disaggregation?"
    whole = sdk.models.generate_content(model=MODEL, contents=ask, config=config)
    chunks = list(sdk.models.generate_content_stream(model=MODEL, contents=ask, config=config))

    assert len(chunks) > 2  # token by token, then the closing chunk
    assert "".join(c.text or "" for c in chunks) == whole.text
    assert [c.candidates[0].finish_reason for c in chunks if c.candidates][-1] == (
        whole.candidates[0].finish_reason if whole.candidates else None
    )
    last = chunks[-1].usage_metadata
    assert last is not None and whole.usage_metadata is not None
    assert last.candidates_token_count == whole.usage_metadata.candidates_token_count
    assert len({c.response_id for c in chunks}) == 1


def test_max_output_tokens_ends_with_max_tokens(engine_server: RunningEngine) -> None:
    config = types.GenerateContentConfig(max_output_tokens=3)
    sdk = client(engine_server)  # (held: a client that is let go closes its connections)
    reply = sdk.models.generate_content(model=MODEL, contents="Explain everything.", config=config)

    assert reply.candidates and reply.candidates[0].finish_reason == types.FinishReason.MAX_TOKENS
    assert reply.usage_metadata and reply.usage_metadata.candidates_token_count == 3


def test_a_tool_turn_both_ways(engine_server: RunningEngine) -> None:
    """The engine's tool rule on Gemini's shapes: `run:` → one functionCall with an id; the
    functionResponse `{"output"}` → text quoting the command's output."""
    sdk = client(engine_server)
    config = types.GenerateContentConfig(tools=[SHELL], automatic_function_calling=NO_AUTO_CALLS)
    asked = types.Content(role="user", parts=[types.Part(text="run: echo hi")])
    streamed = list(
        sdk.models.generate_content_stream(model=MODEL, contents=[asked], config=config)
    )
    calls = [call for chunk in streamed for call in chunk.function_calls or []]

    assert [(c.name, c.args) for c in calls] == [("run_shell_command", {"command": "echo hi"})]
    assert calls[0].id
    call = calls[0]
    answered = [
        asked,
        types.Content(role="model", parts=[types.Part(function_call=call)]),
        types.Content(
            role="user",
            parts=[
                types.Part(
                    function_response=types.FunctionResponse(
                        id=call.id, name=call.name, response={"output": "hi\n"}
                    )
                )
            ],
        ),
    ]
    reply = sdk.models.generate_content(model=MODEL, contents=answered, config=config)

    assert reply.text == "The command printed: hi"
    assert not reply.function_calls


def test_without_alt_sse_the_stream_is_a_json_array(
    engine_server: RunningEngine, http: httpx.Client
) -> None:
    response = http.post(url(engine_server, "streamGenerateContent"), json=BODY)

    assert response.status_code == 200
    assert response.headers["content-type"].startswith("application/json")
    chunks = json.loads(response.text)
    assert chunks[-1]["candidates"][0]["finishReason"] == "STOP"
    assert "".join(c["candidates"][0]["content"]["parts"][0].get("text", "") for c in chunks)


def test_the_model_list(engine_server: RunningEngine) -> None:
    sdk = client(engine_server)
    listed = list(sdk.models.list())

    assert [m.name for m in listed] == [f"models/{MODEL}"]
    assert listed[0].input_token_limit and listed[0].supported_actions == [
        "generateContent",
        "streamGenerateContent",
        "countTokens",
    ]


@pytest.fixture
def keyed(start_engine_server: Callable[..., Any], monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setenv("MOCK_API_KEY", "gk-right-key-0123456789")
    return start_engine_server(api_key_env="MOCK_API_KEY")


def test_keys_by_header_or_query(keyed: RunningEngine, http: httpx.Client) -> None:
    sdk = client(keyed, "gk-right-key-0123456789")
    reply = sdk.models.generate_content(model=MODEL, contents="hi")
    assert reply.text

    by_query = http.post(url(keyed, "generateContent") + "?key=gk-right-key-0123456789", json=BODY)
    assert by_query.status_code == 200


def test_a_wrong_key_is_googles_api_key_invalid(keyed: RunningEngine, http: httpx.Client) -> None:
    sdk = client(keyed, "gk-wrong-key-0123456789")
    with pytest.raises(genai_errors.ClientError) as caught:
        sdk.models.generate_content(model=MODEL, contents="x")

    assert caught.value.code == 400
    assert caught.value.status == "INVALID_ARGUMENT"
    assert caught.value.message == "API key not valid. Please pass a valid API key."
    assert "gk-wrong-key" not in json.dumps(caught.value.details)
    missing = http.post(url(keyed, "generateContent"), json=BODY)
    assert missing.status_code == 403
    assert missing.json()["error"]["status"] == "PERMISSION_DENIED"


def test_errors_are_googles_error_objects(engine_server: RunningEngine, http: httpx.Client) -> None:
    sdk = client(engine_server)
    with pytest.raises(genai_errors.ClientError) as caught:
        sdk.models.generate_content(model="no-such-model", contents="x")
    assert (caught.value.code, caught.value.status) == (404, "NOT_FOUND")
    assert "no-such-model" in (caught.value.message or "")

    bad = http.post(
        url(engine_server, "generateContent"),
        json={**BODY, "generationConfig": {"temperature": "hot"}},
    )
    assert bad.status_code == 400
    assert bad.json()["error"]["status"] == "INVALID_ARGUMENT"
    assert "generationConfig.temperature" in bad.json()["error"]["message"]

    two = http.post(
        url(engine_server, "generateContent"),
        json={**BODY, "generationConfig": {"candidateCount": 2}},
    )
    assert two.status_code == 400 and "candidateCount" in two.json()["error"]["message"]

    for path in (
        url(engine_server, "embedContent"),
        f"{engine_server.gemini_base_url}/v9/models/{MODEL}:generateContent",
    ):
        missing = http.post(path, json=BODY)
        assert missing.status_code == 404
        assert missing.json()["error"]["status"] == "NOT_FOUND"


def test_a_chat_only_engine_has_no_gemini_routes(
    start_engine_server: Callable[..., Any], http: httpx.Client
) -> None:
    engine = start_engine_server(protocols=("chat",))

    assert http.post(url(engine, "generateContent"), json=BODY).status_code == 404


@pytest.mark.parametrize("base", ["/api/gemini/v1beta", "/api", ""])
def test_a_wrong_base_url_is_a_google_404_naming_the_right_one(
    engine_server: RunningEngine, base: str
) -> None:
    options = types.HttpOptions(
        base_url=engine_server.url(base),
        api_version="v1beta",
        retry_options=types.HttpRetryOptions(attempts=1),
    )
    sdk = genai.Client(api_key="k", http_options=options)
    with pytest.raises(genai_errors.ClientError) as caught:
        sdk.models.generate_content(model=MODEL, contents="x")

    assert (caught.value.code, caught.value.status) == (404, "NOT_FOUND")
    assert "GOOGLE_GEMINI_BASE_URL) is /api/gemini" in (caught.value.message or "")


def test_injected_faults_reach_gemini_clients_in_googles_words(
    start_engine_server: Callable[..., Any],
) -> None:
    engine = start_engine_server(faults=["429@first:1", "cut-before-completion@always"])
    sdk = client(engine)
    with pytest.raises(genai_errors.ClientError) as caught:
        sdk.models.generate_content(model=MODEL, contents="x")
    assert (caught.value.code, caught.value.status) == (429, "RESOURCE_EXHAUSTED")
    assert {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "1s"} in (
        caught.value.details["error"]["details"]
    )

    chunks = list(sdk.models.generate_content_stream(model=MODEL, contents="What is PD?"))
    assert chunks and all(c.text for c in chunks)  # every token, then the cut:
    assert not any(c.candidates and c.candidates[0].finish_reason for c in chunks)  # no finish
