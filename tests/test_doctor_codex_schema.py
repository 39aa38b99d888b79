"""config.toml against the whole Codex config schema of the release in use: typos get "did you
mean", files Codex refuses to load are errors, values Codex accepts are clean, and the rules
follow `--codex-version`. The interop test runs the same table through the real Codex."""

from __future__ import annotations

from pathlib import Path

import pytest

from notes_cli.doctor.codex_schema import available_versions, schema_for, suggest

GOOD = (
    'model = "m"\nmodel_provider = "gw"\n'
    '[model_providers.gw]\nname = "GW"\nbase_url = "https://gw.example/api"\n'
)

# (config text, finding id Codex-refusal must produce or None, what the case is)
REFUSED = [
    ('approval_policy = "granular"\n' + GOOD, "config-type-invalid"),
    ('model_providers = "x"\n', "config-type-invalid"),
    ('[[model_providers]]\nname = "x"\n', "config-type-invalid"),
    (GOOD + "aws = {}\n", "provider-field-invalid"),
    (GOOD + "gateway_oauth = {}\n", "provider-field-invalid"),
    (GOOD + "auth = {}\n", "provider-field-invalid"),
    ("model = 3\n" + GOOD.replace('model = "m"\n', ""), "config-type-invalid"),
    ('sandbox_mode = "bogus"\n' + GOOD, "enum-value-invalid"),
    ('web_search = "everywhere"\n' + GOOD, "enum-value-invalid"),
    ("notify = true\n" + GOOD, "config-type-invalid"),
    (GOOD + "request_max_retries = -1\n", "config-type-invalid"),
    (GOOD + 'requires_openai_auth = "yes"\n', "config-type-invalid"),
    (GOOD + 'http_headers = "x"\n', "config-type-invalid"),
    (GOOD + '[tui]\nanimations = "yes"\n', "config-type-invalid"),
    (GOOD + '[history]\npersistence = "forever"\n', "enum-value-invalid"),
    (GOOD + '[mcp_servers.docs]\ncommand = "npx"\nargs = "-y"\n', "config-type-invalid"),
    (GOOD + '[projects."/tmp/x"]\ntrust_level = "yes"\n', "enum-value-invalid"),
    (GOOD + "[features]\nmulti_agent = 1\n", "config-type-invalid"),
]
ACCEPTED = [
    'model_reasoning_effort = "minimal"\n' + GOOD,
    'model_reasoning_effort = "none"\n' + GOOD,
    'web_search = "indexed"\n' + GOOD,
    "approval_policy = { granular = { sandbox_approval = true, rules = true, "
    "mcp_elicitations = true } }\n" + GOOD,
    'approval_policy = "on-request"\n' + GOOD,
    GOOD + '[tui]\nanimations = false\n[history]\npersistence = "none"\n',
    GOOD + '[mcp_servers.docs]\ncommand = "npx"\nstartup_timeout_sec = 20.5\n',
    GOOD + "[features]\nsome_future_feature = true\n",
    GOOD + "capabilities = {}\nsupports_websockets = false\n",
]


def errors(doc: dict) -> set[str]:
    return {f["id"] for f in doc["findings"] if f["severity"] == "error"}


@pytest.mark.parametrize(("text", "finding_id"), REFUSED)
def test_a_file_codex_refuses_to_load_is_an_error(codex_doctor, text: str, finding_id: str) -> None:
    doc = codex_doctor(text)
    assert finding_id in errors(doc), doc["findings"]
    assert doc["ok"] is False
    found = next(f for f in doc["findings"] if f["id"] == finding_id)
    assert found["line"] is not None and found["file"].endswith("config.toml")


@pytest.mark.parametrize("text", ACCEPTED)
def test_values_codex_accepts_raise_nothing_about_the_schema(codex_doctor, text: str) -> None:
    doc = codex_doctor(text)
    schema_ids = {
        "config-type-invalid",
        "provider-field-invalid",
        "enum-value-invalid",
        "reasoning-effort-invalid",
        "unknown-key",
    }
    assert not {f["id"] for f in doc["findings"]} & schema_ids, doc["findings"]


def test_a_typo_of_model_provider_is_an_error_naming_the_key_it_meant(codex_doctor) -> None:
    doc = codex_doctor(GOOD.replace("model_provider =", "model_provder ="))

    typo = next(f for f in doc["findings"] if f["id"] == "unknown-key")
    assert typo["severity"] == "error"
    assert "did you mean `model_provider`" in typo["message"]
    assert "model_provider" in typo["fix"] and typo["line"] == 2


def test_a_typo_of_a_harmless_key_is_a_warning_with_a_suggestion(codex_doctor) -> None:
    doc = codex_doctor("hide_agent_reasonin = true\n" + GOOD)

    typo = next(f for f in doc["findings"] if f["id"] == "unknown-key")
    assert typo["severity"] == "warning"
    assert "`hide_agent_reasoning`" in typo["fix"]


def test_an_unknown_key_in_a_nested_table_gets_a_suggestion(codex_doctor) -> None:
    doc = codex_doctor(GOOD + "[tui]\nanimation = false\n")

    typo = next(f for f in doc["findings"] if f["id"] == "unknown-key")
    assert typo["severity"] == "warning" and "`animations`" in typo["fix"]
    assert typo["line"] == 7


def test_an_unknown_provider_field_gets_a_suggestion(codex_doctor) -> None:
    doc = codex_doctor(GOOD + 'env_kye = "GW_KEY"\n')

    typo = next(f for f in doc["findings"] if f["id"] == "unknown-key")
    assert "model_providers.gw.env_kye" in typo["message"]
    assert "`env_key`" in typo["fix"]


def test_suggest_finds_the_closest_known_key_only_when_close() -> None:
    known = set(schema_for(None).top_level)
    assert suggest("model_provder", known) == "model_provider"
    assert suggest("sandboxmode", known) == "sandbox_mode"
    assert suggest("completely_different", known) is None


def test_the_rules_follow_the_codex_version() -> None:
    """An older release is judged by the oldest rules we have, a newer one by the newest not
    newer than it, and an unknown one by the newest."""
    newest = available_versions()[-1]
    assert schema_for(None).version == ".".join(map(str, newest))
    assert schema_for((99, 0, 0)).version == ".".join(map(str, newest))
    assert schema_for((0, 1, 0)).version == ".".join(map(str, available_versions()[0]))


def test_codex_version_flag_is_validated(cli, isolated_home: Path) -> None:
    result = cli("doctor", "--offline", "--client", "codex", "--codex-version", "latest")
    assert result.exit_code == 2
    assert "X.Y.Z" in result.stderr + result.stdout


def test_codex_version_flag_changes_the_version_dependent_findings(cli, isolated_home) -> None:
    path = isolated_home / ".codex" / "config.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(GOOD + 'wire_api = "chat"\n', encoding="utf-8")

    old = cli("doctor", "--offline", "--client", "codex", "--codex-version", "0.79.0", "--json")
    new = cli("doctor", "--offline", "--client", "codex", "--codex-version", "0.171.0", "--json")

    def severity(doc: dict) -> str:
        return next(f["severity"] for f in doc["findings"] if f["id"] == "wire-api-chat-removed")

    assert severity(old.json()) == "warning"
    assert severity(new.json()) == "error"
