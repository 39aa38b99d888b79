"""The bridge's Gemini routes: Google's `google-genai` SDK against a real bridge in front of the
engine in chat-only mode (answers streamed and not, a tool turn both ways, counts, models,
keys), and against scripted chat upstreams (parallel tool calls, calls without ids, upstream
errors and a stream cut mid-way, each as Google's error object)."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from bridge_support import UPSTREAM_KEY, bridge_to, chunk, tool_call_stream
from google import genai
from google.genai import errors as genai_errors
from google.genai import types
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from loopback import LoopbackServer, Reply

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
BODY = {"contents": [{"role": "user", "parts": [{"text": "say pong"}]}]}


def client(bridge: Any, key: str = "any-key") -> genai.Client:
    options = types.HttpOptions(
        base_url=bridge.config.root_url,  # Gemini CLI's GOOGLE_GEMINI_BASE_URL
        timeout=20_000,
        retry_options=types.HttpRetryOptions(attempts=1),
    )
    return genai.Client(api_key=key, http_options=options)


def url(bridge: Any, method: str, model: str = MODEL) -> str:
    return f"{bridge.config.root_url}/v1beta/models/{model}:{method}"


@pytest.fixture
def bridge(start_engine_server: Any) -> Any:
    engine = start_engine_server(protocols=("chat",))
    with bridge_to(engine.base_url, key=None) as running:
        yield running


def test_answers_streamed_and_not_through_a_chat_only_engine(bridge: Any) -> None:
    sdk = client(bridge)
    ask = "What is disaggregation?"
    whole = sdk.models.generate_content(model=MODEL, contents=ask)
    chunks = list(sdk.models.generate_content_stream(model=MODEL, contents=ask))

    assert (whole.text or "").startswith("This answer comes from the pdnotes mock PD engine.")
    assert "".join(c.text or "" for c in chunks) == whole.text
    assert len(chunks) > 2
    assert chunks[-1].candidates and chunks[-1].candidates[0].finish_reason == "STOP"
    assert whole.candidates and whole.candidates[0].finish_reason == "STOP"
    usage, last = whole.usage_metadata, chunks[-1].usage_metadata
    assert usage and last and usage.candidates_token_count == last.candidates_token_count
    assert (
        usage.prompt_token_count == sdk.models.count_tokens(model=MODEL, contents=ask).total_tokens
    )
    assert [m.name for m in sdk.models.list()] == [f"models/{MODEL}"]


def test_a_tool_turn_both_ways(bridge: Any) -> None:
    """The chat upstream's tool call reaches the SDK as one functionCall; the function's
    response goes back as a chat tool message whose id matches the call's."""
    sdk = client(bridge)
    config = types.GenerateContentConfig(tools=[SHELL], automatic_function_calling=NO_AUTO_CALLS)
    asked = types.Content(role="user", parts=[types.Part(text="run: echo hi")])
    streamed = list(
        sdk.models.generate_content_stream(model=MODEL, contents=[asked], config=config)
    )
    [call] = [c for chunk in streamed for c in chunk.function_calls or []]
    assert (call.name, call.args) == ("run_shell_command", {"command": "echo hi"})

    answered = [
        asked,
        types.Content(role="model", parts=[types.Part(function_call=call)]),
        types.Content(
            role="user",
            parts=[
                types.Part(
                    function_response=types.FunctionResponse(
                        id=call.id, name=call.name, response={"output": "hi"}
                    )
                )
            ],
        ),
    ]
    reply = sdk.models.generate_content(model=MODEL, contents=answered, config=config)
    assert reply.text == "The command printed: hi"


def test_parallel_calls_arrive_whole_and_in_order() -> None:
    calls = [("call_a", "read_file", '{"path":"a.py"}'), ("call_b", "ls", '{"dir":"."}')]
    with (
        LoopbackServer(Reply.sse(tool_call_stream(calls))) as upstream,
        bridge_to(upstream.url) as bridge,
    ):
        reply = httpx.post(url(bridge, "streamGenerateContent") + "?alt=sse", json=BODY)
    chunks = [json.loads(line[6:]) for line in reply.text.splitlines() if line.startswith("data:")]
    parts = [p for c in chunks for p in c["candidates"][0]["content"]["parts"]]

    assert [p["functionCall"] for p in parts if "functionCall" in p] == [
        {"id": "call_a", "name": "read_file", "args": {"path": "a.py"}},
        {"id": "call_b", "name": "ls", "args": {"dir": "."}},
    ]
    assert chunks[-1]["candidates"][0]["finishReason"] == "STOP"
    assert chunks[-1]["usageMetadata"]["promptTokenCount"] == 7


ANSWER = {
    "id": "c1",
    "object": "chat.completion",
    "model": "up-model",
    "choices": [
        {"index": 0, "message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}
    ],
}


@pytest.mark.parametrize(
    ("in_url", "model"),
    [
        ("qwen/qwen3-32b", "qwen/qwen3-32b"),  # what the SDK sends for an OpenRouter-style id
        ("qwen%2Fqwen3-32b", "qwen/qwen3-32b"),
        ("my%20model", "my model"),  # a URL library escapes the space
        ("caf%C3%A9", "café"),
    ],
)
def test_the_model_in_the_url_reaches_the_upstream_as_named(in_url: str, model: str) -> None:
    with (
        LoopbackServer(Reply.json(ANSWER)) as upstream,
        bridge_to(upstream.url) as bridge,
    ):
        reply = httpx.post(
            f"{bridge.config.root_url}/v1beta/models/{in_url}:generateContent", json=BODY
        )
    assert reply.status_code == 200, reply.text
    [asked] = upstream.requests
    assert asked.json()["model"] == model


def test_calls_without_ids_reach_the_upstream_paired() -> None:
    """The Gemini API's calls carry no id and Gemini CLI answers them with one it made up:
    the chat upstream still sees a tool message answering the call it follows."""
    body = {
        "contents": [
            {"role": "user", "parts": [{"text": "list"}]},
            {"role": "model", "parts": [{"functionCall": {"name": "ls", "args": {}}}]},
            {
                "role": "user",
                "parts": [
                    {
                        "functionResponse": {
                            "id": "ls__synth_1",
                            "name": "ls",
                            "response": {"output": "a.py"},
                        }
                    }
                ],
            },
        ],
        "tools": [{"functionDeclarations": [{"name": "ls"}]}],
    }
    answer = {
        "id": "c1",
        "model": "m",
        "choices": [{"message": {"content": "done"}, "finish_reason": "stop"}],
    }
    aliases = {"gemini-2.5-pro": "qwen3-32b"}  # Gemini CLI's model name, mapped
    with (
        LoopbackServer(Reply.json(answer)) as upstream,
        bridge_to(upstream.url, model_map=aliases) as bridge,
    ):
        reply = httpx.post(url(bridge, "generateContent", "gemini-2.5-pro"), json=body)
    sent = upstream.requests[0].json()["messages"]
    assert upstream.requests[0].json()["model"] == "qwen3-32b"
    assert reply.json()["modelVersion"] == "gemini-2.5-pro"

    assert reply.status_code == 200
    assert reply.json()["candidates"][0]["content"]["parts"] == [{"text": "done"}]
    assert sent[2] == {
        "role": "tool",
        "tool_call_id": sent[1]["tool_calls"][0]["id"],
        "content": "a.py",
    }
    assert sent[1]["tool_calls"][0]["function"] == {"name": "ls", "arguments": "{}"}


@pytest.mark.parametrize(
    ("status", "word"), [(401, "UNAUTHENTICATED"), (429, "RESOURCE_EXHAUSTED"), (500, "INTERNAL")]
)
def test_upstream_errors_are_googles_error_objects_scrubbed(status: int, word: str) -> None:
    error = {"message": f"bad things for key {UPSTREAM_KEY}", "type": "x"}
    headers = {"retry-after": "7"} if status == 429 else {}
    headers["content-type"] = "application/json"
    upstream_reply = Reply(status, headers, [json.dumps({"error": error}).encode()])
    with LoopbackServer(upstream_reply) as upstream, bridge_to(upstream.url) as bridge:
        reply = httpx.post(url(bridge, "generateContent"), json=BODY)
        streamed = httpx.post(url(bridge, "streamGenerateContent") + "?alt=sse", json=BODY)

    for answer in (reply, streamed):
        assert answer.status_code == status
        said = answer.json()["error"]
        assert (said["code"], said["status"]) == (status, word)
        assert "bad things" in said["message"] and UPSTREAM_KEY not in answer.text
    if status == 429:
        details = reply.json()["error"]["details"]
        assert {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "7s"} in details


def test_a_dead_upstream_is_a_502_google_error() -> None:
    with LoopbackServer(Reply()) as gone:
        dead = gone.url
    with bridge_to(dead) as bridge:
        reply = httpx.post(url(bridge, "generateContent"), json=BODY)
    assert reply.status_code == 502
    assert reply.json()["error"]["status"] == "UNAVAILABLE"
    assert dead in reply.json()["error"]["message"]


def test_a_stream_cut_mid_way_raises_in_googles_sdk() -> None:
    events = [chunk({"content": "po"}), b'data: {"choices": [{"delta": {"cont']
    with (
        LoopbackServer(Reply.sse(events, abort=True)) as upstream,
        bridge_to(upstream.url) as bridge,
    ):
        sdk = client(bridge)
        seen: list[str] = []
        with pytest.raises(genai_errors.APIError) as caught:
            for piece in sdk.models.generate_content_stream(model=MODEL, contents="x"):
                seen.append(piece.text or "")
    assert seen == ["po"]  # what came before the cut, then the error: never a clean finish
    assert caught.value.code == 502


def test_keys_by_x_goog_api_key_or_query_and_refusals(start_engine_server: Any) -> None:
    engine = start_engine_server(protocols=("chat",))
    with bridge_to(engine.base_url, key=None, local_key="local-key-0123456789") as bridge:
        sdk = client(bridge, "local-key-0123456789")
        assert sdk.models.generate_content(model=MODEL, contents="say pong").text
        by_query = httpx.post(
            url(bridge, "generateContent") + "?key=local-key-0123456789", json=BODY
        )
        assert by_query.status_code == 200
        wrong = client(bridge, "wrong-key-0123456789")
        with pytest.raises(genai_errors.ClientError) as caught:
            wrong.models.generate_content(model=MODEL, contents="x")
        assert (caught.value.code, caught.value.status) == (401, "UNAUTHENTICATED")
        assert caught.value.message == "API key not valid. Please pass a valid API key."
        missing = httpx.post(url(bridge, "countTokens"), json=BODY)
        assert missing.status_code == 401


def test_unknown_methods_bad_bodies_and_array_streams_are_refused(bridge: Any) -> None:
    embed = httpx.post(url(bridge, "embedContent"), json=BODY)
    assert embed.status_code == 404 and embed.json()["error"]["status"] == "NOT_FOUND"

    bad = httpx.post(url(bridge, "generateContent"), json={"contents": [{"role": "robot"}]})
    assert bad.status_code == 400 and "contents[0].role" in bad.json()["error"]["message"]

    array = httpx.post(url(bridge, "streamGenerateContent"), json=BODY)
    assert array.status_code == 400 and "alt=sse" in array.json()["error"]["message"]


def test_a_base_url_with_the_version_in_it_is_a_google_404_saying_so(bridge: Any) -> None:
    """GOOGLE_GEMINI_BASE_URL=http://HOST:PORT/v1beta: the SDK adds /v1beta again."""
    options = types.HttpOptions(
        base_url=bridge.config.root_url + "/v1beta",
        api_version="v1beta",
        retry_options=types.HttpRetryOptions(attempts=1),
    )
    sdk = genai.Client(api_key="k", http_options=options)
    with pytest.raises(genai_errors.ClientError) as caught:
        sdk.models.generate_content(model=MODEL, contents="x")

    assert (caught.value.code, caught.value.status) == (404, "NOT_FOUND")
    assert "without the API version" in (caught.value.message or "")
    plain = httpx.get(bridge.config.root_url + "/v1/models")  # no Google header: OpenAI's list
    assert plain.json()["object"] == "list"


def test_reasoning_becomes_thought_parts() -> None:
    events = [
        chunk({"role": "assistant", "reasoning_content": "Let me "}),
        chunk({"reasoning_content": "think."}),
        chunk({"content": "pong"}),
        chunk({}, "stop"),
        b"data: [DONE]\n\n",
    ]
    with LoopbackServer(Reply.sse(events)) as upstream, bridge_to(upstream.url) as bridge:
        sdk = client(bridge)
        chunks = list(sdk.models.generate_content_stream(model=MODEL, contents="say pong"))
    parts = [p for c in chunks if c.candidates for p in c.candidates[0].content.parts or []]  # type: ignore[union-attr]

    assert "".join(p.text or "" for p in parts if p.thought) == "Let me think."
    assert "".join(p.text or "" for p in parts if not p.thought) == "pong"


JUNK = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=12,
)
PARTS = st.lists(
    st.fixed_dictionaries(
        {},
        optional={
            "text": JUNK,
            "thought": JUNK,
            "functionCall": st.fixed_dictionaries({"name": JUNK}, optional={"args": JUNK}),
            "functionResponse": st.fixed_dictionaries({"name": JUNK}, optional={"response": JUNK}),
        },
    )
    | JUNK,
    max_size=3,
)
BODIES = st.fixed_dictionaries(
    {},
    optional={
        "contents": st.lists(
            st.fixed_dictionaries(
                {"parts": PARTS}, optional={"role": st.sampled_from(["user", "model", "x"])}
            )
            | JUNK,
            max_size=3,
        )
        | JUNK,
        "systemInstruction": JUNK,
        "generationConfig": JUNK,
        "tools": JUNK,
        "toolConfig": JUNK,
    },
)


@settings(
    max_examples=50,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(body=BODIES, streamed=st.booleans())
def test_any_body_is_answered_or_refused_in_googles_format_never_a_5xx(
    bridge: Any, body: dict[str, Any], streamed: bool
) -> None:
    method = "streamGenerateContent?alt=sse" if streamed else "generateContent"
    reply = httpx.post(url(bridge, method), content=json.dumps(body), timeout=20)

    assert reply.status_code in (200, 400), reply.text
    if reply.status_code == 400:
        assert set(reply.json()["error"]) >= {"code", "message", "status"}
