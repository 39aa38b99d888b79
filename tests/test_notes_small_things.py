"""The small things a newcomer hit (issue 29, point 5): `notes sources` says honestly that a
page was kept whole without the `reading` extra, `notes --help` names every notes command, a
missing source or note says how to fix it, and `notes cards -o` says `.apkg` needs `anki`."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import CliResult
from test_notes_sources import PAGE


def test_sources_without_the_reading_extra_says_the_page_was_kept_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cli: Callable[..., CliResult]
) -> None:
    page = tmp_path / "page.html"
    page.write_text(PAGE, encoding="utf-8")
    with_extra = cli("notes", "sources", str(page), "--json").json()["sources"][0]
    assert with_extra["whole_page"] is False and "boilerplate" in with_extra["left_out"]
    for module in ("trafilatura", "lxml", "lxml.html"):
        monkeypatch.setitem(sys.modules, module, None)  # import fails as if not installed
    without = cli("notes", "sources", str(page), "--json").json()["sources"][0]
    assert without["whole_page"] is True and without["dropped"] is None
    assert without["left_out"] == "nothing: the whole page is kept, navigation and footer included"
    shown = cli("notes", "sources", str(page))
    said = " ".join((shown.stdout + shown.stderr).split())
    assert "whole page is kept" in said and "pdnotes[reading]" in said


def test_notes_help_names_every_notes_command(cli: Callable[..., CliResult]) -> None:
    root = " ".join(cli("--help").stdout.split())
    summary = root[root.index("notes Turn") : root.index("engine The bundled")]
    for command in ("kits", "sources", "generate", "check", "cards", "compare"):
        assert command in summary, command


@pytest.mark.parametrize(
    "args",
    [
        ("notes", "sources", "missing.pdf"),
        ("notes", "generate", "--base-url", "http://127.0.0.1:9/v1", "--model", "m",
         "--source", "missing.pdf"),
        ("notes", "check", "missing.md"),
        ("notes", "cards", "missing.md", "-o", "cards.csv"),
        ("notes", "compare", "missing.md", "missing-too.md"),
    ],
)  # fmt: skip
def test_a_missing_source_or_note_says_how_to_fix_it(
    args: tuple[str, ...], cli: Callable[..., CliResult]
) -> None:
    result = cli(*args)
    assert result.exit_code == 2 and "Traceback" not in result.stderr
    assert "no such" in result.stderr and "missing" in result.stderr
    fix = next(line for line in result.stderr.splitlines() if line.startswith("fix:"))
    assert "check the path" in fix


def test_cards_output_help_says_apkg_needs_the_anki_extra(cli: Callable[..., CliResult]) -> None:
    shown = " ".join(cli("notes", "cards", "--help").stdout.split())
    assert ".apkg Anki deck (needs the `anki` extra: pip install 'pdnotes[anki]')" in shown
