"""Record, or check, the Codex data pdnotes ships against the real Codex binary.

    PDNOTES_INTEROP_BIN=.interop/node_modules/.bin python scripts/codex_data.py check
    PDNOTES_INTEROP_BIN=.interop/node_modules/.bin python scripts/codex_data.py record

Two files, both named by the Codex release they describe:
- templates/clients/codex/config/<version>.json (doctor's schema): `check` compares its
  catalogued_models with the binary's bundled catalog (`codex debug models --bundled`), and has
  the binary load (`codex app-server --print-startup-config`) a config.toml with each enum
  value the data lists (each must load) and each retired value (each must be refused). The
  per-key type checks are tests/test_interop_codex_schema.py's (one run per key).
- templates/clients/codex/catalog/<version>.json (the model catalog `config codex
  --model-catalog` writes): `record` takes the instructions the binary sends for a model its
  catalog lacks (its fallback metadata) from one real `codex exec` turn against a loopback
  recorder; `check` records them again and compares, and has the binary parse an entry built
  from the data (`codex debug models` with `model_catalog_json` lists it, with its window).

Exit 0 when everything matches, 1 with the differences otherwise. Every run is bounded and in a
throwaway HOME (scripts/client_shapes.py's runner).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import client_shapes  # noqa: E402  (the bounded client runner and the loopback recorder)

ROOT = Path(__file__).resolve().parent.parent
CODEX_DATA = ROOT / "templates" / "clients" / "codex"


def _bin_dir() -> Path:
    return Path(os.environ.get("PDNOTES_INTEROP_BIN") or ROOT / ".interop/node_modules/.bin")


def _debug_models(codex: Path, *args: str, home: Path) -> dict[str, Any]:
    """What `codex debug models ARGS` prints, read as JSON (SystemExit with its stderr if not)."""
    (home / ".codex").mkdir(exist_ok=True)
    env = {"HOME": str(home), "CODEX_HOME": str(home / ".codex")}
    run = client_shapes._run([str(codex), "debug", "models", *args], env, home)
    first = next((line for line in run.stdout.splitlines() if line.startswith("{")), None)
    if run.returncode != 0 or first is None:
        raise SystemExit(f"codex debug models {' '.join(args)} failed: {run.stderr[-1500:]}")
    loaded: dict[str, Any] = json.loads(first)
    return loaded


def fallback_instructions(bin_dir: Path) -> str:
    """The instructions Codex sends for a model its catalog lacks: the first developer message
    of a real turn for client_shapes.MODEL."""
    _, request = client_shapes.record("codex", bin_dir)
    first = request["body"]["input"][0]
    if first.get("role") != "developer":
        raise SystemExit(f"the turn's first input item is not a developer message: {first}")
    text: str = first["content"][0]["text"]
    return text


def check(bin_dir: Path) -> list[str]:
    """The differences between the shipped data and the binary in `bin_dir` (empty: none)."""
    from notes_cli.clients.codex import catalog as codex_catalog

    codex = bin_dir / "codex"
    version = client_shapes.client_version(codex)
    problems: list[str] = []
    schema = json.loads((CODEX_DATA / "config" / f"{version}.json").read_text("utf-8"))
    data = codex_catalog.catalog_data(tuple(map(int, version.split("."))))  # type: ignore[arg-type]
    if data.version != version:
        problems.append(f"no catalog data for Codex {version} (newest: {data.version})")
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp)
        bundled = {m["slug"] for m in _debug_models(codex, "--bundled", home=home)["models"]}
        if bundled != set(schema["catalogued_models"]):
            problems.append(
                f"catalogued_models differ from the bundled catalog: only in the data "
                f"{sorted(set(schema['catalogued_models']) - bundled)}, only in the binary "
                f"{sorted(bundled - set(schema['catalogued_models']))}"
            )
        catalog = home / "catalog.json"
        entries = [
            codex_catalog.model_entry(data, f"probe-{n}", window, reasoning)
            for n, (window, reasoning) in enumerate([(None, None), (4096, True), (8192, False)])
        ]
        catalog.write_text(json.dumps({"models": entries}), encoding="utf-8")
        listed = _debug_models(codex, "-c", f'model_catalog_json="{catalog}"', home=home)
        read = [(m["slug"], m.get("context_window")) for m in listed["models"]]
        wrote = [(e["slug"], e["context_window"]) for e in entries]
        if read != wrote:
            problems.append(f"Codex read the catalog as {read}, pdnotes wrote {wrote}")
    problems += _check_values(codex, schema)
    if fallback_instructions(bin_dir) != data.instructions:
        problems.append(
            f"the instructions Codex {version} sends for an uncatalogued model differ from "
            f"catalog/{data.version}.json's (record them again: scripts/codex_data.py record)"
        )
    return problems


def _loads(codex: Path, text: str) -> bool:
    """Whether `codex app-server --print-startup-config` loads `text` as config.toml."""
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp)
        (home / ".codex").mkdir()
        (home / ".codex" / "config.toml").write_text(text, encoding="utf-8")
        env = {"HOME": str(home), "CODEX_HOME": str(home / ".codex")}
        run = client_shapes._run([str(codex), "app-server", "--print-startup-config"], env, home)
    first = next((line for line in run.stdout.splitlines() if line.startswith("{")), "{}")
    return "error" not in json.loads(first)


def _check_values(codex: Path, schema: dict[str, Any]) -> list[str]:
    """Every enum value the schema data lists loads; every retired value is refused."""
    from concurrent.futures import ThreadPoolExecutor

    cases: list[tuple[str, bool]] = []  # (config text, should load)
    typed = [(None, k, t) for k, t in schema["top_level"].items()]
    typed += [
        (table, k, t)
        for table, spec in schema["tables"].items()
        if "*" not in table
        for k, t in spec["fields"].items()
    ]
    for table, key, kind in typed:
        name = "ApprovalPolicy" if kind == "approval_policy" else kind.removeprefix("enum:")
        if kind != "approval_policy" and not kind.startswith("enum:"):
            continue
        head = f"[{table}]\n" if table else ""
        cases += [(f"{head}{key} = {json.dumps(v)}\n", True) for v in schema["enums"][name]]
    for key, values in schema.get("retired_values", {}).items():
        cases += [(f"{key} = {json.dumps(v)}\n", False) for v in values]
    with ThreadPoolExecutor(max_workers=4) as pool:
        loaded = list(pool.map(lambda case: _loads(codex, case[0]), cases))
    said = {True: "Codex refused a value the data lists", False: "Codex loaded a retired value"}
    return [
        f"{said[should]}: {text.strip()!r}"
        for (text, should), did in zip(cases, loaded, strict=True)
        if did != should
    ]


def record(bin_dir: Path) -> Path:
    """Write catalog/<version>.json's instructions from the binary in `bin_dir`."""
    version = client_shapes.client_version(bin_dir / "codex")
    path = CODEX_DATA / "catalog" / f"{version}.json"
    data = json.loads(path.read_text("utf-8")) if path.exists() else {}
    data["base_instructions"] = fallback_instructions(bin_dir)
    path.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("action", choices=("check", "record"))
    args = parser.parse_args(argv)
    if args.action == "record":
        print(f"wrote {record(_bin_dir())}")
        return 0
    problems = check(_bin_dir())
    for problem in problems:
        print(problem, file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
