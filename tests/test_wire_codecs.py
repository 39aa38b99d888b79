"""The wire layer's codecs, each protocol in both directions: streams carried through encoder →
SSE bytes (split at every byte boundary) → decoder; tool-call arguments split at every
boundary; real upstream stream shapes (OpenAI, DeepSeek / Qwen / GLM reasoning fields,
Codex's minimal whole items, Anthropic's documented tool_use stream) decoded to exact neutral
events; finish reasons, usage, errors and whole replies both ways."""

from __future__ import annotations

import json
from types import ModuleType
from typing import Any

import pytest
from wire_support import decode, encode, summarise

from notes_cli.wire import (
    ErrorEvent,
    FinishEvent,
    Message,
    ReasoningDelta,
    ReasoningPart,
    Reply,
    StartEvent,
    TextDelta,
    TextPart,
    ToolCallBegin,
    ToolCallDelta,
    ToolCallEnd,
    ToolCallPart,
    Turn,
    Usage,
    UsageEvent,
    WireError,
    anthropic,
    chat,
    gemini,
    responses,
)

MODULES = {"chat": chat, "responses": responses, "anthropic": anthropic, "gemini": gemini}
ARGS_A = '{"cmd":"echo héllo ✓","workdir":"/tmp"}'
ARGS_B = '{"command":["bash","-lc","ls -la"]}'

FULL_ANSWER = [
    ReasoningDelta("Let me think"),
    ReasoningDelta(" about it."),
    ReasoningDelta("", signature="sig-123"),
    TextDelta("I'll run "),
    TextDelta("two commands."),
    ToolCallBegin(0, "call_a", "exec_command"),
    ToolCallBegin(1, "call_b", "shell"),
    ToolCallDelta(0, ARGS_A[:9]),
    ToolCallDelta(1, ARGS_B[:5]),  # parallel calls, interleaved
    ToolCallDelta(0, ARGS_A[9:]),
    ToolCallDelta(1, ARGS_B[5:]),
    ToolCallEnd(0),
    ToolCallEnd(1),
    UsageEvent(Usage(input_tokens=120, output_tokens=42)),
    FinishEvent("tool_calls"),
]


@pytest.mark.parametrize("name", MODULES)
def test_a_full_answer_survives_each_protocols_stream(name: str) -> None:
    module = MODULES[name]
    got = summarise(decode(module, [encode(module, FULL_ANSWER)]))

    assert got.reasoning == "Let me think about it."
    assert got.text == "I'll run two commands."
    assert got.calls == [("call_a", "exec_command", ARGS_A), ("call_b", "shell", ARGS_B)]
    assert got.ended == [0, 1]
    assert got.finish == "tool_calls"
    assert got.usage == (120, 42)
    # chat completions has no field for a reasoning signature; the other two carry it
    assert got.signatures == ([] if name == "chat" else ["sig-123"])


@pytest.mark.parametrize("name", MODULES)
def test_sse_bytes_split_at_every_byte_boundary_decode_the_same(name: str) -> None:
    module = MODULES[name]
    stream = encode(module, FULL_ANSWER)
    whole = summarise(decode(module, [stream]))

    for cut in range(1, len(stream)):
        assert summarise(decode(module, [stream[:cut], stream[cut:]])) == whole, cut


@pytest.mark.parametrize("name", MODULES)
def test_tool_arguments_split_at_every_boundary_arrive_whole(name: str) -> None:
    module = MODULES[name]
    for cut in range(len(ARGS_A) + 1):
        events = [
            ToolCallBegin(0, "call_a", "exec_command"),
            ToolCallDelta(0, ARGS_A[:cut]),
            ToolCallDelta(0, ARGS_A[cut:]),
            ToolCallEnd(0),
            FinishEvent("tool_calls"),
        ]
        got = summarise(decode(module, [encode(module, events)]))
        assert got.calls == [("call_a", "exec_command", ARGS_A)], cut
        assert got.finish == "tool_calls"


@pytest.mark.parametrize(
    ("name", "finish"),
    [(n, f) for n in MODULES for f in ("stop", "length", "tool_calls", "content_filter")],
)
def test_finish_reasons_survive_the_stream(name: str, finish: str) -> None:
    module = MODULES[name]
    events: list[Any] = [TextDelta("x"), FinishEvent(finish)]  # type: ignore[arg-type]
    if finish == "tool_calls":
        events = [ToolCallBegin(0, "c", "f"), ToolCallEnd(0), FinishEvent("tool_calls")]

    assert summarise(decode(module, [encode(module, events)])).finish == finish


# --- the encoders' exact forms -------------------------------------------------------------


def sse_json(stream: bytes) -> list[Any]:
    return [
        json.loads(line[6:])
        for line in stream.decode().splitlines()
        if line.startswith("data: ") and line != "data: [DONE]"
    ]


def test_chat_encoder_golden() -> None:
    events = [
        ToolCallBegin(0, "call_a", "exec_command"),
        ToolCallDelta(0, '{"cmd":'),
        ToolCallDelta(0, '"ls"}'),
        ToolCallEnd(0),
        UsageEvent(Usage(3, 4, reasoning_tokens=1)),
        FinishEvent("tool_calls"),
    ]
    stream = encode(chat, events, include_usage=True)
    chunks = sse_json(stream)

    head = {"id": "id_1", "object": "chat.completion.chunk", "created": 1, "model": "model-x"}
    assert all({k: c[k] for k in head} == head for c in chunks)
    assert [c["choices"][0]["delta"] if c["choices"] else None for c in chunks] == [
        {"role": "assistant", "content": ""},
        {
            "tool_calls": [
                {
                    "index": 0,
                    "id": "call_a",
                    "type": "function",
                    "function": {"name": "exec_command", "arguments": ""},
                }
            ]
        },  # noqa: E501
        {"tool_calls": [{"index": 0, "function": {"arguments": '{"cmd":'}}]},
        {"tool_calls": [{"index": 0, "function": {"arguments": '"ls"}'}}]},
        {},
        None,
    ]
    assert chunks[-2]["choices"][0]["finish_reason"] == "tool_calls"
    assert chunks[-1]["usage"] == {
        "prompt_tokens": 3,
        "completion_tokens": 4,
        "total_tokens": 7,
        "completion_tokens_details": {"reasoning_tokens": 1},
    }
    assert stream.endswith(b"data: [DONE]\n\n")


def test_responses_encoder_golden() -> None:
    stream = encode(responses, FULL_ANSWER)
    events = sse_json(stream)

    assert [e["type"] for e in events] == [
        "response.created",
        "response.in_progress",
        "response.output_item.added",  # reasoning
        "response.reasoning_summary_part.added",
        "response.reasoning_summary_text.delta",
        "response.reasoning_summary_text.delta",
        "response.reasoning_summary_text.done",
        "response.reasoning_summary_part.done",
        "response.output_item.done",
        "response.output_item.added",  # message
        "response.content_part.added",
        "response.output_text.delta",
        "response.output_text.delta",
        "response.output_text.done",
        "response.content_part.done",
        "response.output_item.done",
        "response.output_item.added",  # function_call 0
        "response.output_item.added",  # function_call 1
        "response.function_call_arguments.delta",
        "response.function_call_arguments.delta",
        "response.function_call_arguments.delta",
        "response.function_call_arguments.delta",
        "response.function_call_arguments.done",
        "response.output_item.done",
        "response.function_call_arguments.done",
        "response.output_item.done",
        "response.completed",
    ]
    assert [e["sequence_number"] for e in events] == list(range(1, len(events) + 1))
    final = events[-1]["response"]
    assert [i["type"] for i in final["output"]] == [
        "reasoning",
        "message",
        "function_call",
        "function_call",
    ]  # noqa: E501
    assert final["output"][0]["encrypted_content"] == "sig-123"
    assert final["output"][2]["arguments"] == ARGS_A
    assert final["output"][3] == {
        **final["output"][3],
        "call_id": "call_b",
        "name": "shell",
        "arguments": ARGS_B,
        "status": "completed",
    }  # noqa: E501
    assert final["usage"]["input_tokens"] == 120 and final["usage"]["total_tokens"] == 162
    assert [e["output_index"] for e in events if e["type"] == "response.output_item.done"] == [
        0,
        1,
        2,
        3,
    ]  # noqa: E501


def test_responses_encoder_says_incomplete_when_the_budget_ran_out() -> None:
    events = sse_json(encode(responses, [TextDelta("cut"), FinishEvent("length")]))

    assert events[-1]["type"] == "response.incomplete"
    assert events[-1]["response"]["incomplete_details"] == {"reason": "max_output_tokens"}


def test_anthropic_encoder_golden() -> None:
    stream = encode(anthropic, FULL_ANSWER, input_tokens=120)
    events = sse_json(stream)

    def brief(e: dict[str, Any]) -> Any:
        if e["type"] == "content_block_start":
            return ("start", e["index"], e["content_block"]["type"])
        if e["type"] == "content_block_delta":
            return ("delta", e["index"], e["delta"]["type"])
        if e["type"] == "content_block_stop":
            return ("stop", e["index"])
        return e["type"]

    assert [brief(e) for e in events] == [
        "message_start",
        ("start", 0, "thinking"),
        "ping",
        ("delta", 0, "thinking_delta"),
        ("delta", 0, "thinking_delta"),
        ("delta", 0, "signature_delta"),
        ("stop", 0),
        ("start", 1, "text"),
        ("delta", 1, "text_delta"),
        ("delta", 1, "text_delta"),
        ("stop", 1),
        ("start", 2, "tool_use"),
        ("start", 3, "tool_use"),
        ("delta", 2, "input_json_delta"),
        ("delta", 3, "input_json_delta"),
        ("delta", 2, "input_json_delta"),
        ("delta", 3, "input_json_delta"),
        ("stop", 2),
        ("stop", 3),
        "message_delta",
        "message_stop",
    ]
    assert events[0]["message"]["usage"]["input_tokens"] == 120
    assert events[-2]["delta"]["stop_reason"] == "tool_use"
    assert events[-2]["usage"]["output_tokens"] == 42
    assert b"event: content_block_delta\n" in stream  # Anthropic names every event


# --- real upstream shapes, decoded ---------------------------------------------------------


def feed_all(module: ModuleType, payloads: list[Any], events: list[str] | None = None) -> list[Any]:
    decoder = module.StreamDecoder()
    out: list[Any] = []
    for i, payload in enumerate(payloads):
        data = payload if isinstance(payload, str) else json.dumps(payload)
        out.extend(decoder.feed(data, events[i] if events else None))
    return out


def chunk(delta: dict[str, Any], finish: str | None = None, **extra: Any) -> dict[str, Any]:
    return {
        "id": "c1",
        "model": "m",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        **extra,
    }  # noqa: E501


def test_openai_chat_tool_call_stream_golden() -> None:
    payloads = [
        chunk(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "index": 0,
                        "id": "call_x",
                        "type": "function",
                        "function": {"name": "get_weather", "arguments": ""},
                    }
                ],
            }
        ),  # noqa: E501
        chunk({"tool_calls": [{"index": 0, "function": {"arguments": '{"loc'}}]}),
        chunk({"tool_calls": [{"index": 0, "function": {"arguments": '":"Paris"}'}}]}),
        chunk(
            {
                "tool_calls": [
                    {
                        "index": 1,
                        "id": "call_y",
                        "type": "function",
                        "function": {"name": "get_time", "arguments": "{}"},
                    }
                ]
            }
        ),  # noqa: E501
        chunk({}, "tool_calls"),
        {
            "id": "c1",
            "model": "m",
            "choices": [],
            "usage": {"prompt_tokens": 9, "completion_tokens": 5, "total_tokens": 14},
        },  # noqa: E501
        "[DONE]",
    ]
    assert feed_all(chat, payloads) == [
        StartEvent("c1", "m"),
        ToolCallBegin(0, "call_x", "get_weather"),
        ToolCallDelta(0, '{"loc'),
        ToolCallDelta(0, '":"Paris"}'),
        ToolCallBegin(1, "call_y", "get_time"),
        ToolCallDelta(1, "{}"),
        ToolCallEnd(0),
        ToolCallEnd(1),
        FinishEvent("tool_calls"),
        UsageEvent(Usage(9, 5)),
    ]


def test_deepseek_qwen_glm_reasoning_fields_become_reasoning() -> None:
    payloads = [
        chunk({"role": "assistant", "content": None, "reasoning_content": "Hmm"}),  # DeepSeek
        chunk({"reasoning": ", so"}),  # GLM / OpenRouter / vLLM's newer field
        chunk({"content": "Answer", "reasoning_content": None}),
        chunk(
            {},
            "stop",
            usage={
                "prompt_tokens": 1,
                "completion_tokens": 2,
                "completion_tokens_details": {"reasoning_tokens": 1},
            },
        ),  # noqa: E501
    ]
    assert feed_all(chat, payloads) == [
        StartEvent("c1", "m"),
        ReasoningDelta("Hmm"),
        ReasoningDelta(", so"),
        TextDelta("Answer"),
        FinishEvent("stop"),
        UsageEvent(Usage(1, 2, reasoning_tokens=1)),
    ]


def test_chat_tool_calls_without_index_or_in_one_chunk_are_read() -> None:
    payloads = [
        chunk({"tool_calls": [{"id": "a", "function": {"name": "f", "arguments": '{"x":1}'}}]}),
        chunk({"tool_calls": [{"id": "b", "function": {"name": "g", "arguments": {"y": 2}}}]}),
        chunk({}, "tool_calls"),
    ]
    got = summarise(feed_all(chat, payloads))

    assert got.calls == [("a", "f", '{"x":1}'), ("b", "g", '{"y":2}')]


def test_chat_error_chunk_and_junk_lines() -> None:
    assert feed_all(chat, ["not json", {"error": {"message": "boom", "code": "overloaded"}}]) == [
        ErrorEvent("boom", None, "overloaded")
    ]


def test_codex_style_minimal_responses_stream_golden() -> None:
    payloads = [
        {
            "type": "response.output_item.done",
            "output_index": 0,
            "item": {
                "id": "fc_1",
                "type": "function_call",
                "call_id": "call_1",
                "name": "exec_command",
                "arguments": '{"cmd":"echo hi"}',
                "status": "completed",
            },
        },  # noqa: E501
        {
            "type": "response.completed",
            "response": {
                "id": "resp_1",
                "status": "completed",
                "output": [],
                "usage": {"input_tokens": 3, "output_tokens": 2, "total_tokens": 5},
            },
        },  # noqa: E501
    ]
    assert feed_all(responses, payloads) == [
        ToolCallBegin(0, "call_1", "exec_command"),
        ToolCallDelta(0, '{"cmd":"echo hi"}'),
        ToolCallEnd(0),
        UsageEvent(Usage(3, 2)),
        FinishEvent("tool_calls"),
    ]


def test_responses_message_item_without_deltas_is_text() -> None:
    payloads = [
        {
            "type": "response.output_item.done",
            "output_index": 0,
            "item": {"type": "message", "content": [{"type": "output_text", "text": "pong"}]},
        },  # noqa: E501
        {
            "type": "response.failed",
            "response": {"error": {"code": "server_error", "message": "later"}},
        },  # noqa: E501
    ]
    assert feed_all(responses, payloads) == [
        TextDelta("pong"),
        ErrorEvent("later", None, "server_error"),
    ]


def test_anthropic_documented_tool_use_stream_golden() -> None:
    payloads = [
        (
            "message_start",
            {
                "type": "message_start",
                "message": {
                    "id": "msg_1",
                    "model": "claude",
                    "usage": {"input_tokens": 472, "output_tokens": 2},
                },
            },
        ),  # noqa: E501
        (
            "content_block_start",
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {"type": "text", "text": ""},
            },
        ),  # noqa: E501
        ("ping", {"type": "ping"}),
        (
            "content_block_delta",
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "text_delta", "text": "Okay"},
            },
        ),  # noqa: E501
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        (
            "content_block_start",
            {
                "type": "content_block_start",
                "index": 1,
                "content_block": {
                    "type": "tool_use",
                    "id": "toolu_1",
                    "name": "get_weather",
                    "input": {},
                },
            },
        ),  # noqa: E501
        (
            "content_block_delta",
            {
                "type": "content_block_delta",
                "index": 1,
                "delta": {"type": "input_json_delta", "partial_json": ""},
            },
        ),  # noqa: E501
        (
            "content_block_delta",
            {
                "type": "content_block_delta",
                "index": 1,
                "delta": {"type": "input_json_delta", "partial_json": '{"location": "San'},
            },
        ),  # noqa: E501
        (
            "content_block_delta",
            {
                "type": "content_block_delta",
                "index": 1,
                "delta": {"type": "input_json_delta", "partial_json": ' Francisco"}'},
            },
        ),  # noqa: E501
        ("content_block_stop", {"type": "content_block_stop", "index": 1}),
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": "tool_use", "stop_sequence": None},
                "usage": {"output_tokens": 89},
            },
        ),  # noqa: E501
        ("message_stop", {"type": "message_stop"}),
    ]
    assert feed_all(anthropic, [p for _, p in payloads], [e for e, _ in payloads]) == [
        StartEvent("msg_1", "claude"),
        TextDelta("Okay"),
        ToolCallBegin(0, "toolu_1", "get_weather"),
        ToolCallDelta(0, '{"location": "San'),
        ToolCallDelta(0, ' Francisco"}'),
        ToolCallEnd(0),
        UsageEvent(Usage(472, 89)),  # input from message_start, output from message_delta
        FinishEvent("tool_calls"),
    ]


@pytest.mark.parametrize(
    ("module", "word", "finish"),
    [
        (chat, "stop", "stop"), (chat, "length", "length"), (chat, "tool_calls", "tool_calls"),
        (chat, "content_filter", "content_filter"), (chat, "function_call", "tool_calls"),
        (anthropic, "end_turn", "stop"), (anthropic, "stop_sequence", "stop"),
        (anthropic, "max_tokens", "length"), (anthropic, "tool_use", "tool_calls"),
        (anthropic, "refusal", "content_filter"),
    ],
)  # fmt: skip
def test_finish_words_map_onto_the_neutral_reasons(
    module: ModuleType, word: str, finish: str
) -> None:
    if module is chat:
        body = {"choices": [{"message": {"content": "x"}, "finish_reason": word}]}
    else:
        body = {"content": [{"type": "text", "text": "x"}], "stop_reason": word}
    assert module.decode_reply(body).finish == finish


# --- whole replies and errors -----------------------------------------------------------------


@pytest.mark.parametrize("name", MODULES)
def test_whole_replies_round_trip(name: str) -> None:
    module = MODULES[name]
    parts: list[Any] = [
        ReasoningPart("thought", None if name == "chat" else "sig"),
        TextPart("answer"),
        ToolCallPart("call_1", "exec_command", '{"cmd":"ls"}'),
        ToolCallPart("call_2", "shell", '{"command":["ls"]}'),
    ]
    reply = Reply(
        "id_9", "model-x", parts, "tool_calls", Usage(5, 6, extra={"pd_timing": {"a": 1}})
    )  # noqa: E501

    assert module.decode_reply(module.encode_reply(reply)) == reply


@pytest.mark.parametrize("name", MODULES)
def test_errors_round_trip_with_status_kind_and_message(name: str) -> None:
    module = MODULES[name]
    for error in [
        WireError(400, "invalid_request", "bad temperature", param="temperature"),
        WireError(401, "authentication", "invalid x-api-key"),
        WireError(429, "rate_limit", "slow down"),
        WireError(500, "server_error", "boom"),
    ]:
        back = module.decode_error(error.status, module.encode_error(error))
        assert (back.status, back.kind, back.message) == (error.status, error.kind, error.message)
    assert (
        module.decode_error(502, "<html>Bad Gateway</html>").message == "<html>Bad Gateway</html>"
    )  # noqa: E501
    assert module.decode_error(503, None).kind == "overloaded"


def test_tools_a_protocol_cannot_say_are_named() -> None:
    turn = responses.decode_request(
        {
            "model": "m",
            "input": "hi",
            "tools": [
                {"type": "function", "name": "exec_command", "parameters": {"type": "object"}},
                {"type": "namespace", "name": "multi_agent_v1"},
                {"type": "web_search"},
                {"type": "custom", "name": "apply_patch"},
            ],
        }
    )

    assert chat.dropped_tools(turn) == ["multi_agent_v1", "web_search"]
    assert [
        t["function"]["name"] if "function" in t else t["custom"]["name"]
        for t in chat.encode_request(turn)["tools"]
    ] == ["exec_command", "apply_patch"]  # noqa: E501
    assert anthropic.dropped_tools(turn) == ["multi_agent_v1", "web_search", "apply_patch"]
    assert responses.dropped_tools(turn) == []


def test_one_turn_crosses_protocols_through_the_neutral_form() -> None:
    """Claude Code's turn → neutral → chat body: system blocks, the tool_use/tool_result pair
    and thinking all land where chat completions keeps them."""
    turn = anthropic.decode_request(
        {
            "model": "m",
            "max_tokens": 100,
            "system": [{"type": "text", "text": "be brief"}],
            "messages": [
                {"role": "user", "content": "run: ls"},
                {
                    "role": "assistant",
                    "content": [
                        {"type": "thinking", "thinking": "t", "signature": "s"},
                        {
                            "type": "tool_use",
                            "id": "toolu_1",
                            "name": "Bash",
                            "input": {"command": "ls"},
                        },
                    ],
                },  # noqa: E501
                {
                    "role": "user",
                    "content": [
                        {
                            "type": "tool_result",
                            "tool_use_id": "toolu_1",
                            "content": [{"type": "text", "text": "a.txt"}],
                        }
                    ],
                },  # noqa: E501
            ],
            "tools": [{"name": "Bash", "input_schema": {"type": "object"}}],
        }
    )
    body = chat.encode_request(turn)

    assert body["messages"] == [
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": "run: ls"},
        {
            "role": "assistant",
            "content": None,
            "reasoning_content": "t",
            "tool_calls": [
                {
                    "id": "toolu_1",
                    "type": "function",
                    "function": {"name": "Bash", "arguments": '{"command":"ls"}'},
                }
            ],
        },  # noqa: E501
        {"role": "tool", "tool_call_id": "toolu_1", "content": "a.txt"},
    ]
    assert body["max_tokens"] == 100
    assert body["tools"][0]["function"]["name"] == "Bash"
    assert isinstance(turn.messages[0], Message) and isinstance(turn, Turn)
