"""docs/connect.md shows real runs: replaying its `$ pdnotes …` lines in order, on the
article's config, gives the output the page shows (paths and backup names aside)."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

DOCS = Path(__file__).resolve().parent.parent / "docs" / "connect.md"
FIXTURES = Path(__file__).parent / "fixtures" / "config"
_VARIABLE = re.compile(r"(~/\.pdnotes/backups/\w+/)\S+|\s+$")


def documented_runs() -> list[tuple[list[str], str]]:
    """(arguments, the output printed under them) for each `$ pdnotes` line of the page."""
    runs: list[tuple[list[str], list[str]]] = []
    output: list[str] | None = None  # the output being collected, inside a code block
    for line in DOCS.read_text(encoding="utf-8").splitlines():
        if line.startswith("```"):
            output = None
        elif line.startswith("$ "):
            output = []
            runs.append((shlex.split(line[2:]), output))
        elif output is not None:
            output.append(line)
    return [(args[1:], "\n".join(out)) for args, out in runs if args[:1] == ["pdnotes"]]


def normalise(text: str, home: Path) -> list[str]:
    text = text.replace(str(home), "~")
    return [_VARIABLE.sub(r"\1", line) for line in text.splitlines() if line.strip()]


def test_every_documented_run_prints_what_the_page_shows(cli, isolated_home, monkeypatch):
    monkeypatch.setenv("PDNOTES_CODEX_BIN", str(isolated_home / "no-codex"))
    config = isolated_home / ".codex" / "config.toml"
    config.parent.mkdir()
    config.write_text((FIXTURES / "article.toml").read_text())
    runs = documented_runs()
    assert len(runs) >= 6

    for args, shown in runs:
        if args[:2] == ["config", "claude"]:  # the page exports the key before this step
            monkeypatch.setenv("TAOTOKEN_API_KEY", "sk-demo0000000000abcd")
        if args[:2] == ["config", "qwen"]:  # likewise for Qwen Code's provider variable
            monkeypatch.setenv("DEEPSEEK_API_KEY", "sk-demo0000000000abcd")
        result = cli(*args)
        assert "Traceback" not in result.stderr, args
        expected = normalise(shown, isolated_home)
        printed = normalise(result.stdout, isolated_home)
        assert printed[: len(expected)] == expected, " ".join(args)
