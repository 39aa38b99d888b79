"""doctor relates a stream's silences and cuts to the client's settings: a silence near the
client's idle timeout names the timeout to raise (with the silence measured and a value), a
stream cut before its completion event names the retries to raise and, after a long silence,
the relay's idle timeout. Exact silences come from an injected clock (respx streams advance it);
the end-to-end runs over real sockets assert the finding and that a silence is reported, never
how long it was."""

from __future__ import annotations

import re
import time
import types
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import respx
from loopback import LoopbackServer, Reply, anthropic_stream, responses_stream

from notes_cli.clients.claude.limits import stream_limits as claude_limits
from notes_cli.clients.codex.limits import stream_limits as codex_limits
from notes_cli.clients.endpoint import Endpoint
from notes_cli.doctor.live import probe_endpoint

GW = "https://gw.example"
MODELS = httpx.Response(200, json={"data": [{"id": "m1"}]})
SILENCE = re.compile(r"silent for (?:at least )?(\d+) ms")


class FakeClock:
    """`perf_counter` for the gateway client: moves only when a stream says so."""

    def __init__(self) -> None:
        self.now = 1000.0

    def perf_counter(self) -> float:
        return self.now


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> FakeClock:
    from notes_cli.gateway import client

    fake = FakeClock()
    patched = types.SimpleNamespace(**{n: getattr(time, n) for n in dir(time) if n[0] != "_"})
    patched.perf_counter = fake.perf_counter
    monkeypatch.setattr(client, "time", patched)
    return fake


class Timed(httpx.SyncByteStream):
    """Events with the silence (seconds, on the fake clock) before each."""

    def __init__(self, clock: FakeClock, timed: list[tuple[float, bytes]]) -> None:
        self.clock, self.timed = clock, timed

    def __iter__(self) -> Iterator[bytes]:
        for pause, event in self.timed:
            self.clock.now += pause
            yield event


def sse(clock: FakeClock, timed: list[tuple[float, bytes]]) -> httpx.Response:
    headers = {"content-type": "text/event-stream"}
    return httpx.Response(200, headers=headers, stream=Timed(clock, timed))


def codex(provider: dict[str, object]) -> tuple[Endpoint, object]:
    endpoint = Endpoint("codex", f"{GW}/api", "responses", model="m1", key="k", key_env="GW_KEY")
    return endpoint, codex_limits("gw", provider)


def with_pause(events: list[bytes], at: int, pause: float) -> list[tuple[float, bytes]]:
    return [(pause if i == at else 0.0, event) for i, event in enumerate(events)]


@respx.mock
def test_a_silence_near_codexs_idle_timeout_names_the_setting_and_the_silence(clock) -> None:
    endpoint, limits = codex({"stream_idle_timeout_ms": 4000})
    respx.get(f"{GW}/api/models").mock(return_value=MODELS)
    events = with_pause(responses_stream(["po", "ng"]), at=2, pause=3.0)
    respx.post(f"{GW}/api/responses").mock(return_value=sse(clock, events))

    findings, _ = probe_endpoint(endpoint, limits=limits)

    [found] = findings
    assert found.id == "stream-idle-gap" and found.severity == "warning"
    assert "went silent for 3000 ms, 75% of Codex's idle timeout of 4000 ms" in found.message
    assert found.fix.startswith(
        "raise stream_idle_timeout_ms in [model_providers.gw] to 12000 (it is 4000 ms; "
        "the probe measured a 3000 ms silence)"
    )


@respx.mock
def test_the_wait_before_the_first_event_counts_as_codexs_timer_does(clock) -> None:
    """Codex's idle timer starts at the headers: a slow first event is a silence too."""
    endpoint, limits = codex({"stream_idle_timeout_ms": 4000})
    respx.get(f"{GW}/api/models").mock(return_value=MODELS)
    events = with_pause(responses_stream(["pong"]), at=0, pause=2.5)
    respx.post(f"{GW}/api/responses").mock(return_value=sse(clock, events))

    [found] = probe_endpoint(endpoint, limits=limits)[0]
    assert found.id == "stream-idle-gap" and "2500 ms" in found.message


@respx.mock
def test_a_silence_far_from_the_timeout_is_no_finding(clock) -> None:
    endpoint, limits = codex({})  # the default: 300000 ms
    respx.get(f"{GW}/api/models").mock(return_value=MODELS)
    events = with_pause(responses_stream(["po", "ng"]), at=2, pause=60.0)
    respx.post(f"{GW}/api/responses").mock(return_value=sse(clock, events))

    findings, _ = probe_endpoint(endpoint, limits=limits, timeout=120)
    assert findings == []


@respx.mock
def test_claude_codes_watchdog_is_named_for_claude(clock) -> None:
    endpoint = Endpoint(
        "claude", f"{GW}/api/anthropic", "anthropic", model="m1", key="k", key_env="T"
    )
    respx.get(f"{GW}/api/anthropic/v1/models").mock(return_value=MODELS)
    events = with_pause(anthropic_stream(["pong"]), at=3, pause=200.0)
    respx.post(f"{GW}/api/anthropic/v1/messages").mock(return_value=sse(clock, events))

    findings, _ = probe_endpoint(endpoint, limits=claude_limits({}), timeout=300)

    [found] = findings
    assert found.id == "stream-idle-gap"
    assert "200000 ms, 67% of Claude Code's idle timeout of 300000 ms (the default)" in (
        found.message
    )
    assert "raise CLAUDE_STREAM_IDLE_TIMEOUT_MS (settings.json env) to 800000" in found.fix


@respx.mock
def test_a_stream_cut_after_a_silence_names_the_relay_and_the_retries(clock) -> None:
    endpoint, limits = codex({"stream_max_retries": 3})
    respx.get(f"{GW}/api/models").mock(return_value=MODELS)
    cut = responses_stream(["po", "ng"], completed=False)[:3]  # created and two deltas
    events = [*with_pause(cut, at=1, pause=0.2), (5.0, b"")]  # silent 5 s, then closed
    respx.post(f"{GW}/api/responses").mock(return_value=sse(clock, events))

    [found] = probe_endpoint(endpoint, limits=limits, timeout=60)[0]

    assert found.id == "stream-cut"
    assert "3 events in and 5000 ms after the last" in found.message
    assert "closed after 5000 ms of silence" in found.fix and "proxy_read_timeout" in found.fix
    assert "set stream_max_retries in [model_providers.gw]" in found.fix
    assert "to 10 (it is 3, at most 100)" in found.fix


@respx.mock
def test_a_cut_without_the_clients_limits_stays_a_failed_turn(clock) -> None:
    endpoint, _ = codex({})
    respx.get(f"{GW}/api/models").mock(return_value=MODELS)
    cut = responses_stream(["pong"], completed=False)
    respx.post(f"{GW}/api/responses").mock(return_value=sse(clock, [(0.0, e) for e in cut]))
    [found] = probe_endpoint(endpoint)[0]
    assert found.id == "probe-failed"


# -- end to end: doctor on config.toml, a real gateway on a socket ------------------------------


def codex_config(home: Path, url: str, extra: str = "") -> None:
    path = home / ".codex" / "config.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        f'model = "m1"\nmodel_provider = "gw"\n\n[model_providers.gw]\nname = "gw"\n'
        f'base_url = "{url}/api"\nwire_api = "responses"\n{extra}',
        encoding="utf-8",
    )


def gateway(chunks: list[bytes | float], *, abort: bool = False) -> LoopbackServer:
    def handler(request: object) -> Reply:
        if getattr(request, "method", "") == "GET":
            return Reply.json({"data": [{"id": "m1"}]})
        return Reply.sse(chunks, abort=abort)

    return LoopbackServer(handler)


def live_findings(cli, *ids: str) -> list[dict]:  # type: ignore[no-untyped-def]
    doc = cli("doctor", "--client", "codex", "--json").json()
    return [f for f in doc["findings"] if f["id"] in ids]


@pytest.mark.parametrize("pause", [2.4, 0.0], ids=["dripping", "steady"])
def test_doctor_reads_the_idle_timeout_from_config_and_measures_the_silence(
    cli, isolated_home, monkeypatch, pause: float
) -> None:
    """stream_idle_timeout_ms = 3000 in the provider block; the gateway pauses 2.4 s (80%)
    before its first delta, or not at all."""
    monkeypatch.setenv("PDNOTES_CODEX_BIN", str(isolated_home / "no-codex-here"))
    events = responses_stream(["po", "ng"])
    with gateway([events[0], pause, *events[1:]]) as server:
        codex_config(isolated_home, server.url, "stream_idle_timeout_ms = 3000\n")
        found = live_findings(cli, "stream-idle-gap")
    if not pause:
        assert found == []
        return
    [gap] = found
    assert SILENCE.search(gap["message"]), gap["message"]  # the silence measured is reported
    assert "stream_idle_timeout_ms in [model_providers.gw]" in gap["fix"]
    assert "it is 3000 ms" in gap["fix"]


def test_doctor_reports_a_stream_a_relay_cut_after_a_silence(
    cli, isolated_home, monkeypatch
) -> None:
    monkeypatch.setenv("PDNOTES_CODEX_BIN", str(isolated_home / "no-codex-here"))
    events = responses_stream(["po", "ng"], completed=False)[:2]
    with gateway([*events, 1.5], abort=True) as server:
        codex_config(isolated_home, server.url)
        [cut] = live_findings(cli, "stream-cut", "probe-failed")
    assert cut["id"] == "stream-cut"
    assert re.search(r"closed after \d+ ms of silence", cut["fix"]), cut["fix"]
    assert "stream_max_retries in [model_providers.gw] to 10 (it is 5, at most 100)" in cut["fix"]
