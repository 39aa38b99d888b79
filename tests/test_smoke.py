"""`pdnotes smoke`: the verdict on the article's criteria, its JSON, retries, and no key shown."""

from __future__ import annotations

from collections.abc import Callable

import httpx
import pytest
import respx
from conftest import CliResult
from loopback import LoopbackServer, Reply, anthropic_stream, chat_stream, responses_stream, spaced
from loopback import sse_response as sse

from notes_cli.clients.endpoint import Endpoint
from notes_cli.smoke import SmokeRun, judge, run_smoke

GW = "https://gw.example/api"
Cli = Callable[..., CliResult]


def endpoint(protocol: str = "chat") -> Endpoint:
    return Endpoint("openai", GW, protocol, model="m")  # type: ignore[arg-type]


def test_three_good_runs_pass_with_timings_in_json(cli: Cli) -> None:
    reply = Reply.sse(spaced(responses_stream(["PD ", "splits ", "prefill ", "from decode"])))
    with LoopbackServer(reply) as server:
        result = cli("smoke", "--base-url", f"{server.url}/api", "--model", "m", "--json")
    assert result.exit_code == 0, result.stderr
    doc = result.json()
    assert doc["schema"] == "pdnotes.smoke/1" and doc["ok"] is True
    assert len(doc["runs"]) == 3 and len(server.requests) == 3
    assert all(r["path"] == "/api/responses" for r in map(vars, server.requests))
    run = doc["runs"][0]
    assert run["finish_reason"] == "completed" and run["preview"] == "PD splits prefill from decode"
    assert run["headers_ms"] <= run["ttft_ms"] <= run["total_ms"]
    assert run["output_tokens"] == 4 and run["tokens_source"] == "usage"
    assert doc["breakdown"]["gateway_ms"] is not None
    assert doc["breakdown"]["model_ttft_ms"] is not None
    assert doc["breakdown"]["headers_with_first_token"] is False
    assert "3x the median" in doc["verdict"]["rule"]


def test_human_output_shows_the_split_and_the_verdict(cli: Cli) -> None:
    with LoopbackServer(Reply.sse(spaced(anthropic_stream(["po", "ng"])))) as server:
        result = cli(
            "smoke", "--client", "claude", "--base-url", server.url, "--model", "m", "-n", "2"
        )
    assert result.exit_code == 0, result.stdout + result.stderr
    assert "where the time goes (median): network + gateway: connect" in result.stdout
    assert "PASS returned yes, completed yes, stable yes" in result.stdout
    assert "run 2: ok" in result.stderr


@respx.mock
def test_a_500_fails_the_verdict_with_exit_1(cli: Cli) -> None:
    respx.post(f"{GW}/chat/completions").mock(
        side_effect=[
            sse(chat_stream(["ok"])),
            httpx.Response(500, json={"error": {"message": "upstream exploded"}}),
            sse(chat_stream(["ok"])),
        ]
    )
    result = cli("smoke", "--client", "openai", "--base-url", GW, "--model", "m", "--json")
    assert result.exit_code == 1
    verdict = result.json()["verdict"]
    assert (verdict["returned"], verdict["ok"]) == (False, False)
    assert verdict["reasons"] == [
        "run 2 did not return: http-status 500: 500 Internal Server Error from "
        f"{GW}/chat/completions: upstream exploded"
    ]


@pytest.mark.parametrize(
    ("events", "problem"),
    [
        (
            chat_stream(["cut"], finish="length"),
            "the model did not stop by itself: the answer ran to the 512-token limit "
            "(1 tokens, finish reason length)",
        ),
        (chat_stream([]), "the model stopped (finish reason stop) without writing any text"),
    ],
)
@respx.mock
def test_incomplete_answers_fail(events: list[bytes], problem: str) -> None:
    respx.post(f"{GW}/chat/completions").mock(return_value=sse(events))
    report = run_smoke(endpoint(), n=1)
    assert not report.verdict.ok and not report.verdict.completed
    assert report.runs[0].problem == problem


@respx.mock
def test_stream_without_completion_event_does_not_return() -> None:
    respx.post(f"{GW}/responses").mock(
        return_value=sse(responses_stream(["half"], completed=False))
    )
    report = run_smoke(endpoint("responses"), n=1)
    run = report.runs[0]
    assert run.error is not None and run.error["kind"] == "truncated-stream"
    assert run.preview == "half" and not report.verdict.returned


@respx.mock
def test_429_is_not_retried_unless_asked() -> None:
    route = respx.post(f"{GW}/chat/completions").mock(
        return_value=httpx.Response(429, headers={"retry-after": "2"})
    )
    report = run_smoke(endpoint(), n=1, sleep=lambda s: pytest.fail("slept"))
    assert route.call_count == 1 and report.runs[0].status == 429


@respx.mock
def test_retries_honour_retry_after() -> None:
    respx.post(f"{GW}/chat/completions").mock(
        side_effect=[
            httpx.Response(429, headers={"retry-after": "2"}),
            sse(chat_stream(["ok"])),
        ]
    )
    waited: list[float] = []
    report = run_smoke(endpoint(), n=1, retries=2, sleep=waited.append)
    assert waited == [2.0]
    run = report.runs[0]
    assert run.ok and run.attempts == 2 and "waited 2.0 s" in run.retried[0]


@respx.mock
def test_401_is_never_retried() -> None:
    route = respx.post(f"{GW}/chat/completions").mock(return_value=httpx.Response(401))
    report = run_smoke(endpoint(), n=1, retries=3, sleep=lambda s: None)
    assert route.call_count == 1 and report.runs[0].attempts == 1


def _run(index: int, total: float, error: dict | None = None) -> SmokeRun:  # type: ignore[type-arg]
    return SmokeRun(
        index,
        error is None,
        200,
        1.0,
        5.0,
        50.0,
        total,
        10,
        "usage",
        20.0,
        "stop",
        error is None,
        "x",
        error=error,
        problem="timeout" if error else None,
    )


def test_stability_rule() -> None:
    assert judge([_run(1, 900), _run(2, 1000), _run(3, 1100)]).stable
    slow = judge([_run(1, 900), _run(2, 1000), _run(3, 3500)])
    assert not slow.stable and slow.reasons == [
        "run 3 took 3499 ms after connecting, over 3x the median 999 ms"
    ]
    # 3x of a tiny median is noise, not instability
    assert judge([_run(1, 10), _run(2, 12), _run(3, 90)]).stable
    # The 500 ms floor applies to the difference from the median, not to the run's total:
    # 600 ms is 4x the 150 ms median but only 450 ms more, so these runs are stable.
    assert judge([_run(1, 140), _run(2, 150), _run(3, 600)]).stable
    spike = judge([_run(1, 140), _run(2, 150), _run(3, 700)])
    assert not spike.stable and spike.reasons == [
        "run 3 took 699 ms after connecting, over 3x the median 149 ms"
    ]
    # Only the first run opens the connection: a slow handshake is not unstable answers (it
    # shows in the breakdown's connect_ms), a slow answer after a quick connect is.
    first = _run(1, 1646)
    first.connect_ms = 1623.0
    assert judge([first, _run(2, 30), _run(3, 31)]).stable
    assert not judge([_run(1, 1646), _run(2, 30), _run(3, 31)]).stable
    timeout = judge([_run(1, 900), _run(2, 0, {"kind": "idle-stream-timeout"})])
    assert not timeout.stable and "run 2 timed out" in timeout.reasons
    # Runs that never returned show nothing about stability.
    refused = judge([_run(1, 0, {"kind": "unreachable"}), _run(2, 0, {"kind": "unreachable"})])
    assert not refused.stable and "latency not judged: 0 of 2 runs returned" in refused.reasons


def test_breakdown_notices_headers_held_until_the_first_token() -> None:
    from notes_cli.smoke import breakdown

    held = _run(1, 900)
    held.headers_ms = held.ttft_ms = 300.0
    split = breakdown([held])
    assert split.headers_with_first_token and split.gateway_ms == 300.0
    assert split.model_ttft_ms == 0.0
    assert not breakdown([_run(1, 900)]).headers_with_first_token


def test_latency_spike_over_a_real_socket_is_unstable() -> None:
    replies = iter([0.0, 0.0, 1.0])

    def handler(_request: object) -> Reply:
        return Reply.sse([next(replies), *chat_stream(["a", "b"])])

    with LoopbackServer(handler) as server:
        ep = Endpoint("openai", server.url, "chat", model="m")
        report = run_smoke(ep, n=3)
    assert report.verdict.returned and report.verdict.completed
    assert not report.verdict.stable and "run 3 took" in report.verdict.reasons[0]


def test_key_never_appears_in_any_output(
    cli: Cli, sentinel_key: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GW_KEY", sentinel_key)
    replies = iter([Reply.sse(chat_stream(["ok"])), Reply.json({"error": {"message": "no"}}, 401)])
    with LoopbackServer(lambda _r: next(replies)) as server:
        args = [
            "smoke",
            "--client",
            "openai",
            "--base-url",
            server.url,
            "--model",
            "m",
            "--key-env",
            "GW_KEY",
            "-n",
            "2",
        ]
        human = cli(*args)
        assert server.requests[0].headers["authorization"] == f"Bearer {sentinel_key}"
    replies = iter([Reply.json({"error": {"message": "no"}}, 401)])
    with LoopbackServer(lambda _r: next(replies)) as server:
        as_json = cli(*args[:4], server.url, *args[5:-2], "-n", "1", "--json")
    for result in (human, as_json):
        assert result.exit_code == 1
        assert sentinel_key not in result.stdout + result.stderr
        assert "…XYZW" in result.stdout + result.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--client", "nope", "--base-url", GW, "--model", "m"], "unknown client"),
        (["--base-url", GW, "--model", "m", "--key-env", "NOPE_KEY"], "$NOPE_KEY is unset"),
        (["--base-url", GW], "no model id"),
        (["--client", "codex"], "codex is not configured"),
    ],
)
def test_usage_errors_exit_2(cli: Cli, args: list[str], message: str) -> None:
    result = cli("smoke", *args)
    assert result.exit_code == 2 and message in result.stderr


def test_uses_the_codex_config(
    cli: Cli, isolated_home: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pathlib import Path

    monkeypatch.setenv("MOCK_API_KEY", "sk-test-0123456789")
    with LoopbackServer(Reply.sse(responses_stream(["pong"]))) as server:
        codex_home = Path(str(isolated_home)) / ".codex"
        codex_home.mkdir()
        (codex_home / "config.toml").write_text(
            'model = "pd-mock-1"\nmodel_provider = "mock"\n[model_providers.mock]\n'
            f'name = "Mock"\nbase_url = "{server.url}/api"\nenv_key = "MOCK_API_KEY"\n'
            'wire_api = "responses"\n'
        )
        result = cli("smoke", "-n", "1", "--json")
        assert result.exit_code == 0, result.stderr
        sent = server.requests[0]
    assert sent.path == "/api/responses" and sent.json()["model"] == "pd-mock-1"
    assert sent.headers["authorization"] == "Bearer sk-test-0123456789"


@respx.mock
def test_responses_deltas_without_output_item_done_fail_as_codex_would() -> None:
    from loopback import sse_event

    events = [
        sse_event({"type": "response.output_text.delta", "delta": "pong"}),
        sse_event({"type": "response.completed", "response": {"status": "completed"}}),
    ]
    respx.post(f"{GW}/responses").mock(return_value=sse(events))
    report = run_smoke(endpoint("responses"), n=1)
    assert not report.verdict.completed
    assert "Codex prints an empty answer" in (report.runs[0].problem or "")


def test_codex_config_with_an_unset_key_stops_like_codex(cli: Cli, isolated_home: object) -> None:
    from pathlib import Path

    codex_home = Path(str(isolated_home)) / ".codex"
    codex_home.mkdir()
    (codex_home / "config.toml").write_text(
        'model = "m"\nmodel_provider = "gw"\n[model_providers.gw]\nname = "GW"\n'
        'base_url = "http://127.0.0.1:9/api"\nenv_key = "GW_KEY"\n'
    )
    result = cli("smoke", "--json")
    assert result.exit_code == 2
    assert result.json()["error"].startswith("$GW_KEY is unset or empty: Codex would stop")


def test_claude_without_a_credential_stops_like_claude(cli: Cli, isolated_home: object) -> None:
    from pathlib import Path

    claude_home = Path(str(isolated_home)) / ".claude"
    claude_home.mkdir()
    (claude_home / "settings.json").write_text(
        '{"env": {"ANTHROPIC_BASE_URL": "http://127.0.0.1:9/api/anthropic", '
        '"ANTHROPIC_MODEL": "m"}}'
    )
    result = cli("smoke", "--client", "claude")
    assert result.exit_code == 2 and "Not logged in" in result.stderr


@pytest.mark.parametrize("command", ["smoke", "bench"])
def test_a_key_given_to_key_env_is_refused_without_being_shown(
    cli: Cli, sentinel_key: str, command: str
) -> None:
    # --key-env takes a variable's NAME; the message once showed the pasted key twice
    extra = ["-n", "1"] if command == "smoke" else ["--requests", "1"]
    args = [command, "--base-url", "http://127.0.0.1:9/v1", "--model", "m"]
    result = cli(*args, "--key-env", sentinel_key, *extra, "--json")
    assert result.exit_code == 2
    assert "takes the NAME of an environment variable" in result.stdout + result.stderr
    assert sentinel_key not in result.stdout + result.stderr
    assert sentinel_key[-12:] not in result.stdout + result.stderr


def test_a_key_with_a_character_http_cannot_carry_is_a_clear_failure(
    cli: Cli, monkeypatch: pytest.MonkeyPatch, sentinel_key: str
) -> None:
    # pasted with a typographic quote: httpx raised UnicodeEncodeError, a traceback
    monkeypatch.setenv("GW_KEY", sentinel_key + "\u201d")
    args = ["smoke", "--client", "openai", "--base-url", "http://127.0.0.1:9/v1"]
    result = cli(*args, "--key-env", "GW_KEY", "--model", "m", "-n", "1", "--json")
    assert result.exit_code == 1, result.stderr
    [run] = result.json()["runs"]
    where = f"U+201D at position {len(sentinel_key) + 1} of {len(sentinel_key) + 1}"
    assert where in run["problem"] and "$GW_KEY" in run["problem"]
    assert sentinel_key not in result.stdout + result.stderr


def _echoing(kind: str, key: str) -> Reply:
    """A gateway that puts the key it was sent somewhere smoke shows."""
    if kind == "content-type":
        return Reply(200, {"content-type": f"text/html; session={key}"}, [b"<html>login</html>"])
    if kind == "finish-reason":
        return Reply.sse(chat_stream(["po", "ng"], finish=key))
    third = len(key) // 3  # split over three chunks: only the whole answer shows it
    return Reply.sse(chat_stream(["your key: ", key[:third], key[third:], " ok"]))


@pytest.mark.parametrize("kind", ["content-type", "finish-reason", "answer"])
def test_smoke_masks_the_key_wherever_the_gateway_echoes_it(
    cli: Cli, monkeypatch: pytest.MonkeyPatch, kind: str
) -> None:
    key = "tok-NOTKEYSHAPED"  # not key-shaped: only where it was sent says it is the key
    monkeypatch.setenv("GW_KEY", key)
    with LoopbackServer(_echoing(kind, key)) as gateway:
        args = ["smoke", "--client", "openai", "--base-url", gateway.url, "--model", "m"]
        for output in ([], ["--json"]):
            result = cli(*args, "--key-env", "GW_KEY", "-n", "1", *output)
            assert key not in result.stdout + result.stderr, (kind, output)
            assert "…" in result.stdout + result.stderr  # masked, not dropped
