"""Credentials as the client will send them: Codex sends nothing to a custom provider without
env_key (an exported OPENAI_API_KEY is not used), requires_openai_auth needs auth.json; a Claude
apiKeyHelper that reads an unset variable or fails when run; a helper and a literal token side
by side, which `config claude` no longer leaves behind."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

PROVIDER = (
    'model = "m"\nmodel_provider = "gw"\n'
    '[model_providers.gw]\nname = "GW"\nbase_url = "https://gw.example/api"\n'
)


def write_settings(path: Path, data: dict) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2), encoding="utf-8")
    return path


def claude_doctor(cli, *args: str) -> dict:
    return cli("doctor", "--offline", "--client", "claude", "--json", *args).json()


def ids(doc: dict) -> set[str]:
    return {f["id"] for f in doc["findings"]}


def test_custom_provider_without_env_key_while_openai_api_key_is_set(
    codex_doctor, monkeypatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-real-0000")
    doc = codex_doctor(PROVIDER)

    found = next(f for f in doc["findings"] if f["id"] == "custom-provider-no-key")
    assert "env_key" in found["fix"] and found["line"] == 3
    assert "sk-test" not in json.dumps(doc)


def test_no_finding_when_the_provider_has_a_key_source_or_no_key_is_exported(
    codex_doctor, monkeypatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    assert "custom-provider-no-key" not in ids(codex_doctor(PROVIDER))
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-real-0000")
    monkeypatch.setenv("GW_KEY", "k")
    assert "custom-provider-no-key" not in ids(codex_doctor(PROVIDER + 'env_key = "GW_KEY"\n'))


def test_requires_openai_auth_without_auth_json(codex_doctor, isolated_home: Path) -> None:
    text = PROVIDER + "requires_openai_auth = true\n"
    assert "openai-auth-missing" in ids(codex_doctor(text))

    (isolated_home / ".codex" / "auth.json").write_text("{}", encoding="utf-8")
    assert "openai-auth-missing" not in ids(codex_doctor(text))


def test_a_helper_reading_an_unset_variable_fails_statically(
    cli, isolated_home: Path, monkeypatch
) -> None:
    monkeypatch.delenv("OLD_GATEWAY_KEY", raising=False)
    settings = write_settings(
        isolated_home / ".claude" / "settings.json",
        {"apiKeyHelper": "printenv OLD_GATEWAY_KEY", "env": {"ANTHROPIC_BASE_URL": "https://gw"}},
    )

    doc = claude_doctor(cli)

    found = next(f for f in doc["findings"] if f["id"] == "api-key-helper-fails")
    assert found["file"] == str(settings) and found["line"] == 2
    assert doc["ok"] is False
    monkeypatch.setenv("OLD_GATEWAY_KEY", "set")
    assert "api-key-helper-fails" not in ids(claude_doctor(cli))


@pytest.mark.parametrize(
    ("command", "fails"),
    [("exit 3", True), ("true", True), ("echo a-key", False), ("sleep 30", True)],
)
def test_a_user_scope_helper_is_run_and_judged_without_showing_its_output(
    cli, isolated_home: Path, command: str, fails: bool
) -> None:
    write_settings(
        isolated_home / ".claude" / "settings.json",
        {"apiKeyHelper": command, "env": {"ANTHROPIC_BASE_URL": "https://gw"}},
    )

    doc = claude_doctor(cli)

    assert ("api-key-helper-fails" in ids(doc)) is fails
    assert "a-key" not in json.dumps(doc)


def test_a_project_scope_helper_runs_only_with_run_helpers(
    cli, isolated_home: Path, tmp_path: Path
) -> None:
    project = tmp_path / "repo"
    marker = tmp_path / "ran"
    write_settings(
        project / ".claude" / "settings.json",
        {"apiKeyHelper": f"touch {marker}; exit 1", "env": {"ANTHROPIC_BASE_URL": "https://gw"}},
    )

    plain = claude_doctor(cli, "--project-dir", str(project))
    assert not marker.exists() and "api-key-helper-fails" not in ids(plain)

    run = claude_doctor(cli, "--project-dir", str(project), "--run-helpers")
    assert marker.exists() and "api-key-helper-fails" in ids(run)


def test_helper_and_literal_token_side_by_side_is_named(cli, isolated_home: Path) -> None:
    write_settings(
        isolated_home / ".claude" / "settings.json",
        {
            "apiKeyHelper": "echo k",
            "env": {"ANTHROPIC_BASE_URL": "https://gw", "ANTHROPIC_AUTH_TOKEN": "tok-literal"},
        },
    )

    doc = claude_doctor(cli)

    found = next(f for f in doc["findings"] if f["id"] == "claude-credential-conflict")
    assert "ANTHROPIC_AUTH_TOKEN" in found["fix"]
    assert "tok-literal" not in json.dumps(doc)


def test_config_claude_removes_the_credential_it_replaces(
    cli, isolated_home: Path, monkeypatch
) -> None:
    monkeypatch.setenv("GW_TOKEN", "tok-from-env-1234567890")
    path = isolated_home / ".claude" / "settings.json"
    base = ("--base-url", "https://gw.example/anthropic")

    assert cli("config", "claude", *base, "--token-env", "GW_TOKEN").exit_code == 0
    assert cli("config", "claude", *base, "--write-token-from-env", "GW_TOKEN").exit_code == 0
    data = json.loads(path.read_text())
    assert "apiKeyHelper" not in data and data["env"]["ANTHROPIC_AUTH_TOKEN"]

    assert cli("config", "claude", *base, "--token-env", "GW_TOKEN").exit_code == 0
    data = json.loads(path.read_text())
    assert data["apiKeyHelper"] == "printenv GW_TOKEN"
    assert "ANTHROPIC_AUTH_TOKEN" not in data["env"]
    assert "claude-credential-conflict" not in ids(claude_doctor(cli))
