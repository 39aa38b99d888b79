"""Record, or check, the Codex data pdnotes ships against the real Codex binary.

    PDNOTES_INTEROP_BIN=.interop/node_modules/.bin python scripts/codex_data.py check
    PDNOTES_INTEROP_BIN=.interop/node_modules/.bin python scripts/codex_data.py record

Two files, both named by the Codex release they describe:
- templates/clients/codex/config/<version>.json (doctor's schema): `check` compares its
  catalogued_models with the binary's bundled catalog (`codex debug models --bundled`) and its
  fallback_context_window with the window of a model-catalog entry the binary fills in by
  default; the per-key checks (every typed key, enum and retired value through
  `codex app-server --print-startup-config`) are tests/test_interop_codex_schema.py's.
- templates/clients/codex/catalog/<version>.json (the model catalog `config codex
  --model-catalog` writes): `record` takes the instructions the binary sends for a model its
  catalog lacks (its fallback metadata) from one real `codex exec` turn against a loopback
  recorder; `check` records them again and compares, and has the binary parse an entry built
  from the data (`codex debug models` with `model_catalog_json`).

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
    from notes_cli.clients import codex_catalog

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
        entry = codex_catalog.model_entry(data, "probe-model", None, None)
        catalog.write_text(json.dumps({"models": [entry]}), encoding="utf-8")
        listed = _debug_models(codex, "-c", f'model_catalog_json="{catalog}"', home=home)
        parsed = {m["slug"]: m for m in listed["models"]}
        if set(parsed) != {"probe-model"}:
            problems.append(f"Codex read the catalog as {sorted(parsed)}, not ['probe-model']")
        elif parsed["probe-model"].get("context_window") != schema["fallback_context_window"]:
            problems.append(
                f"an entry without a window gets {parsed['probe-model'].get('context_window')} "
                f"from Codex, the data says fallback_context_window "
                f"{schema['fallback_context_window']}"
            )
    if fallback_instructions(bin_dir) != data.instructions:
        problems.append(
            f"the instructions Codex {version} sends for an uncatalogued model differ from "
            f"catalog/{data.version}.json's (record them again: scripts/codex_data.py record)"
        )
    return problems


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
