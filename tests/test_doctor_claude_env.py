"""Claude Code's model and limit variables in `pdnotes doctor`: types, the deprecated name,
the thinking budget against the output limit, and a CA file Node cannot use."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

GATEWAY = {"ANTHROPIC_BASE_URL": "https://gw.example/api", "ANTHROPIC_AUTH_TOKEN": "x"}
PEM = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"


@pytest.fixture
def doctor(cli, isolated_home: Path, monkeypatch):
    def run(env_block: dict[str, str], **shell: str) -> list[dict]:
        for name, value in shell.items():
            monkeypatch.setenv(name, value)
        path = isolated_home / ".claude" / "settings.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({"env": {**GATEWAY, **env_block}}, indent=2), encoding="utf-8")
        return cli("doctor", "--offline", "--client", "claude", "--json").json()["findings"]

    return run


def only(findings: list[dict], finding_id: str) -> dict:
    [found] = [f for f in findings if f["id"] == finding_id]
    return found


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("CLAUDE_CODE_MAX_OUTPUT_TOKENS", "32k"),
        ("CLAUDE_CODE_MAX_OUTPUT_TOKENS", "0"),
        ("MAX_THINKING_TOKENS", "-1"),
        ("CLAUDE_CODE_SUBAGENT_MODEL", " "),
        ("ANTHROPIC_DEFAULT_HAIKU_MODEL", ""),
    ],
)
def test_a_variable_of_the_wrong_type_is_named_with_its_line(doctor, name, value) -> None:
    found = only(doctor({name: value}), "claude-env-invalid")
    assert name in found["message"] and found["line"] is not None
    assert found["fix"].startswith(f"set {name} to ")


def test_well_typed_variables_raise_nothing(doctor, tmp_path: Path) -> None:
    ca = tmp_path / "ca.pem"
    ca.write_text(PEM, encoding="utf-8")
    findings = doctor(
        {
            "CLAUDE_CODE_MAX_OUTPUT_TOKENS": "16000",
            "MAX_THINKING_TOKENS": "8000",
            "CLAUDE_CODE_SUBAGENT_MODEL": "qwen3-coder",
            "ANTHROPIC_DEFAULT_HAIKU_MODEL": "qwen3-coder",
            "NODE_EXTRA_CA_CERTS": str(ca),
        }
    )
    ours = {"claude-env-invalid", "claude-env-deprecated", "thinking-budget-over-output"}
    assert not ours & {f["id"] for f in findings} and "ca-file-unusable" not in str(findings)


def test_the_thinking_budget_must_stay_below_the_output_limit(doctor) -> None:
    findings = doctor({"CLAUDE_CODE_MAX_OUTPUT_TOKENS": "16000"}, MAX_THINKING_TOKENS="16000")
    found = only(findings, "thinking-budget-over-output")
    assert found["severity"] == "error" and found.get("file") is None  # from the shell
    assert "below 16000 (e.g. 8000)" in found["fix"]
    assert "thinking-budget-over-output" not in str(
        doctor({"CLAUDE_CODE_MAX_OUTPUT_TOKENS": "16000", "MAX_THINKING_TOKENS": "0"})
    )


def test_the_deprecated_background_model_name(doctor) -> None:
    found = only(doctor({"ANTHROPIC_SMALL_FAST_MODEL": "qwen3"}), "claude-env-deprecated")
    assert found["severity"] == "info" and "ANTHROPIC_DEFAULT_HAIKU_MODEL=qwen3" in found["fix"]
    clash = only(
        doctor({"ANTHROPIC_SMALL_FAST_MODEL": "qwen3", "ANTHROPIC_DEFAULT_HAIKU_MODEL": "glm"}),
        "claude-env-deprecated",
    )
    assert clash["severity"] == "warning" and "disagree" in clash["message"]
    assert "keep ANTHROPIC_DEFAULT_HAIKU_MODEL=glm" in clash["fix"]


@pytest.mark.parametrize("kind", ["missing", "folder", "not-pem", "relative"])
def test_a_ca_file_node_cannot_use(doctor, tmp_path: Path, kind: str) -> None:
    target = {
        "missing": str(tmp_path / "nope.pem"),
        "folder": str(tmp_path),
        "not-pem": str(tmp_path / "key.txt"),
        "relative": "certs/ca.pem",
    }[kind]
    (tmp_path / "key.txt").write_text("not a certificate", encoding="utf-8")
    found = only(doctor({"NODE_EXTRA_CA_CERTS": target}), "ca-file-unusable")
    assert found["severity"] == "error" and target in found["message"]
    assert "absolute path of the PEM file" in found["fix"]


def test_a_background_or_subagent_model_the_gateway_does_not_serve(cli, isolated_home) -> None:
    """On the mock engine's preset (it lists its one model), Claude Code's default Haiku id for
    subagents would be a 404 on every subagent call: named with the variable that sets it."""
    path = isolated_home / ".claude" / "settings.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    env = {
        "ANTHROPIC_BASE_URL": "http://127.0.0.1:8000/api/anthropic",
        "ANTHROPIC_AUTH_TOKEN": "pdnotes-mock-no-key",
        "ANTHROPIC_MODEL": "pd-mock-1",
        "CLAUDE_CODE_SUBAGENT_MODEL": "claude-haiku-4-5",
        "ANTHROPIC_DEFAULT_HAIKU_MODEL": "pd-mock-1",
    }
    path.write_text(json.dumps({"env": env}, indent=2), encoding="utf-8")
    findings = cli("doctor", "--offline", "--client", "claude", "--json").json()["findings"]
    [found] = [f for f in findings if f["id"] == "model-unknown"]
    assert found["message"].startswith("CLAUDE_CODE_SUBAGENT_MODEL: model 'claude-haiku-4-5'")
    assert "pd-mock-1" in found["fix"] and found["line"] == 6


@pytest.mark.parametrize("model", ["gemma-3-270m", "qwen3-coder"])
def test_a_custom_model_without_a_window_variable_is_named(doctor, model: str) -> None:
    """Claude Code 2.1.332 warns on every start that it assumes 1m tokens for a model it does
    not know (issue 36); doctor said "no problems found"."""
    found = only(doctor({"ANTHROPIC_MODEL": model}), "claude-context-window-unknown")
    assert found["severity"] == "warning" and f'"{model}"' in found["message"]
    assert "CLAUDE_CODE_MAX_CONTEXT_TOKENS is not set" in found["message"]
    assert found["fix"].startswith("set CLAUDE_CODE_MAX_CONTEXT_TOKENS to the window")
    assert found["file"] and found["file"].endswith("settings.json") and found["line"]


@pytest.mark.parametrize(
    ("env_block", "shell"),
    [
        ({"ANTHROPIC_MODEL": "gemma-3-270m", "CLAUDE_CODE_MAX_CONTEXT_TOKENS": "4096"}, {}),
        ({"ANTHROPIC_MODEL": "gemma-3-270m"}, {"CLAUDE_CODE_MAX_CONTEXT_TOKENS": "4096"}),
        ({"ANTHROPIC_MODEL": "claude-sonnet-4-5"}, {}),
        ({"ANTHROPIC_MODEL": "opus[1m]"}, {}),
        ({}, {}),  # Claude Code's own default model
    ],
)
def test_a_known_model_or_a_set_window_raises_nothing(doctor, env_block, shell) -> None:
    findings = doctor(env_block, **shell)
    assert not [f for f in findings if f["id"] == "claude-context-window-unknown"], findings


def test_a_window_variable_that_is_not_a_count_is_invalid(doctor) -> None:
    found = only(
        doctor({"ANTHROPIC_MODEL": "gemma-3-270m", "CLAUDE_CODE_MAX_CONTEXT_TOKENS": "4k"}),
        "claude-env-invalid",
    )
    assert "CLAUDE_CODE_MAX_CONTEXT_TOKENS" in found["message"]
