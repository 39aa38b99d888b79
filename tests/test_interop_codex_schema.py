"""The schema table of test_doctor_codex_schema.py through the real Codex (with the cases the
schema data states: every enum value it lists, every retired value): every file doctor
calls unloadable, `codex app-server --print-startup-config` refuses to load, and every file it
accepts, Codex loads; and its catalogued models are the binary's. So the schema data cannot drift
from the release it names."""

from __future__ import annotations

import json
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from interop_support import client_binary, run_client
from test_doctor_codex_schema import ACCEPTED, GOOD, REFUSED

pytestmark = pytest.mark.interop
# Codex runs at a time in the every-key test: a run is mostly Node and Codex starting up and
# waiting on each other, so 4 at once take about a third of the time of one by one on 2 cores.
PARALLEL_RUNS = 4


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


def _wrong_value(kind: str) -> str:
    return {"string": "[[1]]", "string|array": "1"}.get(kind, '"zz"')


def _every_typed_key() -> list[tuple[str, str]]:
    """(config text with one wrong-typed value, where) for every key the schema data types."""
    from notes_cli.clients.codex.schema import schema_for

    schema = schema_for((0, 171, 0))
    cases = [(f"{k} = {_wrong_value(t)}\n", k) for k, t in schema.top_level.items()]
    provider = '[model_providers.x]\nname = "x"\n'
    cases += [
        (provider.replace('name = "x"\n', "") + f"name = {_wrong_value(t)}\n", f"provider.{k}")
        if k == "name"
        else (provider + f"{k} = {_wrong_value(t)}\n", f"provider.{k}")
        for k, t in schema.model_provider.items()
    ]
    for table, spec in schema.tables.items():
        for key, kind in spec["fields"].items():
            if table == "mcp_servers.*":
                head = "[mcp_servers.x]\n" + (
                    "" if key in ("command", "url") else 'command = "t"\n'
                )
            elif table == "projects.*":
                head = '[projects."/tmp/x"]\n'
            else:
                head = f"[{table}]\n"
            cases.append((head + f"{key} = {_wrong_value(kind)}\n", f"{table}.{key}"))
    return cases


def test_every_key_the_schema_data_types_is_one_codex_checks(isolated_home: Path) -> None:
    """A wrong-typed value of each key the data lists makes the real Codex refuse the file, so
    the data names no key the release does not have (one run per key, ~0.2 s each,
    PARALLEL_RUNS at a time)."""
    client_binary("codex")
    cases = _every_typed_key()

    def loads(numbered: tuple[int, tuple[str, str]]) -> bool:
        number, (text, _) = numbered
        return codex_loads(isolated_home / f"key-{number}", text)[0]  # a home of its own

    with ThreadPoolExecutor(max_workers=PARALLEL_RUNS) as pool:
        loaded = list(pool.map(loads, enumerate(cases)))
    unknown = [where for (_, where), ok in zip(cases, loaded, strict=True) if ok]
    assert unknown == [], f"keys the data types but Codex 0.171.0 ignores: {unknown}"


def test_the_catalogued_models_are_the_binarys_own(isolated_home: Path) -> None:
    """doctor's `codex-model-unknown` trusts this list: a model in it needs no window."""
    from notes_cli.clients.codex.schema import schema_for

    codex = client_binary("codex")
    codex_home = isolated_home / ".codex"
    codex_home.mkdir(parents=True, exist_ok=True)
    run = run_client(
        [str(codex), "debug", "models"],
        env={"HOME": str(isolated_home), "CODEX_HOME": str(codex_home)},
        cwd=isolated_home,
    )
    first = next(line for line in run.stdout.splitlines() if line.startswith("{"))
    slugs = {model["slug"] for model in json.loads(first)["models"]}
    assert slugs == set(schema_for((0, 171, 0)).models)
