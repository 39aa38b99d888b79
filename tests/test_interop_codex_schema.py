"""The schema table of test_doctor_codex_schema.py through the real Codex: every file doctor
calls unloadable, `codex app-server --print-startup-config` refuses to load, and every file it
accepts, Codex loads. So the schema data cannot drift from the release it names."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from interop_support import client_binary, run_client
from test_doctor_codex_schema import ACCEPTED, GOOD, REFUSED

pytestmark = pytest.mark.interop


def codex_loads(home: Path, text: str) -> tuple[bool, str]:
    """Whether the real Codex loads `text` as $CODEX_HOME/config.toml, and what it said."""
    codex = client_binary("codex")
    codex_home = home / ".codex"
    codex_home.mkdir(parents=True, exist_ok=True)
    (codex_home / "config.toml").write_text(text, encoding="utf-8")
    run = run_client(
        [str(codex), "app-server", "--print-startup-config"],
        env={"HOME": str(home), "CODEX_HOME": str(codex_home)},
        cwd=home,
    )
    first = next((line for line in run.stdout.splitlines() if line.startswith("{")), "{}")
    return "error" not in json.loads(first), first


@pytest.mark.parametrize(("text", "finding_id"), REFUSED)
def test_codex_refuses_what_doctor_calls_unloadable(
    isolated_home: Path, text: str, finding_id: str
) -> None:
    loads, said = codex_loads(isolated_home, text)
    assert not loads, f"Codex loaded a file doctor reports as {finding_id}: {said}"


@pytest.mark.parametrize("text", [*ACCEPTED, GOOD.replace("model_provider =", "model_provder =")])
def test_codex_loads_what_doctor_accepts(isolated_home: Path, text: str) -> None:
    loads, said = codex_loads(isolated_home, text)
    assert loads, said


@pytest.mark.parametrize("trusted", [True, False])
def test_codex_reads_the_project_layer_exactly_when_doctor_does(
    cli, isolated_home: Path, monkeypatch, trusted: bool
) -> None:
    """A broken `.codex/config.toml` in the project: Codex refuses to start from a subfolder
    iff the project is trusted, and doctor reports it there iff so."""
    codex = client_binary("codex")
    monkeypatch.setenv("PDNOTES_CODEX_BIN", str(isolated_home / "no-codex-here"))
    root = isolated_home.parent / "proj"
    (root / "sub").mkdir(parents=True)
    # A real repository: Codex 0.171.0 does not take an empty `.git` folder as a project root.
    subprocess.run(["git", "init", "-q", str(root)], check=True, timeout=30)
    (root / ".codex").mkdir()
    (root / ".codex" / "config.toml").write_text("model = 3\n", encoding="utf-8")
    trust = f'[projects."{root}"]\ntrust_level = "trusted"\n' if trusted else ""
    codex_home = isolated_home / ".codex"
    codex_home.mkdir(parents=True, exist_ok=True)
    (codex_home / "config.toml").write_text(GOOD + trust, encoding="utf-8")

    run = run_client(
        [str(codex), "app-server", "--print-startup-config"],
        env={"HOME": str(isolated_home), "CODEX_HOME": str(codex_home)},
        cwd=root / "sub",
    )
    doc = cli(
        "doctor", "--offline", "--client", "codex", "--json", "--project-dir", str(root / "sub")
    ).json()

    codex_refused = '"error"' in run.stdout
    doctor_refused = any(
        f["id"] == "config-type-invalid" and f["file"] == str(root / ".codex" / "config.toml")
        for f in doc["findings"]
    )
    assert codex_refused is trusted, run.stdout
    assert doctor_refused is trusted, doc["findings"]
