"""The gateway client reads answers of all three protocols through the wire layer's decoders:
every case in gateway_cases.py gives the result recorded in fixtures/gateway_reading.json,
whole, cut at every byte, or one byte at a time.

The record was first taken from the gateway's own stream readers (before they moved onto
wire/). What changed on the move, on purpose: malformed answers that crashed those readers
(a string where an object belongs; a 2xx JSON body with an error) now read as junk or as the
upstream error they carry; a whole reasoning item, or reasoning next to text in a
non-streamed chat answer, counts as reasoning; a Responses stream whose only text is in
`response.completed` times its first token there; a 2xx `status: failed` Responses body is an
UpstreamError; `input_tokens` (not shown anywhere) follows the usage object, and the model
name is taken from the event that announces the answer (`response.created`, the first chunk).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from gateway_cases import (
    BODIES,
    MALFORMED_BODIES,
    MALFORMED_STREAMS,
    STREAMS,
    body_outcome,
    stream_outcome,
)

from notes_cli.clients.endpoint import Endpoint
from notes_cli.gateway import GatewayClient, errors
from notes_cli.gateway._requests import request_url
from notes_cli.gateway.client import _Call

GOLDEN = json.loads((Path(__file__).parent / "fixtures" / "gateway_reading.json").read_text())
ALL_STREAMS = {**STREAMS, **MALFORMED_STREAMS}
ALL_BODIES = {**BODIES, **MALFORMED_BODIES}


@pytest.mark.parametrize("name", sorted(ALL_STREAMS))
def test_each_stream_reads_as_recorded(name: str) -> None:
    protocol, events = ALL_STREAMS[name]
    assert stream_outcome(protocol, events) == GOLDEN["streams"][name]


@pytest.mark.parametrize("name", sorted(ALL_BODIES))
def test_each_whole_answer_reads_as_recorded(name: str) -> None:
    protocol, payload = ALL_BODIES[name]
    assert body_outcome(protocol, payload) == GOLDEN["bodies"][name]


def test_the_record_has_every_case_and_no_crash() -> None:
    assert set(GOLDEN["streams"]) == set(ALL_STREAMS)
    assert set(GOLDEN["bodies"]) == set(ALL_BODIES)
    for outcome in [*GOLDEN["streams"].values(), *GOLDEN["bodies"].values()]:
        assert "crash" not in outcome


# --------------------------------------------------------------------------- byte splits


def _client(protocol: str) -> GatewayClient:
    client_name = {"chat": "openai", "responses": "codex", "anthropic": "claude"}[protocol]
    base = "https://gw.example" + ("/anthropic" if protocol == "anthropic" else "/v1")
    return GatewayClient(Endpoint(client_name, base, protocol, model="m", key="sk-x"))  # type: ignore[arg-type]


def _read_pieces(client: GatewayClient, pieces: list[bytes]) -> dict[str, Any]:
    """The client's reading path (`_Call.feed` per network read, then `finish`), no HTTP."""
    from gateway_cases import _outcome

    def read() -> Any:
        call = _Call(client, request_url(client.endpoint))
        call.headers_arrived(200)
        for piece in pieces:
            if call.feed(piece):
                break
        return call.finish()

    return _outcome(read)


# Streams with tool calls, reasoning, event lines and CRLF: cut at every byte boundary.
EVERY_CUT = [
    "chat-tool-call",
    "chat-deepseek-reasoning",
    "chat-crlf",
    "chat-junk-lines",
    "responses-full",
    "responses-codex-shape",
    "anthropic-thinking-and-tool",
    "anthropic-junk",
]


@pytest.mark.parametrize("name", EVERY_CUT)
def test_a_stream_reads_the_same_cut_at_any_byte(name: str) -> None:
    protocol, events = STREAMS[name]
    whole = b"".join(events)
    expected = GOLDEN["streams"][name]
    client = _client(protocol)
    for cut in range(1, len(whole)):
        assert _read_pieces(client, [whole[:cut], whole[cut:]]) == expected, cut


@pytest.mark.parametrize(
    "name", sorted(n for n, (_, e) in ALL_STREAMS.items() if len(b"".join(e)) < 20_000)
)
def test_a_stream_reads_the_same_one_byte_at_a_time(name: str) -> None:
    protocol, events = ALL_STREAMS[name]
    whole = b"".join(events)
    pieces = [whole[i : i + 1] for i in range(len(whole))]
    assert _read_pieces(_client(protocol), pieces) == GOLDEN["streams"][name]


def test_stream_errors_keep_their_partial_answer_and_scrub_the_key() -> None:
    key = "sk-SENTINEL0123456789abcdefXYZW"
    endpoint = Endpoint("openai", "https://gw.example/v1", "chat", model="m", key=key)
    with GatewayClient(endpoint) as client:
        call = _Call(client, request_url(endpoint))
        call.headers_arrived(200)
        call.feed(b'data: {"choices":[{"delta":{"content":"half"}}]}\n\n')
        with pytest.raises(errors.UpstreamError) as info:
            call.feed(b'data: {"error":{"message":"bad key ' + key.encode() + b'"}}\n\n')
    assert key not in str(info.value) and "bad key" in str(info.value)
