"""Every command and option explains itself, and shell completion is what Typer provides."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import typer

from notes_cli.cli import app


def _commands(command: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], Any]]:
    yield path, command
    for name, sub in getattr(command, "commands", {}).items():
        yield from _commands(sub, (*path, name))


def test_every_command_and_option_has_help_text() -> None:
    root = typer.main.get_command(app)
    missing = []
    for path, command in _commands(root):
        if path and not (command.help or "").strip():
            missing.append(" ".join(path))
        for param in command.params:
            if param.param_type_name == "option" and not (getattr(param, "help", "") or ""):
                missing.append(f"{' '.join(path) or 'pdnotes'} {param.opts[0]}")
    assert missing == []


def test_the_design_commands_exist() -> None:
    root = typer.main.get_command(app)
    names = {" ".join(path) for path, _ in _commands(root) if path}
    assert {
        "config codex", "config claude", "config show", "config undo", "doctor", "smoke",
        "notes kits", "notes generate", "notes check", "engine serve", "engine simulate",
        "bench", "demo",
    } <= names  # fmt: skip


def test_python_dash_m_is_the_same_program(cli) -> None:
    ours = cli("--help").stdout
    run = subprocess.run(
        [sys.executable, "-m", "notes_cli", "--help"],
        capture_output=True, text=True, timeout=60, env={**os.environ, "COLUMNS": "100"},
    )  # fmt: skip
    assert run.returncode == 0
    for name in ("config", "doctor", "smoke", "notes", "engine", "bench", "demo"):
        assert name in run.stdout and name in ours


def test_shell_completion_script_is_offered() -> None:
    run = subprocess.run(
        [sys.executable, "-m", "notes_cli", "--show-completion", "bash"],
        capture_output=True, text=True, timeout=60,
        env={**os.environ, "_TYPER_COMPLETE_TEST_DISABLE_SHELL_DETECTION": "1"},
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    assert "complete" in run.stdout and "pdnotes" in run.stdout.lower()
