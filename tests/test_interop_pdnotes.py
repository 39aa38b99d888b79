"""pdnotes' own clients against the engine, the article's way: `pdnotes config` points Codex and
Claude Code at it, then `pdnotes doctor` and `pdnotes smoke` pass; with the engine reproducing
the article's errors they report them."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

pytestmark = pytest.mark.interop


@pytest.fixture
def configured(cli: Callable[..., Any], engine_server: Any) -> Any:
    for client, base in (
        ("codex", engine_server.base_url),
        ("claude", engine_server.anthropic_base_url),
    ):
        result = cli("config", client, "--preset", "mock", "--base-url", base)
        assert result.exit_code == 0, result.stderr
    return engine_server


def test_doctor_passes_against_the_engine(cli: Callable[..., Any], configured: Any) -> None:
    result = cli("doctor", "--json")

    assert result.exit_code == 0, result.stdout
    assert result.json()["ok"] is True


@pytest.mark.parametrize("client", ["codex", "claude", "openai"])
def test_smoke_passes_against_the_engine(
    cli: Callable[..., Any], configured: Any, client: str
) -> None:
    extra = (
        ["--base-url", configured.base_url, "--model", "pd-mock-1"] if client == "openai" else []
    )
    result = cli("smoke", "--client", client, "-n", "2", "--json", *extra)

    assert result.exit_code == 0, result.stdout + result.stderr
    assert result.json()["ok"] is True


def test_smoke_reports_an_engine_fault(cli: Callable[..., Any], configured: Any) -> None:
    import httpx

    faults = configured.url("/engine/faults")
    httpx.post(faults, json={"faults": ["503@first:1"]}, timeout=10).raise_for_status()

    result = cli("smoke", "--client", "codex", "-n", "2", "--json")

    assert result.exit_code == 1
    assert result.json()["ok"] is False
    assert "503" in result.stdout


def test_doctor_reports_a_mis_cased_model_id(cli: Callable[..., Any], configured: Any) -> None:
    cli("config", "codex", "--preset", "mock", "--base-url", configured.base_url,
        "--model", "PD-Mock-1")  # fmt: skip

    result = cli("doctor", "--client", "codex", "--json")

    assert result.exit_code == 1
    ids = {f["id"] for f in result.json()["findings"]}
    assert "model-unknown" in ids
