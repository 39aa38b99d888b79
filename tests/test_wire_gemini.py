"""The Gemini codec (`notes_cli.wire.gemini`) on the shapes Gemini CLI and the Gemini API
really send: Gemini CLI's request (systemInstruction, thought signatures, functionResponse
`{"output"}` / `{"error"}`, parametersJsonSchema, thinkingConfig), calls without ids, Google's
OpenAPI-style `parameters`, the API's 400s naming the param, the stream's exact chunks (SSE and
the JSON-array form), Google's error objects, usage with thoughts and cached tokens.
The generic checks (streams cut at every byte, replies and errors round trip) run on this codec
in tests/test_wire_codecs.py, the round trips in tests/test_wire_properties.py."""

from __future__ import annotations

import json
from typing import Any

import pytest
from wire_support import decode, encode, summarise

from notes_cli.wire import (
    ErrorEvent,
    FinishEvent,
    ImagePart,
    Message,
    Reasoning,
    ReasoningPart,
    Reply,
    TextDelta,
    TextPart,
    ToolCallBegin,
    ToolCallDelta,
    ToolCallEnd,
    ToolCallPart,
    ToolChoice,
    ToolResultPart,
    ToolSpec,
    Turn,
    Usage,
    UsageEvent,
    WireError,
    chat,
    gemini,
)

SHELL_SCHEMA = {
    "type": "object",
    "properties": {"command": {"type": "string", "description": "Exact bash command"}},
    "required": ["command"],
}
# What Gemini CLI sends on its second turn of a tool call (the SDK's JSON, as captured from
# @google/genai: config fields flattened into generationConfig, tools beside it).
GEMINI_CLI_BODY: dict[str, Any] = {
    "contents": [
        {"role": "user", "parts": [{"text": "run: echo hi"}]},
        {
            "role": "model",
            "parts": [
                {"text": "**Running it**", "thought": True},
                {
                    "functionCall": {
                        "id": "run_shell_command__call_1",
                        "name": "run_shell_command",
                        "args": {"command": "echo hi"},
                    },
                    "thoughtSignature": "c2lnbmF0dXJl",
                },
            ],
        },
        {
            "role": "user",
            "parts": [
                {
                    "functionResponse": {
                        "id": "run_shell_command__call_1",
                        "name": "run_shell_command",
                        "response": {"output": "Output: hi"},
                    }
                }
            ],
        },
    ],
    "systemInstruction": {"role": "user", "parts": [{"text": "You are an interactive CLI."}]},
    "tools": [
        {
            "functionDeclarations": [
                {
                    "name": "run_shell_command",
                    "description": "Runs a shell command.",
                    "parametersJsonSchema": SHELL_SCHEMA,
                }
            ]
        }
    ],
    "generationConfig": {
        "temperature": 1,
        "topP": 0.95,
        "topK": 64,
        "thinkingConfig": {"includeThoughts": True, "thinkingLevel": "HIGH"},
    },
}


def test_gemini_clis_tool_turn_decodes_to_the_neutral_turn() -> None:
    turn = gemini.decode_request(
        json.dumps(GEMINI_CLI_BODY), model="models/gemini-3-pro", stream=True
    )

    call_id = "run_shell_command__call_1"
    assert turn.model == "gemini-3-pro" and turn.stream and turn.include_usage
    assert turn.messages == [
        Message("system", [TextPart("You are an interactive CLI.")]),
        Message("user", [TextPart("run: echo hi")]),
        Message(
            "assistant",
            [
                ReasoningPart("**Running it**"),
                ReasoningPart("", "c2lnbmF0dXJl"),
                ToolCallPart(call_id, "run_shell_command", '{"command":"echo hi"}'),
            ],
        ),
        Message("tool", [ToolResultPart(call_id, "Output: hi")]),
    ]
    assert turn.tools == [ToolSpec("run_shell_command", "Runs a shell command.", SHELL_SCHEMA)]
    assert turn.sampling.temperature == 1 and turn.sampling.top_p == 0.95
    assert turn.sampling.top_k == 64
    assert turn.reasoning == Reasoning(effort="high", summary="auto")
    assert turn.extra == {}


def test_the_same_turn_reaches_a_chat_upstream_with_matching_ids() -> None:
    body = chat.encode_request(gemini.decode_request(GEMINI_CLI_BODY, model="m"))

    call = body["messages"][2]["tool_calls"][0]
    assert call["function"] == {"name": "run_shell_command", "arguments": '{"command":"echo hi"}'}
    assert body["messages"][3] == {
        "role": "tool",
        "tool_call_id": call["id"],
        "content": "Output: hi",
    }
    assert body["tools"][0]["function"]["parameters"] == SHELL_SCHEMA
    assert body["messages"][0] == {"role": "system", "content": "You are an interactive CLI."}


def test_calls_without_ids_pair_with_their_responses_by_name() -> None:
    """The Gemini API sends calls without ids; Gemini CLI answers them with ids it made up."""
    body = {
        "contents": [
            {"role": "user", "parts": [{"text": "go"}]},
            {
                "role": "model",
                "parts": [
                    {"functionCall": {"name": "read_file", "args": {"path": "a"}}},
                    {"functionCall": {"name": "ls", "args": {}}},
                    {"functionCall": {"name": "read_file", "args": {"path": "b"}}},
                ],
            },
            {
                "role": "user",
                "parts": [
                    {"functionResponse": {"id": "ls-17-x", "name": "ls", "response": {}}},
                    {
                        "functionResponse": {
                            "id": "read_file-1",
                            "name": "read_file",
                            "response": {"error": "no such file"},
                        }
                    },
                    {
                        "functionResponse": {
                            "name": "read_file",
                            "response": {"content": "B", "lines": 1},
                        }
                    },
                ],
            },
        ]
    }
    turn = gemini.decode_request(body, model="m")

    calls = [p.call_id for p in turn.messages[1].parts if isinstance(p, ToolCallPart)]
    assert calls == ["gemini_call_0", "gemini_call_1", "gemini_call_2"]
    assert [m.parts[0] for m in turn.messages[2:]] == [
        ToolResultPart("gemini_call_1", ""),
        ToolResultPart("gemini_call_0", "no such file", is_error=True),
        ToolResultPart("gemini_call_2", '{"content":"B","lines":1}'),
    ]
    # and back: each response names its function again
    contents = gemini.encode_request(turn)["contents"]
    assert [p["functionResponse"]["name"] for p in contents[2]["parts"]] == [
        "ls",
        "read_file",
        "read_file",
    ]


def test_openapi_parameters_become_json_schema_without_changing_the_body() -> None:
    parameters = {
        "type": "OBJECT",
        "properties": {
            "paths": {"type": "ARRAY", "items": {"type": "STRING"}},
            "type": {"type": "STRING", "enum": ["OBJECT"]},  # a property named "type"
        },
    }
    body = {
        "contents": [{"parts": [{"text": "hi"}]}],
        "tools": [{"functionDeclarations": [{"name": "f", "parameters": parameters}]}],
    }
    before = json.dumps(body)

    spec = gemini.decode_request(body, model="m").tools[0]

    assert spec.parameters == {
        "type": "object",
        "properties": {
            "paths": {"type": "array", "items": {"type": "string"}},
            "type": {"type": "string", "enum": ["OBJECT"]},
        },
    }
    assert json.dumps(body) == before


def test_hosted_tools_pass_through_and_others_are_named() -> None:
    body = {
        "contents": [{"parts": [{"text": "hi"}]}],
        "tools": [{"googleSearch": {}}, {"functionDeclarations": [{"name": "f"}]}],
        "toolConfig": {"functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": ["f"]}},
    }
    turn = gemini.decode_request(body, model="m")

    assert [(t.name, t.kind) for t in turn.tools] == [("", "googleSearch"), ("f", "function")]
    assert turn.tool_choice == ToolChoice("tool", "f")
    assert chat.dropped_tools(turn) == ["googleSearch"]
    assert gemini.encode_request(turn)["tools"] == [
        {"functionDeclarations": [{"name": "f"}]},
        {"googleSearch": {}},
    ]
    custom = Turn("m", [Message("user", [TextPart("x")])], [ToolSpec("apply_patch", kind="custom")])
    assert gemini.dropped_tools(custom) == ["apply_patch"]
    assert "tools" not in gemini.encode_request(custom)


def test_images_thinking_budgets_and_extra_keys() -> None:
    body = {
        "contents": [
            {
                "role": "user",
                "parts": [
                    {"inlineData": {"mimeType": "image/png", "data": "iVBO"}},
                    {
                        "fileData": {
                            "fileUri": "https://x.test/a.pdf",
                            "mimeType": "application/pdf",
                        }
                    },
                ],
            }
        ],
        "generationConfig": {
            "maxOutputTokens": 64,
            "stopSequences": ["END"],
            "candidateCount": 2,
            "responseMimeType": "application/json",
            "thinkingConfig": {"thinkingBudget": 0},
        },
        "safetySettings": [{"category": "HARM_CATEGORY_HARASSMENT", "threshold": "BLOCK_NONE"}],
    }
    turn = gemini.decode_request(body, model="m")

    assert turn.messages[0].parts == [
        ImagePart("data:image/png;base64,iVBO"),
        ImagePart("https://x.test/a.pdf"),
    ]
    assert turn.sampling.max_tokens == 64 and turn.sampling.stop == ("END",)
    assert turn.reasoning == Reasoning(effort="none")
    assert turn.extra == {
        "safetySettings": body["safetySettings"],
        "generationConfig": {"responseMimeType": "application/json"},
        "candidateCount": 2,
    }
    dynamic = {**body["generationConfig"], "thinkingConfig": {"thinkingBudget": -1}}
    assert gemini.decode_request({**body, "generationConfig": dynamic}, model="m").reasoning is None


@pytest.mark.parametrize(
    ("body", "param"),
    [
        ({}, "contents"),
        ({"contents": []}, "contents"),
        ({"contents": [{"role": "assistant", "parts": [{"text": "x"}]}]}, "contents[0].role"),
        ({"contents": [{"role": "user", "parts": [{}]}]}, "contents[0].parts[0]"),
        ({"contents": [{"role": "user", "parts": [{"text": 5}]}]}, "contents[0].parts[0].text"),
        (
            {"contents": [{"role": "user", "parts": [{"functionCall": {"name": "f"}}]}]},
            "contents[0].parts[0].functionCall",
        ),
        (
            {"contents": [{"parts": [{"text": "x"}]}], "generationConfig": {"temperature": 3}},
            "generationConfig.temperature",
        ),
        (
            {
                "contents": [{"parts": [{"text": "x"}]}],
                "generationConfig": {"thinkingConfig": {"thinkingLevel": "ULTRA"}},
            },
            "generationConfig.thinkingConfig.thinkingLevel",
        ),
        (
            {
                "contents": [{"parts": [{"text": "x"}]}],
                "toolConfig": {"functionCallingConfig": {"mode": "SOMETIMES"}},
            },
            "toolConfig.functionCallingConfig.mode",
        ),
        (
            {"contents": [{"parts": [{"text": "x"}]}], "tools": [{"functionDeclarations": [{}]}]},
            "tools[0].functionDeclarations[0].name",
        ),
        (
            {
                "contents": [
                    {"role": "user", "parts": [{"functionResponse": {"name": "f", "response": 5}}]}
                ]
            },
            "contents[0].parts[0].functionResponse.response",
        ),
        (
            {
                "contents": [
                    {"role": "model", "parts": [{"functionCall": {"name": "f", "args": []}}]}
                ]
            },
            "contents[0].parts[0].functionCall.args",
        ),
        ({"contents": [{"parts": [{"inlineData": "x"}]}]}, "contents[0].parts[0].inlineData"),
        ({"contents": [{"parts": [{"text": "x"}]}], "systemInstruction": 5}, "systemInstruction"),
        ({"contents": [{"parts": [{"text": "x"}]}], "tools": [5]}, "tools[0]"),
        ({"contents": [{"parts": [{"text": "x"}]}], "generationConfig": 5}, "generationConfig"),
        ({"contents": [5]}, "contents[0]"),
    ],
)
def test_bad_requests_are_400s_naming_the_param(body: dict[str, Any], param: str) -> None:
    with pytest.raises(WireError) as caught:
        gemini.decode_request(body, model="m")

    assert (caught.value.status, caught.value.param) == (400, param)


# --- streams ---------------------------------------------------------------------------------


def test_stream_chunks_are_whole_responses_as_google_sends_them() -> None:
    stream = encode(
        gemini,
        [
            TextDelta("Hel"),
            TextDelta('lo "x"'),
            ToolCallBegin(0, "call_1", "run_shell_command"),
            ToolCallDelta(0, '{"comm'),
            ToolCallDelta(0, 'and":"ls"}'),
            ToolCallEnd(0),
            FinishEvent("tool_calls"),
            UsageEvent(Usage(11, 7, reasoning_tokens=2, cached_input_tokens=4)),
        ],
        input_tokens=11,
    )
    chunks = [json.loads(block[6:]) for block in stream.decode().split("\n\n") if block]

    tail = {
        "usageMetadata": {"promptTokenCount": 11, "totalTokenCount": 11},
        "modelVersion": "model-x",
        "responseId": "id_1",
    }
    assert chunks[0] == {
        "candidates": [
            {"content": {"parts": [{"text": "Hel"}], "role": "model"}, "index": 0},
        ],
        **tail,
    }
    assert chunks[1]["candidates"][0]["content"]["parts"] == [{"text": 'lo "x"'}]
    assert chunks[2]["candidates"][0]["content"]["parts"] == [
        {"functionCall": {"id": "call_1", "name": "run_shell_command", "args": {"command": "ls"}}}
    ]
    assert chunks[3] == {
        "candidates": [
            {
                "content": {"parts": [{"text": ""}], "role": "model"},
                "finishReason": "STOP",
                "index": 0,
            }
        ],
        "usageMetadata": {
            "promptTokenCount": 11,
            "candidatesTokenCount": 5,
            "totalTokenCount": 18,
            "thoughtsTokenCount": 2,
            "cachedContentTokenCount": 4,
        },
        "modelVersion": "model-x",
        "responseId": "id_1",
    }
    assert len(chunks) == 4


def test_without_alt_sse_the_stream_is_one_json_array() -> None:
    encoder = gemini.JsonArrayStreamEncoder("r1", "m", input_tokens=3)
    body = encoder.head() + encoder.text("a") + encoder.text("b")
    body += encoder.encode(FinishEvent("length")) + encoder.close()

    array = json.loads(body)
    assert [c["candidates"][0]["content"]["parts"][0]["text"] for c in array] == ["a", "b", ""]
    assert array[-1]["candidates"][0]["finishReason"] == "MAX_TOKENS"
    broken = gemini.JsonArrayStreamEncoder("r1", "m")
    cut = broken.head() + broken.text("a") + broken.error(WireError(500, "server_error", "boom"))
    assert json.loads(cut)[-1]["error"] == {"code": 500, "message": "boom", "status": "INTERNAL"}


def test_a_mid_stream_error_is_a_bare_json_object() -> None:
    out = gemini.StreamEncoder("r", "m").error(WireError(503, "overloaded", "busy"))

    assert not out.startswith(b"data:")
    assert json.loads(out) == {"error": {"code": 503, "message": "busy", "status": "UNAVAILABLE"}}


def test_googles_own_stream_decodes() -> None:
    chunks = [
        {
            "candidates": [
                {"content": {"parts": [{"text": "thinking…", "thought": True}], "role": "model"}}
            ],
            "usageMetadata": {"promptTokenCount": 8, "totalTokenCount": 8},
            "modelVersion": "gemini-2.5-flash",
            "responseId": "abc",
        },
        {
            "candidates": [
                {
                    "content": {
                        "parts": [{"text": "Hello", "thoughtSignature": "s1"}],
                        "role": "model",
                    }
                }
            ],
            "usageMetadata": {"promptTokenCount": 8, "candidatesTokenCount": 1},
        },
        {
            "candidates": [
                {
                    "content": {
                        "parts": [{"functionCall": {"name": "ls", "args": {"dir": "."}}}],
                        "role": "model",
                    },
                    "finishReason": "STOP",
                    "index": 0,
                }
            ],
            "usageMetadata": {
                "promptTokenCount": 8,
                "candidatesTokenCount": 3,
                "thoughtsTokenCount": 20,
                "totalTokenCount": 31,
            },
        },
    ]
    stream = b"".join(b"data: " + json.dumps(c).encode() + b"\r\n\r\n" for c in chunks)
    decoder = gemini.StreamDecoder()
    events = decode(gemini, [stream])
    summary = summarise(events)

    assert summary.reasoning == "thinking…" and summary.signatures == ["s1"]
    assert summary.text == "Hello"
    assert summary.calls == [("gemini_call_0", "ls", '{"dir":"."}')]
    assert summary.finish == "tool_calls"
    assert summary.usage == (8, 23)
    usage = next(e.usage for e in events if isinstance(e, UsageEvent))
    assert usage.reasoning_tokens == 20
    for chunk in chunks:
        decoder.feed(json.dumps(chunk))
    assert (decoder.done, decoder.closed, decoder.native_finish) == (True, True, "STOP")


def test_blocked_prompts_and_error_events_decode() -> None:
    decoder = gemini.StreamDecoder()
    blocked = decoder.feed(json.dumps({"promptFeedback": {"blockReason": "PROHIBITED_CONTENT"}}))
    assert blocked == [FinishEvent("content_filter")]
    error = {
        "error": {"code": 429, "message": "Resource exhausted", "status": "RESOURCE_EXHAUSTED"}
    }
    assert gemini.StreamDecoder().feed(json.dumps(error)) == [
        ErrorEvent("Resource exhausted", 429, "RESOURCE_EXHAUSTED")
    ]
    assert gemini.StreamDecoder().feed("not json") == []


# --- replies and errors ------------------------------------------------------------------------


def test_a_reply_is_a_generate_content_response() -> None:
    reply = Reply("r1", "m", [TextPart("hi")], "length", Usage(5, 2, extra={"pd_timing": {}}))

    assert gemini.encode_reply(reply) == {
        "candidates": [
            {
                "content": {"parts": [{"text": "hi"}], "role": "model"},
                "finishReason": "MAX_TOKENS",
                "index": 0,
            }
        ],
        "usageMetadata": {
            "promptTokenCount": 5,
            "candidatesTokenCount": 2,
            "totalTokenCount": 7,
            "pd_timing": {},
        },
        "modelVersion": "m",
        "responseId": "r1",
    }


@pytest.mark.parametrize(
    ("word", "finish"),
    [
        ("STOP", "stop"),
        ("MAX_TOKENS", "length"),
        ("SAFETY", "content_filter"),
        ("RECITATION", "content_filter"),
        ("MALFORMED_FUNCTION_CALL", "error"),
        ("FINISH_REASON_UNSPECIFIED", "stop"),
    ],
)
def test_finish_reasons_map_onto_the_neutral_ones(word: str, finish: str) -> None:
    body = {"candidates": [{"content": {"parts": [{"text": "x"}]}, "finishReason": word}]}

    assert gemini.decode_reply(body).finish == finish
    assert gemini.native_finish(body) == word


def test_errors_carry_googles_status_words_and_retry_info() -> None:
    error = WireError(429, "rate_limit", "slow down", headers={"retry-after": "3"})

    assert gemini.encode_error(error) == {
        "error": {
            "code": 429,
            "message": "slow down",
            "status": "RESOURCE_EXHAUSTED",
            "details": [{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "3s"}],
        }
    }
    google = {
        "error": {
            "code": 400,
            "message": "API key not valid. Please pass a valid API key.",
            "status": "INVALID_ARGUMENT",
            "details": [
                {"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "API_KEY_INVALID"}
            ],
        }
    }
    back = gemini.decode_error(400, google)
    assert (back.kind, back.code) == ("invalid_request", "API_KEY_INVALID")
    assert gemini.decode_error(404, [google]).message.startswith("API key not valid")
    assert gemini.decode_error(403, {"error": {"status": "PERMISSION_DENIED"}}).kind == "permission"


def test_request_paths_carry_the_model_and_the_stream_mode() -> None:
    turn = Turn("gemini-2.5-pro", [Message("user", [TextPart("x")])])

    assert gemini.request_path(turn) == "/models/gemini-2.5-pro:generateContent"
    streamed = Turn("m", turn.messages, stream=True)
    assert gemini.request_path(streamed) == "/models/m:streamGenerateContent?alt=sse"
    assert "model" not in gemini.encode_request(turn)


def test_a_call_still_open_at_the_end_goes_out_with_the_finish() -> None:
    """An upstream that finishes without closing its call: the call is not lost."""
    encoder = gemini.StreamEncoder("r", "m")
    out = encoder.encode(ToolCallBegin(0, "c1", "ls")) + encoder.encode(ToolCallDelta(0, "{}"))
    assert out == b""  # held until the call is whole
    last = json.loads(encoder.close().decode()[6:])

    assert last["candidates"][0]["content"]["parts"] == [
        {"functionCall": {"id": "c1", "name": "ls", "args": {}}}
    ]
    assert last["candidates"][0]["finishReason"] == "STOP"
