"""Fuzzing the generation routes over a real socket: whatever the body (random JSON, bodies
shaped like each API's schema with wrong types inside, random bytes), the answer is a 4xx in the
route's own error format or a 200, never a 5xx, and the server keeps serving."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import httpx
import pytest
from fake_engine import FakeEngine
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

GEMINI_KEYS = ["contents", "systemInstruction", "generationConfig", "tools", "toolConfig",
               "system_instruction", "generation_config"]  # fmt: skip
ROUTES = {
    "/chat/completions": ["model", "messages", "max_tokens", "max_completion_tokens", "stream",
                          "stream_options", "temperature", "tools"],
    "/responses": ["model", "input", "instructions", "max_output_tokens", "stream", "tools",
                   "reasoning", "include", "store"],
    "/anthropic/v1/messages": ["model", "messages", "system", "max_tokens", "stream", "tools",
                               "thinking", "metadata"],
    "/gemini/v1beta/models/pd-mock-1:generateContent": GEMINI_KEYS,
    "/gemini/v1beta/models/pd-mock-1:streamGenerateContent?alt=sse": GEMINI_KEYS,
    "/gemini/v1beta/models/pd-mock-1:countTokens": GEMINI_KEYS,
}  # fmt: skip

MODEL = st.sampled_from(["pd-mock-1", "PD-MOCK-1", "", "gpt-4o"])
scalars = (
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=False)
    | st.text(max_size=20)
)
json_values = st.recursive(
    scalars,
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=20,
)
ROLE = st.sampled_from(["user", "assistant", "system", "developer", "tool", "", "x"])
PART = st.fixed_dictionaries(
    {"type": st.sampled_from(["text", "input_text", "output_text", "image", "tool_result"])},
    optional={"text": json_values, "content": json_values},
)
MESSAGE = st.fixed_dictionaries(
    {"role": ROLE | json_values},
    optional={
        "content": st.text(max_size=30) | st.lists(PART | json_values, max_size=3) | json_values,
        "type": st.sampled_from(["message", "function_call", "function_call_output", "reasoning"]),
    },
)
GEMINI_PART = st.fixed_dictionaries(
    {},
    optional={
        "text": json_values,
        "thought": json_values,
        "thoughtSignature": json_values,
        "functionCall": st.fixed_dictionaries(
            {}, optional={"name": json_values, "args": json_values}
        ),
        "functionResponse": st.fixed_dictionaries(
            {}, optional={"name": json_values, "id": json_values, "response": json_values}
        ),
        "inlineData": json_values,
    },
)
CONTENT = st.fixed_dictionaries(
    {"parts": st.lists(GEMINI_PART | json_values, max_size=3) | json_values},
    optional={"role": st.sampled_from(["user", "model", "function", ""]) | json_values},
)
GENERATION = st.fixed_dictionaries(
    {},
    optional={
        "maxOutputTokens": st.integers(-3, 50) | json_values,
        "temperature": json_values,
        "candidateCount": json_values,
        "thinkingConfig": json_values,
        "stopSequences": json_values,
    },
)
FIELD_VALUES = {
    "model": MODEL | json_values,
    "messages": st.lists(MESSAGE | json_values, max_size=4) | json_values,
    "input": st.text(max_size=30) | st.lists(MESSAGE | json_values, max_size=4) | json_values,
    "max_tokens": st.integers(-3, 50) | json_values,
    "max_completion_tokens": st.integers(-3, 50) | json_values,
    "max_output_tokens": st.integers(-3, 50) | json_values,
    "stream": st.booleans() | json_values,
    "stream_options": st.fixed_dictionaries({}, optional={"include_usage": json_values})
    | json_values,
    "system": st.text(max_size=30) | st.lists(PART, max_size=3) | json_values,
    "contents": st.lists(CONTENT | json_values, max_size=4) | json_values,
    "systemInstruction": CONTENT | json_values,
    "generationConfig": GENERATION | json_values,
}  # fmt: skip


def shaped_body(route: str) -> st.SearchStrategy[dict[str, Any]]:
    keys = ROUTES[route]
    return st.fixed_dictionaries({}, optional={k: FIELD_VALUES.get(k, json_values) for k in keys})


@pytest.fixture
def engine(start_engine_server: Callable[..., Any]) -> Any:
    return start_engine_server(service=FakeEngine(reply="ok then", max_context_tokens=200))


def assert_handled(response: httpx.Response, route: str) -> None:
    assert response.status_code < 500, response.text
    if response.status_code >= 400:
        body = response.json()
        if route.startswith("/anthropic"):
            assert body["type"] == "error" and body["error"]["type"]
        elif route.startswith("/gemini"):  # (the model is in the URL: a 404 is a lost route)
            assert set(body["error"]) >= {"code", "message", "status"}
            assert response.status_code != 404, response.text
        else:
            assert set(body["error"]) >= {"message", "type", "code"}


FUZZ = settings(
    max_examples=120,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


@pytest.mark.parametrize("route", list(ROUTES))
@FUZZ
@given(data=st.data())
def test_schema_shaped_bodies_never_get_a_server_error(
    engine: Any, http: httpx.Client, route: str, data: st.DataObject
) -> None:
    body = data.draw(shaped_body(route))
    response = http.post(engine.base_url + route, content=json.dumps(body))
    assert_handled(response, route)


@pytest.mark.parametrize("route", list(ROUTES))
@FUZZ
@given(body=json_values)
def test_arbitrary_json_never_gets_a_server_error(
    engine: Any, http: httpx.Client, route: str, body: Any
) -> None:
    assert_handled(http.post(engine.base_url + route, content=json.dumps(body)), route)


@pytest.mark.parametrize("route", list(ROUTES))
@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(raw=st.binary(max_size=200))
def test_random_bytes_never_get_a_server_error(
    engine: Any, http: httpx.Client, route: str, raw: bytes
) -> None:
    assert_handled(http.post(engine.base_url + route, content=raw), route)


@pytest.mark.parametrize(
    "raw",
    [
        b'{"model": "pd-mock-\\ud800", "messages": [{"role": "user", "content": "x"}]}',
        b'{"model": "pd-mock-1", "messages": [{"role": "user", "content": "\\udfff"}]}',
        b"[" * 100_000 + b"]" * 100_000,
        b'{"model": "pd-mock-1", "messages": [{"role": "user"}], "max_tokens": 1e999}',
        json.dumps(
            {"model": "pd-mock-1", "messages": [{"role": "user", "content": "你好"}]}
        ).encode(),
    ],
    ids=["lone-surrogate-model", "lone-surrogate-text", "deep-nesting", "huge-number", "cjk"],
)
def test_nasty_bodies_are_handled(engine: Any, http: httpx.Client, raw: bytes) -> None:
    assert_handled(http.post(f"{engine.base_url}/chat/completions", content=raw), "/chat")
    ok = http.post(
        f"{engine.base_url}/chat/completions",
        json={"model": "pd-mock-1", "messages": [{"role": "user", "content": "hi"}]},
    )
    assert ok.status_code == 200
