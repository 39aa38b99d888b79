"""Every command that talks to a gateway, against every way a hostile gateway misbehaves
(`hostile_gateway.py`): each finishes within its documented bound, says what happened with a
named finding or error, exits 1, shows no traceback and never shows the key.

Bounds (docs/smoke.md): a doctor endpoint costs at most BUDGET_PROBES x --timeout; a smoke run,
a `notes generate` answer and a bench request at most --timeout. Short timeouts keep this fast;
SLACK_S absorbs a loaded machine (2 cores shared by many test runs), not a missing bound: before
the fix the endless modes ran until the server gave up (30 s), and the bomb took ~400 MB.
"""

from __future__ import annotations

import asyncio
import json
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path

import pytest
from hostile_gateway import MODES, HostileGateway

from notes_cli.clients.endpoint import Endpoint
from notes_cli.doctor.live import BUDGET_PROBES
from notes_cli.gateway import AsyncGatewayClient, GatewayClient
from notes_cli.gateway import errors as gw

KEY = "sk-HOSTILE0123456789abcdefXYZW"
KEY_ENV = "HOSTILE_KEY"
T = 0.3  # --timeout for doctor, smoke and bench against the modes that attack the clock
T_GENERATE = 1.0  # notes generate's --timeout has a 1 s minimum
# The other modes end on their own at once; a roomier timeout keeps a loaded machine from
# turning their answer (say, reading and decoding 8 MiB of a bomb) into a timeout.
T_ROOMY = 3.0
CLOCK_MODES = ("endless-sse", "ping-only", "drip", "drip-headers", "no-answer")
# 6 s: under parallel test workers plus other load a doctor run here took 4-5 s; still well
# below what a missing bound costs (doctor's default 10 s --timeout, the server's 30 s).
SLACK_S = 6.0


def timeout_for(mode: str, least: float = T) -> float:
    # drip-400 attacks the clock too, but its answer is the 400 (test_gateway_error_bodies.py)
    return max(least, T) if mode in (*CLOCK_MODES, "drip-400") else T_ROOMY


# What doctor names for each mode (the Codex and the Claude Code endpoint alike).
DOCTOR_FINDING = {
    "endless-sse": "stream-never-finished",
    "ping-only": "stream-never-finished",
    "drip": "stream-never-finished",
    "drip-headers": "no-response",
    "endless-body": "response-too-large",
    "gzip-bomb": "response-too-large",
    "huge-headers": "headers-too-large",
    "invalid-utf8": "stream-cut",  # garbage, then the stream closed without its completion event
    "redirect-loop": "redirect-loop",
    "no-answer": "no-response",
    "html-404": "path-not-found",
    "html-200": "probe-failed",
    "echo-key-401": "auth-rejected",
    "echo-key-500": "probe-failed",
    "deep-json": "stream-cut",  # garbage, then the stream closed without its completion event
    "big-int": "stream-cut",  # garbage, then the stream closed without its completion event
    "error-400-60k": "probe-failed",
    "error-400-1mb": "probe-failed",
    "endless-400": "probe-failed",
    "drip-400": "probe-failed",
}
# The typed error (`error.kind` in smoke's JSON) for each mode.
ERROR_KIND = {
    "endless-sse": "total-timeout",
    "ping-only": "total-timeout",
    "drip": "total-timeout",
    "drip-headers": "headers-timeout",
    "endless-body": "response-too-large",
    "gzip-bomb": "response-too-large",
    "huge-headers": "headers-too-large",
    "invalid-utf8": "truncated-stream",
    "redirect-loop": "http-status",
    "no-answer": "headers-timeout",
    "html-404": "http-status",
    "html-200": "protocol-error",
    "echo-key-401": "http-status",
    "echo-key-500": "http-status",
    "deep-json": "truncated-stream",
    "big-int": "truncated-stream",
    "error-400-60k": "http-status",
    "error-400-1mb": "http-status",
    "endless-400": "http-status",
    "drip-400": "http-status",
}
ECHO = ("echo-key-401", "echo-key-500")
OTHER_MODES = [m for m in MODES if m not in ECHO]
assert set(DOCTOR_FINDING) == set(ERROR_KIND) == set(MODES)


@pytest.fixture(autouse=True)
def _key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_ENV, KEY)


Run = Callable[..., object]


def timed(cli: Run, *args: str) -> tuple[object, float]:
    start = time.monotonic()
    result = cli(*args)
    return result, time.monotonic() - start


def assert_clean(result: object) -> None:
    out = result.stdout + result.stderr  # type: ignore[attr-defined]
    assert "Traceback" not in out
    assert KEY not in out and KEY[-12:] not in out


def codex_config(home: Path, base: str) -> None:
    folder = home / ".codex"
    folder.mkdir(exist_ok=True)
    (folder / "config.toml").write_text(
        'model = "pd-mock-1"\nmodel_provider = "hostile"\n\n[model_providers.hostile]\n'
        f'name = "hostile"\nbase_url = "{base}"\nenv_key = "{KEY_ENV}"\nwire_api = "responses"\n'
    )


def claude_config(home: Path, base: str, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = home / ".claude"
    folder.mkdir(exist_ok=True)
    settings = {"env": {"ANTHROPIC_BASE_URL": base, "ANTHROPIC_MODEL": "pd-mock-1"}}
    (folder / "settings.json").write_text(json.dumps(settings))
    monkeypatch.setenv("ANTHROPIC_AUTH_TOKEN", KEY)


# --------------------------------------------------------------------------- doctor


def run_doctor(
    cli: Run, client: str, mode: str, hostile: HostileGateway, home: Path, mp: pytest.MonkeyPatch
) -> tuple[object, float]:
    if client == "codex":
        codex_config(home, hostile.base(mode))
    else:
        claude_config(home, hostile.base(mode), mp)
    # Codex's endpoint with --json, Claude Code's in the human form: both outputs are covered.
    json_flag = ["--json"] if client == "codex" else []
    seconds = str(timeout_for(mode))
    return timed(cli, "doctor", "--client", client, "--timeout", seconds, *json_flag)


@pytest.mark.parametrize("client", ["codex", "claude"])
@pytest.mark.parametrize("mode", MODES)
def test_doctor_names_what_the_gateway_did_within_its_bound(
    cli: Run,
    hostile: HostileGateway,
    isolated_home: Path,
    monkeypatch: pytest.MonkeyPatch,
    client: str,
    mode: str,
) -> None:
    result, took = run_doctor(cli, client, mode, hostile, isolated_home, monkeypatch)
    assert took < BUDGET_PROBES * timeout_for(mode) + SLACK_S
    assert result.exit_code == 1, result.stdout + result.stderr  # type: ignore[attr-defined]
    assert_clean(result)
    if client == "codex":
        found = [f["id"] for f in result.json()["findings"]]  # type: ignore[attr-defined]
        assert DOCTOR_FINDING[mode] in found
    else:
        assert f"error   {DOCTOR_FINDING[mode]}  " in result.stdout  # type: ignore[attr-defined]


def test_a_whole_doctor_ends_within_the_sum_of_its_probe_deadlines(
    cli: Run, hostile: HostileGateway, isolated_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    codex_config(isolated_home, hostile.base("drip"))
    claude_config(isolated_home, hostile.base("endless-sse"), monkeypatch)
    result, took = timed(cli, "doctor", "--timeout", str(T), "--json")
    assert took < 2 * BUDGET_PROBES * T + SLACK_S  # two endpoints
    found = {(f["client"], f["id"]) for f in result.json()["findings"]}  # type: ignore[attr-defined]
    assert {("codex", "stream-never-finished"), ("claude", "stream-never-finished")} <= found


# --------------------------------------------------------------------------- smoke


@pytest.mark.parametrize("client", ["codex", "claude"])
@pytest.mark.parametrize("mode", MODES)
def test_smoke_reports_the_typed_error_within_its_timeout(
    cli: Run, hostile: HostileGateway, client: str, mode: str
) -> None:
    result, took = timed(
        cli,
        "smoke",
        "--client",
        client,
        "--base-url",
        hostile.base(mode),
        "--model",
        "pd-mock-1",
        "--key-env",
        KEY_ENV,
        "-n",
        "1",
        "--timeout",
        str(timeout_for(mode)),
        *(["--json"] if client == "codex" else []),  # the human form for Claude Code's
    )
    assert took < timeout_for(mode) + SLACK_S
    assert result.exit_code == 1  # type: ignore[attr-defined]
    assert_clean(result)
    if client == "claude":
        assert f" {ERROR_KIND[mode]}" in result.stdout  # type: ignore[attr-defined]
        return
    error = result.json()["runs"][0]["error"]  # type: ignore[attr-defined]
    assert error["kind"] == ERROR_KIND[mode]
    if mode == "redirect-loop":
        assert "same URL" in error["fix"]


def test_smoke_runs_after_a_cut_one_on_a_fresh_connection(
    cli: Run, hostile: HostileGateway
) -> None:
    """The watchdog shuts the socket of a run that ran out; the next run must not inherit it."""
    result, took = timed(
        cli,
        "smoke",
        "--base-url",
        hostile.base("ping-only"),
        "--model",
        "m",
        "--key-env",
        KEY_ENV,
        "-n",
        "3",
        "--timeout",
        str(T),
        "--json",
    )
    assert took < 3 * T + SLACK_S
    kinds = [r["error"]["kind"] for r in result.json()["runs"]]  # type: ignore[attr-defined]
    assert kinds == ["total-timeout"] * 3


# --------------------------------------------------------------------------- notes generate


@pytest.mark.parametrize("mode", MODES)
def test_notes_generate_stops_with_a_clear_error_within_its_timeout(
    cli: Run, hostile: HostileGateway, tmp_path: Path, mode: str
) -> None:
    result, took = timed(
        cli,
        "notes",
        "generate",
        "--base-url",
        hostile.base(mode),
        "--model",
        "pd-mock-1",
        "--key-env",
        KEY_ENV,
        "--lang",
        "en",
        "--no-repair",
        "--timeout",
        str(timeout_for(mode, T_GENERATE)),
        "-o",
        "note.md",
    )
    # One answer (no repair: every mode fails the first one): one timeout.
    assert took < timeout_for(mode, T_GENERATE) + SLACK_S
    assert result.exit_code == 1  # type: ignore[attr-defined]
    assert_clean(result)
    assert not (tmp_path / "note.md").exists()


@pytest.mark.parametrize("mode", CLOCK_MODES)
def test_notes_generate_reading_in_map_steps_stops_within_its_timeout(
    cli: Run, hostile: HostileGateway, tmp_path: Path, mode: str
) -> None:
    """Sources over --max-source-tokens are read in map steps before the note: each map step
    is a model call bounded by --timeout as well (a dripping stream held it before)."""
    source = tmp_path / "reading.md"
    source.write_text(
        "\n\n".join(f"Paragraph {i}: prefill is compute-bound; decode reads the KV cache." * 8
                    for i in range(40))
    )  # fmt: skip
    result, took = timed(
        cli,
        "notes", "generate", "--base-url", hostile.base(mode), "--model", "pd-mock-1",
        "--key-env", KEY_ENV, "--lang", "en", "--no-repair", "--source", str(source),
        "--max-source-tokens", "700", "--max-calls", "50",
        "--timeout", str(timeout_for(mode, T_GENERATE)), "-o", "note.md",
    )  # fmt: skip
    out = result.stdout + result.stderr  # type: ignore[attr-defined]
    assert "map" in out.lower()  # the sources were read in map steps
    assert took < timeout_for(mode, T_GENERATE) + SLACK_S  # one map step's timeout
    assert result.exit_code == 1  # type: ignore[attr-defined]
    assert_clean(result)
    assert not (tmp_path / "note.md").exists()


# --------------------------------------------------------------------------- bench


@pytest.mark.parametrize("mode", MODES)
def test_bench_counts_the_failure_within_its_timeout(
    cli: Run, hostile: HostileGateway, mode: str
) -> None:
    result, took = timed(
        cli,
        "bench",
        "--base-url",
        hostile.base(mode),
        "--model",
        "pd-mock-1",
        "--key-env",
        KEY_ENV,
        "-n",
        "1",
        "--timeout",
        str(timeout_for(mode)),
        "--json",
    )
    assert took < timeout_for(mode) + SLACK_S
    assert result.exit_code == 1  # type: ignore[attr-defined]
    assert_clean(result)
    assert result.json()["ok"] is False  # type: ignore[attr-defined]


def test_bench_without_a_model_bounds_the_model_list(cli: Run, hostile: HostileGateway) -> None:
    result, took = timed(
        cli, "bench", "--base-url", hostile.base("drip"), "-n", "1", "--timeout", str(T)
    )
    assert took < T + SLACK_S
    assert result.exit_code == 1  # type: ignore[attr-defined]
    assert_clean(result)


# --------------------------------------------------------------------------- the key


# The gateway's own words repeat the key here; `gateway/errors.py` scrubs the key that was sent
# (issue 11.3) from them before anything is shown, human or JSON.
@pytest.mark.parametrize("mode", ECHO)
@pytest.mark.parametrize("command", ["doctor", "smoke", "generate"])
def test_a_gateway_that_echoes_the_key_never_gets_it_shown(
    cli: Run,
    hostile: HostileGateway,
    isolated_home: Path,
    monkeypatch: pytest.MonkeyPatch,
    mode: str,
    command: str,
) -> None:
    base = hostile.base(mode)
    if command == "doctor":
        codex_config(isolated_home, base)
        args = ["doctor", "--client", "codex", "--timeout", str(T)]
    elif command == "smoke":
        args = ["smoke", "--base-url", base, "--model", "m", "--key-env", KEY_ENV, "-n", "1"]
    else:
        args = ["notes", "generate", "--base-url", base, "--model", "m", "--key-env", KEY_ENV]
    for extra in ([], ["--json"]):
        result = cli(*args, *extra)
        assert result.exit_code == 1  # type: ignore[attr-defined]
        assert_clean(result)


# --------------------------------------------------------------------------- the transports


def _sync(endpoint: Endpoint, op: str, seconds: float = T) -> object:
    with GatewayClient(endpoint, timeout=seconds, total_timeout=seconds) as client:
        return client.list_models() if op == "models" else client.stream("hi")


def _async(endpoint: Endpoint, op: str, lean: bool, seconds: float = T) -> object:
    async def main() -> object:
        async with AsyncGatewayClient(endpoint, timeout=seconds, total_timeout=seconds) as client:
            if not lean:
                client._h1 = None  # the httpx path (taken when a proxy applies)
            return await (client.list_models() if op == "models" else client.stream("hi"))

    return asyncio.run(main())


@pytest.mark.parametrize("transport", ["httpx-sync", "httpx-async", "lean"])
@pytest.mark.parametrize("mode", CLOCK_MODES)
def test_every_transport_keeps_the_wall_clock(
    hostile: HostileGateway, transport: str, mode: str
) -> None:
    endpoint = Endpoint("openai", hostile.base(mode), "chat", model="m", key=KEY)
    start = time.monotonic()
    with pytest.raises(gw.GatewayTimeout):
        if transport == "httpx-sync":
            _sync(endpoint, "stream")
        else:
            _async(endpoint, "stream", lean=transport == "lean")
    assert time.monotonic() - start < T + SLACK_S


# The lean transport only streams; model lists always go through httpx.
@pytest.mark.parametrize(
    ("transport", "op"),
    [
        ("httpx-sync", "models"),
        ("httpx-sync", "stream"),
        ("httpx-async", "models"),
        ("httpx-async", "stream"),
        ("lean", "stream"),
    ],
)
def test_a_gzip_bomb_stays_within_a_few_megabytes(
    hostile: HostileGateway, transport: str, op: str
) -> None:
    endpoint = Endpoint("openai", hostile.base("gzip-bomb"), "chat", model="m", key=KEY)
    tracemalloc.start()
    try:
        with pytest.raises(gw.ResponseTooLarge):
            if transport == "httpx-sync":
                _sync(endpoint, op, T_ROOMY)
            else:
                _async(endpoint, op, lean=transport == "lean", seconds=T_ROOMY)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    # The cap is 8 MiB of decoded JSON (4 MiB per event line); before the fix: ~400 MB.
    assert peak < 24 * 1024 * 1024
