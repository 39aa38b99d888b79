"""An upstream that answers `200` with something that is not the API's answer (a proxy's HTML
sign-in page, binary bytes, JSON to a streamed request) gets a 502 in the client's own error
shape, never a "successful" `text/event-stream` of those bytes; with a fallback configured the
fallback answers instead (nothing had reached the client). Real loopback upstreams
(`loopback.py`) behind a real bridge (`bridge_support.py`)."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from bridge_support import bridge_over, bridge_to
from loopback import LoopbackServer, Reply, chat_stream

HTML_PAGE = Reply(
    200,
    {"content-type": "text/html; charset=utf-8"},
    [b"<!doctype html><html><body>Sign in to the network</body></html>"],
)
BINARY_STREAM = Reply(
    200, {"content-type": "text/event-stream"}, [b"\x89PNG\r\n\x1a\n\x00\x00\x00"]
)
HTML_AS_STREAM = Reply.sse([b"<html><body>It works!</body></html>"])
JSON_TO_A_STREAM = Reply.json({"choices": [{"message": {"content": "whole"}}]})
WRONG = {
    "html": HTML_PAGE,
    "binary": BINARY_STREAM,
    "html-typed-as-sse": HTML_AS_STREAM,
    "json-to-a-stream": JSON_TO_A_STREAM,
}
MESSAGES = [{"role": "user", "content": "say pong"}]


def _post(bridge: Any, route: str, stream: bool) -> httpx.Response:
    """One request on `route` (chat: the pass-through; responses, messages: translated)."""
    if route == "chat":
        body: dict[str, Any] = {"model": "m", "stream": stream, "messages": MESSAGES}
        url = bridge.v1_base_url + "/chat/completions"
    elif route == "responses":
        body = {"model": "m", "stream": stream, "input": "say pong"}
        url = bridge.v1_base_url + "/responses"
    else:
        body = {"model": "m", "stream": stream, "max_tokens": 16, "messages": MESSAGES}
        url = bridge.anthropic_base_url + "/v1/messages"
    return httpx.post(url, json=body, timeout=20)


def _error_message(route: str, answer: httpx.Response) -> str:
    document = answer.json()
    if route == "messages":  # Anthropic's shape
        assert document["type"] == "error"
    return str(document["error"]["message"])


@pytest.mark.parametrize("route", ["chat", "responses", "messages"])
@pytest.mark.parametrize("wrong", list(WRONG))
def test_a_200_that_is_not_the_answer_is_a_502_in_the_clients_shape(wrong: str, route: str) -> None:
    with LoopbackServer(WRONG[wrong]) as upstream, bridge_to(upstream.url + "/v1") as bridge:
        streamed = _post(bridge, route, stream=True)
        whole = _post(bridge, route, stream=False)
    assert streamed.status_code == 502, streamed.content[:200]
    assert streamed.headers["content-type"].startswith("application/json")
    assert "instead of an event stream" in _error_message(route, streamed)
    if wrong == "json-to-a-stream":  # JSON is what a non-streamed request wants
        assert whole.status_code == 200
    else:
        assert whole.status_code == 502, whole.content[:200]
        assert "instead of JSON" in _error_message(route, whole)


@pytest.mark.parametrize("stream", [True, False], ids=["streamed", "whole"])
@pytest.mark.parametrize("wrong", ["html", "binary"])
def test_the_fallback_answers_when_the_first_upstream_sends_a_page(
    wrong: str, stream: bool
) -> None:
    good = Reply.sse(chat_stream(["pong"])) if stream else Reply.json({"choices": []})
    with (
        LoopbackServer(WRONG[wrong]) as first,
        LoopbackServer(good) as fallback,
        bridge_over([(first.url + "/v1", None), (fallback.url + "/v1", None)]) as bridge,
    ):
        answer = _post(bridge, "chat", stream=stream)
    assert answer.status_code == 200
    assert answer.content == b"".join(good.chunks)  # the fallback's bytes, nothing spliced
    assert len(first.requests) == 1 and len(fallback.requests) == 1


def test_a_real_event_stream_with_a_comment_first_still_passes() -> None:
    events = [b": keep-alive\n\n", *chat_stream(["pong"])]
    with LoopbackServer(Reply.sse(events)) as upstream, bridge_to(upstream.url + "/v1") as bridge:
        answer = _post(bridge, "chat", stream=True)
    assert answer.status_code == 200
    assert answer.content == b"".join(events)
