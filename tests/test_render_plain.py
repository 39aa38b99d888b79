"""`render.line` writes exactly what rich would when stdout is not a terminal, without rich."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path

import pytest
from rich.console import Console
from rich.markup import escape as rich_escape

from notes_cli import render

SAMPLES = [
    "[bold]Codex[/]  [dim]/home/u/.codex/config.toml[/]",
    "  [yellow]warning[/] [bold]unknown-key[/]  " + render.escape("[model_providers.gw] bogus"),
    "  probe [green]ok[/] GET " + render.escape("http://h/api?a=[x]") + " → 200 3 ms",
    render.escape("ends with a backslash \\"),
]


@pytest.mark.parametrize("text", ["[model_providers.x]", "a\\", "\\[a]", "[/]", "plain", "c:\\d\\"])
def test_escape_matches_rich(text: str) -> None:
    assert render.escape(text) == rich_escape(text)


@pytest.mark.parametrize("markup", SAMPLES)
def test_plain_line_is_what_rich_prints_without_a_terminal(
    markup: str, capsys: pytest.CaptureFixture[str]
) -> None:
    expected = io.StringIO()
    Console(file=expected, no_color=True, width=100, soft_wrap=True, highlight=False).print(markup)
    render.line(markup)
    assert capsys.readouterr().out == expected.getvalue()


def test_doctor_offline_does_not_import_rich_when_piped(tmp_path) -> None:
    code = (
        "import sys\n"
        "from notes_cli.cli import main\n"
        "try:\n    main(['doctor', '--offline'])\nexcept SystemExit:\n    pass\n"
        "print('rich' in sys.modules, file=sys.stderr)\n"
    )
    env = {
        "HOME": str(tmp_path),
        "PATH": "/usr/bin:/bin",
        "CODEX_HOME": str(tmp_path / "c"),
        "PDNOTES_HOME": str(tmp_path / "p"),
        "CLAUDE_CONFIG_DIR": str(tmp_path / "cl"),
        # this checkout's code, whatever is installed (a stale editable install is not it)
        "PYTHONPATH": str(Path(__file__).resolve().parents[1]),
    }
    run = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, env=env
    )
    assert "config-missing" in run.stdout, run.stderr
    assert run.stderr.strip().splitlines()[-1] == "False"


def _pdnotes_with_closed(redirects: str, *args: str) -> subprocess.CompletedProcess[str]:
    """Run pdnotes with the standard streams `redirects` closes (`>&-`, `2>&-`, `<&-`)."""
    return subprocess.run(
        ["sh", "-c", f'exec "$@" {redirects}', "sh", sys.executable, "-m", "notes_cli", *args],
        capture_output=True, text=True, timeout=60, env=os.environ.copy(),
    )  # fmt: skip


def test_a_closed_stdout_neither_crashes_nor_hides_the_result(isolated_home: Path) -> None:
    """`pdnotes config codex … >&-` wrote the file, then died rendering (exit 1, traceback)."""
    config = isolated_home / ".codex" / "config.toml"

    wrote = _pdnotes_with_closed(">&-", "config", "codex", "--preset", "mock", "--model", "zz")
    as_json = _pdnotes_with_closed(">&- <&-", "config", "codex", "--preset", "mock", "--json")
    refused = _pdnotes_with_closed(">&-", "config", "undo", "--client", "bogus")
    silent = _pdnotes_with_closed(">&- 2>&-", "config", "undo", "--client", "bogus")

    assert (wrote.returncode, wrote.stderr) == (0, ""), wrote.stderr
    assert (as_json.returncode, as_json.stderr) == (0, ""), as_json.stderr
    assert 'model = "pd-mock-1"' in config.read_text() and "schema" not in config.read_text()
    assert refused.returncode == 2 and "error: unknown --client 'bogus'" in refused.stderr
    assert "Traceback" not in refused.stderr
    assert silent.returncode == 2
