"""Bad input gets a 4xx, never a 5xx (issue 11 point 10): each API's validation as the real
one does it (400 naming the param), a lone surrogate refused with the connection kept alive,
keys compared in constant time, and connections that never finish their headers closed."""

from __future__ import annotations

import hmac
import json
import socket
import time
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest
from fake_engine import FakeEngine

from notes_cli.engine.core.config import EngineConfig
from notes_cli.engine.http.app import Limits
from notes_cli.engine.http.server import start_engine

CHAT = {"model": "pd-mock-1", "messages": [{"role": "user", "content": "say pong"}]}
RESPONSES = {"model": "pd-mock-1", "input": [{"type": "message", "role": "user", "content": "hi"}]}
MESSAGES = {"model": "pd-mock-1", "max_tokens": 64, "messages": [{"role": "user", "content": "hi"}]}
NAN = float("nan")

# (protocol, what the body gets, the param the 400 must name)
BAD: list[tuple[str, dict[str, Any], str]] = [
    ("chat", {"temperature": "hot"}, "temperature"),
    ("chat", {"temperature": NAN}, "temperature"),
    ("chat", {"temperature": 2.5}, "temperature"),
    ("chat", {"n": -1}, "n"),
    ("chat", {"n": "two"}, "n"),
    ("chat", {"top_p": 1.5}, "top_p"),
    ("chat", {"max_tokens": 0}, "max_tokens"),
    ("chat", {"max_completion_tokens": "10"}, "max_completion_tokens"),
    ("chat", {"messages": [{"role": "god", "content": "x"}]}, "messages[0].role"),
    ("chat", {"messages": "hi"}, "messages"),
    ("chat", {"messages": []}, "messages"),
    ("chat", {"messages": [{"role": "user", "content": 5}]}, "messages[0].content"),
    ("chat", {"stream": "yes"}, "stream"),
    ("chat", {"stop": [1]}, "stop"),
    ("chat", {"presence_penalty": 5}, "presence_penalty"),
    ("chat", {"seed": float("inf")}, "seed"),
    ("chat", {"tools": [{"type": "function"}]}, "tools[0].function"),
    ("chat", {"tool_choice": "sometimes"}, "tool_choice"),
    ("chat", {"model": 5}, "model"),
    ("chat", {"top_logprobs": 50}, "top_logprobs"),
    ("chat", {"n": 2}, "n"),  # valid for OpenAI, but this engine has one choice to give
    ("responses", {"temperature": "hot"}, "temperature"),
    ("responses", {"input": [{"type": "message", "role": "god", "content": "x"}]}, "input[0].role"),  # noqa: E501
    ("responses", {"max_output_tokens": -5}, "max_output_tokens"),
    ("responses", {"reasoning": {"effort": "extreme"}}, "reasoning.effort"),
    ("responses", {"tools": [{"name": "x"}]}, "tools[0].type"),
    ("responses", {"input": 5}, "input"),
    ("responses", {"top_p": NAN}, "top_p"),
    ("anthropic", {"temperature": 1.5}, "temperature"),  # Anthropic's range is 0..1
    ("anthropic", {"temperature": NAN}, "temperature"),
    ("anthropic", {"messages": [{"role": "god", "content": "x"}]}, "messages.0.role"),
    ("anthropic", {"max_tokens": -1}, "max_tokens"),
    ("anthropic", {"top_k": "a"}, "top_k"),
    ("anthropic", {"thinking": {"type": "maybe"}}, "thinking.type"),
    ("anthropic", {"tool_choice": {"type": "sometimes"}}, "tool_choice.type"),
    ("anthropic", {"stop_sequences": "x"}, "stop_sequences"),
    (
        "anthropic",
        {"messages": [{"role": "user", "content": [{"type": "bogus"}]}]},
        "messages.0.content.0.type",
    ),  # noqa: E501
]
GOOD: list[tuple[str, dict[str, Any]]] = [
    ("chat", {"temperature": 0, "top_p": 1, "n": 1, "stop": "x", "seed": 7}),
    ("chat", {"temperature": 2, "max_completion_tokens": 16.0, "reasoning_effort": "low"}),
    (
        "chat",
        {
            "messages": [
                {"role": "developer", "content": "be brief"},
                {"role": "user", "content": [{"type": "text", "text": "hi"}]},
            ]
        },
    ),  # noqa: E501
    ("responses", {"reasoning": {"summary": "auto"}, "store": False, "include": ["x"]}),
    (
        "anthropic",
        {"temperature": 1, "top_k": 5, "thinking": {"type": "enabled", "budget_tokens": 1024}},
    ),  # noqa: E501
    (
        "anthropic",
        {"messages": [{"role": "user", "content": "hi"}, {"role": "system", "content": "late"}]},
    ),  # noqa: E501
]


@pytest.fixture(scope="module")
def engine() -> Iterator[Any]:
    with start_engine(EngineConfig(speed=20), service=FakeEngine(reply="pong")) as running:
        yield running


def url(engine: Any, protocol: str) -> str:
    if protocol == "chat":
        return f"{engine.base_url}/chat/completions"
    if protocol == "responses":
        return f"{engine.base_url}/responses"
    return f"{engine.anthropic_base_url}/v1/messages?beta=true"


def body_for(protocol: str, change: dict[str, Any]) -> bytes:
    base = {"chat": CHAT, "responses": RESPONSES, "anthropic": MESSAGES}[protocol]
    return json.dumps({**base, **change}).encode()  # NaN is written as the bare NaN token


@pytest.mark.parametrize(("protocol", "change", "param"), BAD, ids=[f"{p}-{x}" for p, _, x in BAD])
def test_bad_input_is_a_400_naming_the_param(
    engine: Any, protocol: str, change: dict[str, Any], param: str
) -> None:
    reply = httpx.post(url(engine, protocol), content=body_for(protocol, change), timeout=10)

    assert reply.status_code == 400, reply.text
    error = reply.json()
    if protocol == "anthropic":
        assert error["type"] == "error"
        assert error["error"]["type"] == "invalid_request_error"
        assert error["error"]["message"].startswith(param)  # Anthropic names it in the text
    else:
        assert error["error"]["type"] == "invalid_request_error"
        assert error["error"]["param"] == param


@pytest.mark.parametrize(("protocol", "change"), GOOD)
def test_valid_edges_and_client_quirks_are_still_served(
    engine: Any, protocol: str, change: dict[str, Any]
) -> None:
    reply = httpx.post(url(engine, protocol), content=body_for(protocol, change), timeout=10)

    assert reply.status_code == 200, reply.text


# --- a lone surrogate, on one kept-alive connection ------------------------------------------


def _request(path: str, body: bytes) -> bytes:
    head = (
        f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    )
    return head.encode() + body


def _read_response(sock: socket.socket) -> tuple[int, bytes]:
    """One Content-Length response off a raw socket (what httpx would hide: the same
    connection is reused)."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        assert chunk, "the server closed the connection"
        data += chunk
    head, _, rest = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1])
    length = next(
        int(v)
        for k, _, v in (ln.partition(": ") for ln in lines[1:])
        if k.lower() == "content-length"
    )  # noqa: E501
    while len(rest) < length:
        chunk = sock.recv(65536)
        assert chunk, "the server closed the connection mid-body"
        rest += chunk
    return status, rest[:length]


@pytest.mark.parametrize("protocol", ["chat", "responses", "anthropic"])
def test_a_lone_surrogate_is_a_400_and_the_connection_stays_usable(
    engine: Any, protocol: str
) -> None:
    path = httpx.URL(url(engine, protocol)).raw_path.decode()
    text = {"chat": CHAT, "responses": RESPONSES, "anthropic": MESSAGES}[protocol]
    bad = json.dumps(text).replace('"hi"', '"\\ud800"').replace('"say pong"', '"\\ud800"')
    assert "\\ud800" in bad
    with socket.create_connection((engine.host, engine.port), timeout=10) as sock:
        sock.sendall(_request(path, bad.encode()))
        status, body = _read_response(sock)
        assert status == 400, body
        assert "surrogate" in body.decode()

        sock.sendall(_request(path, json.dumps(text).encode()))  # same connection
        status, body = _read_response(sock)
        assert status == 200, body


# --- keys ---------------------------------------------------------------------------------


def test_keys_are_compared_in_constant_time(
    start_engine_server: Callable[..., Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ENGINE_KEY", "sk-right-key-123456")
    engine = start_engine_server(api_key_env="ENGINE_KEY", service=FakeEngine())
    compared: list[tuple[bytes, bytes]] = []
    real = hmac.compare_digest

    def spy(a: Any, b: Any) -> bool:
        compared.append((a, b))
        return real(a, b)

    monkeypatch.setattr(hmac, "compare_digest", spy)
    chat = f"{engine.base_url}/chat/completions"

    def status(headers: dict[str, str]) -> int:
        return httpx.post(chat, json=CHAT, headers=headers, timeout=10).status_code

    assert status({"authorization": "Bearer sk-right-key-123456"}) == 200
    assert status({"x-api-key": "sk-right-key-123456"}) == 200
    assert status({"authorization": "Bearer sk-right-key-12345"}) == 401  # a prefix
    assert status({"authorization": "Bearer sk-right-key-1234567"}) == 401
    assert status({}) == 401
    assert (b"sk-right-key-123456", b"sk-right-key-12345") in compared


# --- connections that never finish their headers ------------------------------------------


@pytest.fixture
def impatient(start_engine_server: Callable[..., Any]) -> Any:
    service = FakeEngine(reply="a b c d e f g h i j", tpot_s=0.12)
    return start_engine_server(service=service, limits=Limits(header_timeout_s=0.5))


def test_an_idle_connection_is_closed_after_the_header_deadline(impatient: Any) -> None:
    with socket.create_connection((impatient.host, impatient.port), timeout=5) as sock:
        started = time.monotonic()
        assert sock.recv(1) == b""  # closed by the server, not by our 5 s timeout
        assert time.monotonic() - started < 3


def test_headers_sent_a_byte_at_a_time_do_not_hold_the_connection(impatient: Any) -> None:
    request = _request("/api/chat/completions", json.dumps(CHAT).encode())
    with socket.create_connection((impatient.host, impatient.port), timeout=5) as sock:
        started = time.monotonic()
        closed = False
        for byte in request[:60]:  # 60 bytes x 0.1 s: far past the 0.5 s deadline
            try:
                sock.sendall(bytes([byte]))
            except OSError:
                closed = True
                break
            time.sleep(0.1)
        if not closed:
            sock.settimeout(2)
            closed = sock.recv(1) == b""
        assert closed
        assert time.monotonic() - started < 5


def test_a_stream_longer_than_the_deadline_is_not_cut(impatient: Any) -> None:
    body = {**CHAT, "stream": True}
    with httpx.Client(timeout=10) as client:
        reply = client.post(f"{impatient.base_url}/chat/completions", json=body)
        assert reply.status_code == 200
        assert reply.text.rstrip().endswith("data: [DONE]")  # ~1.2 s of tokens, all there
        time.sleep(0.8)  # idle between requests: keep-alive's business, not the deadline's
        again = client.post(f"{impatient.base_url}/chat/completions", json=CHAT)
        assert again.status_code == 200
