"""`pdnotes doctor --offline`: each static finding of the registry (and the extras), the
source article's config and its six common errors, and the JSON / exit-code contract."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

FIXTURES = Path(__file__).parent / "fixtures" / "config"
GOOD_PROVIDER = '[model_providers.gw]\nname = "GW"\nbase_url = "https://gw.example/api"\n'


@pytest.fixture
def claude_doctor(cli, isolated_home: Path, monkeypatch):
    def run(settings: object, **env: str) -> dict:
        for name, value in env.items():
            monkeypatch.setenv(name, value)
        path = isolated_home / ".claude" / "settings.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        text = settings if isinstance(settings, str) else json.dumps(settings, indent=2)
        path.write_text(text, encoding="utf-8")
        return cli("doctor", "--offline", "--client", "claude", "--json").json()

    return run


def ids(doc: dict) -> set[str]:
    return {f["id"] for f in doc["findings"]}


def finding(doc: dict, finding_id: str) -> dict:
    return next(f for f in doc["findings"] if f["id"] == finding_id)


# -- the source article ---------------------------------------------------------------------------


def test_the_articles_config_yields_chat_removed_and_env_key_unset(codex_doctor) -> None:
    doc = codex_doctor((FIXTURES / "article.toml").read_text())

    assert {"wire-api-chat-removed", "env-key-unset", "model-placeholder"} <= ids(doc)
    chat = finding(doc, "wire-api-chat-removed")
    assert chat["severity"] == "error" and chat["line"] == 9
    assert 'wire_api = "responses"' in chat["fix"]
    assert "export TAOTOKEN_API_KEY=" in finding(doc, "env-key-unset")["fix"]
    assert doc["ok"] is False


KEYED = GOOD_PROVIDER + 'env_key = "GW_KEY"\n'
KEYED_CONFIG = 'model = "m"\nmodel_provider = "gw"\n' + KEYED


@pytest.mark.parametrize(("value", "state"), [("", "empty"), ("sk-live-0123456789abcdef", None)])
def test_an_exported_but_empty_key_variable_is_not_a_key(
    cli, codex_doctor, value: str, state: str | None
) -> None:
    # `export GW_KEY=` (a line left blank in a .env file): the variable exists, Codex still
    # stops with "Missing environment variable", so doctor must say so and not pass.
    doc = codex_doctor(KEYED_CONFIG, GW_KEY=value)
    if state is None:
        assert "env-key-unset" not in ids(doc)
        return
    unset = finding(doc, "env-key-unset")
    assert unset["severity"] == "error" and "$GW_KEY is empty" in unset["message"]
    assert doc["ok"] is False
    text = cli("doctor", "--offline", "--client", "codex")
    assert text.exit_code == 1 and "GW_KEY is empty" in " ".join(text.stdout.split())


ARTICLE_ERRORS = [
    # 1. an extra /v1 on a gateway whose root has none
    (
        'model = "m"\nmodel_provider = "taotoken"\n[model_providers.taotoken]\nname = "T"\n'
        'base_url = "https://taotoken.net/api/v1"\nenv_key = "TAOTOKEN_API_KEY"\n',
        "base-url-v1-suffix",
        "https://taotoken.net/api",
    ),
    # 2. the key was never exported
    (
        'model = "m"\nmodel_provider = "taotoken"\n[model_providers.taotoken]\nname = "T"\n'
        'base_url = "https://taotoken.net/api"\nenv_key = "TAOTOKEN_API_KEY"\n',
        "env-key-unset",
        "export TAOTOKEN_API_KEY",
    ),
    # 3. UTM parameters pasted into the base URL
    (
        'model = "m"\nmodel_provider = "gw"\n[model_providers.gw]\nname = "GW"\n'
        'base_url = "https://taotoken.net/api?utm_source=blog"\n',
        "base-url-query",
        "https://taotoken.net/api",
    ),
    # 4. a model id that does not match the served one (case and hyphens)
    (
        'model = "PD_Mock_1"\nmodel_provider = "m"\n[model_providers.m]\nname = "M"\n'
        'base_url = "http://127.0.0.1:8000/api"\n',
        "model-unknown",
        "'pd-mock-1'",
    ),
    # 5. expecting the gateway to make inference faster
    (
        'model = "m"\nmodel_provider = "gw"\n[model_providers.gw]\nname = "GW"\n'
        'base_url = "https://taotoken.net/api"\n',
        "gateway-not-accelerator",
        "speed comes from the serving engine",
    ),
    # 6. Claude Code settings put into Codex's file
    (
        'model = "m"\nANTHROPIC_BASE_URL = "https://taotoken.net/api"\n',
        "anthropic-in-codex",
        "pdnotes config claude",
    ),
]


@pytest.mark.parametrize(("text", "finding_id", "in_fix"), ARTICLE_ERRORS)
def test_each_of_the_articles_six_errors_is_named(codex_doctor, text, finding_id, in_fix) -> None:
    doc = codex_doctor(text)
    assert finding_id in ids(doc)
    assert in_fix in finding(doc, finding_id)["fix"]


# -- Codex table ----------------------------------------------------------------------------------

CODEX_CASES = [
    ('model = "m"\nmodel_provider = "nope"\n', "provider-missing"),
    (
        'model = "m"\nmodel_provider = "openai"\n[model_providers.openai]\nname = "O"\n',
        "provider-reserved-id",
    ),
    (
        'model = "m"\nmodel_provider = "gw"\n[model_providers.gw]\nname = ""\n'
        'base_url = "https://gw.example/api"\n',
        "provider-name-empty",
    ),
    ('model = "m"\nmodel_provider = "gw"\n' + GOOD_PROVIDER + "bogus_field = 1\n", "unknown-key"),
    (
        'model = "m"\nmodel_provider = "gw"\n' + GOOD_PROVIDER + 'wire_api = "completions"\n',
        "wire-api-invalid",
    ),
    (
        'model = "m"\nmodel_provider = "gw"\n[model_providers.gw]\nname = "GW"\n'
        'base_url = "https://gw.example/api/chat/completions"\n',
        "base-url-endpoint-suffix",
    ),
    (
        'model = "m"\nmodel_provider = "gw"\n[model_providers.gw]\nname = "GW"\n'
        'base_url = "gw.example/api"\n',
        "base-url-no-scheme",
    ),
    (
        'model = "m"\nmodel_provider = "gw"\n[model_providers.gw]\nname = "GW"\n'
        'base_url = "https://gw.example/api#x"\n',
        "base-url-fragment",
    ),
    (
        'model = "m"\nmodel_provider = "gw"\n'
        + GOOD_PROVIDER
        + 'env_key = "sk-abcdefghijklmnopqrstuvwxyz012345"\n',
        "env-key-looks-like-secret",
    ),
    (
        'model = "m"\nmodel_provider = "gw"\n'
        + GOOD_PROVIDER
        + 'experimental_bearer_token = "sk-abcdef0123456789"\n',
        "key-in-file",
    ),
    (
        'model = "m"\nmodel_provider = "gw"\n'
        + GOOD_PROVIDER
        + 'env_key = "GW_KEY"\nauth = { command = "gw-token" }\n',
        "auth-mixed",
    ),
    (
        'model = "m"\nmodel_provider = "gw"\n'
        + GOOD_PROVIDER
        + 'env_http_headers = { "X-Org" = "GW_ORG_UNSET" }\n',
        "env-http-header-unset",
    ),
    (
        'model = "m"\nmodel_provider = "gw"\n' + GOOD_PROVIDER + "request_max_retries = 500\n",
        "retries-too-high",
    ),
    ('model = "m"\nprofile = "fast"\n', "profile-legacy"),
    ('model = "m"\n[profiles.fast]\nmodel = "x"\n', "profile-legacy"),
    ('model = "m"\napproval_policy = "untrusted"\n', "approval-untrusted"),
    ('model = "m"\nsandbox_mode = "read_only"\n', "enum-value-invalid"),
    ('model = "m"\nmodel_reasoning_effort = "hgih"\n', "reasoning-effort-invalid"),
    ('model_provider = "gw"\n' + GOOD_PROVIDER, "model-missing"),
    ('model = "<model>"\n', "model-placeholder"),
    ("model = [\n", "toml-syntax"),
]


def test_builtin_openai_ignores_openai_api_key(codex_doctor) -> None:
    doc = codex_doctor('model = "gpt-5.1"\n', OPENAI_API_KEY="sk-x0123456789abc")
    assert "openai-api-key-ignored" in ids(doc)


def test_bedrock_accepts_only_its_overridable_fields(codex_doctor) -> None:
    doc = codex_doctor(
        'model = "m"\n[model_providers.amazon-bedrock]\nbase_url = "https://b.example"\n'
        'aws = { region = "us-east-1" }\nwire_api = "responses"\n'
    )
    unknown = [f for f in doc["findings"] if f["id"] == "unknown-key"]
    assert [f["message"] for f in unknown] == [
        "model_providers.amazon-bedrock.wire_api cannot be changed on the built-in "
        "amazon-bedrock provider"
    ]
    assert "provider-name-empty" not in ids(doc)


@pytest.mark.parametrize(("text", "finding_id"), CODEX_CASES)
def test_codex_findings(codex_doctor, text: str, finding_id: str) -> None:
    doc = codex_doctor(text)
    assert finding_id in ids(doc), doc["findings"]
    assert finding(doc, finding_id)["fix"]


def test_toml_syntax_names_line_and_column(codex_doctor) -> None:
    doc = codex_doctor('model = "m"\n[model_providers.gw\nname = "x"\n')
    syntax = finding(doc, "toml-syntax")
    assert syntax["line"] == 2 and "line 2, column" in syntax["fix"]


def test_a_clean_codex_config_passes(codex_doctor) -> None:
    doc = codex_doctor(
        'model = "m"\nmodel_provider = "gw"\nmodel_context_window = 32768\n'
        + GOOD_PROVIDER
        + 'env_key = "GW_KEY"\nwire_api = "responses"\n',
        GW_KEY="sk-x0123456789",
    )
    assert doc["ok"] is True
    assert {f["severity"] for f in doc["findings"]} <= {"info"}


def test_rich_fixture_has_no_errors(codex_doctor) -> None:
    doc = codex_doctor((FIXTURES / "rich.toml").read_text(), CORP_KEY="k")
    assert [f for f in doc["findings"] if f["severity"] == "error"] == []


# -- Codex version --------------------------------------------------------------------------------


def _fake_codex(folder: Path, version: str) -> Path:
    script = folder / "codex"
    script.write_text(f"#!/bin/sh\necho 'codex-cli {version}'\n")
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    return script


@pytest.mark.parametrize(("version", "severity"), [("0.171.0", "error"), ("0.64.0", "warning")])
def test_chat_removed_depends_on_the_installed_codex(
    codex_doctor, tmp_path, monkeypatch, version, severity
) -> None:
    text = (FIXTURES / "article.toml").read_text()
    doc = codex_doctor(text, PDNOTES_CODEX_BIN=str(_fake_codex(tmp_path, version)))
    chat = finding(doc, "wire-api-chat-removed")
    assert chat["severity"] == severity
    assert version.rsplit(".", 1)[0] in chat["message"] or severity == "error"


def test_codex_on_path_is_used_when_no_override(codex_doctor, tmp_path, monkeypatch) -> None:
    monkeypatch.delenv("PDNOTES_CODEX_BIN", raising=False)
    _fake_codex(tmp_path, "0.50.1")
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    doc = codex_doctor((FIXTURES / "article.toml").read_text())
    assert finding(doc, "wire-api-chat-removed")["severity"] == "warning"


# -- Claude table ---------------------------------------------------------------------------------

CLAUDE_OK = {"ANTHROPIC_BASE_URL": "https://gw.example/api", "ANTHROPIC_AUTH_TOKEN": "x"}
CLAUDE_CASES = [
    ('{"env": {"A": "1",}}', "json-syntax"),
    ({"env": ["ANTHROPIC_BASE_URL=https://x"]}, "claude-settings-ignored"),
    ({"model": 5, "env": CLAUDE_OK}, "claude-settings-ignored"),
    ({"permissions": {"allow": "Bash"}, "env": CLAUDE_OK}, "claude-settings-ignored"),
    ({"ANTHROPIC_BASE_URL": "https://gw.example/api"}, "env-outside-block"),
    ({"env": CLAUDE_OK, "wire_api": "responses"}, "codex-in-claude"),
    ({"env": {**CLAUDE_OK, "OPENAI_API_KEY": "x"}}, "codex-in-claude"),
    ({"env": {**CLAUDE_OK, "ANTHROPIC_API_KEY": "y"}}, "anthropic-auth-conflict"),
    ({"env": {"ANTHROPIC_BASE_URL": "https://gw.example/api"}}, "claude-credential-missing"),
    ({"env": {**CLAUDE_OK, "apiKeyHelper": "printenv K"}}, "api-key-helper-in-env"),
    ({"env": {**CLAUDE_OK, "DISABLE_TELEMETRY": "0"}}, "disable-flag-false-value"),
    ({"env": {**CLAUDE_OK, "ANTHROPIC_AUTH_TOKEN": "sk-ant-0123456789abcdef"}}, "key-in-file"),
    (
        {"env": {**CLAUDE_OK, "ANTHROPIC_BASE_URL": "https://gw.example/api/v1"}},
        "base-url-v1-suffix",
    ),
    (
        {"env": {**CLAUDE_OK, "ANTHROPIC_BASE_URL": "https://gw.example/v1/messages"}},
        "base-url-endpoint-suffix",
    ),
    ({"env": {**CLAUDE_OK, "ANTHROPIC_BASE_URL": "127.0.0.1:8000"}}, "base-url-no-scheme"),
    ({"env": {**CLAUDE_OK, "ANTHROPIC_MODEL": "YOUR_MODEL_ID"}}, "model-placeholder"),
]


@pytest.mark.parametrize("base", ["https://gw.example/api/v1/", "https://gw.example/api/v1//"])
def test_a_v1_with_a_trailing_slash_is_still_the_doubled_v1(
    claude_doctor, codex_doctor, base: str
) -> None:
    """A URL copied with its trailing slash calls …/v1/v1/messages just the same (issue 35: a
    mutant that stopped flagging it survived)."""
    claude = finding(claude_doctor({"env": {**CLAUDE_OK, "ANTHROPIC_BASE_URL": base}}),
                     "base-url-v1-suffix")  # fmt: skip
    assert "/v1/v1/messages" in claude["message"] and "https://gw.example/api" in claude["fix"]
    codex = codex_doctor(
        'model = "m"\nmodel_provider = "taotoken"\n[model_providers.taotoken]\nname = "T"\n'
        f'base_url = "{base.replace("gw.example", "taotoken.net")}"\n'
        'env_key = "TAOTOKEN_API_KEY"\n'
    )
    assert "https://taotoken.net/api" in finding(codex, "base-url-v1-suffix")["fix"]


@pytest.mark.parametrize(("settings", "finding_id"), CLAUDE_CASES)
def test_claude_findings(claude_doctor, settings: object, finding_id: str) -> None:
    doc = claude_doctor(settings)
    assert finding_id in ids(doc), doc["findings"]


def test_shell_model_overriding_the_settings_model(claude_doctor) -> None:
    doc = claude_doctor({"model": "glm-4.6", "env": CLAUDE_OK}, ANTHROPIC_MODEL="claude-x")
    override = finding(doc, "model-env-override")
    assert "claude-x" in override["message"] and override["line"] == 2


def test_env_in_the_claude_state_file(claude_doctor, isolated_home: Path) -> None:
    state = isolated_home / ".claude.json"
    state.write_text(json.dumps({"env": {"ANTHROPIC_BASE_URL": "https://old.example"}}))
    doc = claude_doctor({"env": CLAUDE_OK})
    assert finding(doc, "claude-json-env")["file"] == str(state)


def test_json_syntax_names_line_and_column(claude_doctor) -> None:
    doc = claude_doctor('{\n  "env": {\n    "A": "1",\n  }\n}\n')
    syntax = finding(doc, "json-syntax")
    assert syntax["line"] == 4 and "column" in syntax["fix"]


def test_a_dropped_file_does_not_count_as_configured(claude_doctor) -> None:
    # Claude Code ignores the whole file, so its token is not there either.
    doc = claude_doctor({"model": 5, "env": CLAUDE_OK})
    assert "claude-credential-missing" in ids(doc)


def test_token_exported_in_the_shell_counts(claude_doctor) -> None:
    doc = claude_doctor(
        {"env": {"ANTHROPIC_BASE_URL": "https://gw.example/api"}},
        ANTHROPIC_AUTH_TOKEN="sk-shell0123456789",
    )
    assert "claude-credential-missing" not in ids(doc)


# -- environment, missing files, contract ---------------------------------------------------------


def test_environment_findings(cli, monkeypatch) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", "https://taotoken.net/api")
    monkeypatch.setenv("HTTPS_PROXY", "http://a:3128")
    monkeypatch.setenv("https_proxy", "http://b:3128")
    doc = cli("doctor", "--offline", "--json").json()
    assert {"openai-base-url-ignored", "proxy-case-mismatch"} <= ids(doc)


def test_nothing_configured_is_an_error_for_both(cli) -> None:
    result = cli("doctor", "--offline", "--json")
    doc = result.json()
    missing = [f for f in doc["findings"] if f["id"] == "config-missing"]
    assert {f["client"] for f in missing} == {"codex", "claude"}
    assert all(f["severity"] == "error" for f in missing)
    assert result.exit_code == 1


def test_one_configured_client_only_warns_about_the_other(cli) -> None:
    cli("config", "codex", "--preset", "mock")
    result = cli("doctor", "--offline", "--json")
    assert result.exit_code == 0
    missing = finding(result.json(), "config-missing")
    assert missing["client"] == "claude" and missing["severity"] == "warning"


def test_json_contract_shape(codex_doctor) -> None:
    doc = codex_doctor((FIXTURES / "article.toml").read_text())
    assert set(doc) == {"schema", "ok", "findings", "probes"}
    assert doc["schema"] == "pdnotes.doctor/1" and doc["probes"] == []
    for item in doc["findings"]:
        assert {"id", "severity", "client", "message", "fix"} <= set(item)
        assert item["severity"] in ("error", "warning", "info")
        assert item["client"] in ("codex", "claude", "env")


def test_human_output_has_header_findings_fixes_and_verdict(cli, isolated_home: Path) -> None:
    path = isolated_home / ".codex" / "config.toml"
    path.parent.mkdir(parents=True)
    path.write_text((FIXTURES / "article.toml").read_text())

    result = cli("doctor", "--offline", "--client", "codex")

    assert result.exit_code == 1
    lines = result.stdout.splitlines()
    assert lines[0] == f"Codex  {path}"
    assert lines[1] == "  calls POST https://taotoken.net/api/responses"
    assert any(
        line.strip().startswith("error   wire-api-chat-removed") and f"{path}:9" in line
        for line in lines
    )
    assert any(line.strip().startswith('fix: set wire_api = "responses"') for line in lines)
    assert lines[-1].startswith("problems found: 3 error(s)")


def test_exit_codes(cli, codex_doctor) -> None:
    assert cli("doctor", "--offline", "--client", "nope").exit_code == 2
    codex_doctor('model = "m"\nmodel_provider = "gw"\n' + GOOD_PROVIDER)
    assert cli("doctor", "--offline", "--client", "codex").exit_code == 0
