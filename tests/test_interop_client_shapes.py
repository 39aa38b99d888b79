"""The real clients against the recorder of scripts/client_shapes.py: a fresh recording of Codex,
Claude Code and OpenCode has the stored shape of that version (same body keys, same tool types
and names, same header names), so a client upgrade that changes its request fails here until
the shape is re-recorded; and on a gateway that refuses non-function tools the real `codex exec`
fails as doctor predicts, and works with the setting doctor's fix names."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from interop_support import client_binary

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "scripts"))
import client_shapes  # noqa: E402

from notes_cli.clients import registry  # noqa: E402
from notes_cli.clients.endpoint import Endpoint  # noqa: E402
from notes_cli.doctor.client_shape import shape_for  # noqa: E402
from notes_cli.doctor.live import probe_endpoint  # noqa: E402
from notes_cli.doctor.version import parse_version  # noqa: E402

pytestmark = pytest.mark.interop


def stored(client: str, version: str) -> dict[str, Any]:
    """The shape kept for `client` at `version`, in its folder (as scripts/client_shapes.py
    writes it)."""
    plugin = registry.get(client)
    assert plugin is not None, client
    path = plugin.shapes_dir() / f"{version}.json"
    if not path.is_file():
        pytest.fail(
            f"no recorded request shape for {client} {version}: run "
            f"`python scripts/client_shapes.py {client}` and commit {path.name}"
        )
    return json.loads(path.read_text("utf-8"))


def tools_of(body: dict[str, Any]) -> list[tuple[str, str]]:
    return [
        (str(t.get("type") or "custom"), str(t.get("name") or t.get("function", {}).get("name")))
        for t in body["tools"]
    ]


@pytest.mark.parametrize("client", ["codex", "claude", "opencode"])
def test_a_fresh_recording_has_the_stored_shape(client: str) -> None:
    binary = client_binary(client)
    version, request = client_shapes.record(client, binary.parent)
    fresh = client_shapes.sanitise(client, version, request)
    kept = stored(client, version)

    assert sorted(fresh["body"]) == sorted(kept["body"])
    assert tools_of(fresh["body"]) == tools_of(kept["body"])
    assert sorted(fresh["headers"]) == sorted(kept["headers"])
    assert fresh["path"] == kept["path"]


_PROTOCOL = {"codex": "responses", "claude": "anthropic", "opencode": "chat"}


@pytest.mark.parametrize("client", ["codex", "claude", "opencode"])
def test_the_probe_sends_what_the_real_client_sends(client: str) -> None:
    binary = client_binary(client)
    version, request = client_shapes.record(client, binary.parent)
    protocol = _PROTOCOL[client]
    shape = shape_for(protocol, parse_version(version), client=client)
    assert shape is not None
    with client_shapes.recording_server() as (url, requests):
        base = url if client == "claude" else f"{url}/v1"
        endpoint = Endpoint(client, base, protocol, model=client_shapes.MODEL, key="k")
        findings, _ = probe_endpoint(endpoint, timeout=10, shape=shape)
    assert findings == []
    probe = next(r for r in requests if isinstance(r["body"], dict) and r["body"].get("tools"))

    budget = {"max_output_tokens"} if client == "codex" else set()  # doctor's cap, on purpose
    assert set(probe["body"]) == set(request["body"]) | budget
    assert tools_of(probe["body"]) == tools_of(request["body"])
    real_headers = set(request["headers"]) - client_shapes.DROP_HEADERS
    assert real_headers <= set(probe["headers"]) | {"accept-encoding"}


def test_real_codex_fails_on_a_strict_gateway_as_doctor_predicts() -> None:
    codex = client_binary("codex")

    def function_tools_only(body: dict[str, Any]) -> str | None:
        for tool in body.get("tools") or []:
            if tool.get("type") != "function":
                return f"Invalid value: '{tool.get('type')}'. Supported values are: 'function'."
        return None

    with client_shapes.recording_server(function_tools_only) as (url, _):
        findings, _ = probe_endpoint(
            Endpoint("codex", f"{url}/v1", "responses", model=client_shapes.MODEL, key="k"),
            timeout=10,
            shape=shape_for("responses", (0, 171, 0)),
        )
        failed = client_shapes.run_client("codex", codex.parent, url)
        fixed = client_shapes.run_client(
            "codex",
            codex.parent,
            url,
            ("-c", "features.multi_agent=false", "-c", 'web_search="disabled"'),
        )

    assert [f.id for f in findings] == ["request-shape-rejected"]
    assert "namespace" in findings[0].message
    assert failed.returncode != 0
    assert "namespace" in failed.stdout + failed.stderr
    assert fixed.returncode == 0, fixed.stderr
    assert "ok" in fixed.stdout.lower()
