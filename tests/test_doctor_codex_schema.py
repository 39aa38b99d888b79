"""config.toml against the whole Codex config schema of the release in use: typos get "did you
mean", files Codex refuses to load are errors, values Codex accepts are clean, and the rules
follow `--codex-version`. The interop test runs the same table through the real Codex."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from notes_cli.clients.codex.schema import available_versions, schema_for, suggest

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


def _from_the_data() -> tuple[list[tuple[str, str]], list[str]]:
    """Cases the schema data itself states, so the interop twin checks each against the binary:
    every retired value (refused) and every enum value of a top-level key or a named table's
    field (loaded)."""
    schema = schema_for((0, 171, 0))
    retired_ids = {"approval_policy": "approval-untrusted"}
    refused = [
        (f'{key} = "{value}"\n' + GOOD, retired_ids[key])
        for key, values in schema.retired.items()
        for value in values
    ]
    accepted = [f'approval_policy = "{v}"\n' + GOOD for v in schema.enums["ApprovalPolicy"]]
    for key, kind in schema.top_level.items():
        if kind.startswith("enum:"):
            accepted += [f'{key} = "{v}"\n' + GOOD for v in schema.enums[kind[5:]]]
    for table, spec in schema.tables.items():
        head = '[projects."/tmp/x"]\n' if table == "projects.*" else f"[{table}]\n"
        if "*" in table and table != "projects.*":
            continue
        for key, kind in spec["fields"].items():
            if kind.startswith("enum:"):
                accepted += [GOOD + head + f'{key} = "{v}"\n' for v in schema.enums[kind[5:]]]
    return refused, accepted


REFUSED += _from_the_data()[0]
ACCEPTED += _from_the_data()[1]


def test_the_schema_data_says_where_it_is_from_and_lists_no_retired_value() -> None:
    """The stale-data bug of issue 28: a value the release refuses must not sit in an enum
    (doctor would offer it as a fix), and the file names its schema, binary and checker."""
    schema = schema_for((0, 171, 0))
    assert schema.retired["approval_policy"] == ("untrusted",)
    assert "untrusted" not in schema.enums["ApprovalPolicy"]
    source = json.loads(
        (Path(__file__).parent.parent / "templates/clients/codex/config/0.171.0.json").read_text()
    )["source"]
    assert "0.171.0" in source["binary"] and "test_interop_codex_schema" in source["checked_by"]


def test_a_bad_approval_value_is_not_offered_a_retired_one(codex_doctor) -> None:
    found = next(
        f
        for f in codex_doctor('approval_policy = "sometimes"\n' + GOOD)["findings"]
        if f["id"] == "enum-value-invalid"
    )
    assert "on-request" in found["fix"] and "untrusted" not in found["fix"]


@pytest.fixture
def codex_doctor(cli, isolated_home: Path, monkeypatch):
    """Write config.toml, run `doctor --offline --client codex --json`, return the document."""
    monkeypatch.setenv("PDNOTES_CODEX_BIN", str(isolated_home / "no-codex-here"))

    def run(text: str) -> dict:
        path = isolated_home / ".codex" / "config.toml"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        return cli("doctor", "--offline", "--client", "codex", "--json").json()

    return run


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
