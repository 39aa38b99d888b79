"""The client-side half of the wire layer as the gateway client uses it: the protocol's own
finish word next to the neutral one, Responses streams of the shapes real servers send, and
malformed events and answers read as junk, never raised (a hostile server must not crash a
decoder: the gateway client and the bridge both run them on what upstreams send)."""

from __future__ import annotations

import json
from types import ModuleType
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from wire_support import encode, summarise

from notes_cli.wire import (
    FinishEvent,
    ReasoningDelta,
    TextDelta,
    ToolCallBegin,
    ToolCallDelta,
    ToolCallEnd,
    Usage,
    UsageEvent,
    anthropic,
    chat,
    gemini,
    responses,
)

MODULES = {"chat": chat, "responses": responses, "anthropic": anthropic}


def feed(module: ModuleType, payloads: list[Any]) -> tuple[Any, list[Any]]:
    decoder = module.StreamDecoder()
    events: list[Any] = []
    for payload in payloads:
        data = payload if isinstance(payload, str) else json.dumps(payload)
        events.extend(decoder.feed(data))
    return decoder, events


# --------------------------------------------------------------------------- finish words


@pytest.mark.parametrize(
    ("name", "last", "native", "neutral"),
    [
        ("chat", {"choices": [{"delta": {}, "finish_reason": "eos"}]}, "eos", "stop"),
        ("chat", {"choices": [{"delta": {}, "finish_reason": "length"}]}, "length", "length"),
        ("responses", {"type": "response.completed", "response": {}}, "completed", "stop"),
        (
            "responses",
            {
                "type": "response.incomplete",
                "response": {
                    "status": "incomplete",
                    "incomplete_details": {"reason": "max_output_tokens"},
                },
            },
            "max_output_tokens",
            "length",
        ),
        ("responses", {"type": "response.incomplete", "response": {}}, "incomplete", "stop"),
        (
            "anthropic",
            {"type": "message_delta", "delta": {"stop_reason": "pause_turn"}},
            "pause_turn",
            "stop",
        ),
        (
            "anthropic",
            {"type": "message_delta", "delta": {"stop_reason": "max_tokens"}},
            "max_tokens",
            "length",
        ),
    ],
)
def test_a_stream_keeps_its_own_finish_word_beside_the_neutral_one(
    name: str, last: dict[str, Any], native: str, neutral: str
) -> None:
    decoder, events = feed(MODULES[name], [last])
    assert decoder.native_finish == native and decoder.done
    assert [e.finish for e in events if isinstance(e, FinishEvent)] == [neutral]


@pytest.mark.parametrize(
    ("name", "body", "native"),
    [
        ("chat", {"choices": [{"message": {"content": "x"}, "finish_reason": "eos"}]}, "eos"),
        ("chat", {"choices": [{"message": {"content": "x"}}]}, None),
        ("chat", {"choices": []}, None),
        ("responses", {"output": []}, "completed"),
        (
            "responses",
            {"status": "incomplete", "incomplete_details": {"reason": "content_filter"}},
            "content_filter",
        ),
        ("anthropic", {"content": [], "stop_reason": "stop_sequence"}, "stop_sequence"),
        ("anthropic", {"content": []}, None),
    ],
)
def test_a_whole_reply_keeps_its_own_finish_word(
    name: str, body: dict[str, Any], native: str | None
) -> None:
    assert MODULES[name].native_finish(body) == native


def test_each_encoders_finish_is_read_back_as_the_protocols_word() -> None:
    words = {"chat": "stop", "responses": "completed", "anthropic": "end_turn"}
    for name, module in MODULES.items():
        stream = encode(module, [TextDelta("hi"), FinishEvent("stop")])
        decoder = module.StreamDecoder()
        for block in stream.decode().split("\n\n"):
            data = [line[6:] for line in block.splitlines() if line.startswith("data: ")]
            if data:
                decoder.feed(data[0])
        assert decoder.native_finish == words[name], name


# --------------------------------------------------------------------------- Responses shapes


def _delta(text: str, **where: Any) -> dict[str, Any]:
    return {"type": "response.output_text.delta", "delta": text, **where}


def _done(text: str, id: str = "msg_1") -> dict[str, Any]:
    content = [{"type": "output_text", "text": text}]
    item = {"id": id, "type": "message", "content": content}
    return {"type": "response.output_item.done", "item": item}


COMPLETED = {"type": "response.completed", "response": {"status": "completed"}}


def test_deltas_that_name_no_item_are_not_repeated_by_the_finished_item() -> None:
    decoder, events = feed(responses, [_delta("po"), _delta("ng"), _done("pong"), COMPLETED])
    assert summarise(events).text == "pong" and decoder.item_text_seen


def test_a_later_message_item_without_deltas_is_still_read() -> None:
    payloads = [_delta("a"), _done("a"), _done("b", "msg_2"), COMPLETED]
    assert summarise(feed(responses, payloads)[1]).text == "ab"


def test_deltas_naming_their_item_are_matched_by_id() -> None:
    payloads = [_delta("a", item_id="msg_1"), _done("a"), _done("b", "msg_2"), COMPLETED]
    assert summarise(feed(responses, payloads)[1]).text == "ab"


def test_text_only_in_response_completed_is_read_once() -> None:
    item = _done("pong")["item"]
    completed = {"type": "response.completed", "response": {"output": [item]}}
    decoder, events = feed(responses, [completed])
    assert summarise(events).text == "pong" and decoder.item_text_seen
    decoder, events = feed(responses, [_delta("pong", item_id="msg_1"), completed])
    assert summarise(events).text == "pong"


def test_deltas_alone_are_not_a_finished_item() -> None:
    decoder, events = feed(responses, [_delta("po", item_id="m"), COMPLETED])
    assert summarise(events).text == "po" and not decoder.item_text_seen


def test_a_whole_reasoning_item_is_reasoning_once() -> None:
    item = {"id": "rs_1", "type": "reasoning", "summary": [{"type": "summary_text", "text": "t"}]}
    done = {"type": "response.output_item.done", "item": item}
    delta = {"type": "response.reasoning_summary_text.delta", "delta": "t"}
    assert summarise(feed(responses, [done])[1]).reasoning == "t"
    assert summarise(feed(responses, [delta, done])[1]).reasoning == "t"


@pytest.mark.parametrize(
    ("name", "payload", "message"),
    [
        ("chat", {"error": {"message": "boom", "type": "x"}}, "boom"),
        ("chat", {"error": {"type": "overloaded_error"}}, "overloaded_error"),
        ("chat", {"error": "rate limited"}, "rate limited"),
        ("responses", {"type": "error", "message": "slow down"}, "slow down"),
        (
            "responses",
            {"type": "response.failed", "response": {"error": {"code": "c"}}},
            "{'code': 'c'}",
        ),
        ("anthropic", {"type": "error", "error": {"type": "api_error"}}, "api_error"),
        ("anthropic", {"type": "error", "error": {"message": "Overloaded"}}, "Overloaded"),
    ],
)
def test_error_events_say_their_message_else_their_type(
    name: str, payload: dict[str, Any], message: str
) -> None:
    events = feed(MODULES[name], [payload])[1]
    assert [e.message for e in events] == [message]


# --------------------------------------------------------------------------- malformed input

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=6,
)

# Every event of a full answer (reasoning, text, two tool calls, usage) in each protocol.
FULL = [
    ReasoningDelta("think"),
    TextDelta("answer"),
    ToolCallBegin(0, "call_1", "sh"),
    ToolCallDelta(0, '{"cmd":"ls"}'),
    ToolCallBegin(1, "call_2", "sh"),
    ToolCallDelta(1, '{"cmd":"pwd"}'),
    ToolCallEnd(0),
    ToolCallEnd(1),
    UsageEvent(Usage(5, 7)),
    FinishEvent("tool_calls"),
]


def _payloads(module: ModuleType) -> list[dict[str, Any]]:
    raw = encode(module, FULL).decode()
    out = []
    for block in raw.split("\n\n"):
        for line in block.splitlines():
            if line.startswith("data: ") and line != "data: [DONE]":
                out.append(json.loads(line[6:]))
    return out


def _paths(value: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    paths = [path]
    if isinstance(value, dict):
        for key, child in value.items():
            paths += _paths(child, (*path, key))
    elif isinstance(value, list):
        for index, child in enumerate(value):
            paths += _paths(child, (*path, index))
    return paths


def _replace(value: Any, path: tuple[Any, ...], new: Any) -> Any:
    if not path:
        return new
    copy = json.loads(json.dumps(value))
    target = copy
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = new
    return copy


DECODERS: dict[str, ModuleType] = {**MODULES, "gemini": gemini}  # the never-raise checks
PAYLOADS = {name: _payloads(module) for name, module in DECODERS.items()}


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(sorted(DECODERS)), st.data(), JSON)
def test_any_value_of_any_event_replaced_by_any_json_never_raises(
    name: str, data: st.DataObject, junk: Any
) -> None:
    payloads = PAYLOADS[name]
    index = data.draw(st.integers(min_value=0, max_value=len(payloads) - 1))
    path = data.draw(st.sampled_from(_paths(payloads[index])))
    broken = _replace(payloads[index], path, junk)
    decoder = DECODERS[name].StreamDecoder()
    for payload in [*payloads[:index], broken, *payloads[index + 1 :]]:
        assert isinstance(decoder.feed(json.dumps(payload)), list)


REPLIES = {
    "chat": chat.encode_reply,
    "responses": responses.encode_reply,
    "anthropic": anthropic.encode_reply,
    "gemini": gemini.encode_reply,
}


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(sorted(DECODERS)), st.data(), JSON)
def test_any_value_of_a_whole_reply_replaced_by_any_json_never_raises(
    name: str, data: st.DataObject, junk: Any
) -> None:
    from notes_cli.wire import Reply, TextPart, ToolCallPart

    reply = Reply(
        "id_1",
        "m",
        [TextPart("hi"), ToolCallPart("c1", "sh", '{"a":1}')],
        "tool_calls",
        Usage(1, 2),
    )
    body = REPLIES[name](reply, created=1)
    path = data.draw(st.sampled_from(_paths(body)))
    broken = _replace(body, path, junk)
    if isinstance(broken, dict):
        DECODERS[name].decode_reply(broken)
        DECODERS[name].native_finish(broken)
