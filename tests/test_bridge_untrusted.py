"""The bridge against what it cannot trust, on a real loopback bridge: an upstream whose body it
cannot read is a 502 naming the upstream (never a 500 and a traceback), a client's long path or
id and an upstream's long message cost no more than the part of them the bridge sends, and
usage counts that are no token counts never reach the client."""

from __future__ import annotations

import json
import logging
from typing import Any

import httpx
import pytest
from bridge_support import UPSTREAM_KEY, bridge_to, chunk, sse_payloads
from hostile_gateway import HostileGateway
from loopback import LoopbackServer, Reply, sse_event

from notes_cli.bridge.app import SHOWN_CHARS
from notes_cli.wire import anthropic, chat, responses

DEEP = b"[" * 100_000 + b"]" * 100_000
LOCAL_KEY = "local-bridge-key-0123456789"
# the longest message an answer may carry: the cut text plus the words around it
MESSAGE_BOUND = SHOWN_CHARS + 200

RESPONSES_TURN = {"model": "m", "input": "hi", "store": False}
MESSAGES_TURN = {"model": "m", "max_tokens": 50, "messages": [{"role": "user", "content": "hi"}]}
ROUTES = {
    "models": ("GET", "/v1/models", None),
    "responses": ("POST", "/v1/responses", RESPONSES_TURN),
    "messages": ("POST", "/v1/messages", MESSAGES_TURN),
}


def ask(bridge: Any, route: str, **kw: Any) -> httpx.Response:
    method, path, body = ROUTES[route]
    return httpx.request(method, bridge.config.root_url + path, json=body, timeout=60, **kw)


def message_of(response: httpx.Response) -> str:
    return str(response.json()["error"]["message"])


def assert_no_traceback(caplog: pytest.LogCaptureFixture) -> None:
    assert "Traceback" not in caplog.text
    assert not any(record.exc_info for record in caplog.records), caplog.text[:500]


# ------------------------------------------------------------------ bodies it cannot read


UNREADABLE = {
    "nested-100000-deep": DEEP,
    "nested-deep-in-an-object": b'{"object": "list", "data": ' + DEEP + b', "choices": []}',
    "not-json": b"<html><title>welcome</title></html>",
}


@pytest.mark.parametrize("route", ROUTES)
@pytest.mark.parametrize("body", UNREADABLE.values(), ids=UNREADABLE.keys())
def test_a_body_the_bridge_cannot_read_is_a_502_naming_the_upstream(
    route: str, body: bytes, caplog: pytest.LogCaptureFixture
) -> None:
    reply = Reply(200, {"content-type": "application/json"}, [body])
    with LoopbackServer(reply) as upstream, bridge_to(upstream.url) as bridge:
        answer = ask(bridge, route)
    assert answer.status_code == 502, answer.text[:300]
    assert upstream.url in message_of(answer)
    assert_no_traceback(caplog)


def test_a_model_list_of_the_wrong_shape_is_a_502(caplog: pytest.LogCaptureFixture) -> None:
    with LoopbackServer(Reply.json({"data": 5})) as upstream, bridge_to(upstream.url) as bridge:
        answer = ask(bridge, "models")
    assert answer.status_code == 502 and upstream.url in message_of(answer)
    assert_no_traceback(caplog)


@pytest.mark.parametrize("route", ROUTES)
def test_a_body_too_large_to_read_is_a_502_naming_the_upstream(
    route: str, caplog: pytest.LogCaptureFixture
) -> None:
    with HostileGateway() as gateway, bridge_to(gateway.base("endless-body")) as bridge:
        answer = ask(bridge, route)
    assert answer.status_code == 502, answer.text[:300]
    assert gateway.base("endless-body") in message_of(answer)
    assert_no_traceback(caplog)


@pytest.mark.parametrize("route", ["responses", "messages"])
def test_a_streamed_event_nested_too_deep_ends_the_stream_with_an_error_naming_the_upstream(
    route: str, caplog: pytest.LogCaptureFixture
) -> None:
    deep_event = b'data: {"choices": [{"index": 0, "delta": ' + DEEP + b"}]}\n\n"
    events = [chunk({"content": "so far"}), deep_event, chunk({"content": "never"}, "stop")]
    with LoopbackServer(Reply.sse(events)) as upstream, bridge_to(upstream.url) as bridge:
        method, path, body = ROUTES[route]
        answer = httpx.post(
            bridge.config.root_url + path, json={**body, "stream": True}, timeout=60
        )
    assert answer.status_code == 200
    last = sse_payloads(answer.content)[-1]
    assert last["type"] in ("response.failed", "error"), last
    said = json.dumps(last)
    assert upstream.url in said and "recursion" not in said.lower(), said
    assert b"never" not in answer.content
    assert_no_traceback(caplog)


# ------------------------------------------------- long text, cut before it is scrubbed


@pytest.mark.timeout(60)
def test_an_unauthenticated_request_for_a_long_path_is_refused_without_reading_it() -> None:
    path = "/" + "a" * 60_000  # one request of these held the bridge for a minute
    with bridge_to("http://127.0.0.1:9/v1", local_key=LOCAL_KEY) as bridge:
        answer = httpx.get(bridge.config.root_url + path, timeout=60)
        authorised = httpx.get(
            bridge.config.root_url + "/nowhere", headers={"x-api-key": LOCAL_KEY}, timeout=60
        )
    assert answer.status_code == 401 and "aaaa" not in answer.text
    assert authorised.status_code == 404 and "/nowhere" in authorised.text


@pytest.mark.timeout(60)
def test_a_long_path_is_cut_before_it_is_scrubbed_and_a_key_across_the_cut_is_still_masked() -> (
    None
):
    # without a client key anyone may ask; the key sits across the cut
    path = "/" + "a" * (SHOWN_CHARS - 30) + UPSTREAM_KEY + "b" * 60_000
    with bridge_to("http://127.0.0.1:9/v1") as bridge:
        answer = httpx.get(bridge.config.root_url + path, timeout=60)
    assert answer.status_code == 404
    message = message_of(answer)
    assert "no route GET /aaa" in message and len(message) < MESSAGE_BOUND
    assert "SENTINEL" not in answer.text and "0123456789" not in answer.text


@pytest.mark.timeout(60)
def test_a_megabyte_previous_response_id_is_refused_without_being_echoed() -> None:
    turn = {**RESPONSES_TURN, "previous_response_id": "a" * 1_000_000}
    with bridge_to("http://127.0.0.1:9/v1") as bridge:
        answer = httpx.post(bridge.config.root_url + "/v1/responses", json=turn, timeout=60)
    assert answer.status_code == 400
    error = answer.json()["error"]
    assert error["param"] == "previous_response_id"
    assert "1000000 characters" in error["message"] and "aaaa" not in error["message"]


LONG_MESSAGE = "z" * 20_000  # a 400 with this stalled the bridge 14 s


@pytest.mark.timeout(60)
@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
@pytest.mark.parametrize("route", ["responses", "messages"])
def test_an_upstream_error_with_a_long_message_is_relayed_cut(route: str, stream: bool) -> None:
    error = {"error": {"message": LONG_MESSAGE, "type": "invalid_request_error"}}
    with (
        LoopbackServer(Reply.json(error, status=400)) as upstream,
        bridge_to(upstream.url) as bridge,
    ):
        method, path, body = ROUTES[route]
        answer = httpx.post(
            bridge.config.root_url + path, json={**body, "stream": stream}, timeout=60
        )
    assert answer.status_code == 400
    message = message_of(answer)
    assert upstream.url in message and "zzzz" in message
    assert len(message) < MESSAGE_BOUND


@pytest.mark.timeout(60)
def test_an_error_event_with_a_long_message_is_relayed_cut() -> None:
    events = [chunk({"content": "so far"}), sse_event({"error": {"message": "y" * 1_000_000}})]
    with LoopbackServer(Reply.sse(events)) as upstream, bridge_to(upstream.url) as bridge:
        answer = httpx.post(
            bridge.config.root_url + "/v1/responses",
            json={**RESPONSES_TURN, "stream": True},
            timeout=60,
        )
    failed = sse_payloads(answer.content)[-1]
    assert failed["type"] == "response.failed"
    message = failed["response"]["error"]["message"]
    assert message.startswith("yyyy") and len(message) < MESSAGE_BOUND


# ------------------------------------------------------------------ usage numbers


BAD_COUNTS: list[Any] = [-5, 2.5, 1e30, 2**31, 10**40, "12", True, [1], {"n": 1}]


def _warned(caplog: pytest.LogCaptureFixture, field: str) -> bool:
    return any(
        field in r.getMessage() and "not a token count" in r.getMessage() for r in caplog.records
    )


@pytest.mark.parametrize("bad", BAD_COUNTS, ids=repr)
def test_every_codec_drops_a_count_that_is_no_token_count_and_says_so(
    bad: Any, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, "pdnotes.wire")
    usage = chat.decode_usage(
        {
            "prompt_tokens": bad,
            "completion_tokens": 3,
            "prompt_tokens_details": {"cached_tokens": bad},
            "completion_tokens_details": {"reasoning_tokens": bad},
        }
    )
    assert usage is not None
    assert (usage.input_tokens, usage.output_tokens) == (0, 3)
    assert (usage.cached_input_tokens, usage.reasoning_tokens) == (0, 0)
    assert _warned(caplog, "usage.prompt_tokens")
    assert _warned(caplog, "usage.completion_tokens_details.reasoning_tokens")

    usage = responses.decode_usage({"input_tokens": 4, "output_tokens": bad})
    assert usage is not None and (usage.input_tokens, usage.output_tokens) == (4, 0)
    assert _warned(caplog, "usage.output_tokens")

    # Anthropic: message_delta's bad count falls back to message_start's
    start = anthropic.decode_usage({"input_tokens": 9, "cache_read_input_tokens": 2})
    usage = anthropic.decode_usage({"input_tokens": bad, "cache_read_input_tokens": bad}, start)
    assert usage is not None and (usage.input_tokens, usage.cached_input_tokens) == (9, 2)


def test_counts_up_to_the_bound_are_kept_and_logged_without_their_text(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, "pdnotes.wire")
    usage = chat.decode_usage({"prompt_tokens": 2**31 - 1, "completion_tokens": 0})
    assert usage is not None and usage.input_tokens == 2**31 - 1
    assert not caplog.records
    chat.decode_usage({"prompt_tokens": UPSTREAM_KEY, "completion_tokens": 10**4000})
    assert "SENTINEL" not in caplog.text and "a JSON str" in caplog.text
    assert "an integer beyond 10**15" in caplog.text


def test_a_stray_count_among_a_servers_extra_fields_does_not_override_the_checked_one() -> None:
    usage = chat.decode_usage({"prompt_tokens": 7, "completion_tokens": 3, "input_tokens": -5})
    assert usage is not None
    assert responses.usage_json(usage)["input_tokens"] == 7
    assert anthropic.usage_json(usage)["input_tokens"] == 7
    assert chat.usage_json(usage)["prompt_tokens"] == 7


def _bad_usage_chunk() -> bytes:
    usage = {"prompt_tokens": -5, "completion_tokens": 1e30, "total_tokens": "lots"}
    return sse_event({"id": "c1", "choices": [], "usage": {**usage, "input_tokens": -5}})


@pytest.mark.parametrize("route", ["responses", "messages"])
def test_the_bridge_relays_no_bad_usage_count_streamed_or_whole(
    route: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, "pdnotes")
    events = [chunk({"content": "hi"}), chunk({}, "stop"), _bad_usage_chunk(), b"data: [DONE]\n\n"]
    whole = {
        "id": "c1",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "hi"}}],
        "usage": {"prompt_tokens": -5, "completion_tokens": 2.5, "input_tokens": -5},
    }

    def answer(request: Any) -> Reply:
        return Reply.sse(events) if request.json().get("stream") else Reply.json(whole)

    with LoopbackServer(answer) as upstream, bridge_to(upstream.url) as bridge:
        method, path, body = ROUTES[route]
        streamed = httpx.post(
            bridge.config.root_url + path, json={**body, "stream": True}, timeout=60
        )
        replied = httpx.post(bridge.config.root_url + path, json=body, timeout=60)
    payloads = sse_payloads(streamed.content)
    if route == "responses":
        [completed] = [p for p in payloads if p["type"] == "response.completed"]
        usages = [completed["response"]["usage"], replied.json()["usage"]]
    else:
        usages = [p["usage"] for p in payloads if p["type"] == "message_delta"]
        usages.append(replied.json()["usage"])
    for usage in usages:
        assert usage["input_tokens"] == 0 and usage["output_tokens"] == 0, usage
    assert _warned(caplog, "usage.prompt_tokens") and _warned(caplog, "usage.completion_tokens")
    assert_no_traceback(caplog)


@pytest.mark.timeout(60)
def test_a_log_line_is_cut_before_it_is_scrubbed_and_keeps_no_key() -> None:
    from notes_cli.bridge.app import LOG_CHARS, BridgeApp
    from notes_cli.bridge.config import BridgeConfig
    from notes_cli.bridge.server import log_handler

    app = BridgeApp(BridgeConfig(upstream="http://127.0.0.1:9/v1"), upstream_key=UPSTREAM_KEY)
    said = "q" * (LOG_CHARS - 40) + UPSTREAM_KEY + "r" * 1_000_000  # a megabyte to the log
    record = logging.LogRecord("pdnotes.bridge", logging.WARNING, __file__, 1, said, None, None)
    formatter = log_handler(app).formatter
    assert formatter is not None
    line = formatter.format(record)
    assert line.startswith("pdnotes bridge: qqq") and len(line) < LOG_CHARS + 100
    assert "SENTINEL" not in line and "0123456789" not in line
