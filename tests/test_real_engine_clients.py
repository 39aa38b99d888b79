"""What pdnotes tells the clients about a real llama.cpp server (issue 36, "On a real engine"):
the server of tests/real_engine.py, `-c 4096`, one slot, Gemma 3 270M, a base model that never
stops by itself. The window a client is configured with is the one the server serves, not the
one the model was trained on; doctor and smoke agree on a model that does not stop and say so."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import httpx
import pytest
from real_engine import MODEL_ID, LlamaServer, pdnotes

pytestmark = [pytest.mark.real_engine, pytest.mark.timeout(600)]


def served_window(llama: LlamaServer) -> int:
    """The window the server serves a request in, by its own /props and /v1/models."""
    props = httpx.get(llama.url("/props"), timeout=10).json()
    window = props["default_generation_settings"]["n_ctx"]
    (entry,) = httpx.get(llama.url("/v1/models"), timeout=10).json()["data"]
    # The setting the issue is about: the trained window is 8x the served one.
    assert entry["meta"]["n_ctx"] == window < entry["meta"]["n_ctx_train"], entry["meta"]
    return int(window)


def test_codex_and_opencode_are_configured_with_the_served_window(
    llama: LlamaServer, isolated_home: Path
) -> None:
    window = served_window(llama)
    assert window == 4096  # `-c 4096`, one slot
    base = ("--base-url", llama.base_url, "--model", MODEL_ID, "--context-window", "gateway")
    done = pdnotes("config", "codex", "--provider", "llama", *base)
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"context window {window} (meta.n_ctx)" in done.stderr + done.stdout
    codex = tomllib.loads((isolated_home / ".codex" / "config.toml").read_text())
    assert codex["model_context_window"] == window

    done = pdnotes("config", "opencode", "--provider", "llama", *base)
    assert done.returncode == 0, done.stdout + done.stderr
    opencode = json.loads((isolated_home / ".config" / "opencode" / "opencode.json").read_text())
    limit = opencode["provider"]["llama"]["models"][MODEL_ID]["limit"]
    assert limit["context"] == window and 0 < limit["output"] <= window, limit


def configure_codex(home: Path, base_url: str) -> None:
    config = home / ".codex" / "config.toml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(  # llama-server speaks the Responses API itself
        f'model = "{MODEL_ID}"\nmodel_provider = "local"\n\n[model_providers.local]\n'
        f'name = "llama.cpp"\nbase_url = "{base_url}"\nwire_api = "responses"\n'
    )


def test_doctor_and_smoke_agree_the_base_model_does_not_stop(
    llama: LlamaServer, isolated_home: Path
) -> None:
    """The same server, the same client (Codex's Responses API, which llama-server answers with
    `completed` even for an answer cut at max_output_tokens): doctor and smoke both fail it,
    with the same sentence and the same fix."""
    configure_codex(isolated_home, llama.base_url)
    done = pdnotes("doctor", "--client", "codex", "--json", "--timeout", "150")
    doc = json.loads(done.stdout)
    found = {f["id"]: f for f in doc["findings"]}
    stream = next(p for p in doc["probes"] if p["name"] == "stream")
    assert stream["status"] == 200, stream  # the turn returned: an answer, not an error
    cut = found["model-did-not-stop"]
    assert cut["severity"] == "error" and done.returncode == 1, doc
    assert cut["message"].startswith("the model did not stop by itself: ")
    assert "256-token limit" in cut["message"] and stream["ok"] is False, (cut, stream)

    done = pdnotes(
        *("smoke", "--client", "codex", "-n", "1", "--max-tokens", "24"),
        *("--timeout", "150", "--json"),
    )
    report = json.loads(done.stdout)
    (run,) = report["runs"]
    assert run["status"] == 200 and done.returncode == 1 and report["ok"] is False, run
    assert run["problem"].startswith("the model did not stop by itself: "), run
    assert "24-token limit" in run["problem"]
    assert run["fix"] == cut["fix"]  # one verdict, one fix: Codex has no cap of its own
    assert any("did not stop by itself" in r for r in report["verdict"]["reasons"])
