"""A gateway that echoes the `Authorization` header into its *answer* (a 200, not an error):
the key must not reach a note (md, csv, json, html), `notes generate --json` or smoke (issue
36: it was written verbatim into the note while smoke masked the same text; doctor shows no
answer text, checked by removing both masks). Each test
runs the command against a real loopback gateway (`hostile_gateway.py`, mode
`echo-key-answer`) that answers in the protocol asked and repeats the header it got in prose,
in a table cell, split over stream events, and as the finish reason."""

from __future__ import annotations

import html
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import CliResult
from hostile_gateway import HostileGateway

KEY = "sk-ECHOED0123456789abcdefQRST"
KEY_ENV = "ECHO_GW_KEY"
Run = Callable[..., CliResult]


@pytest.fixture(autouse=True)
def _key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_ENV, KEY)


def assert_no_key(*texts: str) -> None:
    for text in texts:
        assert KEY not in text
        assert KEY[3:20] not in text  # nor a piece of it
        assert "Traceback" not in text


@pytest.mark.parametrize("fmt", ["md", "csv", "json", "html"])
def test_notes_generate_writes_no_echoed_key_into_the_note(
    cli: Run, hostile: HostileGateway, tmp_path: Path, fmt: str
) -> None:
    note = tmp_path / f"note.{fmt}"
    result = cli(
        "notes", "generate", "--base-url", hostile.base("echo-key-answer"),
        "--model", "pd-mock-1", "--key-env", KEY_ENV, "--lang", "en",
        "--timeout", "10", "-o", str(note), "--json",
    )  # fmt: skip
    assert hostile.seen_keys[-1] == KEY  # the key was sent, and echoed back
    assert result.exit_code == 0, result.stdout + result.stderr
    written = note.read_text(encoding="utf-8")
    shown = html.unescape(written.replace("\\u2026", "…"))
    assert "DLInfer (asked with Bearer sk-…QRST)" in shown  # the cell kept, the key masked
    assert_no_key(written, result.stdout, result.stderr)
    report = result.json()
    assert report["ok"] and report["note"]["verdict"] == "pass"
    assert report["attempts"][0]["finish_reason"] == "stop (Bearer sk-…QRST)"


@pytest.mark.parametrize("client", ["codex", "claude", "openai"])
def test_smoke_shows_no_echoed_key(cli: Run, hostile: HostileGateway, client: str) -> None:
    result = cli(
        "smoke", "--client", client, "--base-url", hostile.base("echo-key-answer"),
        "--model", "pd-mock-1", "--key-env", KEY_ENV, "-n", "1", "--timeout", "10", "--json",
    )  # fmt: skip
    assert hostile.seen_keys
    assert_no_key(result.stdout, result.stderr)
    assert "sk-…QRST" in result.stdout  # the preview shows the answer, key masked


def test_the_gateway_client_masks_the_sent_key_and_nothing_else(
    hostile: HostileGateway,
) -> None:
    from notes_cli.clients.endpoint import Endpoint
    from notes_cli.gateway import GatewayClient

    endpoint = Endpoint("openai", hostile.base("echo-key-answer"), "chat", "pd-mock-1", key=KEY)
    with GatewayClient(endpoint, timeout=10) as client:
        result = client.stream("hi", max_tokens=64)
    assert result.text.startswith("Your request carried Bearer sk-…QRST.\n\n| Stage |")
    assert "Graph mode whole-graph offload / subgraph fusion" in result.text  # as written
    assert result.finish_reason == "stop (Bearer sk-…QRST)"
