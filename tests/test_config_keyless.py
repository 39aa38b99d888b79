"""Keyless servers on this machine (issue 36): `config <client> --base-url http://127.0.0.1:…`
with no key named asks for none. Codex and OpenCode send no key when the config names none;
Claude Code, Gemini CLI and Qwen Code refuse to start without one, so they get the documented
non-secret placeholder `pdnotes-local-no-key` (never a real key). A remote URL still asks for
the user's key."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

PLACEHOLDER = "pdnotes-local-no-key"
KEY_VARIABLES = ("OPENAI_API_KEY", "ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_API_KEY", "GEMINI_API_KEY")

# client -> (extra flags, where its settings land under HOME)
CLIENTS: dict[str, tuple[tuple[str, ...], str]] = {
    "codex": (("--provider", "local"), ".codex/config.toml"),
    "opencode": (("--provider", "local"), ".config/opencode/opencode.json"),
    "claude": ((), ".claude/settings.json"),
    "gemini": ((), ".gemini/.env"),
    "qwen": ((), ".qwen/settings.json"),
}
NEEDS_A_VALUE = {"claude", "gemini", "qwen"}


@pytest.fixture(autouse=True)
def no_key_in_the_shell(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in KEY_VARIABLES:
        monkeypatch.delenv(name, raising=False)


def configure(cli: Any, client: str, base_url: str, model: str = "m1") -> Any:
    flags, _ = CLIENTS[client]
    result = cli("config", client, "--base-url", base_url, "--model", model, *flags)
    assert result.exit_code == 0, result.stdout + result.stderr
    return result


@pytest.mark.parametrize("client", sorted(CLIENTS))
@pytest.mark.parametrize("host", ["127.0.0.1:8081", "localhost:8081", "[::1]:8081"])
def test_a_local_server_needs_no_key(cli, isolated_home: Path, client: str, host: str) -> None:
    result = configure(cli, client, f"http://{host}/v1")
    said = result.stdout + result.stderr
    assert "still needed" not in said and "<your API key>" not in said, said
    written = (isolated_home / CLIENTS[client][1]).read_text()
    if client in NEEDS_A_VALUE:
        assert PLACEHOLDER in written and f"placeholder {PLACEHOLDER}" in said
    else:  # no key, no variable the client would insist on
        assert PLACEHOLDER not in written and "env_key" not in written
        assert "apiKey" not in written


@pytest.mark.parametrize("client", sorted(NEEDS_A_VALUE))
def test_a_remote_gateway_still_asks_for_the_users_key(
    cli, isolated_home: Path, client: str
) -> None:
    result = configure(cli, client, "https://gw.example/v1")
    assert "still needed: export " in result.stdout + result.stderr
    assert PLACEHOLDER not in (isolated_home / CLIENTS[client][1]).read_text()


def test_a_key_in_the_shell_is_not_overridden_for_claude(
    cli, isolated_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_AUTH_TOKEN", "sk-local-server-key-0000")
    configure(cli, "claude", "http://127.0.0.1:8081")
    env = json.loads((isolated_home / ".claude" / "settings.json").read_text())["env"]
    assert "ANTHROPIC_AUTH_TOKEN" not in env  # the settings' env block would beat the shell


@pytest.mark.parametrize(("client", "suffix"), [("qwen", ""), ("claude", "/anthropic")])
def test_smoke_reaches_a_keyless_local_engine_with_the_placeholder(
    cli, isolated_home: Path, engine_server: Any, client: str, suffix: str
) -> None:
    """The client would start (a non-empty key) and the keyless server answers it."""
    configure(cli, client, engine_server.base_url + suffix, "pd-mock-1")
    smoke = cli("smoke", "--client", client, "-n", "1", "--minimal", "--json")
    assert smoke.exit_code == 0, smoke.stdout + smoke.stderr
    assert smoke.json()["runs"][0]["status"] == 200
