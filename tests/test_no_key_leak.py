"""No key is ever printed or written unasked: with a sentinel key exported under every name
pdnotes reads, run every config/doctor command (and --help of every command that exists), then
look for the sentinel in all output and in every file under HOME (PDNOTES_HOME included). The
only file allowed to hold it is the one written with --write-token-from-env."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

KEY_VARIABLES = (
    "TAOTOKEN_API_KEY",
    "ANTHROPIC_AUTH_TOKEN",
    "OPENAI_API_KEY",
    "DEEPSEEK_API_KEY",
    "GW_TOKEN",
)


def all_help_invocations() -> list[list[str]]:
    """`--help` for the root and every command and sub-command registered on the app."""
    import typer

    from notes_cli.cli import app

    root = typer.main.get_command(app)
    found: list[list[str]] = [["--help"]]

    def walk(command: Any, prefix: list[str]) -> None:
        # Typer vendors its own click, so look for sub-commands rather than a Group class.
        if hasattr(command, "commands"):
            for name, sub in command.commands.items():
                found.append([*prefix, name, "--help"])
                walk(sub, [*prefix, name])

    walk(root, [])
    return found


@pytest.fixture
def sentinel_everywhere(monkeypatch, sentinel_key: str) -> str:
    for name in KEY_VARIABLES:
        monkeypatch.setenv(name, sentinel_key)
    return sentinel_key


def test_sentinel_key_never_leaks(
    cli, isolated_home: Path, tmp_path: Path, sentinel_everywhere: str
) -> None:
    sentinel = sentinel_everywhere
    project = tmp_path / "proj"
    project.mkdir()
    runs = [
        ["config", "presets"],
        ["config", "codex", "--preset", "taotoken", "--model", "m", "--dry-run"],
        ["config", "codex", "--preset", "taotoken", "--model", "m"],
        ["config", "codex", "--preset", "taotoken", "--model", "m", "--json"],
        ["config", "codex", "--preset", "openai", "--model", "gpt-5.1", "--json"],
        ["config", "codex", "--preset", "deepseek"],
        [
            "config",
            "claude",
            "--preset",
            "taotoken",
            "--model",
            "m",
            "--token-env",
            "TAOTOKEN_API_KEY",
        ],
        ["config", "claude", "--preset", "deepseek", "--json"],
        [
            "config",
            "claude",
            "--preset",
            "mock",
            "--scope",
            "project",
            "--project-dir",
            str(project),
        ],
        ["config", "show"],
        ["config", "show", "--json"],
        ["doctor", "--offline"],
        ["doctor", "--offline", "--json"],
        ["config", "undo", "--client", "codex"],
        ["config", "undo", "--json"],
        # The one explicit request to store the token, then only read-only commands.
        [
            "config",
            "claude",
            "--base-url",
            "https://gw.example/api",
            "--scope",
            "local",
            "--project-dir",
            str(project),
            "--write-token-from-env",
            "GW_TOKEN",
            "--dry-run",
        ],
        [
            "config",
            "claude",
            "--base-url",
            "https://gw.example/api",
            "--scope",
            "local",
            "--project-dir",
            str(project),
            "--write-token-from-env",
            "GW_TOKEN",
            "--json",
        ],
        ["config", "show", "--project-dir", str(project)],
        ["config", "show", "--json", "--project-dir", str(project)],
        ["doctor", "--offline", "--project-dir", str(project)],
        ["doctor", "--offline", "--json", "--project-dir", str(project)],
        # Flags that must refuse a key passed where a NAME belongs, without echoing it.
        [
            "config",
            "codex",
            "--provider",
            "gw",
            "--base-url",
            "https://gw/api",
            "--model",
            "m",
            "--env-key",
            sentinel,
        ],
        ["config", "claude", "--preset", "mock", "--token-env", sentinel],
        *all_help_invocations(),
    ]
    for args in runs:
        result = cli(*args)
        assert sentinel not in result.stdout, args
        assert sentinel not in result.stderr, args
        assert "Traceback" not in result.stderr, args

    allowed = (project / ".claude" / "settings.local.json").resolve()
    assert sentinel in allowed.read_text()  # the explicit request was honoured
    for root in (isolated_home, tmp_path):
        for path in root.rglob("*"):
            if path.is_file() and path.resolve() != allowed:
                assert sentinel.encode() not in path.read_bytes(), path


def test_diff_masks_a_token_already_in_the_file(
    cli, isolated_home: Path, sentinel_everywhere: str
) -> None:
    settings = isolated_home / ".claude" / "settings.json"
    settings.parent.mkdir(parents=True)
    settings.write_text(json.dumps({"env": {"ANTHROPIC_AUTH_TOKEN": sentinel_everywhere}}))

    result = cli("config", "claude", "--base-url", "https://gw.example/api", "--dry-run", "--json")

    assert sentinel_everywhere not in result.stdout
    assert "sk-…XYZW" in result.json()["diff"]


def test_help_covers_every_command() -> None:
    helps = {" ".join(args) for args in all_help_invocations()}
    assert {
        "doctor --help",
        "config codex --help",
        "engine simulate --help",
        "demo --help",
    } <= helps


def test_sentinel_key_never_leaks_from_live_commands(
    cli, isolated_home: Path, start_engine_server, sentinel_everywhere: str
) -> None:
    """The key really travels (the engine demands it), yet no output and no file shows it."""
    sentinel = sentinel_everywhere
    engine = start_engine_server(api_key_env="GW_TOKEN")
    base = engine.base_url
    runs = [
        ["config", "codex", "--provider", "gw", "--base-url", base, "--model", "pd-mock-1",
         "--env-key", "GW_TOKEN"],
        ["config", "claude", "--base-url", engine.anthropic_base_url, "--model", "pd-mock-1",
         "--token-env", "GW_TOKEN"],
        ["doctor"],
        ["doctor", "--json"],
        ["smoke", "--client", "codex", "-n", "1"],
        ["smoke", "--client", "codex", "-n", "1", "--json"],
        ["smoke", "--client", "openai", "--base-url", base, "--model", "pd-mock-1",
         "--key-env", "GW_TOKEN", "-n", "1", "--json"],
        ["notes", "generate", "--client", "codex", "-o", "note.json", "--json"],
        ["bench", "--base-url", base, "--model", "pd-mock-1", "--key-env", "GW_TOKEN",
         "-n", "4", "--concurrency", "2", "--output-len", "8", "--json"],
        ["bench", "--base-url", base, "--model", "pd-mock-1", "--key-env", "GW_TOKEN",
         "-n", "2", "--output-len", "8"],
    ]  # fmt: skip
    for args in runs:
        result = cli(*args)
        assert result.exit_code == 0, (args, result.stdout, result.stderr)
        assert sentinel not in result.stdout + result.stderr, args
    files = [p for p in isolated_home.rglob("*") if p.is_file()] + [Path("note.json")]
    assert [p for p in files if sentinel in p.read_text(errors="replace")] == []
