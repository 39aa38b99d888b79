"""The README's examples are real: rerunning each one gives the same output (numbers aside)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _script():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location(
        "readme_examples", ROOT / "scripts/readme_examples.py"
    )
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules["readme_examples"] = module
    spec.loader.exec_module(module)
    return module


def test_readme_examples_match_what_the_commands_print() -> None:
    script = _script()
    readme = script.README.read_text(encoding="utf-8")
    assert script.drift(readme, script.regenerate(readme)) == [], (
        "README.md is out of date: run python scripts/readme_examples.py"
    )


def test_drift_detection_notices_a_changed_word() -> None:
    script = _script()
    old = "<!-- example: pdnotes x -->\n```text\nrun 1: 200 ok 12 ms\n```\n<!-- /example -->\n"
    assert script.drift(old, old.replace("12 ms", "9 ms")) == []
    assert script.drift(old, old.replace("ok", "failed")) == ["pdnotes x"]
