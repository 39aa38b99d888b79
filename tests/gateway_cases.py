"""Answers the gateway client reads, for the golden tests in test_gateway_reading.py.

`STREAMS` are event streams (each a list of SSE events, as bytes) and `BODIES` non-streamed
JSON answers, per protocol: what real servers send (OpenAI, vLLM, DeepSeek, GLM, the engine,
Codex's test doubles, Anthropic's documented streams) and what broken or hostile ones send
(junk lines, wrong types, error chunks, streams cut short). The expected result of each is in
`fixtures/gateway_reading.json`, first recorded from the gateway's own stream readers before
they moved onto the wire layer, so a difference there is a difference a user sees.
"""

from __future__ import annotations

import json
from typing import Any

from loopback import anthropic_stream, chat_stream, responses_stream, sse_event

PD = {"queue_ms": 1.0, "prefill_ms": 20.0, "decode_ms": 30.0, "ttft_ms": 23.0, "mode": "disagg"}
_C = {"id": "c1", "object": "chat.completion.chunk", "model": "m"}


def _chunk(delta: Any, finish: str | None = None, **extra: Any) -> bytes:
    return sse_event(
        {**_C, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}], **extra}
    )


def _usage(prompt: int = 5, completion: int | None = 2, **extra: Any) -> bytes:
    usage = {"prompt_tokens": prompt, "completion_tokens": completion, **extra}
    return sse_event({**_C, "choices": [], "usage": usage})


DONE = b"data: [DONE]\n\n"


def _call(index: int, id: str | None = None, name: str | None = None, args: str = "") -> dict:
    call: dict[str, Any] = {"index": index, "function": {"arguments": args}}
    if id is not None:
        call.update(id=id, type="function")
        call["function"]["name"] = name
    return call


def _r(kind: str, **fields: Any) -> bytes:
    return sse_event({"type": kind, **fields}, kind)


def _a(kind: str, **fields: Any) -> bytes:
    return sse_event({"type": kind, **fields}, kind)


_MSG_ITEM = {"id": "msg_1", "type": "message", "role": "assistant", "status": "completed"}
_R_CREATED = _r("response.created", response={"id": "r1", "model": "m", "status": "in_progress"})


def _r_completed(output: list | None = None, **response: Any) -> bytes:
    body = {"id": "r1", "status": "completed", "output": output or [], **response}
    return _r("response.completed", response=body)


def _r_text_item(text: str, id: str = "msg_1", index: int = 0) -> dict:
    return {**_MSG_ITEM, "id": id, "content": [{"type": "output_text", "text": text}]}


_A_START = _a(
    "message_start",
    message={"id": "msg_1", "model": "m", "content": [], "usage": {"input_tokens": 7}},
)


def _a_text_block(index: int = 0) -> bytes:
    return _a("content_block_start", index=index, content_block={"type": "text", "text": ""})


def _a_delta(index: int, delta: dict) -> bytes:
    return _a("content_block_delta", index=index, delta=delta)


def _a_stop(stop: str | None = "end_turn", usage: Any = None) -> list[bytes]:
    usage = {"output_tokens": 2} if usage is None else usage
    delta = _a("message_delta", delta={"stop_reason": stop}, usage=usage)
    return [delta, _a("message_stop")]


STREAMS: dict[str, tuple[str, list[bytes]]] = {
    # ------------------------------------------------------------------ chat completions
    "chat-plain": ("chat", chat_stream(["po", "ng"])),
    "chat-no-usage-no-done": ("chat", chat_stream(["a", "b"], usage=False, done=False)),
    "chat-length": ("chat", chat_stream(["a"], finish="length")),
    "chat-tool-calls-finish": ("chat", chat_stream(["a"], finish="tool_calls")),
    "chat-eos": ("chat", chat_stream(["a"], finish="eos")),
    "chat-unknown-finish": ("chat", chat_stream(["a"], finish="abort")),
    "chat-no-finish": ("chat", chat_stream(["half"], finish=None)),
    "chat-role-chunk-first": (
        "chat",
        [_chunk({"role": "assistant", "content": ""}), *chat_stream(["x"])],
    ),
    "chat-deepseek-reasoning": (
        "chat",
        [
            _chunk({"role": "assistant", "reasoning_content": "think"}),
            _chunk({"reasoning_content": " more"}),
            _chunk({"content": "answer"}),
            _chunk({}, "stop"),
            _usage(completion=3),
            DONE,
        ],
    ),
    "chat-glm-reasoning": (
        "chat",
        [_chunk({"reasoning": "hmm"}), _chunk({"content": "ok"}, "stop"), DONE],
    ),
    "chat-reasoning-only": ("chat", [_chunk({"reasoning_content": "only"}, "stop"), DONE]),
    "chat-tool-call": (
        "chat",
        [
            _chunk(
                {"role": "assistant", "content": None, "tool_calls": [_call(0, "call_1", "sh")]}
            ),
            _chunk({"tool_calls": [_call(0, args='{"cmd":')]}),
            _chunk({"tool_calls": [_call(0, args='"ls"}')]}),
            _chunk({}, "tool_calls"),
            DONE,
        ],
    ),
    "chat-usage-every-chunk": (
        "chat",
        [
            _chunk({"content": "a"}, usage={"prompt_tokens": 5, "completion_tokens": 1}),
            _chunk({"content": "b"}, usage={"prompt_tokens": 5, "completion_tokens": 2}),
            _chunk({}, "stop", usage={"prompt_tokens": 5, "completion_tokens": 2}),
            DONE,
        ],
    ),
    "chat-usage-null-every-chunk": (
        "chat",
        [_chunk({"content": "a"}, usage=None), _chunk({}, "stop", usage=None), _usage(5, 1), DONE],
    ),
    "chat-usage-in-finish-chunk": (
        "chat",
        [_chunk({"content": "a"}), _chunk({}, "stop", usage={"completion_tokens": 1}), DONE],
    ),
    "chat-usage-without-completion-tokens": (
        "chat",
        [_chunk({"content": "a"}), _chunk({"content": "b"}, "stop"), _usage(completion=None), DONE],
    ),
    "chat-pd-timing": (
        "chat",
        [_chunk({"content": "a"}), _chunk({}, "stop"), _usage(3, 1, pd_timing=PD), DONE],
    ),
    "chat-message-not-delta": (
        "chat",
        [
            sse_event(
                {**_C, "choices": [{"index": 0, "message": {"content": "whole"}}]},
            ),
            _chunk({}, "stop"),
            DONE,
        ],
    ),
    "chat-first-chunk-without-model": (
        "chat",
        [
            sse_event({"id": "c1", "choices": [{"index": 0, "delta": {"content": "a"}}]}),
            _chunk({}, "stop"),
            DONE,
        ],
    ),
    "chat-error-chunk": (
        "chat",
        [_chunk({"content": "a"}), sse_event({"error": {"message": "upstream exploded"}})],
    ),
    "chat-error-chunk-type-only": ("chat", [sse_event({"error": {"type": "overloaded_error"}})]),
    "chat-error-string": ("chat", [sse_event({"error": "rate limited"})]),
    "chat-junk-lines": (
        "chat",
        [
            b"data: not json\n\n",
            b"data: [1, 2]\n\n",
            b"data: 42\n\n",
            b": keep-alive\n\n",
            *chat_stream(["ok"]),
        ],
    ),
    "chat-done-only": ("chat", [DONE]),
    "chat-big-int": (
        "chat",
        [b'data: {"n": ' + b"9" * 5000 + b"}\n\n", *chat_stream(["ok"])],
    ),
    "chat-deep-json": ("chat", [b"data: " + b"[" * 100_000 + b"\n\n", *chat_stream(["ok"])]),
    "chat-crlf": ("chat", [e.replace(b"\n", b"\r\n") for e in chat_stream(["a", "b"])]),
    "chat-no-trailing-blank-line": ("chat", [*chat_stream(["a"], done=False), b"data: [DONE]"]),
    # ------------------------------------------------------------------ Responses
    "responses-codex-shape": ("responses", responses_stream(["po", "ng"])),
    "responses-done-appended": ("responses", [*responses_stream(["po", "ng"]), DONE]),
    "responses-deltas-without-items": (
        "responses",
        [
            _R_CREATED,
            _r("response.output_text.delta", item_id="msg_1", output_index=0, delta="po"),
            _r("response.output_text.delta", item_id="msg_1", output_index=0, delta="ng"),
            _r_completed(),
        ],
    ),
    "responses-whole-items-only": (
        "responses",
        [
            _r("response.output_item.done", output_index=0, item=_r_text_item("pong")),
            _r_completed(usage={"input_tokens": 3, "output_tokens": 1}),
        ],
    ),
    "responses-completed-only-with-output": (
        "responses",
        [_r_completed([_r_text_item("pong")], model="m2")],
    ),
    "responses-deltas-and-completed-output": (
        "responses",
        [
            _r("response.output_text.delta", item_id="msg_1", delta="po"),
            _r("response.output_text.delta", item_id="msg_1", delta="ng"),
            _r_completed([_r_text_item("pong")]),
        ],
    ),
    "responses-full": (
        "responses",
        [
            _R_CREATED,
            _r("response.in_progress", response={"id": "r1", "model": "m"}),
            _r(
                "response.output_item.added",
                output_index=0,
                item={"id": "rs_1", "type": "reasoning"},
            ),
            _r("response.reasoning_summary_text.delta", item_id="rs_1", output_index=0, delta="th"),
            _r(
                "response.output_item.done",
                output_index=0,
                item={"id": "rs_1", "type": "reasoning", "summary": [{"text": "th"}]},
            ),
            _r("response.output_item.added", output_index=1, item={**_MSG_ITEM, "content": []}),
            _r("response.output_text.delta", item_id="msg_1", output_index=1, delta="an"),
            _r("response.output_text.delta", item_id="msg_1", output_index=1, delta="swer"),
            _r("response.output_item.done", output_index=1, item=_r_text_item("answer")),
            _r(
                "response.output_item.added",
                output_index=2,
                item={"id": "fc_1", "type": "function_call", "call_id": "call_1", "name": "sh"},
            ),
            _r("response.function_call_arguments.delta", item_id="fc_1", delta='{"cmd":'),
            _r("response.function_call_arguments.delta", item_id="fc_1", delta='"ls"}'),
            _r(
                "response.output_item.done",
                output_index=2,
                item={
                    "id": "fc_1",
                    "type": "function_call",
                    "call_id": "call_1",
                    "name": "sh",
                    "arguments": '{"cmd":"ls"}',
                },
            ),
            _r_completed(usage={"input_tokens": 9, "output_tokens": 4, "pd_timing": PD}),
        ],
    ),
    "responses-reasoning-only-item": (
        "responses",
        [
            _r(
                "response.output_item.done",
                output_index=0,
                item={"id": "rs_1", "type": "reasoning", "summary": [{"text": "silent"}]},
            ),
            _r("response.output_item.done", output_index=1, item=_r_text_item("hi", "msg_2")),
            _r_completed(),
        ],
    ),
    "responses-incomplete": (
        "responses",
        [
            _r("response.output_text.delta", delta="po"),
            _r(
                "response.incomplete",
                response={
                    "status": "incomplete",
                    "incomplete_details": {"reason": "max_output_tokens"},
                    "output": [_r_text_item("po")],
                    "usage": {"input_tokens": 3, "output_tokens": 1},
                },
            ),
        ],
    ),
    "responses-incomplete-no-reason": (
        "responses",
        [_r("response.output_text.delta", delta="po"), _r("response.incomplete", response={})],
    ),
    "responses-failed": (
        "responses",
        [
            _r("response.output_text.delta", delta="po"),
            _r("response.failed", response={"error": {"code": "x", "message": "model crashed"}}),
        ],
    ),
    "responses-error-event": (
        "responses",
        [_r("error", code="rate_limit_exceeded", message="slow down")],
    ),
    "responses-error-event-no-message": ("responses", [_r("error", code="server_error")]),
    "responses-truncated": ("responses", responses_stream(["half"], completed=False)),
    "responses-model-only-on-completed": (
        "responses",
        [
            _r("response.output_item.done", output_index=0, item=_r_text_item("hi")),
            _r_completed(model="late-model"),
        ],
    ),
    "responses-event-lines-missing": (
        "responses",
        [
            sse_event({"type": "response.output_text.delta", "delta": "hi"}),
            sse_event({"type": "response.output_item.done", "item": _r_text_item("hi")}),
            sse_event({"type": "response.completed", "response": {"status": "completed"}}),
        ],
    ),
    "responses-junk": (
        "responses",
        [b"data: nope\n\n", b"data: []\n\n", *responses_stream(["ok"])],
    ),
    # ------------------------------------------------------------------ Anthropic Messages
    "anthropic-claude-shape": ("anthropic", anthropic_stream(["po", "ng"])),
    "anthropic-max-tokens": ("anthropic", anthropic_stream(["po"], stop="max_tokens")),
    "anthropic-stop-sequence": ("anthropic", anthropic_stream(["po"], stop="stop_sequence")),
    "anthropic-pause-turn": ("anthropic", anthropic_stream(["po"], stop="pause_turn")),
    "anthropic-truncated": ("anthropic", anthropic_stream(["half"], stop=None)),
    "anthropic-no-message-stop": ("anthropic", anthropic_stream(["po"])[:-1]),
    "anthropic-thinking-and-tool": (
        "anthropic",
        [
            _A_START,
            _a(
                "content_block_start",
                index=0,
                content_block={"type": "thinking", "thinking": "", "signature": ""},
            ),
            _a_delta(0, {"type": "thinking_delta", "thinking": "let me"}),
            _a_delta(0, {"type": "signature_delta", "signature": "sig"}),
            _a("content_block_stop", index=0),
            _a_text_block(1),
            _a_delta(1, {"type": "text_delta", "text": "running"}),
            _a("content_block_stop", index=1),
            _a(
                "content_block_start",
                index=2,
                content_block={"type": "tool_use", "id": "tu_1", "name": "Bash", "input": {}},
            ),
            _a_delta(2, {"type": "input_json_delta", "partial_json": '{"command":'}),
            _a_delta(2, {"type": "input_json_delta", "partial_json": '"ls"}'}),
            _a("content_block_stop", index=2),
            *_a_stop("tool_use", {"output_tokens": 12, "pd_timing": PD}),
        ],
    ),
    "anthropic-delta-without-usage": (
        "anthropic",
        [
            _A_START,
            _a_text_block(),
            _a_delta(0, {"type": "text_delta", "text": "hi"}),
            _a("message_delta", delta={"stop_reason": "end_turn"}),
            _a("message_stop"),
        ],
    ),
    "anthropic-error": (
        "anthropic",
        [
            _A_START,
            _a("error", error={"type": "overloaded_error", "message": "Overloaded"}),
        ],
    ),
    "anthropic-error-no-message": ("anthropic", [_a("error", error={"type": "api_error"})]),
    "anthropic-event-lines-missing": (
        "anthropic",
        [
            sse_event({"type": "message_start", "message": {"model": "m"}}),
            sse_event(
                {"type": "content_block_delta", "delta": {"type": "text_delta", "text": "x"}}
            ),
            sse_event({"type": "message_delta", "delta": {"stop_reason": "end_turn"}}),
            sse_event({"type": "message_stop"}),
        ],
    ),
    "anthropic-junk": (
        "anthropic",
        [b"event: message_start\ndata: {oops\n\n", *anthropic_stream(["ok"])],
    ),
}

# Wrong types where an object or a string belongs: a hostile or broken server. The readers
# must not crash on any of them (the gateway's readers before the wire layer did on some).
MALFORMED_STREAMS: dict[str, tuple[str, list[bytes]]] = {
    "chat-choices-string": ("chat", [sse_event({"choices": "abc"}), *chat_stream(["ok"])]),
    "chat-choice-string": ("chat", [sse_event({"choices": ["x"]}), *chat_stream(["ok"])]),
    "chat-delta-list": (
        "chat",
        [sse_event({"choices": [{"delta": [1], "finish_reason": None}]}), *chat_stream(["ok"])],
    ),
    "chat-usage-details-list": (
        "chat",
        [
            *chat_stream(["ok"], usage=False, done=False),
            _usage(completion_tokens_details=[1]),
            DONE,
        ],
    ),
    "chat-tool-calls-string": (
        "chat",
        [
            _chunk({"tool_calls": "x"}),
            _chunk({"tool_calls": [{"function": "y"}]}),
            _chunk({}, "stop"),
        ],
    ),
    "responses-type-number": ("responses", [sse_event({"type": 7}), *responses_stream(["ok"])]),
    "responses-response-string": (
        "responses",
        [_r("response.created", response="r"), *responses_stream(["ok"])],
    ),
    "responses-item-string": (
        "responses",
        [_r("response.output_item.done", item="x"), *responses_stream(["ok"])],
    ),
    "responses-content-string": (
        "responses",
        [
            _r("response.output_item.done", item={"type": "message", "content": "x"}),
            *responses_stream(["ok"]),
        ],
    ),
    "responses-completed-response-list": (
        "responses",
        [_r("response.output_text.delta", delta="ok"), _r("response.completed", response=[1])],
    ),
    "anthropic-delta-list": (
        "anthropic",
        [_a("content_block_delta", index=0, delta=[1]), *anthropic_stream(["ok"])],
    ),
    "anthropic-message-string": (
        "anthropic",
        [_a("message_start", message="m"), *anthropic_stream(["ok"])[1:]],
    ),
    "anthropic-block-string": (
        "anthropic",
        [_a("content_block_start", index=0, content_block="b"), *anthropic_stream(["ok"])],
    ),
    "anthropic-message-delta-delta-string": (
        "anthropic",
        [
            *anthropic_stream(["ok"], stop=None),
            _a("message_delta", delta="d", usage=3),
            _a("message_stop"),
        ],
    ),
}

BODIES: dict[str, tuple[str, Any]] = {
    "chat-body": (
        "chat",
        {
            "model": "m",
            "choices": [
                {"message": {"role": "assistant", "content": "pong"}, "finish_reason": "stop"}
            ],
            "usage": {"prompt_tokens": 3, "completion_tokens": 1, "pd_timing": PD},
        },
    ),
    "chat-body-no-usage-length": (
        "chat",
        {"choices": [{"message": {"content": "po"}, "finish_reason": "length"}]},
    ),
    "chat-body-reasoning": (
        "chat",
        {
            "model": "m",
            "choices": [
                {
                    "message": {"reasoning_content": "think", "content": "ok"},
                    "finish_reason": "stop",
                }
            ],
        },
    ),
    "chat-body-reasoning-only": (
        "chat",
        {"choices": [{"message": {"reasoning_content": "think"}, "finish_reason": "stop"}]},
    ),
    "responses-body": (
        "responses",
        {
            "id": "r1",
            "status": "completed",
            "model": "m",
            "output": [_r_text_item("pong")],
            "usage": {"input_tokens": 3, "output_tokens": 2},
        },
    ),
    "responses-body-incomplete": (
        "responses",
        {
            "status": "incomplete",
            "incomplete_details": {"reason": "max_output_tokens"},
            "output": [_r_text_item("po")],
        },
    ),
    "anthropic-body": (
        "anthropic",
        {
            "type": "message",
            "model": "m",
            "content": [{"type": "text", "text": "po"}, {"type": "text", "text": "ng"}],
            "stop_reason": "end_turn",
            "usage": {"input_tokens": 3, "output_tokens": 2},
        },
    ),
    "anthropic-body-max-tokens": (
        "anthropic",
        {"content": [{"type": "text", "text": "po"}], "stop_reason": "max_tokens"},
    ),
    "anthropic-body-no-stop": ("anthropic", {"content": [{"type": "text", "text": "po"}]}),
}

# 2xx bodies that carry an error, or wrong types (the readers before the wire layer raised
# an internal exception on some: a traceback for the user).
MALFORMED_BODIES: dict[str, tuple[str, Any]] = {
    "chat-body-error": ("chat", {"error": {"message": "quota exceeded", "type": "insufficient"}}),
    "chat-body-choices-dict": ("chat", {"choices": {"a": 1}}),
    "chat-body-message-string": ("chat", {"choices": [{"message": "x"}]}),
    "responses-body-failed": (
        "responses",
        {"status": "failed", "error": {"code": "server_error", "message": "model crashed"}},
    ),
    "responses-body-output-string": ("responses", {"status": "completed", "output": "x"}),
    "anthropic-body-error": (
        "anthropic",
        {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}},
    ),
    "anthropic-body-content-string": ("anthropic", {"content": "x", "stop_reason": "end_turn"}),
}


def body_bytes(payload: Any) -> bytes:
    return json.dumps(payload).encode()


# --------------------------------------------------------------------------- reading them


def _client(protocol: str, answer: Any) -> Any:
    import httpx

    from notes_cli.clients.endpoint import Endpoint
    from notes_cli.gateway import GatewayClient

    client_name = {"chat": "openai", "responses": "codex", "anthropic": "claude"}[protocol]
    base = "https://gw.example" + ("/anthropic" if protocol == "anthropic" else "/v1")
    endpoint = Endpoint(client_name, base, protocol, model="m", key="sk-x")  # type: ignore[arg-type]
    return GatewayClient(endpoint, timeout=5, transport=httpx.MockTransport(answer))


def _summary(result: Any) -> dict[str, Any]:
    timings = result.timings
    return {
        "status": result.status,
        "text": result.text,
        "finish_reason": result.finish_reason,
        "completed": result.completed,
        "output_tokens": result.output_tokens,
        "input_tokens": result.input_tokens,
        "tokens_source": result.tokens_source,
        "model": result.model,
        "pd_timing": result.pd_timing,
        "events": result.raw_events_count,
        "reasoning_chars": result.reasoning_chars,
        "client_issues": result.client_issues,
        "output_chunks": len(timings.chunk_ms),
        "ttft": timings.ttft_ms is not None,
    }


def _outcome(call: Any) -> dict[str, Any]:
    from notes_cli.gateway import errors

    try:
        return _summary(call())
    except errors.GatewayError as exc:
        partial = getattr(exc, "partial", None)
        return {
            "error": type(exc).__name__,
            "message": str(exc),
            "partial": _summary(partial) if partial is not None else None,
        }


def stream_outcome(protocol: str, chunks: list[bytes]) -> dict[str, Any]:
    """What `GatewayClient.stream` makes of these body pieces (each one network read)."""
    import httpx

    class Body(httpx.SyncByteStream):
        def __iter__(self) -> Any:
            yield from chunks

    def answer(_request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, stream=Body())

    with _client(protocol, answer) as client:
        return _outcome(lambda: client.stream("hi"))


def body_outcome(protocol: str, payload: Any) -> dict[str, Any]:
    """What `GatewayClient.complete` makes of this JSON answer."""
    import httpx

    def answer(_request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, json=payload)

    with _client(protocol, answer) as client:
        return _outcome(lambda: client.complete("hi"))


def record() -> dict[str, Any]:
    out: dict[str, Any] = {"streams": {}, "bodies": {}}
    for name, (protocol, events) in {**STREAMS, **MALFORMED_STREAMS}.items():
        try:
            out["streams"][name] = stream_outcome(protocol, events)
        except Exception as exc:  # the old readers crashed on some malformed input
            out["streams"][name] = {"crash": type(exc).__name__}
    for name, (protocol, payload) in {**BODIES, **MALFORMED_BODIES}.items():
        try:
            out["bodies"][name] = body_outcome(protocol, payload)
        except Exception as exc:
            out["bodies"][name] = {"crash": type(exc).__name__}
    return out


if __name__ == "__main__":
    import sys

    print(json.dumps(record(), indent=1, sort_keys=True, ensure_ascii=False))
    sys.exit(0)
