"""The bridge never shows its upstream key to its clients (issue 36).

The bridge holds the upstream's key; its clients do not. An upstream that echoes the
`Authorization` header it got into its answer must not hand that key to them: the key is masked
in every protocol the bridge serves (Responses, Anthropic Messages, chat pass-through, Gemini),
streamed and whole, also when the stream splits it across events at every position, and the
rest of the answer arrives unchanged. A real bridge on a loopback port, in front of a real
loopback upstream that echoes the header it got.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx
import pytest
from bridge_support import UPSTREAM_KEY, asyncio_upstream, bridge_to, read_request, sse_payloads

from notes_cli.secrets import mask

MODEL = "m-1"
TAIL = " sk-up"  # the answer ends with what could begin the key, and is not it: shown as is


def _answer(key: str) -> str:
    return f"Your request carried Bearer {key}. Again: {key}! The end.{TAIL}"


def _echoing(piece: int):
    """An upstream that answers with the `Authorization` value it got, streamed in pieces of
    `piece` characters (so the key is split across events), or whole."""

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        request = await read_request(reader)
        head, _, body = request.partition(b"\r\n\r\n")
        auth = ""
        for line in head.decode().split("\r\n"):
            name, _, value = line.partition(":")
            if name.lower() == "authorization":
                auth = value.strip().removeprefix("Bearer ")
        text = _answer(auth)
        if json.loads(body).get("stream"):
            pieces = [text[i : i + piece] for i in range(0, len(text), piece)]
            events = [_chunk({"role": "assistant", "content": ""})]
            events += [_chunk({"content": p}) for p in pieces]
            events += [_chunk({}, finish="stop"), b"data: [DONE]\n\n"]
            payload = b"".join(events)
            kind = b"text/event-stream"
        else:
            message = {"role": "assistant", "content": text}
            choice = {"index": 0, "message": message, "finish_reason": "stop"}
            usage = {"prompt_tokens": 3, "completion_tokens": 9, "total_tokens": 12}
            whole = {"id": "c1", "object": "chat.completion", "model": MODEL}
            payload = json.dumps({**whole, "choices": [choice], "usage": usage}).encode()
            kind = b"application/json"
        writer.write(
            b"HTTP/1.1 200 OK\r\ncontent-type: " + kind + b"\r\ncontent-length: "
            + str(len(payload)).encode() + b"\r\nconnection: close\r\n\r\n" + payload
        )  # fmt: skip
        await writer.drain()
        writer.close()

    return handle


def _chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
    choice = {"index": 0, "delta": delta, "finish_reason": finish}
    body = {"id": "c1", "object": "chat.completion.chunk", "model": MODEL, "choices": [choice]}
    return b"data: " + json.dumps(body).encode() + b"\n\n"


def _ask(root: str, protocol: str, stream: bool) -> tuple[bytes, str]:
    """Ask the bridge once; (the answer's bytes, the answer's text as the client reads it)."""
    said = [{"role": "user", "content": "hi"}]
    if protocol == "responses":
        url, body = f"{root}/v1/responses", {"model": MODEL, "input": "hi", "stream": stream}
    elif protocol == "anthropic":
        url = f"{root}/v1/messages"
        body = {"model": MODEL, "max_tokens": 64, "messages": said, "stream": stream}
    elif protocol == "chat":
        url, body = f"{root}/v1/chat/completions", {"model": MODEL, "messages": said}
        body["stream"] = stream
    else:
        method = "streamGenerateContent?alt=sse" if stream else "generateContent"
        url = f"{root}/v1beta/models/{MODEL}:{method}"
        body = {"contents": [{"role": "user", "parts": [{"text": "hi"}]}]}
    headers = {"anthropic-version": "2023-06-01"} if protocol == "anthropic" else {}
    reply = httpx.post(url, json=body, headers=headers, timeout=20)
    assert reply.status_code == 200, reply.text
    raw = reply.content
    return raw, (_streamed_text if stream else _whole_text)(protocol, raw)


def _streamed_text(protocol: str, raw: bytes) -> str:
    out = []
    for event in sse_payloads(raw):
        if protocol == "responses" and event.get("type") == "response.output_text.delta":
            out.append(event["delta"])
        elif protocol == "anthropic" and event.get("type") == "content_block_delta":
            out.append(event["delta"].get("text", ""))
        elif protocol == "chat":
            for choice in event.get("choices", []):
                out.append(choice.get("delta", {}).get("content") or "")
        elif protocol == "gemini":
            for candidate in event.get("candidates", []):
                out += [p.get("text", "") for p in candidate.get("content", {}).get("parts", [])]
    return "".join(out)


def _whole_text(protocol: str, raw: bytes) -> str:
    doc = json.loads(raw)
    if protocol == "responses":
        return "".join(
            c["text"] for item in doc["output"] for c in item.get("content", []) if "text" in c
        )
    if protocol == "anthropic":
        return "".join(block.get("text", "") for block in doc["content"])
    if protocol == "chat":
        return str(doc["choices"][0]["message"]["content"])
    return "".join(p.get("text", "") for p in doc["candidates"][0]["content"]["parts"])


PROTOCOLS = ("responses", "anthropic", "chat", "gemini")


def _no_key(raw: bytes) -> None:
    text = raw.decode()
    assert UPSTREAM_KEY not in text
    # nor a piece of it long enough to be its (12 characters), JSON-escaped or not
    for i in range(len(UPSTREAM_KEY) - 11):
        assert UPSTREAM_KEY[i : i + 12] not in text.replace("\\/", "/")


@pytest.mark.parametrize("protocol", PROTOCOLS)
@pytest.mark.parametrize("piece", [1, 5, 7, 40])
def test_a_streamed_echo_of_the_key_is_masked_and_the_rest_arrives(
    protocol: str, piece: int
) -> None:
    with asyncio_upstream(_echoing(piece)) as upstream, bridge_to(upstream + "/v1") as bridge:
        raw, text = _ask(bridge.config.root_url, protocol, stream=True)
    _no_key(raw)
    assert text == _answer(mask(UPSTREAM_KEY))  # everything else, in order, unchanged


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_a_whole_answer_echoing_the_key_is_masked(protocol: str) -> None:
    with asyncio_upstream(_echoing(0)) as upstream, bridge_to(upstream + "/v1") as bridge:
        raw, text = _ask(bridge.config.root_url, protocol, stream=False)
    _no_key(raw)
    assert text == _answer(mask(UPSTREAM_KEY))


def _echoing_in_reasoning_and_a_call(piece: int):
    """An upstream that streams the key it got inside its reasoning and inside a tool call's
    arguments (a model asked to "show the request" can do either), in pieces of `piece`."""

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        request = await read_request(reader)
        head = request.partition(b"\r\n\r\n")[0].decode()
        auth = next(
            line.partition(":")[2].strip().removeprefix("Bearer ")
            for line in head.split("\r\n")
            if line.lower().startswith("authorization:")
        )
        thought, arguments = _thought(auth), json.dumps({"note": _answer(auth)})
        split = lambda text: [text[i : i + piece] for i in range(0, len(text), piece)]  # noqa: E731
        events = [_chunk({"role": "assistant", "content": ""})]
        events += [_chunk({"reasoning_content": p}) for p in split(thought)]
        call = {"index": 0, "id": "call_1", "type": "function"}
        events.append(_chunk({"tool_calls": [{**call, "function": {"name": "save"}}]}))
        events += [
            _chunk({"tool_calls": [{"index": 0, "function": {"arguments": p}}]})
            for p in split(arguments)
        ]
        events += [_chunk({}, finish="tool_calls"), b"data: [DONE]\n\n"]
        payload = b"".join(events)
        writer.write(
            b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: "
            + str(len(payload)).encode() + b"\r\nconnection: close\r\n\r\n" + payload
        )  # fmt: skip
        await writer.drain()
        writer.close()

    return handle


def _thought(key: str) -> str:
    return f"The header says {key}; I will save it.{TAIL}"


_RESPONSES_REASONING = ("response.reasoning_summary_text.delta", "response.reasoning_text.delta")


def _reasoning_and_arguments(protocol: str, raw: bytes) -> tuple[str, str]:
    thought, arguments = [], []
    for event in sse_payloads(raw):
        kind = event.get("type")
        if protocol == "responses" and kind in _RESPONSES_REASONING:
            thought.append(event["delta"])
        elif protocol == "responses" and kind == "response.function_call_arguments.delta":
            arguments.append(event["delta"])
        elif protocol == "anthropic" and kind == "content_block_delta":
            delta = event["delta"]
            thought.append(delta.get("thinking", ""))
            arguments.append(delta.get("partial_json", ""))
    return "".join(thought), "".join(arguments)


@pytest.mark.parametrize("protocol", ["responses", "anthropic"])
@pytest.mark.parametrize("piece", [1, 7, 40])
def test_a_key_echoed_in_reasoning_or_a_tool_calls_arguments_is_masked(
    protocol: str, piece: int
) -> None:
    with (
        asyncio_upstream(_echoing_in_reasoning_and_a_call(piece)) as upstream,
        bridge_to(upstream + "/v1") as bridge,
    ):
        raw, _ = _ask(bridge.config.root_url, protocol, stream=True)
    _no_key(raw)
    thought, arguments = _reasoning_and_arguments(protocol, raw)
    assert thought == _thought(mask(UPSTREAM_KEY))  # the rest of each, in order, unchanged
    assert json.loads(arguments) == {"note": _answer(mask(UPSTREAM_KEY))}
