"""The pump (upstream bytes → client bytes) gives the same client stream however the upstream's
bytes are split into reads, with LF or CRLF line ends, comments and `event:` lines."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from bridge_support import chunk, sse_payloads, tool_call_stream, usage_chunk

from notes_cli.bridge.pump import MalformedStream, Pump
from notes_cli.wire import chat, responses

CALLS = [("call_a", "exec_command", json.dumps({"cmd": "echo ü one"}))]
STREAM = b"".join(
    [
        chunk({"role": "assistant", "reasoning_content": "hmm"}),
        b": keep-alive\n\n",
        chunk({"content": "hé"}),
        b"event: message\n" + chunk({"content": "llo"}),
        *tool_call_stream(CALLS, pieces=4)[1:],
    ]
)


def _normal(value: Any) -> Any:
    """The payloads without the generated ids and clock times, which differ run to run."""
    if isinstance(value, dict):
        skip = {"id", "item_id", "created_at"}
        return {k: _normal(v) for k, v in value.items() if k not in skip}
    if isinstance(value, list):
        return [_normal(v) for v in value]
    return value


class Recorder:
    """The client's side of a stream, kept in memory (the real one is `http1.Response`)."""

    def __init__(self) -> None:
        self.started = False
        self.paused = False
        self.on_pause = self.on_resume = None
        self.data: list[bytes] = []

    def start(self, status: int, headers: Any, first: bytes = b"") -> None:
        assert not self.started and status == 200
        self.started = True
        self.data.append(first)

    def write(self, data: bytes) -> None:
        assert self.started
        self.data.append(data)

    def end(self, data: bytes = b"") -> None:
        self.write(data)


def _run(reads: list[bytes]) -> tuple[Any, Pump]:
    async def go() -> tuple[Any, Pump]:
        client = Recorder()
        pump = Pump(chat.StreamDecoder(), responses.StreamEncoder("resp_1", "m"), client)
        pump.on_headers(200, [])
        for data in reads:
            if pump.on_body(data):
                break
        pump.end(pump.close())
        return _normal(sse_payloads(b"".join(client.data))), pump

    return asyncio.run(go())


def test_every_split_of_the_upstream_bytes_gives_the_same_client_stream() -> None:
    whole, pump = _run([STREAM])
    assert pump.complete
    assert "response.function_call_arguments.delta" in [p["type"] for p in whole]
    for cut in range(1, len(STREAM)):
        assert _run([STREAM[:cut], STREAM[cut:]])[0] == whole, cut


@pytest.mark.parametrize("size", [1, 7])
def test_crlf_line_ends_in_small_reads_give_the_same_stream(size: int) -> None:
    whole, _ = _run([STREAM])
    crlf = STREAM.replace(b"\n", b"\r\n")
    reads = [crlf[i : i + size] for i in range(0, len(crlf), size)]
    assert _run(reads)[0] == whole


def test_the_answer_is_remembered_as_a_neutral_message() -> None:
    _, pump = _run([STREAM])
    kinds = [type(p).__name__ for p in pump.message().parts]
    assert kinds == ["ReasoningPart", "TextPart", "ToolCallPart"]
    assert pump.message().parts[2].arguments == CALLS[0][2]  # type: ignore[union-attr]


def test_an_answer_too_long_to_keep_is_forgotten_not_kept_in_memory() -> None:
    async def go(remember: int) -> Pump:
        pump = Pump(chat.StreamDecoder(), responses.StreamEncoder("r", "m"), Recorder(), remember)
        pump.on_headers(200, [])
        pump.on_body(STREAM)
        return pump

    kept = asyncio.run(go(10_000))
    assert kept.remembered and kept.texts
    held = asyncio.run(go(3))  # the stream's reasoning alone is longer
    assert not held.remembered
    assert not (held.texts or held.reasoning or held.calls or held.order)
    assert held.complete  # the client's stream is untouched


def test_a_chunk_that_is_not_json_is_a_malformed_stream() -> None:
    with pytest.raises(MalformedStream):
        _run([chunk({"content": "a"}) + b"data: {oops\n\n" + usage_chunk()])


@pytest.mark.parametrize("line_end", [b"\n", b"\r\n"])
def test_an_event_that_never_ends_is_a_malformed_stream(line_end: bytes) -> None:
    # an upstream sending one endless event: refused past the bound, not buffered for ever
    piece = b"x" * (1024 * 1024)
    with pytest.raises(MalformedStream, match="bytes"):
        _run([chunk({"content": "a"}).replace(b"\n", line_end) + b"data: "] + [piece] * 6)


@pytest.mark.parametrize("first", ["text", "reasoning", "tool call"])
def test_opening_events_encoded_ahead_give_the_same_stream(first: str) -> None:
    # the bridge primes the Responses encoder while it waits for the upstream; the client
    # must see exactly what it would have seen without it, whatever comes first
    opening = {
        "text": chunk({"role": "assistant", "content": "hi"}),
        "reasoning": chunk({"role": "assistant", "reasoning_content": "hmm"}),
        "tool call": b"".join(tool_call_stream(CALLS, pieces=2)[:2]),
    }[first]
    stream = opening + chunk({"content": " there"}) + chunk({}, "stop") + usage_chunk()

    def run(primed: bool) -> Any:
        encoder = responses.StreamEncoder("resp_1", "m")
        head = encoder.head()
        if primed:
            encoder.prime()
        decoder = chat.StreamDecoder()
        out = [head]
        for event in decoder.feed(stream.decode()[6:].split("\n\n")[0]):
            out.append(encoder.encode(event))
        for block in stream.decode().split("\n\n")[1:]:
            if block.startswith("data: "):
                out.extend(encoder.encode(e) for e in decoder.feed(block[6:]))
        out.append(encoder.close())
        return _normal(sse_payloads(b"".join(out)))

    assert run(primed=True) == run(primed=False)
    kinds = [p["type"] for p in run(primed=True)]
    assert kinds.count("response.output_item.added") == (2 if first != "text" else 1)
