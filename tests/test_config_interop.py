"""What pdnotes writes and what the doctor says agree with the real clients, checked without a
network: `codex debug prompt-input` loads config.toml exactly as a turn would (and fails on a
bad one), and `claude auth status` reports whether Claude Code sees a credential."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from interop_support import ClientRun, client_binary, run_client

pytestmark = pytest.mark.interop
FIXTURES = Path(__file__).parent / "fixtures" / "config"


def codex_loads(home: Path) -> ClientRun:
    codex = client_binary("codex")
    env = {"HOME": str(home), "CODEX_HOME": str(home / ".codex")}
    return run_client([str(codex), "debug", "prompt-input", "hi"], env=env, cwd=home)


def claude_auth(home: Path, **extra_env: str) -> dict[str, Any]:
    claude = client_binary("claude")
    env = {"HOME": str(home), "CLAUDE_CONFIG_DIR": str(home / ".claude"), **extra_env}
    run = run_client([str(claude), "auth", "status"], env=env, cwd=home)
    return dict(json.loads(run.stdout))


def doctor_ids(cli: Callable[..., Any], client: str) -> set[str]:
    doc = cli("doctor", "--offline", "--client", client, "--json").json()
    return {f["id"] for f in doc["findings"]}


@pytest.mark.parametrize(
    ("fixture", "args"),
    [
        (None, ["--preset", "mock"]),
        ("rich.toml", ["--preset", "taotoken", "--model", "glm-4.6"]),
        ("article.toml", ["--preset", "taotoken", "--model", "glm-4.6"]),
    ],
)
def test_codex_loads_every_config_pdnotes_writes(
    cli: Callable[..., Any], isolated_home: Path, fixture: str | None, args: list[str]
) -> None:
    client_binary("codex")
    if fixture:
        (isolated_home / ".codex").mkdir()
        (isolated_home / ".codex" / "config.toml").write_text((FIXTURES / fixture).read_text())
    assert cli("config", "codex", *args).exit_code == 0

    run = codex_loads(isolated_home)

    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout)  # the prompt input Codex would send


def test_codex_rejects_the_articles_config_as_the_doctor_says(
    cli: Callable[..., Any], isolated_home: Path
) -> None:
    client_binary("codex")
    (isolated_home / ".codex").mkdir()
    (isolated_home / ".codex" / "config.toml").write_text((FIXTURES / "article.toml").read_text())

    run = codex_loads(isolated_home)

    assert run.returncode != 0
    assert '`wire_api = "chat"` is no longer supported' in run.stderr
    assert "wire-api-chat-removed" in doctor_ids(cli, "codex")


def test_claude_sees_the_mock_placeholder_as_a_credential(
    cli: Callable[..., Any], isolated_home: Path
) -> None:
    client_binary("claude")
    assert cli("config", "claude", "--preset", "mock").exit_code == 0

    assert claude_auth(isolated_home)["loggedIn"] is True
    assert "claude-credential-missing" not in doctor_ids(cli, "claude")


def test_claude_uses_the_api_key_helper_pdnotes_writes(
    cli: Callable[..., Any], isolated_home: Path
) -> None:
    client_binary("claude")
    args = ["--base-url", "https://gw.example/api", "--token-env", "GW_TOKEN"]
    assert cli("config", "claude", *args).exit_code == 0

    status = claude_auth(isolated_home, GW_TOKEN="not-a-real-key")

    assert status["loggedIn"] is True and status["authMethod"] == "api_key_helper"


def test_claude_without_credential_is_logged_out_as_the_doctor_says(
    cli: Callable[..., Any], isolated_home: Path
) -> None:
    client_binary("claude")
    assert cli("config", "claude", "--base-url", "https://gw.example/api").exit_code == 0

    assert claude_auth(isolated_home)["loggedIn"] is False
    assert "claude-credential-missing" in doctor_ids(cli, "claude")


def test_claude_drops_a_file_with_a_wrong_type_as_the_doctor_says(
    cli: Callable[..., Any], isolated_home: Path
) -> None:
    client_binary("claude")
    settings = isolated_home / ".claude" / "settings.json"
    settings.parent.mkdir()
    settings.write_text(json.dumps({"model": 5, "env": {"ANTHROPIC_AUTH_TOKEN": "t"}}))

    assert claude_auth(isolated_home)["loggedIn"] is False
    assert {"claude-settings-ignored", "claude-credential-missing"} <= doctor_ids(cli, "claude")
