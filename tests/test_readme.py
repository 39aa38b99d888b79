"""The examples in README.md and docs/ are real: rerunning each one gives the same output
(numbers and timing-dependent lines aside)."""

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


def test_examples_match_what_the_commands_print() -> None:
    script = _script()
    texts = {path: path.read_text(encoding="utf-8") for path in script.pages()}
    assert ROOT / "README.md" in texts and len(texts) > 1, "the docs' examples are checked too"
    updated = script.regenerate_all(texts, workers=script.CHECK_WORKERS)
    problems = script.drift_report(texts, updated)
    # The diff says what changed, so a drift seen once (a flaky run) can be told from a regression.
    assert problems == [], "\n\n".join(problems) + "\nrun: python scripts/readme_examples.py"


def test_drift_detection_notices_a_changed_word() -> None:
    script = _script()
    old = "<!-- example: pdnotes x -->\n```text\nrun 1: 200 ok 12 ms\n```\n<!-- /example -->\n"
    assert script.drift(old, old.replace("12 ms", "9 ms")) == []
    assert script.drift(old, old.replace("ok", "failed")) == ["pdnotes x"]


def test_a_drift_shows_what_changed_and_nothing_that_may_vary() -> None:
    script = _script()
    body = "run 1: 200 ok 12 ms\nrun 2: 200 ok 9 ms\n"
    old = f"<!-- example: pdnotes x -->\n```text\n{body}```\n<!-- /example -->\n"
    new = old.replace("12 ms", "31 ms").replace("2: 200 ok", "2: 200 failed")
    diff = script.drift_diffs(old, new)["pdnotes x"]
    assert diff.splitlines()[2:] == ["@@ -1,2 +1,2 @@", " run 0: 0 ok 0 ms",
                                     "-run 0: 0 ok 0 ms", "+run 0: 0 failed 0 ms"]  # fmt: skip


def test_a_wholly_new_output_is_shown_cut_short() -> None:
    script = _script()
    old = "<!-- example: pdnotes x -->\n```text\nPASS\n```\n<!-- /example -->\n"
    new = old.replace("PASS", "\n".join(f"Traceback line {c}" for c in "abcdefghij" * 10))
    diff = script.drift_diffs(old, new)["pdnotes x"].splitlines()
    assert len(diff) == script.DIFF_MAX_LINES + 1 and diff[-1].endswith("more diff lines")


def test_the_slow_model_warning_of_a_loaded_machine_is_not_drift() -> None:
    """`notes generate` warns when the engine's wall-clock pace is too slow for its budget: under
    CPU load it comes and goes (a loaded full run once failed on it)."""
    script = _script()
    line = "warning: slow model: 3.1 tokens/s (first token after 40 ms); by --timeout 120 s …\n"
    old = f"<!-- example: pdnotes notes generate -->\n```text\nasking m\n{line}answer 1\n```\n"
    old += "<!-- /example -->\n"
    assert script.drift(old, old.replace(line, "")) == []
    assert script.drift(old, old.replace("answer 1", "error 1")) == ["pdnotes notes generate"]


def test_a_line_printed_only_when_timing_allows_is_not_drift() -> None:
    script = _script()
    line = "  the first token came with the headers (within 2 ms): if the server holds its …\n"
    old = f"<!-- example: pdnotes smoke -->\n```text\nPASS\n{line}```\n<!-- /example -->\n"
    assert script.drift(old, old.replace(line, "")) == []
    assert script.drift(old, old.replace("PASS", "FAIL")) == ["pdnotes smoke"]


def test_a_cell_cut_at_another_width_is_not_drift() -> None:
    """A 7-digit tok/s widens smoke's table, and the preview is cut two characters earlier."""
    script = _script()
    row = "   1      200   27     61   3203.3   end_turn   This answer comes …\n"
    old = f"<!-- example: pdnotes smoke -->\n```text\n{row}```\n<!-- /example -->\n"
    wider = old.replace("3203.3", "14301.2").replace("comes …", "comes…")
    assert script.drift(old, wider) == []
    assert script.drift(old, old.replace("This answer", "No answer")) == ["pdnotes smoke"]
    assert script.drift(old, old.replace("end_turn", "max_tokens")) == ["pdnotes smoke"]


def test_a_setup_file_is_shown_as_the_example_ran_with_it() -> None:
    script = _script()
    page = "<!-- setup-file: article -->\n```toml\nstale\n```\n<!-- /setup-file -->\n"
    shown = script._static_parts(page)
    assert script.ARTICLE_CONFIG in shown and "stale" not in shown
    assert script.drift(page, shown) == ["setup file"]
