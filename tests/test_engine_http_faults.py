"""Fault injection: spec parsing, deterministic schedules, each fault kind as a client sees it,
and the admin route tests use to switch faults at runtime."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

import httpx
import pytest
from fake_engine import FakeEngine

from notes_cli.engine.http.faults import FaultSpecError, parse_fault

CHAT = {"model": "pd-mock-1", "messages": [{"role": "user", "content": "say pong"}]}
MESSAGES = {"model": "pd-mock-1", "max_tokens": 32, "messages": [{"role": "user", "content": "hi"}]}


@pytest.mark.parametrize(
    ("spec", "described"),
    [
        ("500", "500@always"),
        ("500@first:2", "500@first:2"),
        ("500 first 2", "500@first:2"),
        ("503@every:3", "503@every:3"),
        ("429@rate:0.25:seed:7", "429@rate:0.25:seed:7"),
        ("rate-limit rate 0.5", "429@rate:0.5:seed:0"),
        ("model-not-found", "404@always"),
        ("stall-mid-stream:250ms@first:1", "stall-mid-stream:0.25s@first:1"),
        ("slow-headers", "slow-headers:2s@always"),
        ("hang", "hang-before-headers:3600s@always"),
        ("cut-before-completion@every:2", "cut-before-completion@every:2"),
        ("kv-tcp-fallback", "kv-tcp-fallback@always"),
        ("ignore-eos@every:2", "no-stop@every:2"),
    ],
)
def test_fault_specs_parse(spec: str, described: str) -> None:
    assert parse_fault(spec).describe() == described


@pytest.mark.parametrize(
    ("spec", "complaint"),
    [
        ("", "empty"),
        ("418", "unknown fault kind"),
        ("500@first:0", "bad schedule"),
        ("500@sometimes", "bad schedule"),
        ("500@rate:2", "between 0 and 1"),
        ("500@rate:0.5:pepper:1", "bad schedule"),
        ("500:3s", "takes no duration"),
    ],
)
def test_bad_fault_specs_say_what_is_expected(spec: str, complaint: str) -> None:
    with pytest.raises(FaultSpecError, match=complaint):
        parse_fault(spec)


def statuses(engine: Any, count: int, path: str = "/chat/completions") -> list[int]:
    with httpx.Client(timeout=10) as client:
        return [client.post(engine.base_url + path, json=CHAT).status_code for _ in range(count)]


@pytest.fixture
def start(start_engine_server: Callable[..., Any]) -> Callable[..., Any]:
    def run(*faults: str, fake: FakeEngine | None = None) -> Any:
        return start_engine_server(service=fake or FakeEngine(), faults=faults)

    return run


def test_first_n_fails_exactly_the_next_n(start: Callable[..., Any]) -> None:
    assert statuses(start("500@first:2"), 4) == [500, 500, 200, 200]


def test_every_nth_fails_each_nth(start: Callable[..., Any]) -> None:
    assert statuses(start("503@every:3"), 6) == [200, 200, 503, 200, 200, 503]


def test_rate_with_a_seed_is_the_same_on_every_run(start: Callable[..., Any]) -> None:
    first = statuses(start("429@rate:0.5:seed:7"), 12)
    second = statuses(start("429@rate:0.5:seed:7"), 12)

    assert first == second
    assert set(first) == {200, 429}


def test_http_faults_use_each_apis_error_format(start: Callable[..., Any]) -> None:
    engine = start("401@first:1", "404@first:2", "429@first:3", "500@first:4")
    with httpx.Client(timeout=10) as client:
        url = f"{engine.anthropic_base_url}/v1/messages"
        replies = [client.post(url, json=MESSAGES) for _ in range(4)]
        openai_reply = client.post(f"{engine.base_url}/chat/completions", json=CHAT)

    kinds = [(r.status_code, r.json()["error"]["type"]) for r in replies]
    assert kinds == [
        (401, "authentication_error"),
        (404, "not_found_error"),
        (429, "rate_limit_error"),
        (500, "api_error"),
    ]
    assert replies[2].headers["retry-after"] == "1"
    assert openai_reply.status_code == 200


def test_model_not_found_fault_carries_the_code(start: Callable[..., Any]) -> None:
    engine = start("404")
    with httpx.Client(timeout=10) as client:
        reply = client.post(
            f"{engine.base_url}/responses", json={"model": "pd-mock-1", "input": "x"}
        )

    assert reply.status_code == 404
    assert reply.json()["error"]["code"] == "model_not_found"


@pytest.mark.parametrize(
    ("path", "body", "completion_marker"),
    [
        ("/chat/completions", {**CHAT, "stream": True}, "[DONE]"),
        ("/responses", {"model": "pd-mock-1", "input": "x", "stream": True}, "response.completed"),
        ("/anthropic/v1/messages", {**MESSAGES, "stream": True}, "message_stop"),
    ],
)
def test_cut_before_completion_streams_tokens_but_no_completion_event(
    start: Callable[..., Any], path: str, body: dict[str, Any], completion_marker: str
) -> None:
    engine = start("cut-before-completion@first:1")
    with httpx.Client(timeout=10) as client:
        cut = client.post(engine.base_url + path, json=body).text
        whole = client.post(engine.base_url + path, json=body).text

    assert "pong" in cut
    assert completion_marker not in cut
    assert completion_marker in whole


def test_no_stop_runs_every_answer_to_its_token_budget(
    start_engine_server: Callable[..., Any],
) -> None:
    """Like a base model: the answer that would be "pong" goes on until max_tokens."""
    engine = start_engine_server(faults=("no-stop@first:1",))
    body = {**CHAT, "max_tokens": 40}
    with httpx.Client(timeout=20) as client:
        running = client.post(engine.base_url + "/chat/completions", json=body).json()
        normal = client.post(engine.base_url + "/chat/completions", json=body).json()
    assert running["choices"][0]["finish_reason"] == "length"
    assert running["usage"]["completion_tokens"] == 40
    assert running["choices"][0]["message"]["content"].startswith("pong pong")
    assert normal["choices"][0]["finish_reason"] == "stop"
    assert normal["choices"][0]["message"]["content"] == "pong"


def test_stall_mid_stream_goes_silent_after_the_first_token(start: Callable[..., Any]) -> None:
    engine = start("stall-mid-stream:0.4@first:1", fake=FakeEngine(reply="a b c"))
    arrivals = []
    with (
        httpx.Client(timeout=10) as client,
        client.stream(
            "POST", f"{engine.base_url}/chat/completions", json={**CHAT, "stream": True}
        ) as response,
    ):
        for line in response.iter_lines():
            if '"content":"' in line and '"content":""' not in line:
                arrivals.append(time.monotonic())

    assert len(arrivals) >= 3
    assert arrivals[1] - arrivals[0] >= 0.35


def test_stall_trips_a_client_idle_timeout(start: Callable[..., Any]) -> None:
    engine = start("stall-mid-stream:5@first:1")
    timeout = httpx.Timeout(10, read=0.3)
    with httpx.Client(timeout=timeout) as client, pytest.raises(httpx.ReadTimeout):  # noqa: SIM117
        with client.stream(
            "POST",
            f"{engine.base_url}/responses",
            json={"model": "pd-mock-1", "input": "x", "stream": True},
        ) as response:
            for _ in response.iter_lines():
                pass


def test_slow_headers_delay_the_response_start(start: Callable[..., Any]) -> None:
    engine = start("slow-headers:0.3@first:1")
    with httpx.Client(timeout=10) as client:
        began = time.monotonic()
        slow = client.post(f"{engine.base_url}/chat/completions", json=CHAT)
        slow_s = time.monotonic() - began

    assert slow.status_code == 200
    assert slow_s >= 0.3


def test_hang_before_headers_times_the_client_out_and_the_server_keeps_serving(
    start: Callable[..., Any],
) -> None:
    engine = start("hang-before-headers@first:1")
    with httpx.Client(timeout=httpx.Timeout(10, read=0.3)) as client:
        with pytest.raises(httpx.ReadTimeout):
            client.post(f"{engine.base_url}/chat/completions", json=CHAT)
        assert client.post(f"{engine.base_url}/chat/completions", json=CHAT).status_code == 200


def test_kv_tcp_fallback_switches_the_link(start: Callable[..., Any]) -> None:
    fake = FakeEngine()
    engine = start("kv-tcp-fallback", fake=fake)

    assert fake.link_fallback is True
    with httpx.Client(timeout=10) as client:
        client.delete(engine.url("/engine/faults"))
    assert fake.link_fallback is False


def test_admin_route_sets_lists_and_clears_faults(start: Callable[..., Any]) -> None:
    fake = FakeEngine()
    engine = start(fake=fake)
    admin = engine.url("/engine/faults")
    with httpx.Client(timeout=10) as client:
        set_reply = client.post(admin, json={"faults": ["500@first:1", "kv-tcp-fallback"]})
        failed = client.post(f"{engine.base_url}/chat/completions", json=CHAT).status_code
        listed = client.get(admin).json()["faults"]
        added = client.post(admin, json={"faults": ["503"], "replace": False}).json()["faults"]
        cleared = client.delete(admin).json()["faults"]
        after = client.post(f"{engine.base_url}/chat/completions", json=CHAT).status_code

    assert set_reply.status_code == 200
    assert failed == 500
    assert listed[0] == {"spec": "500@first:1", "kind": "500", "seen": 1, "fired": 1}
    assert [f["kind"] for f in added] == ["500", "kv-tcp-fallback", "503"]
    assert cleared == [] and after == 200
    assert fake.link_fallback is False


@pytest.mark.parametrize("body", [{"faults": ["418"]}, {"faults": 5}, [1], "nonsense"])
def test_admin_route_rejects_bad_specs(start: Callable[..., Any], body: Any) -> None:
    engine = start()
    with httpx.Client(timeout=10) as client:
        reply = client.post(engine.url("/engine/faults"), content=json.dumps(body))

    assert reply.status_code == 400
    assert reply.json()["error"]["type"] == "invalid_request_error"


def test_admin_route_needs_the_key_when_one_is_set(
    start_engine_server: Callable[..., Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ENGINE_KEY", "sk-admin-0123456789")
    engine = start_engine_server(service=FakeEngine(), api_key_env="ENGINE_KEY")
    with httpx.Client(timeout=10) as client:
        denied = client.post(engine.url("/engine/faults"), json={"faults": ["500"]})
        allowed = client.post(
            engine.url("/engine/faults"),
            json={"faults": ["500"]},
            headers={"authorization": "Bearer sk-admin-0123456789"},
        )

    assert denied.status_code == 401
    assert allowed.status_code == 200
