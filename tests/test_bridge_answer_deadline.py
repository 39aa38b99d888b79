"""A non-streamed answer has an overall deadline in the bridge (issue 36).

Each read from the upstream is bounded (300 s), but an upstream that sends its whole answer
one byte at a time, each just inside that bound, once held a request forever. `pdnotes bridge
serve --answer-timeout S` bounds the whole answer: past it the client gets a 504 in its own
protocol's error shape, or the next `--upstream` answers when one is configured (nothing was
sent to the client yet). The real CLI, in front of real loopback upstreams.
"""

from __future__ import annotations

import asyncio
import contextlib
import json

import httpx
import pytest
from bridge_support import asyncio_upstream, bridge_serve, free_port

MODEL = "m-1"
_ANSWER = {
    "id": "c1",
    "object": "chat.completion",
    "model": MODEL,
    "choices": [
        {"index": 0, "message": {"role": "assistant", "content": "pong"}, "finish_reason": "stop"}
    ],
    "usage": {"prompt_tokens": 3, "completion_tokens": 1, "total_tokens": 4},
}


async def _request(reader: asyncio.StreamReader) -> bytes:
    """One request's head (and its body, when it has one)."""
    head = await reader.readuntil(b"\r\n\r\n")
    found = [line for line in head.lower().split(b"\r\n") if line.startswith(b"content-length:")]
    return head + (await reader.readexactly(int(found[0][15:])) if found else b"")


async def _dripping(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """A 200 whose body comes one byte every 50 ms: each read well inside any read timeout,
    the whole answer never (bounded here: at most 600 bytes, then it hangs up)."""
    await _request(reader)
    body = json.dumps(_ANSWER).encode() + b" " * 4000
    writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n")
    writer.write(b"content-length: %d\r\n\r\n" % len(body))
    with contextlib.suppress(ConnectionError):
        for byte in body[:600]:
            writer.write(bytes([byte]))
            await writer.drain()
            with contextlib.suppress(TimeoutError):
                if not await asyncio.wait_for(reader.read(1), 0.05):
                    break  # the client hung up
    writer.close()


async def _prompt(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    request = await _request(reader)
    path = request.split(b" ")[1]
    doc = {"object": "list", "data": [{"id": MODEL}]} if path.endswith(b"/models") else _ANSWER
    body = json.dumps(doc).encode()
    writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n")
    writer.write(b"content-length: %d\r\nconnection: close\r\n\r\n" % len(body) + body)
    await writer.drain()
    writer.close()


def _ask(root: str, protocol: str) -> httpx.Response:
    said = [{"role": "user", "content": "ping"}]
    headers = {}
    if protocol == "responses":
        url, body = f"{root}/v1/responses", {"model": MODEL, "input": "ping"}
    elif protocol == "anthropic":
        url, body = f"{root}/v1/messages", {"model": MODEL, "max_tokens": 8, "messages": said}
        headers = {"anthropic-version": "2023-06-01"}
    elif protocol == "chat":
        url, body = f"{root}/v1/chat/completions", {"model": MODEL, "messages": said}
    else:
        url = f"{root}/v1beta/models/{MODEL}:generateContent"
        body = {"contents": [{"role": "user", "parts": [{"text": "ping"}]}]}
    return httpx.post(url, json=body, headers=headers, timeout=60)


def _error_shape(protocol: str, doc: dict) -> str:
    """The error's message, read the way the protocol's own SDK reads it."""
    if protocol == "anthropic":
        assert doc["type"] == "error"
        return str(doc["error"]["message"])
    if protocol == "gemini":
        assert doc["error"]["code"] == 504
        assert doc["error"]["status"] == "DEADLINE_EXCEEDED"
        return str(doc["error"]["message"])
    return str(doc["error"]["message"])  # OpenAI's error object (Responses, chat)


@pytest.mark.parametrize("protocol", ["responses", "anthropic", "chat", "gemini"])
def test_a_dripping_whole_answer_ends_in_a_504_in_the_clients_protocol(protocol: str) -> None:
    port = str(free_port())
    with (
        asyncio_upstream(_dripping, lifetime_s=60) as drip,
        bridge_serve("--upstream", drip + "/v1", "--port", port, "--answer-timeout", "1"),
    ):
        reply = _ask(f"http://127.0.0.1:{port}", protocol)
    assert reply.status_code == 504, reply.text
    message = _error_shape(protocol, reply.json())
    assert "not whole after 1 s" in message


def test_a_dripping_upstream_falls_back_to_the_next_one() -> None:
    port = str(free_port())
    with (
        asyncio_upstream(_dripping, lifetime_s=60) as drip,
        asyncio_upstream(_prompt, lifetime_s=60) as good,
        bridge_serve(
            "--upstream",
            drip + "/v1",
            "--upstream",
            good + "/v1",
            "--port",
            port,
            "--answer-timeout",
            "1",
        ) as lines,  # fmt: skip
    ):
        reply = _ask(f"http://127.0.0.1:{port}", "chat")
        models = httpx.get(f"http://127.0.0.1:{port}/v1/models", timeout=60)
    assert reply.status_code == 200, reply.text
    assert reply.json()["choices"][0]["message"]["content"] == "pong"
    assert models.status_code == 200 and MODEL in models.text
    assert any("not whole after 1 s" in line for line in lines)  # the switch is logged
