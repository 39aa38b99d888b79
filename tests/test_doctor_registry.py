"""The finding registry is the contract's single source: every documented id is in it, ids are
stable kebab-case, every fix template renders, and docs/findings.md lists exactly these ids."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from notes_cli.doctor.registry import REGISTRY, make, markdown

DOCS = Path(__file__).resolve().parent.parent / "docs" / "findings.md"
DESIGN_IDS = [
    "config-missing",
    "toml-syntax",
    "json-syntax",
    "provider-missing",
    "provider-reserved-id",
    "base-url-v1-suffix",
    "base-url-query",
    "base-url-endpoint-suffix",
    "wire-api-chat-removed",
    "env-key-unset",
    "key-in-file",
    "anthropic-in-codex",
    "codex-in-claude",
    "claude-settings-ignored",
    "env-outside-block",
    "anthropic-auth-conflict",
    "unreachable",
    "auth-rejected",
    "path-not-found",
    "model-unknown",
    "responses-unsupported",
]
EXTRAS = [
    "unknown-key",
    "reasoning-effort-invalid",
    "provider-name-empty",
    "profile-legacy",
    "approval-untrusted",
    "base-url-no-scheme",
    "base-url-fragment",
    "env-key-looks-like-secret",
    "openai-base-url-ignored",
    "proxy-case-mismatch",
    "claude-credential-missing",
    "api-key-helper-in-env",
    "disable-flag-false-value",
    "model-placeholder",
    "gateway-not-accelerator",
    "messages-unsupported",
    "bridge-not-running",
    "bridge-upstream-failed",
]


def test_every_contract_and_promised_id_is_registered() -> None:
    assert set(DESIGN_IDS + EXTRAS) <= set(REGISTRY)


@pytest.mark.parametrize("finding_id", sorted(REGISTRY))
def test_ids_are_kebab_case_and_fixes_render(finding_id: str) -> None:
    assert re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", finding_id)
    entry = REGISTRY[finding_id]
    assert entry.when and entry.example and entry.fix
    fields = set(re.findall(r"{(\w+)}", entry.fix)) - {"file", "line"}
    finding = make(finding_id, "codex", "m", file="f.toml", line=3, **{f: "X" for f in fields})
    assert "{" not in finding.fix and finding.severity == entry.severity


def test_docs_page_is_generated_from_the_registry() -> None:
    assert DOCS.read_text(encoding="utf-8") == markdown(), (
        "regenerate: python -m notes_cli.doctor.registry > docs/findings.md"
    )
    listed = set(re.findall(r"^\| `([a-z0-9-]+)` \|", DOCS.read_text(), flags=re.M))
    assert listed == set(REGISTRY)


def test_gateway_note_says_where_speed_comes_from() -> None:
    assert "speed comes from the serving engine" in REGISTRY["gateway-not-accelerator"].fix
    assert REGISTRY["gateway-not-accelerator"].severity == "info"


def test_every_id_the_live_doctor_emits_is_registered() -> None:
    # A text scan, because live findings need a gateway to be produced; kebab-case strings in
    # live.py are finding ids except the probe and header names listed here.
    source = Path(__file__).resolve().parent.parent / "notes_cli" / "doctor" / "live.py"
    emitted = set(re.findall(r'"([a-z0-9]+(?:-[a-z0-9]+)+)"', source.read_text()))
    emitted -= {"chat-completions", "x-api-key", "x-goog-api-key"}  # probe, header names
    assert emitted <= set(REGISTRY), emitted - set(REGISTRY)
