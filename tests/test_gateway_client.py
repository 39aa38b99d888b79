"""GatewayClient against respx-mocked gateways: the request each client sends, what is read back,
and every failure mode as a typed error with a fix."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator

import httpx
import pytest
import respx
from loopback import anthropic_stream, chat_stream, responses_stream, sse_event
from loopback import sse_response as sse

from notes_cli.clients.endpoint import Endpoint
from notes_cli.gateway import AsyncGatewayClient, GatewayClient, StreamResult, errors, proxy_for
from notes_cli.gateway._http import safe_url

KEY = "sk-SENTINEL0123456789abcdefXYZW"
BASE = "https://gw.example/api"
PD = {
    "queue_ms": 1.0,
    "prefill_ms": 20.0,
    "transfer_ms": 2.0,
    "decode_ms": 30.0,
    "ttft_ms": 23.0,
    "tpot_ms": 10.0,
    "prefill_node": "p0",
    "decode_node": "d0",
    "mode": "disagg",
}


def endpoint(protocol: str = "chat", **kw: object) -> Endpoint:
    client = {"chat": "openai", "responses": "codex", "anthropic": "claude"}[protocol]
    base = kw.pop("base_url", BASE + ("/anthropic" if protocol == "anthropic" else ""))
    defaults = {"model": "m", "key": KEY, "key_env": "GW_KEY"}
    return Endpoint(client, base, protocol, **{**defaults, **kw})  # type: ignore[arg-type]


def stream(ep: Endpoint) -> StreamResult:
    with GatewayClient(ep, timeout=2) as client:
        return client.stream("say pong")


# --------------------------------------------------------------------------- requests


@respx.mock
def test_responses_request_is_what_codex_sends() -> None:
    route = respx.post(f"{BASE}/responses").mock(return_value=sse(responses_stream(["po", "ng"])))
    result = stream(endpoint("responses"))
    sent = route.calls.last.request
    assert sent.headers["authorization"] == f"Bearer {KEY}"
    assert sent.headers["accept"] == "text/event-stream"
    body = json.loads(sent.content)
    assert body["stream"] is True and body["max_output_tokens"] == 256
    assert body["input"][0]["content"] == [{"type": "input_text", "text": "say pong"}]
    assert result.text == "pong" and result.completed and result.finish_reason == "completed"


@pytest.mark.parametrize(
    ("auth_style", "bearer", "x_api_key"),
    [("bearer", True, False), ("x-api-key", False, True), ("both", True, True)],
)
@respx.mock
def test_anthropic_request_is_what_claude_code_sends(
    auth_style: str, bearer: bool, x_api_key: bool
) -> None:
    route = respx.post(f"{BASE}/anthropic/v1/messages").mock(
        return_value=sse(anthropic_stream(["po", "ng"]))
    )
    result = stream(endpoint("anthropic", auth_style=auth_style))
    sent = route.calls.last.request
    assert sent.url.params["beta"] == "true"
    assert sent.headers["anthropic-version"] == "2023-06-01"
    assert ("authorization" in sent.headers) is bearer
    assert ("x-api-key" in sent.headers) is x_api_key
    assert result.text == "pong" and result.finish_reason == "end_turn" and result.completed


@respx.mock
def test_chat_request_asks_for_usage_and_reads_it() -> None:
    route = respx.post(f"{BASE}/chat/completions").mock(
        return_value=sse(chat_stream(["a", "b", "c"]))
    )
    result = stream(endpoint("chat"))
    body = json.loads(route.calls.last.request.content)
    assert body["stream_options"] == {"include_usage": True}
    assert result.output_tokens == 3 and result.tokens_source == "usage"
    assert result.input_tokens == 5


# --------------------------------------------------------------------------- reading


@respx.mock
def test_tokens_are_counted_when_the_server_sends_no_usage() -> None:
    respx.post(f"{BASE}/chat/completions").mock(
        return_value=sse(chat_stream(["a", "b"], usage=False, done=False))
    )
    result = stream(endpoint("chat"))
    assert result.output_tokens == 2 and result.tokens_source == "counted"
    assert result.completed  # a missing [DONE] is tolerated


@respx.mock
def test_length_cut_is_not_completed() -> None:
    respx.post(f"{BASE}/chat/completions").mock(
        return_value=sse(chat_stream(["a"], finish="length"))
    )
    result = stream(endpoint("chat"))
    assert result.finish_reason == "length" and not result.completed


@respx.mock
def test_pd_timing_is_read_from_every_protocol() -> None:
    chat = chat_stream(["a"], usage=False)
    usage = {"prompt_tokens": 1, "completion_tokens": 1, "pd_timing": PD}
    chat.insert(-1, sse_event({"choices": [], "usage": usage}))
    respx.post(f"{BASE}/chat/completions").mock(return_value=sse(chat))
    completed = {
        "type": "response.completed",
        "response": {"status": "completed", "usage": {"output_tokens": 1, "pd_timing": PD}},
    }
    respx.post(f"{BASE}/responses").mock(
        return_value=sse([*responses_stream(["a"], completed=False), sse_event(completed)])
    )
    msgs = anthropic_stream(["a"], stop=None) + [
        sse_event(
            {
                "type": "message_delta",
                "delta": {"stop_reason": "end_turn"},
                "usage": {"output_tokens": 1, "pd_timing": PD},
            }
        ),
        sse_event({"type": "message_stop"}),
    ]
    respx.post(f"{BASE}/anthropic/v1/messages").mock(return_value=sse(msgs))
    for protocol in ("chat", "responses", "anthropic"):
        assert stream(endpoint(protocol)).pd_timing == PD, protocol


@respx.mock
def test_non_streamed_body_with_pd_timing() -> None:
    respx.post(f"{BASE}/chat/completions").mock(
        return_value=httpx.Response(
            200,
            json={
                "model": "m",
                "choices": [
                    {"message": {"role": "assistant", "content": "pong"}, "finish_reason": "stop"}
                ],
                "usage": {"prompt_tokens": 3, "completion_tokens": 1, "pd_timing": PD},
            },
        )
    )
    with GatewayClient(endpoint("chat")) as client:
        result = client.complete("say pong")
    assert (result.text, result.completed, result.pd_timing) == ("pong", True, PD)


@respx.mock
def test_claude_code_style_json_fallback_is_accepted_for_anthropic() -> None:
    message = {
        "type": "message",
        "model": "m",
        "content": [{"type": "text", "text": "pong"}],
        "stop_reason": "end_turn",
        "usage": {"input_tokens": 3, "output_tokens": 1},
    }
    respx.post(f"{BASE}/anthropic/v1/messages").mock(return_value=httpx.Response(200, json=message))
    result = stream(endpoint("anthropic"))
    assert result.text == "pong" and result.completed


@respx.mock
def test_json_answer_to_a_codex_stream_is_a_protocol_error() -> None:
    respx.post(f"{BASE}/responses").mock(return_value=httpx.Response(200, json={"ok": True}))
    with pytest.raises(errors.ProtocolError, match="not text/event-stream"):
        stream(endpoint("responses"))


@respx.mock
def test_list_models_reads_openai_and_anthropic_lists() -> None:
    respx.get(f"{BASE}/models").mock(
        return_value=httpx.Response(
            200, json={"object": "list", "data": [{"id": "a"}, {"id": "b"}]}
        )
    )
    respx.get(f"{BASE}/anthropic/v1/models").mock(
        return_value=httpx.Response(
            200, json={"data": [{"type": "model", "id": "c"}], "has_more": False}
        )
    )
    with GatewayClient(endpoint("chat")) as client:
        assert client.list_models().ids == ["a", "b"]
    with GatewayClient(endpoint("anthropic")) as client:
        assert client.list_models().ids == ["c"]


# --------------------------------------------------------------------------- failures


@respx.mock
def test_401_with_openai_error_body() -> None:
    respx.post(f"{BASE}/responses").mock(
        return_value=httpx.Response(
            401,
            json={
                "error": {
                    "message": "Incorrect API key provided",
                    "type": "invalid_request_error",
                    "code": "invalid_api_key",
                }
            },
        )
    )
    with pytest.raises(errors.HttpStatusError) as info:
        stream(endpoint("responses"))
    err = info.value
    assert (err.status, err.error_code) == (401, "invalid_api_key")
    assert "Incorrect API key provided" in err.message and "$GW_KEY" in (err.fix or "")
    assert KEY not in err.message + (err.fix or "")


@respx.mock
def test_404_html_page_from_a_proxy_gives_its_title() -> None:
    page = b"<html><head><title>404 Not Found</title></head><body><h1>nginx</h1></body></html>"
    respx.post(f"{BASE}/chat/completions").mock(
        return_value=httpx.Response(404, content=page, headers={"content-type": "text/html"})
    )
    with pytest.raises(errors.HttpStatusError) as info:
        stream(endpoint("chat"))
    assert info.value.error_message == "HTML page: 404 Not Found"
    assert not info.value.is_model_error and "/v1" in (info.value.fix or "")


@respx.mock
def test_404_model_not_found() -> None:
    respx.post(f"{BASE}/chat/completions").mock(
        return_value=httpx.Response(
            404,
            json={
                "error": {
                    "message": "The model `gpt-x` does not exist",
                    "type": "invalid_request_error",
                    "code": "model_not_found",
                }
            },
        )
    )
    with pytest.raises(errors.HttpStatusError) as info:
        stream(endpoint("chat"))
    assert info.value.is_model_error


@respx.mock
def test_429_carries_retry_after() -> None:
    respx.post(f"{BASE}/chat/completions").mock(
        return_value=httpx.Response(
            429, headers={"retry-after": "7"}, json={"error": {"message": "slow down"}}
        )
    )
    with pytest.raises(errors.HttpStatusError) as info:
        stream(endpoint("chat"))
    assert (info.value.status, info.value.retry_after) == (429, 7.0)
    assert "7 s" in (info.value.fix or "")


@respx.mock
def test_500_with_anthropic_error_body() -> None:
    respx.post(f"{BASE}/anthropic/v1/messages").mock(
        return_value=httpx.Response(
            500,
            json={"type": "error", "error": {"type": "api_error", "message": "upstream exploded"}},
        )
    )
    with pytest.raises(errors.HttpStatusError) as info:
        stream(endpoint("anthropic"))
    assert (info.value.error_type, info.value.error_message) == ("api_error", "upstream exploded")


@respx.mock
def test_stream_without_its_completion_event_is_truncated() -> None:
    respx.post(f"{BASE}/responses").mock(
        return_value=sse(responses_stream(["half", " an answer"], completed=False))
    )
    with pytest.raises(errors.TruncatedStream, match="response.completed") as info:
        stream(endpoint("responses"))
    assert info.value.partial.text == "half an answer"


@respx.mock
def test_failed_response_event_is_an_upstream_error() -> None:
    failed = {"type": "response.failed", "response": {"error": {"message": "model crashed"}}}
    respx.post(f"{BASE}/responses").mock(return_value=sse([sse_event(failed)]))
    with pytest.raises(errors.UpstreamError, match="model crashed"):
        stream(endpoint("responses"))


class _Stalls(httpx.SyncByteStream, httpx.AsyncByteStream):
    """Sends one event, then times out as a silent server would."""

    def __iter__(self) -> Iterator[bytes]:
        yield chat_stream(["first"])[0]
        raise httpx.ReadTimeout("timed out")

    async def __aiter__(self) -> AsyncIterator[bytes]:
        yield chat_stream(["first"])[0]
        raise httpx.ReadTimeout("timed out")


@respx.mock
def test_stalled_stream_is_an_idle_timeout_with_the_partial_text() -> None:
    respx.post(f"{BASE}/chat/completions").mock(
        return_value=httpx.Response(
            200, headers={"content-type": "text/event-stream"}, stream=_Stalls()
        )
    )
    with pytest.raises(errors.IdleStreamTimeout) as info:
        stream(endpoint("chat"))
    assert info.value.partial is not None and info.value.partial.text == "first"


@respx.mock
def test_no_headers_is_a_headers_timeout() -> None:
    respx.post(f"{BASE}/chat/completions").mock(side_effect=httpx.ReadTimeout("timed out"))
    with pytest.raises(errors.HeadersTimeout, match="no response headers"):
        stream(endpoint("chat"))


@respx.mock
def test_connection_refused_is_unreachable() -> None:
    respx.post(f"{BASE}/chat/completions").mock(
        side_effect=httpx.ConnectError("[Errno 111] Connection refused")
    )
    with pytest.raises(errors.Unreachable, match="Connection refused"):
        stream(endpoint("chat"))


@respx.mock
def test_dns_failure_and_tls_failure_are_named() -> None:
    route = respx.post(f"{BASE}/chat/completions")
    route.side_effect = httpx.ConnectError("[Errno -2] Name or service not known")
    with pytest.raises(errors.Unreachable, match="cannot resolve"):
        stream(endpoint("chat"))
    route.side_effect = httpx.ConnectError("[SSL: CERTIFICATE_VERIFY_FAILED] self-signed")
    with pytest.raises(errors.TLSError):
        stream(endpoint("chat"))
    route.side_effect = httpx.ConnectTimeout("timed out")
    with pytest.raises(errors.ConnectTimeout):
        stream(endpoint("chat"))


@respx.mock
def test_redirect_to_another_origin_is_not_followed_and_key_not_sent() -> None:
    respx.post(f"{BASE}/chat/completions").mock(
        return_value=httpx.Response(307, headers={"location": "https://evil.example/steal"})
    )
    other = respx.post("https://evil.example/steal").mock(return_value=httpx.Response(200))
    with pytest.raises(errors.HttpStatusError) as info:
        stream(endpoint("chat"))
    assert not other.called
    assert info.value.location == "https://evil.example/steal"
    assert "https://evil.example/steal" in (info.value.fix or "")


def test_bad_scheme_is_a_protocol_error_with_a_fix() -> None:
    with pytest.raises(errors.ProtocolError) as info:
        stream(endpoint("chat", base_url="127.0.0.1:9/api"))
    assert "https://" in (info.value.fix or "")


@respx.mock
def test_async_client_over_httpx_reads_the_same_stream() -> None:
    """The async client's httpx path (taken behind a proxy, or with an injected transport);
    its lean HTTP/1.1 path is tested over real sockets in test_gateway_loopback.py."""
    import asyncio

    respx.post(f"{BASE}/anthropic/v1/messages").mock(
        return_value=sse(anthropic_stream(["po", "ng"]))
    )

    async def go() -> StreamResult:
        transport = httpx.AsyncHTTPTransport()  # respx answers for it
        async with AsyncGatewayClient(
            endpoint("anthropic"), timeout=2, transport=transport
        ) as client:
            models_route = respx.get(f"{BASE}/anthropic/v1/models").mock(
                return_value=httpx.Response(200, json={"data": [{"id": "m"}]})
            )
            assert (await client.list_models()).ids == ["m"]
            assert models_route.called
            return await client.stream("x")

    result = asyncio.run(go())
    assert result.text == "pong" and result.completed


# --------------------------------------------------------------------------- env


def test_proxy_for_honours_no_proxy(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HTTPS_PROXY", "http://user:hunter2@proxy.corp:3128")
    monkeypatch.setenv("NO_PROXY", "localhost,.internal")
    # The whole user-info is masked: the user name may be the key.
    assert proxy_for("https://gw.example/v1") == "http://***@proxy.corp:3128"
    assert proxy_for("https://llm.internal/v1") is None
    assert proxy_for("http://localhost:8000/api") is None
    assert proxy_for("http://gw.example/v1") is None  # only HTTPS_PROXY is set


def test_safe_url_masks_secret_query_values() -> None:
    shown = safe_url(f"https://gw.example/v1?key={KEY}&utm_source=x")
    assert KEY not in shown and "utm_source=x" in shown


@pytest.mark.parametrize(
    ("status", "body", "is_model"),
    [
        (
            404,
            {"type": "error", "error": {"type": "not_found_error", "message": "model: cl-x"}},
            True,
        ),
        (
            400,
            {"error": {"message": "Model 'x' is not supported", "type": "invalid_request"}},
            True,
        ),
        (404, {"error": {"message": "Not Found"}}, False),
        (500, {"error": {"message": "model backend is not ready"}}, False),
    ],
)
@respx.mock
def test_model_errors_are_recognised(status: int, body: dict, is_model: bool) -> None:  # type: ignore[type-arg]
    respx.post(f"{BASE}/anthropic/v1/messages").mock(return_value=httpx.Response(status, json=body))
    with pytest.raises(errors.HttpStatusError) as info:
        stream(endpoint("anthropic"))
    assert info.value.is_model_error is is_model


@respx.mock
def test_non_streamed_responses_and_messages_bodies() -> None:
    respx.post(f"{BASE}/responses").mock(
        return_value=httpx.Response(
            200,
            json={
                "id": "r1",
                "status": "incomplete",
                "model": "m",
                "incomplete_details": {"reason": "max_output_tokens"},
                "output": [{"type": "message", "content": [{"type": "output_text", "text": "po"}]}],
                "usage": {"input_tokens": 3, "output_tokens": 1},
            },
        )
    )
    respx.post(f"{BASE}/anthropic/v1/messages").mock(
        return_value=httpx.Response(
            200,
            json={
                "type": "message",
                "model": "m",
                "content": [{"type": "text", "text": "pong"}],
                "stop_reason": "end_turn",
                "usage": {"input_tokens": 3, "output_tokens": 2},
            },
        )
    )
    with GatewayClient(endpoint("responses")) as client:
        cut = client.complete("x")
    assert (cut.text, cut.finish_reason, cut.completed) == ("po", "max_output_tokens", False)
    with GatewayClient(endpoint("anthropic")) as client:
        done = client.complete("x")
    assert (done.text, done.completed, done.output_tokens) == ("pong", True, 2)
    assert done.timings.headers_ms is not None and done.timings.total_ms is not None


def test_retry_after_as_seconds_or_http_date() -> None:
    import email.utils
    import time

    from notes_cli.gateway._http import retry_after_seconds

    assert retry_after_seconds("7") == 7.0
    assert retry_after_seconds(None) is None and retry_after_seconds("soon") is None
    later = email.utils.formatdate(time.time() + 60, usegmt=True)
    assert 55 <= (retry_after_seconds(later) or 0) <= 60


def _encoded(coding: str, data: bytes) -> bytes:
    import gzip
    import zlib

    if coding == "gzip":
        return gzip.compress(data)
    if coding == "deflate":
        return zlib.compress(data)
    raw = zlib.compressobj(wbits=-zlib.MAX_WBITS)  # "deflate" as many servers send it
    return raw.compress(data) + raw.flush()


class _Wire(httpx.SyncByteStream):
    """A body as it comes off the wire: httpx does not read (so does not decode) it first."""

    def __init__(self, data: bytes) -> None:
        self.data = data

    def __iter__(self) -> Iterator[bytes]:
        for start in range(0, len(self.data), 1000):
            yield self.data[start : start + 1000]


@pytest.mark.parametrize("coding", ["gzip", "deflate", "raw-deflate"])
def test_compressed_bodies_are_decoded_on_the_httpx_path(coding: str) -> None:
    models = json.dumps({"data": [{"id": f"m{i}"} for i in range(5000)]}).encode()
    stream = b"".join(chat_stream(["po", "ng"]))
    header = {"content-encoding": "deflate" if coding == "raw-deflate" else coding}

    def answer(request: httpx.Request) -> httpx.Response:
        assert request.headers["accept-encoding"] == "gzip, deflate"  # no br / zstd asked for
        if request.method == "GET":
            return httpx.Response(200, headers=header, stream=_Wire(_encoded(coding, models)))
        headers = {**header, "content-type": "text/event-stream"}
        return httpx.Response(200, headers=headers, stream=_Wire(_encoded(coding, stream)))

    with GatewayClient(endpoint(), transport=httpx.MockTransport(answer)) as client:
        assert len(client.list_models().ids) == 5000
        assert client.stream("hi").text == "pong"


def test_an_encoding_that_was_not_asked_for_is_a_protocol_error() -> None:
    def answer(_request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, headers={"content-encoding": "br"}, stream=_Wire(b"\x1b\x00"))

    client = GatewayClient(endpoint(), transport=httpx.MockTransport(answer))
    with client, pytest.raises(errors.ProtocolError, match="content-encoding"):
        client.list_models()
