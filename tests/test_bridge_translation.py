"""The bridge against scripted chat upstreams: what the client receives for text, reasoning,
parallel tool calls, custom tools, dropped tools, and every way an upstream fails."""

from __future__ import annotations

import asyncio
import json
import logging
import threading
import time
from typing import Any

import httpx
import pytest
from bridge_support import (
    UPSTREAM_KEY,
    asyncio_upstream,
    bridge_to,
    chunk,
    read_request,
    sse_payloads,
    tool_call_stream,
    usage_chunk,
)
from loopback import LoopbackServer, Reply, chat_stream, sse_event

CODEX_TOOLS = [
    {
        "type": "function",
        "name": "exec_command",
        "description": "run a command",
        "parameters": {"type": "object", "properties": {"cmd": {"type": "string"}}},
    },
    {"type": "web_search", "external_web_access": False},
    {"type": "custom", "name": "apply_patch", "description": "patch files"},
]


def responses_body(**extra: Any) -> dict[str, Any]:
    body = {
        "model": "gpt-5.5",
        "stream": True,
        "input": [{"role": "user", "content": [{"type": "input_text", "text": "hi"}]}],
        "store": False,
    }
    return {**body, **extra}


def messages_body(**extra: Any) -> dict[str, Any]:
    body = {
        "model": "claude-x",
        "max_tokens": 100,
        "stream": True,
        "messages": [{"role": "user", "content": "hi"}],
    }
    return {**body, **extra}


def post(bridge: Any, path: str, body: dict[str, Any], **kw: Any) -> httpx.Response:
    return httpx.post(bridge.config.root_url + path, json=body, timeout=20, **kw)


# --------------------------------------------------------------------------- translation


def test_text_and_reasoning_become_a_reasoning_item_and_a_message() -> None:
    events = [
        chunk({"role": "assistant", "reasoning_content": "think "}),
        chunk({"reasoning_content": "hard"}),
        chunk({"content": "po"}),
        chunk({"content": "ng"}),
        chunk({}, "stop"),
        usage_chunk(),
        b"data: [DONE]\n\n",
    ]
    with LoopbackServer(Reply.sse(events)) as upstream, bridge_to(upstream.url) as bridge:
        reply = post(bridge, "/v1/responses", responses_body())
        sent = upstream.requests[0].json()
    assert reply.status_code == 200
    assert reply.headers["content-type"].startswith("text/event-stream")
    payloads = sse_payloads(reply.content)
    items = [p["item"] for p in payloads if p["type"] == "response.output_item.done"]
    assert [i["type"] for i in items] == ["reasoning", "message"]
    assert payloads[-1]["type"] == "response.completed"
    assert payloads[-1]["response"]["usage"]["output_tokens"] == 3
    text = "".join(p["delta"] for p in payloads if p["type"] == "response.output_text.delta")
    assert text == "pong"
    assert sent["stream"] is True and sent["model"] == "gpt-5.5"
    assert sent["messages"][-1]["role"] == "user"


def test_reasoning_becomes_an_anthropic_thinking_block() -> None:
    events = [
        chunk({"role": "assistant", "reasoning": "mull"}),
        chunk({"content": "pong"}),
        chunk({}, "stop"),
        usage_chunk(),
        b"data: [DONE]\n\n",
    ]
    with LoopbackServer(Reply.sse(events)) as upstream, bridge_to(upstream.url) as bridge:
        reply = post(bridge, "/v1/messages?beta=true", messages_body())
    payloads = sse_payloads(reply.content)
    starts = [p["content_block"]["type"] for p in payloads if p["type"] == "content_block_start"]
    assert starts == ["thinking", "text"]
    assert payloads[-1]["type"] == "message_stop"
    delta = [p for p in payloads if p["type"] == "message_delta"][0]
    assert delta["delta"]["stop_reason"] == "end_turn"


CALLS = [
    ("call_a", "exec_command", json.dumps({"cmd": "echo one"})),
    ("call_b", "exec_command", json.dumps({"cmd": "echo two && ls -la /tmp"})),
]


def test_parallel_tool_calls_become_function_call_items_with_argument_deltas() -> None:
    with (
        LoopbackServer(Reply.sse(tool_call_stream(CALLS))) as upstream,
        bridge_to(upstream.url) as bridge,
    ):
        reply = post(bridge, "/v1/responses", responses_body(tools=CODEX_TOOLS))
        sent = upstream.requests[0].json()
    payloads = sse_payloads(reply.content)
    items = [p["item"] for p in payloads if p["type"] == "response.output_item.done"]
    assert [(i["type"], i["call_id"], i["arguments"]) for i in items] == [
        ("function_call", call_id, arguments) for call_id, _, arguments in CALLS
    ]
    deltas = [p for p in payloads if p["type"] == "response.function_call_arguments.delta"]
    assert len(deltas) >= 4  # streamed as they came, not buffered into one
    # web_search has no chat form: not sent; apply_patch (custom) goes as a function
    names = [t["function"]["name"] for t in sent["tools"]]
    assert names == ["exec_command", "apply_patch"]


def test_parallel_tool_calls_become_anthropic_tool_use_blocks() -> None:
    tools = [
        {
            "name": "Bash",
            "description": "run",
            "input_schema": {"type": "object", "properties": {"command": {"type": "string"}}},
        }
    ]
    with (
        LoopbackServer(Reply.sse(tool_call_stream(CALLS))) as upstream,
        bridge_to(upstream.url) as bridge,
    ):
        reply = post(bridge, "/v1/messages", messages_body(tools=tools))
    payloads = sse_payloads(reply.content)
    blocks = [p["content_block"] for p in payloads if p["type"] == "content_block_start"]
    assert [(b["type"], b["id"]) for b in blocks] == [
        ("tool_use", "call_a"),
        ("tool_use", "call_b"),
    ]
    for index, (_, _, arguments) in enumerate(CALLS):
        pieces = [
            p["delta"]["partial_json"]
            for p in payloads
            if p["type"] == "content_block_delta" and p["index"] == index
        ]
        assert json.loads("".join(pieces)) == json.loads(arguments)
    delta = [p for p in payloads if p["type"] == "message_delta"][0]
    assert delta["delta"]["stop_reason"] == "tool_use"


def test_a_custom_tool_call_comes_back_as_a_custom_call_with_its_raw_input() -> None:
    patch = "*** Begin Patch\n*** End Patch\n"
    calls = [("call_p", "apply_patch", json.dumps({"input": patch}))]
    with (
        LoopbackServer(Reply.sse(tool_call_stream(calls))) as upstream,
        bridge_to(upstream.url) as bridge,
    ):
        reply = post(bridge, "/v1/responses", responses_body(tools=CODEX_TOOLS))
    items = [
        p["item"] for p in sse_payloads(reply.content) if p["type"] == "response.output_item.done"
    ]
    assert items[0]["type"] == "custom_tool_call" and items[0]["input"] == patch


def test_a_tool_history_goes_upstream_as_chat_tool_messages() -> None:
    history = [
        {"role": "user", "content": [{"type": "input_text", "text": "run: echo hi"}]},
        {
            "type": "function_call",
            "call_id": "call_1",
            "name": "exec_command",
            "arguments": '{"cmd":"echo hi"}',
        },
        {"type": "function_call_output", "call_id": "call_1", "output": "hi"},
    ]
    with (
        LoopbackServer(Reply.sse(chat_stream(["done"]))) as upstream,
        bridge_to(upstream.url) as bridge,
    ):
        post(bridge, "/v1/responses", responses_body(input=history, tools=CODEX_TOOLS[:1]))
        sent = upstream.requests[0].json()["messages"]
    assert [m["role"] for m in sent] == ["user", "assistant", "tool"]
    assert sent[1]["tool_calls"][0]["id"] == "call_1"
    assert sent[2]["tool_call_id"] == "call_1" and sent[2]["content"] == "hi"


@pytest.mark.parametrize("stream", [True, False])
def test_a_conversation_too_large_to_store_is_not_stored(
    stream: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    from notes_cli.bridge import app

    words = ["a" * 1000, "b"]
    whole = {
        "id": "c1",
        "object": "chat.completion",
        "model": "m",
        "choices": [
            {"index": 0, "message": {"role": "assistant", "content": "".join(words)},
             "finish_reason": "stop"}
        ],
    }  # fmt: skip
    answer = Reply.sse(chat_stream(words)) if stream else Reply.json(whole)
    ask = responses_body(store=True, stream=stream)
    with LoopbackServer(answer) as upstream, bridge_to(upstream.url) as bridge:
        kept = post(bridge, "/v1/responses", ask)
        monkeypatch.setattr(app, "MAX_BODY_BYTES", 1000)  # under the answer alone
        large = post(bridge, "/v1/responses", ask)
        for first, fits in ((kept, True), (large, False)):
            reply = sse_payloads(first.content)[-1]["response"] if stream else first.json()
            again = post(bridge, "/v1/responses", {**ask, "previous_response_id": reply["id"]})
            assert (again.status_code == 200) is fits, again.text
    assert "previous_response_id" in again.text and "MiB" in again.text


def test_dropped_tool_types_are_named_in_one_log_line(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="pdnotes.bridge")
    namespace = {"type": "namespace", "name": "mcp_files", "tools": []}
    with (
        LoopbackServer(Reply.sse(chat_stream(["ok"]))) as upstream,
        bridge_to(upstream.url) as bridge,
    ):
        for _ in range(3):  # Codex sends the same tools every turn
            post(bridge, "/v1/responses", responses_body(tools=[*CODEX_TOOLS, namespace]))
    lines = [r.getMessage() for r in caplog.records if "cannot carry" in r.getMessage()]
    assert len(lines) == 1
    assert "web_search" in lines[0] and "namespace" in lines[0]


def test_model_map_renames_the_model_upstream_only() -> None:
    with (
        LoopbackServer(Reply.sse(chat_stream(["ok"]))) as upstream,
        bridge_to(upstream.url, model_map={"gpt-5.5": "glm-4.6"}) as bridge,
    ):
        reply = post(bridge, "/v1/responses", responses_body())
        assert upstream.requests[0].json()["model"] == "glm-4.6"
    completed = sse_payloads(reply.content)[-1]
    assert completed["response"]["model"] == "gpt-5.5"


# --------------------------------------------------------------------------- failures


@pytest.mark.parametrize("status", [401, 429, 500])
def test_upstream_errors_keep_status_and_message_with_the_key_scrubbed(status: int) -> None:
    said = f"bad things ({status}) for key {UPSTREAM_KEY}"
    error = {"message": said, "type": "x", "code": UPSTREAM_KEY}  # a code is its words too
    upstream_reply = Reply.json({"error": error}, status=status)
    with LoopbackServer(upstream_reply) as upstream, bridge_to(upstream.url) as bridge:
        codex = post(bridge, "/v1/responses", responses_body())
        claude = post(bridge, "/v1/messages", messages_body())
    assert codex.status_code == status and claude.status_code == status
    assert f"bad things ({status})" in codex.json()["error"]["message"]
    assert claude.json()["type"] == "error"
    assert f"bad things ({status})" in claude.json()["error"]["message"]
    assert UPSTREAM_KEY not in codex.text + claude.text
    assert UPSTREAM_KEY[-4:] in codex.text  # masked, not removed: the user can tell which key


def test_an_error_event_mid_stream_reaches_the_client_scrubbed_and_ends_the_stream() -> None:
    # after its 200 the upstream reports an error in the stream, echoing the key it was sent
    echo = {"error": {"message": f"upstream rejected key {UPSTREAM_KEY}", "code": UPSTREAM_KEY}}
    events = [chunk({"content": "po"}), sse_event(echo), b"data: [DONE]\n\n"]
    with LoopbackServer(Reply.sse(events)) as upstream, bridge_to(upstream.url) as bridge:
        codex = post(bridge, "/v1/responses", responses_body())
        claude = post(bridge, "/v1/messages", messages_body())
    assert UPSTREAM_KEY not in codex.text + claude.text
    failed = [p for p in sse_payloads(codex.content) if p["type"] == "response.failed"]
    [failure] = failed  # one: not a second "ended before its finish" after it
    assert failure["response"]["error"]["message"].startswith("upstream rejected key sk-…")
    assert sse_payloads(codex.content)[-1]["type"] == "response.failed"
    errors = [p for p in sse_payloads(claude.content) if p["type"] == "error"]
    assert len(errors) == 1 and UPSTREAM_KEY[-4:] in errors[0]["error"]["message"]
    assert sse_payloads(claude.content)[-1]["type"] == "error"


def test_a_dead_upstream_is_a_502_naming_its_url() -> None:
    with LoopbackServer(Reply()) as gone:
        url = gone.url
    with bridge_to(url) as bridge:
        reply = post(bridge, "/v1/responses", responses_body())
    assert reply.status_code == 502
    assert url in reply.json()["error"]["message"]


def test_a_malformed_chunk_ends_the_stream_with_response_failed() -> None:
    events = [chunk({"content": "po"}), b"data: {not json\n\n", chunk({"content": "ng"})]
    with LoopbackServer(Reply.sse(events)) as upstream, bridge_to(upstream.url) as bridge:
        reply = post(bridge, "/v1/responses", responses_body())
    payloads = sse_payloads(reply.content)
    assert payloads[-1]["type"] == "response.failed"
    assert upstream.url in payloads[-1]["response"]["error"]["message"]


def test_a_stream_cut_mid_event_is_an_anthropic_error_event() -> None:
    events = [chunk({"content": "po"}), b'data: {"choices": [{"delta": {"cont']
    with (
        LoopbackServer(Reply.sse(events, abort=True)) as upstream,
        bridge_to(upstream.url) as bridge,
    ):
        reply = post(bridge, "/v1/messages", messages_body())
    payloads = sse_payloads(reply.content)
    assert payloads[-1]["type"] == "error"
    assert not any(p["type"] == "message_stop" for p in payloads)


def test_a_stream_that_ends_without_a_finish_is_a_failure_not_a_success() -> None:
    events = [chunk({"content": "po"})]
    with LoopbackServer(Reply.sse(events)) as upstream, bridge_to(upstream.url) as bridge:
        reply = post(bridge, "/v1/responses", responses_body())
    assert sse_payloads(reply.content)[-1]["type"] == "response.failed"


def test_a_stalled_upstream_is_bounded_by_the_idle_timeout() -> None:
    events = [chunk({"content": "po"}), 30.0]
    with (
        LoopbackServer(Reply.sse(events)) as upstream,
        bridge_to(upstream.url, idle_timeout=0.5) as bridge,
    ):
        start = time.monotonic()
        reply = post(bridge, "/v1/responses", responses_body())
        elapsed = time.monotonic() - start
    assert elapsed < 5
    assert sse_payloads(reply.content)[-1]["type"] == "response.failed"


def test_a_client_disconnect_cancels_the_upstream_request() -> None:
    saw_eof = threading.Event()

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        writer.write(
            b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
            b"transfer-encoding: chunked\r\n\r\n"
        )
        for _ in range(200):  # a long answer, one event every 50 ms
            event = chunk({"content": "tok "})
            writer.write(b"%x\r\n%s\r\n" % (len(event), event))
            await writer.drain()
            try:
                await asyncio.wait_for(reader.read(1), 0.05)
                break  # EOF: the bridge hung up
            except TimeoutError:
                continue
        saw_eof.set()
        writer.close()

    with asyncio_upstream(handle, lifetime_s=20) as url, bridge_to(url) as bridge:
        with httpx.stream(
            "POST", bridge.config.root_url + "/v1/responses", json=responses_body(), timeout=10
        ) as reply:
            for line in reply.iter_lines():
                if "output_text.delta" in line:
                    break  # the client goes away mid-answer
        assert saw_eof.wait(3), "the upstream never saw the bridge hang up"


# --------------------------------------------------------------------------- auth, routes


def test_a_local_key_is_required_when_configured() -> None:
    with (
        LoopbackServer(Reply.sse(chat_stream(["ok"]))) as upstream,
        bridge_to(upstream.url, local_key="local-secret-key-1") as bridge,
    ):
        refused = post(bridge, "/v1/responses", responses_body())
        refused_claude = post(bridge, "/v1/messages", messages_body())
        ok = post(
            bridge,
            "/v1/responses",
            responses_body(),
            headers={"authorization": "Bearer local-secret-key-1"},
        )
        ok_claude = post(
            bridge, "/v1/messages", messages_body(), headers={"x-api-key": "local-secret-key-1"}
        )
        assert len(upstream.requests) == 2  # the refused ones never went upstream
    assert refused.status_code == 401 and refused_claude.status_code == 401
    assert refused_claude.json()["error"]["type"] == "authentication_error"
    assert ok.status_code == 200 and ok_claude.status_code == 200


def test_a_bad_body_is_a_400_in_the_clients_format_and_never_goes_upstream() -> None:
    with (
        LoopbackServer(Reply.sse(chat_stream(["ok"]))) as upstream,
        bridge_to(upstream.url) as bridge,
    ):
        reply = post(bridge, "/v1/messages", {"model": "m", "messages": "nope"})
        assert upstream.requests == []
    assert reply.status_code == 400 and reply.json()["type"] == "error"


def test_a_doubled_v1_404_says_what_the_base_url_should_be() -> None:
    with LoopbackServer(Reply()) as upstream, bridge_to(upstream.url) as bridge:
        reply = post(bridge, "/v1/v1/messages", messages_body(), headers={"x-api-key": "k"})
    assert reply.status_code == 404
    assert "http://HOST:PORT" in reply.json()["error"]["message"]
