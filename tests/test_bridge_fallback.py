"""Ordered fallback upstreams (`bridge.fallback`), with real servers on loopback: the next
upstream answers when one is down or answers 5xx / 429 before its answer starts, never once a
stream has begun; a down upstream is skipped for its cool-down; each switch is logged without
a key; every upstream down is one 502 naming each."""

from __future__ import annotations

import json
import logging
import os
import re
import signal
import socket
import subprocess
import sys
import time
from typing import Any

import httpx
import pytest
from bridge_support import Clock, bridge_over, chunk, sse_payloads
from loopback import LoopbackServer, Received, Reply, chat_stream

from notes_cli.bridge.fallback import COOL_DOWN_S

KEY_A = "sk-first-SENTINEL-aaaaaaaaaaaaaaaa"
KEY_B = "sk-second-SENTINEL-bbbbbbbbbbbbbbb"


def refused_url() -> str:
    """A loopback port nothing listens on (bound, then closed): connecting is refused."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


def responses(bridge: Any, *, stream: bool = True, **kw: Any) -> httpx.Response:
    body = {"model": "m", "stream": stream, "input": "hi", "store": False}
    return httpx.post(bridge.config.v1_base_url + "/responses", json=body, timeout=20, **kw)


def text_of(response: httpx.Response) -> str:
    deltas = [
        e["delta"]
        for e in sse_payloads(response.content)
        if e.get("type", "").endswith("output_text.delta")
    ]
    return "".join(deltas)


def answering(words: list[str]) -> Any:
    """A chat upstream saying `words`: streamed, or whole when the request does not stream."""

    def handle(request: Received) -> Reply:
        if request.json().get("stream"):
            return Reply.sse(chat_stream(words))
        message = {"role": "assistant", "content": "".join(words)}
        choice = {"index": 0, "message": message, "finish_reason": "stop"}
        return Reply.json({"id": "c1", "object": "chat.completion", "choices": [choice]})

    return handle


def test_a_refused_first_upstream_is_skipped_for_the_second(
    caplog: pytest.LogCaptureFixture,
) -> None:
    dead = refused_url()
    with (
        LoopbackServer(answering(["from", " b"])) as second,
        bridge_over([(dead, KEY_A), (second.url + "/v1", KEY_B)]) as bridge,
        caplog.at_level(logging.INFO, logger="pdnotes.bridge"),
    ):
        answer = responses(bridge)
    assert answer.status_code == 200
    assert text_of(answer) == "from b"
    # the fallback got its own key, never the first one's
    assert second.requests[0].headers["authorization"] == f"Bearer {KEY_B}"
    logged = caplog.text
    assert dead in logged and f"trying {second.url}/v1" in logged  # the switch, named
    assert "now answered by fallback 1" in logged
    assert KEY_A not in logged and KEY_B not in logged


def test_a_503_from_the_first_upstream_goes_to_the_second() -> None:
    first = LoopbackServer(Reply.json({"error": {"message": "overloaded"}}, status=503))
    with (
        first,
        LoopbackServer(answering(["ok"])) as second,
        bridge_over([(first.url + "/v1", KEY_A), (second.url + "/v1", KEY_B)]) as bridge,
    ):
        streamed = responses(bridge)
        whole = httpx.post(
            bridge.config.anthropic_base_url + "/v1/messages",
            json={"model": "m", "max_tokens": 9, "messages": [{"role": "user", "content": "hi"}]},
            timeout=20,
        )
    assert streamed.status_code == 200 and text_of(streamed) == "ok"
    assert len(first.requests) == 1  # the second request skipped it: cooling down
    assert first.requests[0].headers["authorization"] == f"Bearer {KEY_A}"
    assert whole.status_code == 200, whole.text  # the non-streamed turn falls back too
    assert len(second.requests) == 2


def test_a_stream_that_dies_midway_ends_with_an_error_and_no_switch() -> None:
    events = [chunk({"content": "half"}), 0.05]
    with (
        LoopbackServer(Reply.sse(events, abort=True)) as first,
        LoopbackServer(answering(["never"])) as second,
        bridge_over([(first.url + "/v1", KEY_A), (second.url + "/v1", KEY_B)]) as bridge,
    ):
        answer = responses(bridge)
    assert answer.status_code == 200  # the stream had begun
    payloads = sse_payloads(answer.content)
    assert text_of(answer) == "half"  # what the first upstream said, nothing spliced after it
    assert payloads[-1]["type"] == "response.failed"
    assert first.url in payloads[-1]["response"]["error"]["message"]
    assert second.requests == []  # never switched mid-answer


def test_every_upstream_down_is_one_502_naming_each(caplog: pytest.LogCaptureFixture) -> None:
    dead = refused_url()
    busy = LoopbackServer(Reply.json({"error": {"message": f"busy {KEY_B}"}}, status=503))
    with busy, bridge_over([(dead, KEY_A), (busy.url + "/v1", KEY_B)]) as bridge:
        answer = responses(bridge)
        chat = httpx.post(
            bridge.config.v1_base_url + "/chat/completions",
            json={"model": "m", "messages": [{"role": "user", "content": "hi"}]},
            timeout=20,
        )
    assert answer.status_code == 502
    message = answer.json()["error"]["message"]
    assert "no upstream answered (2 tried)" in message
    assert dead in message and f"{busy.url}/v1: answered 503" in message
    assert KEY_B not in message  # the echoed key is masked
    assert chat.status_code == 502 and "2 tried" in chat.json()["error"]["message"]
    assert KEY_B not in caplog.text


def test_a_request_error_from_the_first_is_the_clients_and_not_retried() -> None:
    bad = LoopbackServer(Reply.json({"error": {"message": "no such model"}}, status=404))
    with (
        bad,
        LoopbackServer(answering(["x"])) as second,
        bridge_over([(bad.url + "/v1", KEY_A), (second.url + "/v1", KEY_B)]) as bridge,
    ):
        answer = responses(bridge)
    assert answer.status_code == 404
    assert "no such model" in answer.json()["error"]["message"]
    assert second.requests == []


def test_429_switches_and_a_cooled_down_upstream_is_tried_first_again() -> None:
    clock = Clock()
    limited = {"on": True}

    def first_handler(_: Received) -> Reply:
        if limited["on"]:
            return Reply.json({"error": {"message": "slow down"}}, status=429)
        return Reply.sse(chat_stream(["first", " again"]))

    with (
        LoopbackServer(first_handler) as first,
        LoopbackServer(answering(["second"])) as second,
        bridge_over([(first.url + "/v1", KEY_A), (second.url + "/v1", None)], clock=clock) as b,
    ):
        assert text_of(responses(b)) == "second"  # 429 → the next upstream
        assert text_of(responses(b)) == "second"  # cooling down: not asked
        assert len(first.requests) == 1
        assert "authorization" not in second.requests[0].headers  # it has no key of its own
        limited["on"] = False
        clock.now += COOL_DOWN_S + 1
        assert text_of(responses(b)) == "first again"  # back first once the cool-down is over
    assert len(first.requests) == 2


def test_a_cooling_upstream_is_still_tried_when_the_others_fail() -> None:
    clock = Clock()
    state = {"first": 503, "second": 200}

    def handler(name: str) -> Any:
        def handle(_: Received) -> Reply:
            if state[name] != 200:
                return Reply.json({"error": {"message": "down"}}, status=state[name])
            return Reply.sse(chat_stream([name]))

        return handle

    with (
        LoopbackServer(handler("first")) as first,
        LoopbackServer(handler("second")) as second,
        bridge_over([(first.url + "/v1", None), (second.url + "/v1", None)], clock=clock) as b,
    ):
        assert text_of(responses(b)) == "second"
        state["first"], state["second"] = 200, 503  # the first is back before its cool-down ends
        assert text_of(responses(b)) == "first"  # tried last, and it answers
    assert len(second.requests) == 2


def test_the_health_route_reports_the_upstream_that_answers() -> None:
    dead = refused_url()
    models = Reply.json({"object": "list", "data": [{"id": "m"}]})
    with (
        LoopbackServer(models) as second,
        bridge_over([(dead, None), (second.url + "/v1", None)]) as b,
    ):
        health = httpx.get(b.config.root_url + "/health", timeout=20).json()
        listed = httpx.get(b.config.v1_base_url + "/models", timeout=20).json()
    assert health["upstream"]["ok"] is True
    assert health["upstream_url"] == second.url + "/v1"
    assert [m["id"] for m in listed["data"]] == ["m"]


def test_the_record_carries_the_fallbacks_and_serve_lists_them(cli: Any) -> None:
    written = cli(
        "config", "codex", "--bridge", "--base-url", "http://gpu-a:23333/v1",
        "--env-key", "KEY_A", "--model", "q",
        "--bridge-fallback", "http://gpu-b:23333/v1/chat/completions",
        "--bridge-fallback", "https://cloud.example/v1",
        "--bridge-fallback-key-env", "-", "--bridge-fallback-key-env", "CLOUD_KEY",
    )  # fmt: skip
    assert written.exit_code == 0, written.stdout + written.stderr
    from notes_cli.bridge.config import load_record, record_path

    record = json.loads(record_path().read_text())
    assert record["fallbacks"] == [
        {"upstream": "http://gpu-b:23333/v1", "upstream_key_env": None},
        {"upstream": "https://cloud.example/v1", "upstream_key_env": "CLOUD_KEY"},
    ]
    loaded = load_record()
    assert loaded is not None and [u.upstream for u in loaded.upstreams] == [
        "http://gpu-a:23333/v1",
        "http://gpu-b:23333/v1",
        "https://cloud.example/v1",
    ]
    # a later `config claude --bridge` for the same upstream keeps them
    again = cli(
        "config", "claude", "--bridge", "--base-url", "http://gpu-a:23333/v1", "--model", "q"
    )  # fmt: skip
    assert again.exit_code == 0, again.stderr
    assert len(json.loads(record_path().read_text())["fallbacks"]) == 2


@pytest.mark.parametrize(
    ("fallbacks", "said"),
    [
        ([{"upstream": "ftp://x"}], '"fallbacks" must be a list'),
        ({"upstream": "http://x"}, '"fallbacks" must be a list'),
        ([{"upstream": "http://x", "upstream_key_env": "sk-live-1234567890abcdef"}], "fallbacks"),
    ],
)
def test_a_bad_fallbacks_list_in_the_record_is_refused_unshown(
    cli: Any, fallbacks: Any, said: str
) -> None:
    from notes_cli.bridge.config import record_path

    record_path().parent.mkdir(parents=True, exist_ok=True)
    record = {"upstream": "http://a/v1", "fallbacks": fallbacks}
    record_path().write_text(json.dumps(record))
    result = cli("bridge", "serve", "--port", "0")
    assert result.exit_code != 0
    assert said in result.stderr
    assert "sk-live" not in result.stdout + result.stderr


def test_more_key_variables_than_upstreams_is_a_usage_error(cli: Any) -> None:
    result = cli(
        "bridge", "serve", "--port", "0", "--upstream", "http://a/v1",
        "--upstream-key-env", "A", "--upstream-key-env", "B",
    )  # fmt: skip
    assert result.exit_code == 2, result.stdout + result.stderr
    assert "2 --upstream-key-env for 1 --upstream" in result.stderr


def test_the_same_upstream_twice_is_refused(cli: Any) -> None:
    result = cli(
        "bridge", "serve", "--port", "0",
        "--upstream", "http://a/v1", "--upstream", "http://a/v1/chat/completions",
    )  # fmt: skip
    assert result.exit_code == 2
    assert "given twice" in result.stderr


def test_bridge_serve_with_two_upstreams_sends_each_its_own_key(tmp_path: Any) -> None:
    # the real command: flags → record-free config → app → per-upstream keys from the env
    log = tmp_path / "bridge.log"
    dead = refused_url()
    with LoopbackServer(answering(["served"])) as second, log.open("w") as sink:
        process = subprocess.Popen(
            [sys.executable, "-m", "notes_cli", "bridge", "serve", "--port", "0"]
            + ["--upstream", dead, "--upstream-key-env", "KEY_A"]
            + ["--upstream", second.url + "/v1", "--upstream-key-env", "KEY_B"],
            stdout=sink,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
            env={**os.environ, "NO_COLOR": "1", "KEY_A": KEY_A, "KEY_B": KEY_B},
        )
        try:
            port = None
            deadline = time.monotonic() + 30
            while port is None and time.monotonic() < deadline and process.poll() is None:
                time.sleep(0.1)
                port = re.search(r"Codex base_url\s+http://127\.0\.0\.1:(\d+)/v1", log.read_text())
            assert port, log.read_text()
            root = f"http://127.0.0.1:{port.group(1)}"
            turn = {"model": "m", "input": "hi", "stream": True, "store": False}
            answer = httpx.post(root + "/v1/responses", json=turn, timeout=20)
        finally:
            os.killpg(process.pid, signal.SIGTERM)
            process.wait(15)
    shown = log.read_text()
    assert answer.status_code == 200 and text_of(answer) == "served"
    assert second.requests[0].headers["authorization"] == f"Bearer {KEY_B}"
    assert f"fallback 1: {second.url}/v1 (key from $KEY_B)" in shown  # the banner
    assert f"trying {second.url}/v1" in shown  # the switch, in the log
    assert KEY_A not in shown and KEY_B not in shown


def test_a_fallback_key_without_a_fallback_is_a_usage_error(cli: Any) -> None:
    result = cli(
        "config", "codex", "--bridge", "--base-url", "http://gpu-a/v1", "--model", "q",
        "--bridge-fallback-key-env", "CLOUD_KEY",
    )  # fmt: skip
    assert result.exit_code == 2, result.stdout + result.stderr
    assert "--bridge-fallback-key-env without --bridge-fallback" in result.stderr
    from notes_cli.bridge.config import record_path

    assert not record_path().exists()  # nothing recorded


def test_a_key_pasted_as_a_fallbacks_variable_is_refused_unshown(cli: Any) -> None:
    result = cli(
        "config", "claude", "--bridge", "--base-url", "http://gpu-a/v1", "--model", "q",
        "--bridge-fallback", "http://gpu-b/v1",
        "--bridge-fallback-key-env", "sk-live-0123456789abcdef0123",
    )  # fmt: skip
    assert result.exit_code == 2
    assert "sk-live-0123456789abcdef0123" not in result.stdout + result.stderr


def test_the_service_is_passed_every_upstreams_key_variable() -> None:
    from notes_cli.bridge.config import BridgeConfig, Fallback
    from notes_cli.bridge.service import plan_service

    record = BridgeConfig(
        upstream="http://gpu-a/v1",
        upstream_key_env="KEY_A",
        fallbacks=(Fallback("http://gpu-b/v1"), Fallback("https://cloud.example/v1", "CLOUD")),
    )
    unit = plan_service(record, platform="linux").text
    assert "PassEnvironment=KEY_A CLOUD\n" in unit


def test_config_gemini_records_fallbacks_too(cli: Any) -> None:
    result = cli(
        "config", "gemini", "--bridge", "--base-url", "http://gpu-a/v1", "--model", "q",
        "--bridge-fallback", "http://gpu-b/v1",
    )  # fmt: skip
    assert result.exit_code == 0, result.stdout + result.stderr
    from notes_cli.bridge.config import record_path

    fallbacks = json.loads(record_path().read_text())["fallbacks"]
    assert fallbacks == [{"upstream": "http://gpu-b/v1", "upstream_key_env": None}]
