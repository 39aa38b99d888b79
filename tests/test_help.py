"""Every command and option explains itself, and shell completion is what Typer provides."""

from __future__ import annotations

import os
import re
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


# -- the help as a user reads it in an 80-column terminal ------------------------------------------


def _help_paths() -> list[tuple[str, ...]]:
    return [path for path, _ in _commands(typer.main.get_command(app))]


def _help(cli: Any, monkeypatch: Any, *path: str) -> str:
    monkeypatch.setenv("COLUMNS", "80")
    monkeypatch.setenv("TERM", "dumb")
    result = cli(*path, "--help")
    assert result.exit_code == 0, result.stderr
    return str(result.stdout)


def test_no_help_shows_a_type_after_a_flag_or_runs_past_80_columns(cli, monkeypatch) -> None:
    problems = []
    for path in _help_paths():
        shown = _help(cli, monkeypatch, *path)
        name = " ".join(("pdnotes", *path))
        for line in shown.splitlines():
            if len(line) > 80:
                problems.append(f"{name}: {len(line)} columns: {line!r}")
            if re.search(r"(^|\s)(-\w|--[\w-]+)[ ,=]+<", line):  # --json <bool>, --source <list…>
                problems.append(f"{name}: a type after a flag: {line.strip()!r}")
    assert problems == []


def test_root_help_wraps_whole_sentences_at_80_columns(cli, monkeypatch) -> None:
    lines = _help(cli, monkeypatch).splitlines()
    commands = lines[lines.index("Commands:") + 1 :]
    # Every command's first sentence, in full: no "..." cut, no line broken early.
    listed: dict[str, str] = {}
    for line in commands:
        if not line.strip():
            continue
        name, text = line[:10].strip(), line[10:].strip()
        if name:
            listed[name] = text
        else:
            last = next(reversed(listed))
            listed[last] += " " + text
    assert set(listed) >= {"config", "doctor", "smoke", "notes", "engine", "bench", "demo"}
    assert all(not text.endswith("...") and text.endswith(".") for text in listed.values())
    for line, following in zip(lines, lines[1:], strict=False):
        indent = len(line) - len(line.lstrip())
        next_indent = len(following) - len(following.lstrip())
        same_block = line.strip() and following.strip() and next_indent == indent
        if same_block and not line.endswith(":") and not following.strip().startswith("-"):
            next_word = following.split()[0]
            assert len(line) + 1 + len(next_word) > 80, f"broken early: {line!r} / {following!r}"


def test_help_prints_brackets_as_written(cli, monkeypatch) -> None:
    text = " ".join(_help(cli, monkeypatch, "config", "codex").split())  # wherever it wraps
    assert "the [model_providers.<id>] table" in text


# What each client's own files look like: a `config <client>` option's help naming another
# client's files would send the user to the wrong file.
_CLIENT_FILES = {
    "codex": (".codex", "config.toml", "CODEX_"),
    "claude": (".claude", "settings.local.json", "CLAUDE_"),
    "qwen": (".qwen", "QWEN_"),
    "gemini": (".gemini", "GEMINI_"),
    "opencode": ("opencode.json", "OPENCODE_"),
}


def test_each_clients_options_name_its_own_files_and_no_other_clients() -> None:
    config = typer.main.get_command(app).commands["config"]  # type: ignore[attr-defined]
    wrong = []
    for client in _CLIENT_FILES:
        for param in config.commands[client].params:
            text = getattr(param, "help", "") or ""
            wrong += [
                f"config {client} {param.opts[0]}: {mark}"
                for other, marks in _CLIENT_FILES.items()
                if other != client
                for mark in marks
                if mark in text
            ]
        if client != "codex":  # codex has no project layer to write
            [project] = [p for p in config.commands[client].params if "--project-dir" in p.opts]
            assert _CLIENT_FILES[client][0] in project.help, (client, project.help)
    assert wrong == []


def test_the_commands_reading_every_client_name_every_clients_project_files() -> None:
    root = typer.main.get_command(app)
    for command in (root.commands["doctor"], root.commands["config"].commands["show"]):  # type: ignore[attr-defined]
        [project] = [p for p in command.params if "--project-dir" in p.opts]
        assert all(files[0] in project.help for files in _CLIENT_FILES.values()), project.help
