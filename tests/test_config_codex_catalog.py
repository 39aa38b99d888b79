"""`pdnotes config codex --model-catalog`: the gateway's model goes into a Codex model catalog
(model_catalog_json) beside config.toml, and the two files are one step: written together,
undone together byte for byte, never left half written. Codex reading what is written is
tests/test_interop_codex_catalog.py's."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tomllib
from pathlib import Path

import httpx
import pytest
import respx

GW = "https://gw.example/v1"
BASE = [
    "config", "codex", "--base-url", GW, "--model", "qwen3-coder", "--provider", "gw",
    "--model-catalog",
]  # fmt: skip
HAND_WRITTEN = """# my Codex
model = "old"   # keep this comment
model_provider = "gw"

[model_providers.gw]
name = "gw"
base_url = "https://gw.example/v1"
wire_api = "responses"
"""
OTHER_ENTRY = {"slug": "mine", "display_name": "Mine", "note": "kept as I wrote it"}


@pytest.fixture(autouse=True)
def _no_installed_codex(isolated_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PDNOTES_CODEX_BIN", str(isolated_home / "no-codex-here"))


def codex_dir(home: Path) -> Path:
    folder = home / ".codex"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def catalog_of(home: Path) -> dict:
    return json.loads((home / ".codex" / "pdnotes-models.json").read_text(encoding="utf-8"))


def entry_of(catalog: dict, slug: str) -> dict:
    return next(m for m in catalog["models"] if m["slug"] == slug)


@respx.mock
def test_the_gateways_window_and_reasoning_go_into_the_catalog_config_names(
    cli, isolated_home
) -> None:
    respx.get(f"{GW}/models").mock(
        return_value=httpx.Response(
            200,
            json={
                "data": [
                    {
                        "id": "qwen3-coder",
                        "context_length": 131072,
                        "top_provider": {"max_completion_tokens": 32768},
                        "supported_parameters": ["tools", "reasoning"],
                    }
                ]
            },
        )
    )
    result = cli(*BASE, "--context-window", "gateway")

    assert result.exit_code == 0, result.stderr
    config = tomllib.loads((isolated_home / ".codex/config.toml").read_text(encoding="utf-8"))
    catalog_file = isolated_home / ".codex" / "pdnotes-models.json"
    assert config["model_catalog_json"] == str(catalog_file)
    assert config["model_context_window"] == 131072
    entry = entry_of(catalog_of(isolated_home), "qwen3-coder")
    assert entry["context_window"] == entry["max_context_window"] == 131072
    assert [level["effort"] for level in entry["supported_reasoning_levels"]] == [
        "low", "medium", "high",
    ]  # fmt: skip
    assert entry["default_reasoning_level"] == "medium"
    assert entry["base_instructions"].startswith("You are a coding agent running in the Codex")
    # the cap note is for a window with no catalog; the output limit has no place in Codex
    assert "acts as 272000" not in result.stdout
    assert "output limit (32768)" in result.stdout and "not written" in result.stdout


@respx.mock
def test_a_model_the_gateway_says_does_not_reason_is_asked_for_no_summary(
    cli, isolated_home
) -> None:
    respx.get(f"{GW}/models").mock(
        return_value=httpx.Response(
            200,
            json={
                "data": [
                    {
                        "id": "qwen3-coder",
                        "context_length": 32768,
                        "supported_parameters": ["tools"],
                    }
                ]
            },  # noqa: E501
        )
    )
    assert cli(*BASE, "--context-window", "gateway").exit_code == 0
    entry = entry_of(catalog_of(isolated_home), "qwen3-coder")
    assert entry["supported_reasoning_levels"] == []
    assert entry["default_reasoning_summary"] == "none"


def test_other_entries_are_kept_and_the_models_own_is_replaced(cli, isolated_home) -> None:
    folder = codex_dir(isolated_home)
    mine = folder / "mine.json"
    mine.write_text(
        json.dumps({"models": [OTHER_ENTRY, {"slug": "qwen3-coder", "context_window": 1}]}),
        encoding="utf-8",
    )
    (folder / "config.toml").write_text(
        'model_catalog_json = "mine.json"\n' + HAND_WRITTEN, encoding="utf-8"
    )

    result = cli(*BASE, "--context-window", "65536")

    assert result.exit_code == 0, result.stderr
    catalog = json.loads(mine.read_text(encoding="utf-8"))
    assert catalog["models"][0] == OTHER_ENTRY
    assert entry_of(catalog, "qwen3-coder")["context_window"] == 65536
    assert len(catalog["models"]) == 2
    assert not (folder / "pdnotes-models.json").exists()
    written = tomllib.loads((folder / "config.toml").read_text(encoding="utf-8"))
    assert written["model_catalog_json"] == "mine.json"  # the user's spelling is kept


def test_undo_restores_both_files_byte_for_byte_in_one_step(cli, isolated_home) -> None:
    folder = codex_dir(isolated_home)
    (folder / "config.toml").write_text(HAND_WRITTEN, encoding="utf-8")
    assert cli(*BASE, "--context-window", "32768").exit_code == 0
    after_first = (folder / "pdnotes-models.json").read_bytes()
    config_first = (folder / "config.toml").read_bytes()
    assert cli(*BASE, "--context-window", "65536").exit_code == 0

    undone = cli("config", "undo", "--client", "codex", "--json").json()

    assert (folder / "pdnotes-models.json").read_bytes() == after_first
    assert (folder / "config.toml").read_bytes() == config_first
    assert undone["also"] == [{"file": str(folder / "pdnotes-models.json"), "action": "restored"}]
    assert cli("config", "undo", "--client", "codex").exit_code == 0
    assert (folder / "config.toml").read_text(encoding="utf-8") == HAND_WRITTEN
    assert not (folder / "pdnotes-models.json").exists()


def test_dry_run_shows_both_files_and_writes_neither(cli, isolated_home) -> None:
    folder = codex_dir(isolated_home)
    (folder / "config.toml").write_text(HAND_WRITTEN, encoding="utf-8")
    result = cli(*BASE, "--context-window", "32768", "--dry-run")
    assert result.exit_code == 0, result.stderr
    assert "+model_catalog_json" in result.stdout
    assert f"+++ {folder / 'pdnotes-models.json'}" in result.stdout
    assert '"context_window": 32768' in result.stdout
    assert (folder / "config.toml").read_text(encoding="utf-8") == HAND_WRITTEN
    assert not (folder / "pdnotes-models.json").exists()


@pytest.mark.parametrize("text", ["{not json", '{"data": []}', '{"models": [1]}', '["models"]'])
def test_a_catalog_pdnotes_cannot_read_is_left_alone_and_so_is_config(
    cli, isolated_home, text
) -> None:
    folder = codex_dir(isolated_home)
    (folder / "pdnotes-models.json").write_text(text, encoding="utf-8")
    (folder / "config.toml").write_text(HAND_WRITTEN, encoding="utf-8")

    result = cli(*BASE, "--context-window", "32768")

    assert result.exit_code != 0 and "Traceback" not in result.stderr
    assert "nothing was written" in result.stderr
    assert (folder / "pdnotes-models.json").read_text(encoding="utf-8") == text
    assert (folder / "config.toml").read_text(encoding="utf-8") == HAND_WRITTEN


def test_a_catalog_that_cannot_be_written_puts_config_back(cli, isolated_home, monkeypatch) -> None:
    """config.toml is written first; the catalog's write then fails: config.toml gets its old
    bytes back and there is nothing to undo."""
    from notes_cli import fileio
    from notes_cli.errors import ConfigWriteError

    folder = codex_dir(isolated_home)
    (folder / "config.toml").write_text(HAND_WRITTEN, encoding="utf-8")
    real = fileio.atomic_write

    def failing(path: Path, data: bytes | str, *, mode: int | None = None) -> Path:
        if path.name == "pdnotes-models.json":
            raise ConfigWriteError(f"cannot write {path}: No space left on device")
        return real(path, data, mode=mode)

    monkeypatch.setattr(fileio, "atomic_write", failing)
    result = cli(*BASE, "--context-window", "32768")

    assert result.exit_code != 0 and "No space left" in result.stderr
    assert (folder / "config.toml").read_text(encoding="utf-8") == HAND_WRITTEN
    assert not (folder / "pdnotes-models.json").exists()
    monkeypatch.setattr(fileio, "atomic_write", real)
    assert "nothing to undo" in cli("config", "undo", "--client", "codex").stdout.lower()


KILLED_BETWEEN_FILES = """
import os, signal, sys
from notes_cli import fileio
real = fileio.atomic_write
def dying(path, data, *, mode=None):
    if path.name == "pdnotes-models.json":
        # kill -9 after config.toml was replaced, before the catalog was
        os.kill(os.getpid(), signal.SIGKILL)
    return real(path, data, mode=mode)
fileio.atomic_write = dying
from notes_cli.cli import main
sys.argv = ["pdnotes", *sys.argv[1:]]
main()
"""


def kill_between_the_two_files(*args: str) -> None:
    """Run `pdnotes ARGS` in a real process that is killed (SIGKILL) between its two files."""
    repo = Path(__file__).resolve().parent.parent
    killed = subprocess.run(
        [sys.executable, "-c", KILLED_BETWEEN_FILES, *args],
        env={**os.environ, "PYTHONPATH": str(repo)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert killed.returncode == -signal.SIGKILL, killed.stderr


def test_a_step_killed_between_the_two_files_is_rolled_back_on_the_next_run(
    cli, isolated_home
) -> None:
    folder = codex_dir(isolated_home)
    (folder / "config.toml").write_text(HAND_WRITTEN, encoding="utf-8")
    kill_between_the_two_files(*BASE, "--context-window", "32768")
    assert "model_catalog_json" in (folder / "config.toml").read_text(encoding="utf-8")

    result = cli("config", "undo", "--client", "codex")

    assert result.exit_code == 0, result.stderr
    assert (folder / "config.toml").read_text(encoding="utf-8") == HAND_WRITTEN
    assert not (folder / "pdnotes-models.json").exists()
    # it says what it did: the rollback is the undo of the killed step
    assert "nothing to undo" not in result.stdout.lower()
    assert "rolled back" in result.stdout and "killed between two files" in result.stdout
    assert f"{folder / 'config.toml'} put back" in result.stdout.replace("\n", "")


def test_undo_after_a_killed_step_rolls_it_back_and_leaves_the_write_before_it(
    cli, isolated_home
) -> None:
    """The killed step was the last write: its rollback is what undo does (said in --json as
    "rolled-back"); the committed write before it is undone only by the next undo."""
    folder = codex_dir(isolated_home)
    (folder / "config.toml").write_text(HAND_WRITTEN, encoding="utf-8")
    assert cli(*BASE, "--context-window", "16384").exit_code == 0
    first_write = [(folder / n).read_bytes() for n in ("config.toml", "pdnotes-models.json")]
    kill_between_the_two_files(*BASE, "--context-window", "32768")
    assert (folder / "config.toml").read_bytes() != first_write[0]  # half written

    rolled = cli("config", "undo", "--client", "codex", "--json")

    assert rolled.exit_code == 0, rolled.stderr
    document = rolled.json()
    assert document["action"] == "rolled-back"
    assert document["file"] == str(folder / "config.toml")
    assert (folder / "config.toml").read_bytes() == first_write[0]
    assert (folder / "pdnotes-models.json").read_bytes() == first_write[1]

    again = cli("config", "undo", "--client", "codex", "--json")

    assert again.json()["action"] == "restored"
    assert (folder / "config.toml").read_text(encoding="utf-8") == HAND_WRITTEN
    assert not (folder / "pdnotes-models.json").exists()


def test_a_write_after_a_killed_step_plans_from_the_rolled_back_files(cli, isolated_home) -> None:
    """The next `config codex` rolls the half-written step back, then plans from the files as
    they now are (not the half-written config.toml): one undo then gives the hand-written file."""
    folder = codex_dir(isolated_home)
    (folder / "config.toml").write_text(HAND_WRITTEN, encoding="utf-8")
    kill_between_the_two_files(*BASE, "--context-window", "32768")

    again = cli(*BASE, "--context-window", "32768")

    assert again.exit_code == 0, again.stderr
    assert (folder / "pdnotes-models.json").exists()
    assert cli("config", "undo", "--client", "codex").exit_code == 0
    assert (folder / "config.toml").read_text(encoding="utf-8") == HAND_WRITTEN
    assert not (folder / "pdnotes-models.json").exists()
