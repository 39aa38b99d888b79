"""`bridge serve --record`: a real bridge over a loopback upstream writes one trace row per
turn (session and turn from the client's header, token counts, salted block ids), and nothing
of the prompt, the answer, the keys or the headers' values reaches the file."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
from bridge_support import UPSTREAM_KEY, bridge_to
from loopback import LoopbackServer, Reply, sse_event

from notes_cli.trace.format import read_rows
from notes_cli.trace.record import BlockHasher, TraceRecorder

PROMPT = "SENTINEL-PROMPT-TEXT " * 300  # 6,300 characters: four blocks of 2,048
ANSWER = "SENTINEL-ANSWER-TEXT"
SESSION = "SENTINEL-SESSION-HEADER-VALUE"
LOCAL_KEY = "SENTINEL-LOCAL-KEY-abcdef0123456789"


def _upstream_stream(cached: int) -> list[bytes]:
    base = {"id": "c1", "object": "chat.completion.chunk", "model": "m"}
    usage = {
        "prompt_tokens": 1600,
        "completion_tokens": 7,
        "total_tokens": 1607,
        "prompt_tokens_details": {"cached_tokens": cached},
    }
    return [
        sse_event({**base, "choices": [{"index": 0, "delta": {"content": ANSWER}}]}),
        sse_event({**base, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}),
        sse_event({**base, "choices": [], "usage": usage}),
        b"data: [DONE]\n\n",
    ]


def _turn(bridge: Any, messages: list[dict[str, Any]]) -> httpx.Response:
    body = {"model": "claude-x", "max_tokens": 64, "stream": True, "messages": messages}
    headers = {"x-api-key": LOCAL_KEY, "x-claude-code-session-id": SESSION}
    return httpx.post(
        bridge.config.root_url + "/v1/messages", json=body, headers=headers, timeout=20
    )


def test_a_recorded_session_keeps_counts_and_shared_blocks_but_no_text(tmp_path: Path) -> None:
    path = tmp_path / "trace.jsonl"
    first = [{"role": "user", "content": PROMPT}]
    second = [
        *first,
        {"role": "assistant", "content": ANSWER},
        {"role": "user", "content": "and SENTINEL-FOLLOW-UP"},
    ]
    with (
        LoopbackServer(Reply.sse(_upstream_stream(1024))) as upstream,
        bridge_to(upstream.url, local_key=LOCAL_KEY) as bridge,
    ):
        recorder = bridge.app.recorder = TraceRecorder.create(path)
        assert _turn(bridge, first).status_code == 200
        assert _turn(bridge, second).status_code == 200
    recorder.close()  # the bridge has stopped: every turn's row is in
    rows = list(read_rows(path))
    assert [(r.turn, r.input_length, r.output_length, r.cached_tokens) for r in rows] == [
        (1, 1600, 7, 1024),
        (2, 1600, 7, 1024),
    ]
    assert rows[0].session_id == rows[1].session_id is not None
    # the second prompt starts with the first: its leading blocks are the same ids
    shared = len(rows[0].hash_ids) - 1  # the first prompt's last block is partial
    assert shared >= 2 and rows[1].hash_ids[:shared] == rows[0].hash_ids[:shared]
    assert rows[1].hash_ids[shared:] != rows[0].hash_ids[shared:]  # then they part
    text = path.read_text()
    for secret in ("SENTINEL", SESSION, LOCAL_KEY, UPSTREAM_KEY, "claude-x", "user"):
        assert secret not in text
    for field in json.loads(text.splitlines()[0]):
        assert field in {"timestamp", "input_length", "output_length", "hash_ids", "session_id",
                         "turn", "cached_tokens"}  # fmt: skip


def test_block_ids_depend_on_the_whole_prefix_and_the_salt() -> None:
    hasher = BlockHasher(salt=b"s" * 32, block_chars=4)
    assert hasher.hash_ids(["abcdefgh"]) == [0, 1]
    assert hasher.hash_ids(["abcdwxyz"]) == [0, 2]  # same first block, another second
    assert hasher.hash_ids(["zzzzefgh"]) == [3, 4]  # same second block after another prefix
    other = BlockHasher(salt=b"t" * 32, block_chars=4)
    assert other.secret_id(b"x") != hasher.secret_id(b"x")


def test_rows_are_written_in_arrival_order_and_failed_turns_leave_none(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    times = iter([0.0, 1.0, 2.0, 3.0])
    recorder = TraceRecorder(path.open("ab", buffering=0), clock=lambda: next(times))
    a, b, c = recorder.begin(), recorder.begin(), recorder.begin()
    common = {"session": None, "prompt": ["x"], "output_tokens": 1, "cached_tokens": 0}
    recorder.finish(c, input_tokens=3, **common)
    recorder.finish(a, input_tokens=1, **common)
    assert path.read_text().count("\n") == 1  # c waits for b
    recorder.drop(b)
    recorder.close()
    assert [r.input_length for r in read_rows(path)] == [1, 3]


def test_a_turn_records_its_think_time_since_its_sessions_last_answer(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    # seconds: turn 1 arrives at 0 and ends at 2; turn 2 arrives at 5 (3 s of thought) and
    # ends at 6; turn 3 arrives at 7, turn 4 at 7.5 before turn 3 ends at 8 (no think time)
    times = iter([0.0, 2.0, 5.0, 6.0, 7.0, 7.5, 8.0, 9.0])
    recorder = TraceRecorder(path.open("ab", buffering=0), clock=lambda: next(times))
    common = {"session": "s", "prompt": ["x"], "output_tokens": 1, "cached_tokens": 0}
    recorder.finish(recorder.begin(), input_tokens=1, **common)
    recorder.finish(recorder.begin(), input_tokens=2, **common)
    third, fourth = recorder.begin(), recorder.begin()
    recorder.finish(third, input_tokens=3, **common)
    recorder.finish(fourth, input_tokens=4, **common)
    recorder.close()
    assert [(r.turn, r.delay) for r in read_rows(path)] == [
        (1, None),
        (2, 3000.0),
        (3, 1000.0),
        (4, None),
    ]


def test_record_refuses_an_existing_file(cli, tmp_path: Path) -> None:
    path = tmp_path / "old.jsonl"
    path.write_text("keep me\n")
    result = cli("bridge", "serve", "--upstream", "http://127.0.0.1:9/v1", "--port", "0",
                 "--record", str(path))  # fmt: skip
    assert result.exit_code == 2 and "already exists" in result.stderr
    assert path.read_text() == "keep me\n"


def test_engine_serve_records_its_answered_requests_without_text(tmp_path: Path) -> None:
    from notes_cli.engine.core.config import EngineConfig
    from notes_cli.engine.http.server import start_engine

    path = tmp_path / "engine.jsonl"
    recorder = TraceRecorder.create(path)
    first = [{"role": "user", "content": PROMPT}]
    second = [*first, {"role": "assistant", "content": ANSWER},
              {"role": "user", "content": "SENTINEL-FOLLOW-UP"}]  # fmt: skip
    headers = {"x-api-key": LOCAL_KEY, "x-claude-code-session-id": SESSION}
    with start_engine(EngineConfig(speed=50), recorder=recorder) as engine:
        for messages, stream in ((first, True), (second, False)):
            body = {"model": "pd-mock-1", "max_tokens": 8, "stream": stream, "messages": messages}
            url = engine.anthropic_base_url.rstrip("/") + "/v1/messages"
            assert httpx.post(url, json=body, headers=headers, timeout=30).status_code == 200
    recorder.close()
    rows = list(read_rows(path))
    assert [r.turn for r in rows] == [1, 2] and rows[0].session_id == rows[1].session_id
    assert rows[1].input_length > rows[0].input_length > 1000 and rows[0].output_length >= 1
    shared = len(rows[0].hash_ids) - 1
    assert rows[1].hash_ids[:shared] == rows[0].hash_ids[:shared]
    text = path.read_text()
    assert "SENTINEL" not in text and "pd-mock-1" not in text


def _chat_answer() -> dict[str, Any]:
    usage = {"prompt_tokens": 1500, "completion_tokens": 9, "total_tokens": 1509,
             "prompt_tokens_details": {"cached_tokens": 512}}  # fmt: skip
    message = {"role": "assistant", "content": ANSWER}
    return {"id": "c1", "object": "chat.completion", "model": "m", "usage": usage,
            "choices": [{"index": 0, "message": message, "finish_reason": "stop"}]}  # fmt: skip


def test_passed_through_chat_turns_and_gemini_turns_are_recorded_without_text(
    tmp_path: Path,
) -> None:
    """OpenCode's chat completions (passed through, streamed and whole, with its session
    header) and a Gemini generateContent turn each add a row with the upstream's counts."""
    path = tmp_path / "trace.jsonl"
    chat = {"model": "m", "messages": [{"role": "user", "content": PROMPT}]}
    headers = {"authorization": f"Bearer {LOCAL_KEY}", "x-session-id": SESSION}
    gemini = {"contents": [{"role": "user", "parts": [{"text": PROMPT}]}]}
    with (
        LoopbackServer(Reply.sse(_upstream_stream(256))) as streamed,
        LoopbackServer(Reply.json(_chat_answer())) as whole,
    ):
        with bridge_to(streamed.url, local_key=LOCAL_KEY) as bridge:
            recorder = bridge.app.recorder = TraceRecorder.create(path)
            url = bridge.config.root_url
            reply = httpx.post(f"{url}/v1/chat/completions", json={**chat, "stream": True},
                               headers=headers, timeout=20)  # fmt: skip
            assert reply.status_code == 200 and ANSWER in reply.text
        with bridge_to(whole.url, local_key=LOCAL_KEY) as bridge:
            bridge.app.recorder = recorder
            url = bridge.config.root_url
            reply = httpx.post(f"{url}/v1/chat/completions", json=chat, headers=headers,
                               timeout=20)  # fmt: skip
            assert reply.status_code == 200 and reply.json()["choices"]
            reply = httpx.post(f"{url}/v1beta/models/m:generateContent", json=gemini,
                               headers={"x-goog-api-key": LOCAL_KEY}, timeout=20)  # fmt: skip
            assert reply.status_code == 200, reply.text
    recorder.close()
    rows = list(read_rows(path))
    assert [(r.turn, r.input_length, r.output_length, r.cached_tokens) for r in rows] == [
        (1, 1600, 7, 256),  # streamed: the usage chunk, read as it went by
        (2, 1500, 9, 512),  # whole
        (None, 1500, 9, 512),  # Gemini CLI sends no session header
    ]
    assert rows[0].session_id == rows[1].session_id is not None
    assert rows[0].hash_ids == rows[1].hash_ids and len(rows[0].hash_ids) == 4  # same prompt
    text = path.read_text()
    for secret in ("SENTINEL", SESSION, LOCAL_KEY, UPSTREAM_KEY):
        assert secret not in text
