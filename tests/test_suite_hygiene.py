"""The suite's own rules for property tests, which conftest.py's hypothesis profile cannot
enforce: a test's @settings replaces what it names, so a test that names its suppressed health
checks must name `too_slow` again (a wall-clock check the machine's load decides), and no test
may bring back the example database or random draws (a run's outcome would then depend on what
an earlier run found)."""

from __future__ import annotations

import re
from pathlib import Path

TESTS = Path(__file__).resolve().parent
SUPPRESSED = re.compile(r"suppress_health_check\s*=\s*\[([^\]]*)\]")


def _sources() -> dict[str, str]:
    return {path.name: path.read_text("utf-8") for path in sorted(TESTS.glob("*.py"))}


def test_every_test_that_names_its_suppressed_checks_keeps_too_slow_suppressed() -> None:
    missing = [
        f"{name}: [{found.group(1)}]"
        for name, text in _sources().items()
        for found in SUPPRESSED.finditer(text)
        if "too_slow" not in found.group(1)
    ]
    assert missing == []


def test_no_property_test_brings_back_the_example_database_or_random_draws() -> None:
    own = Path(__file__).name  # settings objects too (FUZZ = settings(...)), not only @settings
    offending = [
        name
        for name, text in _sources().items()
        if name not in {"conftest.py", own}
        and re.search(r"\bsettings\([^)]*\b(database|derandomize)\s*=", text, re.S)
    ]
    assert offending == []
