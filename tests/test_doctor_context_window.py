"""Doctor's live check of the context window a client is told the model has against the one
the gateway's /models states (issue 38): `context-window-too-large` for Claude Code and Qwen
Code, against the engine as a real server."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest


def live_findings(cli: Callable[..., Any], client: str) -> list[dict[str, Any]]:
    result = cli("doctor", "--client", client, "--json", "--minimal", "--timeout", "20")
    return [f for f in result.json()["findings"] if f["id"] == "context-window-too-large"]


@pytest.mark.parametrize("client", ["claude", "qwen"])
def test_a_window_larger_than_the_gateway_states_is_found_with_the_fix(
    cli: Callable[..., Any], isolated_home: Any, engine_server: Any, client: str
) -> None:
    base_url = engine_server.anthropic_base_url if client == "claude" else engine_server.base_url
    args = ("config", client, "--base-url", base_url, "--model", "pd-mock-1")
    assert cli(*args, "--context-window", "131072").exit_code == 0

    (found,) = live_findings(cli, client)

    assert found["client"] == client and found["severity"] == "warning"
    assert "131072 tokens" in found["message"] and "states 32768 for pd-mock-1" in found["message"]
    setting = "CLAUDE_CODE_MAX_CONTEXT_TOKENS" if client == "claude" else "contextWindowSize"
    assert setting in found["fix"] and " to 32768" in found["fix"]
    assert f"pdnotes config {client} --context-window gateway" in found["fix"]


@pytest.mark.parametrize("client", ["claude", "qwen"])
@pytest.mark.parametrize("window", ["32768", "gateway", "8192"])
def test_a_window_the_model_has_is_not_a_finding(
    cli: Callable[..., Any], isolated_home: Any, engine_server: Any, client: str, window: str
) -> None:
    base_url = engine_server.anthropic_base_url if client == "claude" else engine_server.base_url
    args = ("config", client, "--base-url", base_url, "--model", "pd-mock-1")
    assert cli(*args, "--context-window", window).exit_code == 0

    assert live_findings(cli, client) == []
