"""Client-shaped probes: doctor and smoke send the request Codex / Claude Code really send (the
recordings in notes_cli/clients/<client>/shapes/), a strict gateway that refuses non-function
tools is caught and narrowed down to the tool type with the Codex setting that avoids it, and
`--minimal` keeps the small body. The strict gateway is the recorder of scripts/client_shapes.py
with a rule."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "scripts"))
import client_shapes  # noqa: E402

from notes_cli.clients.endpoint import Endpoint  # noqa: E402
from notes_cli.doctor.client_shape import shape_for, shaped_request, tool_types  # noqa: E402
from notes_cli.doctor.live import probe_endpoint  # noqa: E402

MODEL = client_shapes.MODEL


def function_tools_only(body: dict[str, Any]) -> str | None:
    """What many Responses->chat bridges answer: only function tools pass."""
    for tool in body.get("tools") or []:
        if tool.get("type") != "function":
            return f"Invalid value: '{tool.get('type')}'. Supported values are: 'function'."
    return None


def codex_endpoint(url: str) -> Endpoint:
    return Endpoint("codex", f"{url}/v1", "responses", model=MODEL, key="k", key_env="K")


def test_the_recorded_codex_shape_has_the_parts_the_issue_lists() -> None:
    shape = shape_for("responses", (0, 171, 0))
    assert shape is not None and shape.version == "0.171.0"
    assert set(shape.body) == {
        "client_metadata", "include", "input", "model", "parallel_tool_calls",
        "prompt_cache_key", "reasoning", "store", "stream", "tool_choice", "tools",
    }  # fmt: skip
    assert tool_types(shape) == ["namespace", "web_search"]
    assert shape.headers["originator"] == "codex_exec"
    assert "max_output_tokens" not in shape.body


def test_the_probe_sends_the_clients_shape_with_fresh_ids_and_no_secret() -> None:
    shape = shape_for("responses", None)
    assert shape is not None
    with client_shapes.recording_server() as (url, requests):
        findings, _ = probe_endpoint(codex_endpoint(url), timeout=5, shape=shape)

    assert findings == []
    sent = next(r for r in requests if r["path"].endswith("/responses"))
    assert set(sent["body"]) == set(shape.body) | {"max_output_tokens"}  # the budget, on purpose
    assert [t.get("type") for t in sent["body"]["tools"]] == [
        t.get("type") for t in shape.body["tools"]
    ]
    assert sent["body"]["model"] == MODEL
    assert "<id>" not in str(sent) and sent["headers"]["originator"] == "codex_exec"
    assert "pong" in str(sent["body"]["input"])  # doctor's prompt replaced the recorded one


def test_a_gateway_refusing_non_function_tools_is_named_with_the_codex_setting() -> None:
    with client_shapes.recording_server(function_tools_only) as (url, requests):
        findings, probes = probe_endpoint(
            codex_endpoint(url), timeout=5, shape=shape_for("responses", (0, 171, 0))
        )

    assert [f.id for f in findings] == ["request-shape-rejected"]
    finding = findings[0]
    assert "namespace" in finding.message and "web_search" in finding.message
    assert "[features] multi_agent = false" in finding.fix
    assert 'web_search = "disabled"' in finding.fix
    assert [p.name for p in probes][:3] == ["models", "stream", "stream (minimal)"]
    assert len(requests) <= 1 + 8  # bounded narrowing


def test_through_the_bridge_the_fix_is_the_upstreams_not_another_bridge(isolated_home) -> None:
    """A Codex config already pointing at the pdnotes bridge (its recorded port): the refusal
    comes from behind it, so the fix must not suggest putting a bridge in front (issue 36)."""
    from urllib.parse import urlsplit

    from notes_cli.bridge.config import BridgeConfig, save_record

    with client_shapes.recording_server(function_tools_only) as (url, _):
        save_record(BridgeConfig(upstream="http://127.0.0.1:9/v1", port=urlsplit(url).port or 0))
        findings, _ = probe_endpoint(
            codex_endpoint(url), timeout=5, shape=shape_for("responses", (0, 171, 0))
        )

    (finding,) = findings
    assert finding.id == "request-shape-rejected"
    assert "bridge serve --upstream" not in finding.fix and "put a bridge" not in finding.fix
    assert f"the upstream behind the pdnotes bridge at {url}" in finding.fix, finding.fix
    assert "[features] multi_agent = false" in finding.fix  # the client's own setting stays


def test_one_refused_tool_type_is_named_alone() -> None:
    def no_namespace(body: dict[str, Any]) -> str | None:
        kinds = [t.get("type") for t in body.get("tools") or []]
        return "Invalid value: 'namespace'." if "namespace" in kinds else None

    with client_shapes.recording_server(no_namespace) as (url, _):
        findings, _ = probe_endpoint(
            codex_endpoint(url), timeout=5, shape=shape_for("responses", (0, 171, 0))
        )

    assert findings[0].id == "request-shape-rejected"
    assert "tools of type `namespace`" in findings[0].message
    assert "web_search" not in findings[0].fix


def test_reasoning_refused_is_named() -> None:
    def no_reasoning(body: dict[str, Any]) -> str | None:
        return "Unrecognized request argument: reasoning" if "reasoning" in body else None

    with client_shapes.recording_server(no_reasoning) as (url, _):
        findings, _ = probe_endpoint(codex_endpoint(url), timeout=5, shape=shape_for("responses"))

    assert "`reasoning`" in findings[0].message


def test_claude_shape_is_sent_and_a_system_role_refusal_named() -> None:
    shape = shape_for("anthropic")
    assert shape is not None

    def no_system_role(body: dict[str, Any]) -> str | None:
        roles = [m.get("role") for m in body.get("messages") or []]
        return (
            "messages: roles must alternate between user and assistant"
            if "system" in roles
            else None
        )

    with client_shapes.recording_server(no_system_role) as (url, requests):
        endpoint = Endpoint("claude", url, "anthropic", model=MODEL, key="k", key_env="T")
        findings, _ = probe_endpoint(endpoint, timeout=5, shape=shape)

    assert [f.id for f in findings] == ["request-shape-rejected"]
    assert "system" in findings[0].message
    first = next(r for r in requests if "/messages" in r["path"])
    assert first["headers"]["x-app"] == "cli"
    assert {t["name"] for t in first["body"]["tools"]} == {t["name"] for t in shape.body["tools"]}


def test_a_gateway_refusing_claude_codes_betas_is_told_the_variable_that_stops_them() -> None:
    """anthropics/claude-code #46105: a beta value the gateway does not know fails every turn;
    the fix is CLAUDE_CODE_DISABLE_EXPERIMENTAL_BETAS, not a bridge or the gateway's admin."""
    shape = shape_for("anthropic")
    assert shape is not None and "anthropic-beta" in shape.headers

    def unknown_betas(headers: dict[str, str]) -> str | None:
        beta = headers.get("anthropic-beta")
        return f"Unexpected value(s) `{beta}` for the `anthropic-beta` header" if beta else None

    with client_shapes.recording_server(reject_headers=unknown_betas) as (url, requests):
        endpoint = Endpoint("claude", url, "anthropic", model=MODEL, key="k", key_env="T")
        findings, _ = probe_endpoint(endpoint, timeout=5, shape=shape)

    assert [f.id for f in findings] == ["request-shape-rejected"]
    assert "`anthropic-beta`" in findings[0].message
    assert "CLAUDE_CODE_DISABLE_EXPERIMENTAL_BETAS=1" in findings[0].fix
    passed = requests[-1]  # the narrowing stopped at the turn that worked: only the betas gone
    assert "anthropic-beta" not in passed["headers"] and passed["headers"]["x-app"] == "cli"


def test_minimal_probe_stays_small_and_passes_the_strict_gateway() -> None:
    with client_shapes.recording_server(function_tools_only) as (url, requests):
        findings, _ = probe_endpoint(codex_endpoint(url), timeout=5, shape=None)

    assert findings == []
    body = next(r for r in requests if r["path"].endswith("/responses"))["body"]
    assert set(body) == {"model", "input", "max_output_tokens", "store", "stream"}


def test_shaped_request_variants_drop_what_they_say() -> None:
    shape = shape_for("responses", (0, 171, 0))
    assert shape is not None
    endpoint = codex_endpoint("http://127.0.0.1:1")
    from notes_cli.doctor.client_shape import variants

    by_label = {v.label: v for v in variants(shape)}
    _, body = shaped_request(shape, endpoint, "hi", by_label["without tools"])
    assert "tools" not in body and "tool_choice" not in body
    _, body = shaped_request(shape, endpoint, "hi", by_label["without namespace tools"])
    assert {t.get("type") for t in body["tools"]} == {"function", "web_search"}
    sent, _ = shaped_request(shape, endpoint, "hi", by_label["without the client's headers"])
    assert "originator" not in sent.headers


@pytest.mark.parametrize(("minimal", "ok"), [(False, False), (True, True)])
def test_smoke_fails_like_codex_on_the_strict_gateway(
    cli, isolated_home: Path, monkeypatch, minimal: bool, ok: bool
) -> None:
    monkeypatch.setenv("PDNOTES_CODEX_BIN", str(isolated_home / "no-codex"))
    monkeypatch.setenv("K", "k")
    with client_shapes.recording_server(function_tools_only) as (url, _):
        args = ["smoke", "--client", "codex", "--base-url", f"{url}/v1", "--model", MODEL]
        args += ["--key-env", "K", "-n", "1", "--json"] + (["--minimal"] if minimal else [])
        result = cli(*args)

    doc = result.json()
    assert doc["verdict"]["ok"] is ok, doc
    if not ok:
        assert "namespace" in str(doc["runs"])


@pytest.mark.parametrize(("minimal", "finding"), [(False, True), (True, False)])
def test_doctor_cli_probes_with_the_real_shape_unless_minimal(
    cli, isolated_home: Path, monkeypatch, minimal: bool, finding: bool
) -> None:
    monkeypatch.setenv("PDNOTES_CODEX_BIN", str(isolated_home / "no-codex"))
    monkeypatch.setenv("K", "k")
    with client_shapes.recording_server(function_tools_only) as (url, _):
        config = isolated_home / ".codex" / "config.toml"
        config.parent.mkdir(parents=True, exist_ok=True)
        config.write_text(
            f'model = "{MODEL}"\nmodel_provider = "gw"\n[model_providers.gw]\nname = "GW"\n'
            f'base_url = "{url}/v1"\nenv_key = "K"\n',
            encoding="utf-8",
        )
        args = ["doctor", "--client", "codex", "--json"] + (["--minimal"] if minimal else [])
        doc = cli(*args).json()

    ids = {f["id"] for f in doc["findings"]}
    assert ("request-shape-rejected" in ids) is finding, doc["findings"]
    assert doc["ok"] is not finding


def test_the_shape_follows_the_installed_claude_version(tmp_path: Path, monkeypatch) -> None:
    from notes_cli.clients import registry

    client = registry.get("claude")
    assert client is not None
    fake = tmp_path / "claude"
    fake.write_text("#!/bin/sh\necho '2.1.197 (Claude Code)'\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PDNOTES_CLAUDE_BIN", str(fake))

    assert client.installed_version() == (2, 1, 197)
    old = shape_for("anthropic", client.installed_version())
    new = shape_for("anthropic", (2, 1, 332))
    assert old is not None and old.version == "2.1.197"
    assert new is not None and new.version == "2.1.332"
    assert {t["name"] for t in old.body["tools"]} != {t["name"] for t in new.body["tools"]}


@pytest.mark.parametrize("betas_off", [False, True])
def test_doctor_clears_the_beta_finding_once_its_fix_is_set(
    cli, isolated_home: Path, betas_off: bool
) -> None:
    """The fix `request-shape-rejected` names for refused betas, set in settings.json, is what
    doctor's probe then sends: the finding goes away, as Claude Code's turns start working."""

    def unknown_betas(headers: dict[str, str]) -> str | None:
        return (
            "Unexpected value(s) for the `anthropic-beta` header"
            if "anthropic-beta" in headers
            else None
        )

    with client_shapes.recording_server(reject_headers=unknown_betas) as (url, requests):
        env = {"ANTHROPIC_BASE_URL": url, "ANTHROPIC_AUTH_TOKEN": "k", "ANTHROPIC_MODEL": MODEL}
        if betas_off:
            env["CLAUDE_CODE_DISABLE_EXPERIMENTAL_BETAS"] = "1"
        settings = isolated_home / ".claude" / "settings.json"
        settings.parent.mkdir(parents=True, exist_ok=True)
        settings.write_text(json.dumps({"env": env}), encoding="utf-8")
        doc = cli("doctor", "--client", "claude", "--json").json()

    ids = {f["id"] for f in doc["findings"]}
    assert ("request-shape-rejected" in ids) is not betas_off, doc["findings"]
    turns = [r for r in requests if "/messages" in r["path"]]
    assert turns and all(("anthropic-beta" in r["headers"]) is not betas_off for r in turns[:1])
