"""The bridge's connection slots to an upstream (issue 36): with every slot held (a stalled
upstream, or clients that never read) a new request used to wait forever, with no error and no
fallback. Now it waits a bounded time, then gets a 503 with Retry-After in its own protocol's
error shape, or goes to a fallback upstream where one is configured; the held streams finish.

Real servers on loopback: the bridge, and an asyncio upstream that holds each answer open. The
slots are few (`max_connections`) and the wait short (`slot_timeout`); no wall clock is
compared: the tests assert statuses and the order of events, with generous bounded waits."""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest
from bridge_support import (
    asyncio_upstream,
    bridge_over,
    bridge_to,
    chunk,
    read_request,
    sse_payloads,
    usage_chunk,
)
from loopback import LoopbackServer, Reply, chat_stream

SLOTS = 2
WAIT_S = 0.3  # the slot wait; each test only needs it to end, not to take any given time
KEY = "sk-slots-SENTINEL-0123456789abcdef"


def _framed(*events: bytes) -> bytes:
    return b"".join(b"%x\r\n%s\r\n" % (len(e), e) for e in events)


@contextlib.contextmanager
def held_upstream() -> Iterator[tuple[str, list[bytes], threading.Event]]:
    """A chat upstream that streams one event ("held") and keeps each answer open until
    `release` is set, then finishes it; `arrived` holds every request it received."""
    arrived: list[bytes] = []
    ended: list[bytes] = []
    release = threading.Event()

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        request = await read_request(reader)
        arrived.append(request)
        if b'"stream": false' in request or b'"stream":false' in request:
            message = {"role": "assistant", "content": "whole"}
            body = {"id": "c1", "object": "chat.completion", "choices": [
                {"index": 0, "message": message, "finish_reason": "stop"}]}  # fmt: skip
            data = json.dumps(body).encode()
            writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n"
                         b"content-length: %d\r\n\r\n%s" % (len(data), data))  # fmt: skip
        else:
            writer.write(
                b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
                b"transfer-encoding: chunked\r\n\r\n" + _framed(chunk({"content": "held"}))
            )
            await writer.drain()
            await asyncio.get_running_loop().run_in_executor(None, release.wait, 30)
            tail = [chunk({}, "stop"), usage_chunk(), b"data: [DONE]\n\n"]
            writer.write(_framed(chunk({"content": " done"}), *tail) + b"0\r\n\r\n")
        with contextlib.suppress(ConnectionError):
            await writer.drain()
        writer.close()
        ended.append(request)

    with asyncio_upstream(handle) as url:
        try:
            yield url + "/v1", arrived, release
        finally:
            release.set()
            until(lambda: len(ended) == len(arrived), 10)  # no handler left for the loop's end


def until(condition: Callable[[], bool], deadline_s: float = 20.0) -> bool:
    """Poll `condition` until it holds (a bounded wait, not a measurement)."""
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        if condition():
            return True
        time.sleep(0.02)
    return condition()


# Each client protocol the bridge serves: its path, a streamed request, how its error reads.
ROUTES: dict[str, tuple[str, dict[str, Any], Callable[[dict[str, Any]], str]]] = {
    "responses": (
        "/v1/responses",
        {"model": "m", "stream": True, "input": "hi", "store": False},
        lambda body: body["error"]["message"],
    ),
    "anthropic": (
        "/v1/messages",
        {
            "model": "m",
            "stream": True,
            "max_tokens": 64,
            "messages": [{"role": "user", "content": "hi"}],
        },  # fmt: skip
        lambda body: (
            body["type"] == "error"
            and body["error"]["type"] == "overloaded_error"
            and body["error"]["message"]
        ),  # fmt: skip
    ),
    "gemini": (
        "/v1beta/models/m:streamGenerateContent?alt=sse",
        {"contents": [{"role": "user", "parts": [{"text": "hi"}]}]},
        lambda body: (
            body["error"]["status"] == "UNAVAILABLE"
            and {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "1s"}
            in body["error"]["details"]
            and body["error"]["message"]
        ),
    ),
    "chat": (
        "/v1/chat/completions",
        {"model": "m", "stream": True, "messages": [{"role": "user", "content": "hi"}]},
        lambda body: body["error"]["message"],
    ),
}


def open_stream(port: int, path: str, body: dict[str, Any]) -> socket.socket:
    """Ask for a stream on a raw socket and read nothing yet (the answer waits in the buffers)."""
    data = json.dumps(body).encode()
    sock = socket.create_connection(("127.0.0.1", port), timeout=30)
    sock.sendall(
        b"POST %s HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n"
        b"connection: close\r\ncontent-length: %d\r\n\r\n%s" % (path.encode(), len(data), data)
    )
    return sock


def read_all(sock: socket.socket) -> bytes:
    pieces = []
    while piece := sock.recv(65536):
        pieces.append(piece)
    sock.close()
    return b"".join(pieces)


@pytest.mark.parametrize("httpx_path", [False, True], ids=["lean", "httpx"])
@pytest.mark.parametrize("route", sorted(ROUTES))
def test_a_request_finding_every_slot_held_gets_a_503_and_the_held_streams_finish(
    route: str, httpx_path: bool
) -> None:
    path, body, message_of = ROUTES[route]
    with (
        held_upstream() as (url, arrived, release),
        bridge_to(
            url, key=KEY, max_connections=SLOTS, slot_timeout=WAIT_S, httpx_path=httpx_path
        ) as bridge,  # fmt: skip
    ):
        base = f"http://127.0.0.1:{bridge.config.port}"
        held = [open_stream(bridge.config.port, path, body) for _ in range(SLOTS)]
        assert until(lambda: len(arrived) == SLOTS), "the held requests never reached upstream"

        refused = httpx.post(base + path, json=body, timeout=30)
        assert refused.status_code == 503, refused.text
        assert refused.headers["retry-after"] == "1"
        said = message_of(refused.json())
        assert "busy" in said and url in said and KEY not in refused.text
        assert len(arrived) == SLOTS  # it was never sent upstream

        release.set()  # the held streams were not harmed: each finishes
        for sock in held:
            answer = read_all(sock)
            assert answer.startswith(b"HTTP/1.1 200"), answer[:200]
            assert b"held" in answer and b"done" in answer
        again = httpx.post(base + path, json=body, timeout=30)  # the slots came back
        assert again.status_code == 200, again.text
        assert len(arrived) == SLOTS + 1


def test_a_whole_request_finding_every_slot_held_gets_a_503_too() -> None:
    path, body, _ = ROUTES["responses"]
    with (
        held_upstream() as (url, arrived, _release),
        bridge_to(url, max_connections=1, slot_timeout=WAIT_S, httpx_path=True) as bridge,
    ):
        held = open_stream(bridge.config.port, path, body)
        assert until(lambda: len(arrived) == 1)
        whole = httpx.post(f"{bridge.config.v1_base_url}/responses",
                           json={**body, "stream": False}, timeout=30)  # fmt: skip
        assert whole.status_code == 503 and whole.headers["retry-after"] == "1", whole.text
        held.close()


def test_a_request_finding_every_slot_held_goes_to_the_fallback() -> None:
    path, body, _ = ROUTES["responses"]
    with (
        held_upstream() as (url, arrived, release),
        LoopbackServer(Reply.sse(chat_stream(["from ", "the ", "fallback"]))) as fallback,
        bridge_over(
            [(url, KEY), (fallback.url, None)], max_connections=1, slot_timeout=WAIT_S
        ) as bridge,  # fmt: skip
    ):
        held = open_stream(bridge.config.port, path, body)
        assert until(lambda: len(arrived) == 1)
        switched = httpx.post(f"{bridge.config.v1_base_url}/responses", json=body, timeout=30)
        assert switched.status_code == 200, switched.text
        deltas = [e["delta"] for e in sse_payloads(switched.content)
                  if e["type"] == "response.output_text.delta"]  # fmt: skip
        assert "".join(deltas) == "from the fallback"
        assert len(arrived) == 1 and len(fallback.requests) == 1
        release.set()
        assert b"held" in read_all(held)


def test_every_upstream_busy_is_one_503() -> None:
    path, body, _ = ROUTES["responses"]
    with (
        held_upstream() as (first, arrived_first, _r1),
        held_upstream() as (second, arrived_second, _r2),
        bridge_over(
            [(first, KEY), (second, None)], max_connections=1, slot_timeout=WAIT_S
        ) as bridge,  # fmt: skip
    ):
        held = [open_stream(bridge.config.port, path, body) for _ in range(2)]
        assert until(lambda: len(arrived_first) == 1 and len(arrived_second) == 1)
        refused = httpx.post(f"{bridge.config.v1_base_url}/responses", json=body, timeout=30)
        assert refused.status_code == 503 and refused.headers["retry-after"] == "1"
        said = refused.json()["error"]["message"]
        assert first in said and second in said
        for sock in held:
            sock.close()


def test_clients_that_never_read_hold_their_slots_and_the_next_gets_a_503() -> None:
    # The upstream streams more than the socket buffers hold; the clients read nothing, so the
    # bridge pauses the upstream and their calls stay open (until the idle timeout).
    big = chunk({"content": "x" * 4000})
    asked = [0]
    ended = [0]

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        request = await read_request(reader)
        asked[0] += 1
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
                     b"transfer-encoding: chunked\r\n\r\n")  # fmt: skip
        count = 16 if b'"small"' in request else 64 * 1024  # 256 MB for the ones not read
        with contextlib.suppress(ConnectionError):
            for _ in range(count):
                writer.write(_framed(big))
                await writer.drain()
            writer.write(_framed(chunk({}, "stop"), usage_chunk(), b"data: [DONE]\n\n"))
            writer.write(b"0\r\n\r\n")
            await writer.drain()
        writer.close()
        ended[0] += 1

    path, body, _ = ROUTES["responses"]
    with (
        asyncio_upstream(handle) as url,
        bridge_to(url + "/v1", max_connections=SLOTS, slot_timeout=WAIT_S) as bridge,
    ):
        stalled = []
        for _ in range(SLOTS):
            sock = socket.socket()
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            sock.settimeout(30)
            sock.connect(("127.0.0.1", bridge.config.port))
            data = json.dumps(body).encode()
            head = b"POST /v1/responses HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n"
            sock.sendall(head + b"content-length: %d\r\n\r\n%s" % (len(data), data))
            stalled.append(sock)
        assert until(lambda: asked[0] == SLOTS)
        small = {**body, "model": "small"}
        refused = httpx.post(f"{bridge.config.v1_base_url}/responses", json=small, timeout=30)
        assert refused.status_code == 503 and refused.headers["retry-after"] == "1"
        assert asked[0] == SLOTS
        for sock in stalled:  # the clients go: their upstream calls end, the slots come back
            sock.close()
        assert until(lambda: httpx.post(f"{bridge.config.v1_base_url}/responses",
                                        json=small, timeout=30).status_code == 200)  # fmt: skip
        assert until(lambda: ended[0] == asked[0])  # every upstream call ended
