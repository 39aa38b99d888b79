"""A gateway that answers 400 with a huge message (a prompt quoted back, 60 KB or 1 MB, or a
body that never ends) is reported as what it is, a 400 with the start of its message, and
quickly (issue 24.4). Before, scrubbing the 60 KB message took minutes, and smoke then blamed
the stream. The bound is the per-test timeout, generous against a loaded machine and far below
the minutes a quadratic scrub costs; no wall clock is compared."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path

import pytest
from hostile_gateway import ERROR_400_PREFIX, HostileGateway

from notes_cli.clients.endpoint import Endpoint
from notes_cli.gateway import AsyncGatewayClient, GatewayClient
from notes_cli.gateway import errors as gw
from notes_cli.gateway._limits import MAX_SHOWN_CHARS

KEY = "sk-HOSTILE0123456789abcdefXYZW"
KEY_ENV = "HOSTILE_KEY"
MODES = ("error-400-60k", "error-400-1mb", "endless-400")
Run = Callable[..., object]
# Generous, so load cannot trip it: each run takes about a second; the quadratic scrub it guards
# against took 7.8 minutes on the 60 KB message.
bounded = pytest.mark.timeout(180, method="signal")


@pytest.fixture(autouse=True)
def _key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_ENV, KEY)


def _names_the_400(text: str, mode: str) -> None:
    assert "400" in text
    if mode != "endless-400":  # that one's message is letters from the start
        assert ERROR_400_PREFIX + "aaaa" in text
    assert "never finished" not in text and "-timeout" not in text


@bounded
@pytest.mark.parametrize("mode", MODES)
def test_smoke_reports_the_400_and_the_start_of_its_message(
    cli: Run, hostile: HostileGateway, mode: str
) -> None:
    args = ["smoke", "--base-url", hostile.base(mode), "--model", "m", "--key-env", KEY_ENV]
    args += ["-n", "1", "--timeout", "5"]
    result = cli(*args, "--json")
    assert result.exit_code == 1  # type: ignore[attr-defined]
    error = result.json()["runs"][0]["error"]  # type: ignore[attr-defined]
    assert error["kind"] == "http-status" and error["status"] == 400
    _names_the_400(error["message"], mode)
    assert len(error["message"]) < MAX_SHOWN_CHARS + 100  # cut for display, said so
    assert "more characters" in error["message"] or "cut at" in error["message"]

    human = cli(*args)
    out = human.stdout  # type: ignore[attr-defined]
    assert human.exit_code == 1  # type: ignore[attr-defined]
    _names_the_400(out, mode)
    assert max(len(line) for line in out.splitlines()) < MAX_SHOWN_CHARS + 300


@bounded
@pytest.mark.parametrize("mode", MODES)
def test_doctor_reports_the_400_of_each_probe(
    cli: Run, hostile: HostileGateway, isolated_home: Path, mode: str
) -> None:
    folder = isolated_home / ".codex"
    folder.mkdir(exist_ok=True)
    (folder / "config.toml").write_text(
        'model = "m"\nmodel_provider = "h"\n\n[model_providers.h]\nname = "h"\n'
        f'base_url = "{hostile.base(mode)}"\nenv_key = "{KEY_ENV}"\nwire_api = "responses"\n'
    )
    result = cli("doctor", "--client", "codex", "--timeout", "5", "--json")
    assert result.exit_code == 1  # type: ignore[attr-defined]
    failed = [f for f in result.json()["findings"] if f["id"] == "probe-failed"]  # type: ignore[attr-defined]
    assert failed
    _names_the_400(failed[0]["message"], mode)
    assert len(json.dumps(failed[0])) < 3 * MAX_SHOWN_CHARS


@bounded
@pytest.mark.parametrize("mode", MODES)
def test_notes_generate_reports_the_400(
    cli: Run, hostile: HostileGateway, tmp_path: Path, mode: str
) -> None:
    result = cli(
        "notes", "generate", "--base-url", hostile.base(mode), "--model", "m",
        "--key-env", KEY_ENV, "--lang", "en", "--no-repair", "--timeout", "5", "-o", "note.md",
    )  # fmt: skip
    assert result.exit_code == 1  # type: ignore[attr-defined]
    _names_the_400(result.stdout + result.stderr, mode)  # type: ignore[attr-defined]
    assert not (tmp_path / "note.md").exists()


@bounded
@pytest.mark.parametrize("transport", ["httpx-sync", "httpx-async", "lean"])
def test_a_400_whose_body_trickles_is_the_400_cut_at_the_deadline(
    hostile: HostileGateway, transport: str
) -> None:
    """The wall clock cuts the error body (it would drip for 30 s), and the error is the 400
    with what arrived, not "the stream never finished"."""
    endpoint = Endpoint("openai", hostile.base("drip-400"), "chat", model="m", key=KEY)
    seconds = 0.5
    with pytest.raises(gw.HttpStatusError) as caught:
        if transport == "httpx-sync":
            with GatewayClient(endpoint, timeout=seconds, total_timeout=seconds) as client:
                client.stream("hi")
        else:

            async def main() -> None:
                async with AsyncGatewayClient(
                    endpoint, timeout=seconds, total_timeout=seconds
                ) as client:
                    if transport == "httpx-async":
                        client._h1 = None  # the httpx path (taken when a proxy applies)
                    await client.stream("hi")

            asyncio.run(main())
    assert caught.value.status == 400
    assert "still arriving after 0.5 s" in caught.value.message


@bounded
def test_smoke_reports_a_trickling_400_as_the_400(cli: Run, hostile: HostileGateway) -> None:
    args = ["smoke", "--base-url", hostile.base("drip-400"), "--model", "m"]
    result = cli(*args, "--key-env", KEY_ENV, "-n", "1", "--timeout", "1", "--json")
    assert result.exit_code == 1  # type: ignore[attr-defined]
    error = result.json()["runs"][0]["error"]  # type: ignore[attr-defined]
    assert error["kind"] == "http-status" and error["status"] == 400
    assert "still arriving after 1 s" in error["message"]
