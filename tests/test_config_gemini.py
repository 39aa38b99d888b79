"""`pdnotes config gemini`: Gemini CLI's settings.json (JSON with comments) and .gemini/.env,
merged keeping comments and unknown keys; the two files are one step: one backup, written all
or nothing (never left half written, even when killed between them), undone together byte for
byte."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from notes_cli.clients import dotenv, jsonc
from notes_cli.clients.gemini.config import DIALECT as GEMINI_DIALECT

RICH = """{
  // my theme, do not touch
  "ui": {
    "theme": "GitHub", // dark is too dark
    "hideBanner": true
  },
  /* a block
     comment */
  "model": {"name": "gemini-2.5-pro", "maxSessionTurns": 10},
  "tools": {"sandbox": false}
}
"""


def _settings(home: Path) -> Path:
    return home / ".gemini" / "settings.json"


def _env(home: Path) -> Path:
    return home / ".gemini" / ".env"


def test_comments_and_unknown_keys_survive_and_only_owned_values_change(
    cli, isolated_home: Path
) -> None:
    path = _settings(isolated_home)
    path.parent.mkdir(parents=True)
    path.write_text(RICH, encoding="utf-8")
    result = cli("config", "gemini", "--base-url", "https://gw.example/api", "--model", "m-1")
    assert result.exit_code == 0, result.stderr
    text = path.read_text(encoding="utf-8")
    for kept in ("// my theme, do not touch", "// dark is too dark", "/* a block\n     comment */"):
        assert kept in text
    data = jsonc.parse(text, path, GEMINI_DIALECT)
    assert data["model"] == {"name": "m-1", "maxSessionTurns": 10}
    assert data["ui"] == {"theme": "GitHub", "hideBanner": True}
    assert data["tools"] == {"sandbox": False}
    assert data["security"] == {"auth": {"selectedType": "gemini-api-key"}}
    # Everything but the model's value is as it was, line for line, before the new member.
    assert text.replace('"m-1"', '"gemini-2.5-pro"').startswith(RICH.split('\n  "tools"')[0])
    assert dotenv.parse(_env(isolated_home).read_text()) == {
        "GOOGLE_GEMINI_BASE_URL": "https://gw.example/api"
    }
    assert "export GEMINI_API_KEY=<your API key>" in result.stdout


def test_undo_puts_back_both_files_byte_for_byte(cli, isolated_home: Path) -> None:
    path, env = _settings(isolated_home), _env(isolated_home)
    path.parent.mkdir(parents=True)
    path.write_bytes(RICH.replace("\n", "\r\n").encode())
    env.write_bytes(b"# mine\nDEBUG=1\nGOOGLE_GEMINI_BASE_URL=https://old.example\n")
    before = path.read_bytes(), env.read_bytes()
    assert cli("config", "gemini", "--preset", "mock").exit_code == 0
    assert b"\r\n" in path.read_bytes() and b"(?<!\r)\n" not in path.read_bytes()
    assert (
        dotenv.parse(env.read_text())["GOOGLE_GEMINI_BASE_URL"]
        == "http://127.0.0.1:8000/api/gemini"
    )
    assert "DEBUG=1" in env.read_text()
    result = cli("config", "undo", "--client", "gemini", "--json")
    assert result.exit_code == 0, result.stderr
    assert (path.read_bytes(), env.read_bytes()) == before
    assert result.json()["also"] == [{"file": str(env), "action": "restored"}]  # one undo
    assert "nothing to undo" in cli("config", "undo", "--client", "gemini").stdout


def test_undo_of_a_first_write_removes_both_files(cli, isolated_home: Path) -> None:
    assert cli("config", "gemini", "--preset", "mock").exit_code == 0
    assert cli("config", "undo").exit_code == 0  # the most recent client is gemini
    assert not _settings(isolated_home).exists() and not _env(isolated_home).exists()


def test_mock_preset_writes_a_placeholder_key_and_leaving_it_removes_it(
    cli, isolated_home: Path
) -> None:
    assert cli("config", "gemini", "--preset", "mock").exit_code == 0
    values = dotenv.parse(_env(isolated_home).read_text())
    assert values["GEMINI_API_KEY"] == "pdnotes-mock-no-key"
    result = cli("config", "gemini", "--base-url", "https://gw.example", "--json")
    assert "removed the local placeholder" in " ".join(result.json()["notes"])
    assert "GEMINI_API_KEY" not in dotenv.parse(_env(isolated_home).read_text())
    # a plain sentence: only a note about the pasted URL says it was cleaned (issue 35)
    assert cli("config", "gemini", "--preset", "mock").exit_code == 0
    again = cli("config", "gemini", "--base-url", "https://gw.example/v1beta?utm_source=x")
    said = [ln for ln in again.stdout.splitlines() if ln.startswith("• ")]
    assert [ln.split(": ")[0] for ln in said] == [
        "• cleaned the base URL", "• cleaned the base URL", "• removed the local placeholder "
        "GEMINI_API_KEY from " + str(_env(isolated_home))]  # fmt: skip


def test_no_key_on_disk_unless_asked(cli, isolated_home: Path, sentinel_key, monkeypatch) -> None:
    monkeypatch.setenv("GW_KEY", sentinel_key)
    monkeypatch.setenv("GEMINI_API_KEY", sentinel_key)
    result = cli("config", "gemini", "--base-url", "https://gw.example", "--model", "m",
                 "--key-env", "GW_KEY")  # fmt: skip
    assert result.exit_code == 0
    assert 'export GEMINI_API_KEY="$GW_KEY"' in result.stdout
    for path in (_settings(isolated_home), _env(isolated_home)):
        assert sentinel_key not in path.read_text()
    assert sentinel_key not in result.stdout + result.stderr


def test_writing_the_key_needs_the_flag_and_makes_the_file_private(
    cli, isolated_home: Path, sentinel_key, monkeypatch
) -> None:
    monkeypatch.setenv("GW_KEY", sentinel_key)
    result = cli("config", "gemini", "--base-url", "https://gw.example", "--model", "m",
                 "--write-key-from-env", "GW_KEY", "--dry-run")  # fmt: skip
    assert result.exit_code == 0 and sentinel_key not in result.stdout
    assert not _env(isolated_home).exists()
    result = cli("config", "gemini", "--base-url", "https://gw.example", "--model", "m",
                 "--write-key-from-env", "GW_KEY")  # fmt: skip
    assert result.exit_code == 0 and sentinel_key not in result.stdout
    assert dotenv.parse(_env(isolated_home).read_text())["GEMINI_API_KEY"] == sentinel_key
    assert stat.S_IMODE(os.stat(_env(isolated_home)).st_mode) == 0o600


@pytest.mark.parametrize(
    ("pasted", "written"),
    [
        ("https://gw.example/v1beta", "https://gw.example"),
        ("https://gw.example/api/v1beta/", "https://gw.example/api"),
        ("https://gw.example/v1beta/models/m:streamGenerateContent", "https://gw.example"),
        ("https://gw.example/gemini/#frag", "https://gw.example/gemini"),
    ],
)
def test_a_pasted_v1beta_is_removed_so_it_is_not_doubled(
    cli, isolated_home: Path, pasted: str, written: str
) -> None:
    result = cli("config", "gemini", "--base-url", pasted, "--model", "m", "--json")
    assert result.exit_code == 0, result.stderr
    assert dotenv.parse(_env(isolated_home).read_text())["GOOGLE_GEMINI_BASE_URL"] == written
    assert result.json()["request_url"] == (
        f"{written}/v1beta/models/m:streamGenerateContent?alt=sse"
    )


def test_a_key_in_the_url_or_a_query_is_refused(cli, isolated_home: Path) -> None:
    for url in ("https://u:sk-abcdefghijklmnopqrstuvwx@gw.example", "https://gw.example?x=1"):
        result = cli("config", "gemini", "--base-url", url, "--model", "m")
        assert result.exit_code == 2
    assert not _settings(isolated_home).exists()


@pytest.mark.parametrize(
    "broken",
    ['{"model": {"name": "x"},}', '{"a": 1, "a": 2}', "[1, 2]", '{"model": "gemini-1.5"}'],
)
def test_files_pdnotes_cannot_edit_are_never_overwritten(
    cli, isolated_home: Path, broken: str
) -> None:
    path = _settings(isolated_home)
    path.parent.mkdir(parents=True)
    path.write_text(broken)
    result = cli("config", "gemini", "--preset", "mock")
    assert result.exit_code == 2
    assert path.read_text() == broken and not _env(isolated_home).exists()


def test_trailing_comma_message_names_what_gemini_accepts(cli, isolated_home: Path) -> None:
    path = _settings(isolated_home)
    path.parent.mkdir(parents=True)
    path.write_text('{\n  "a": 1,\n}\n')
    result = cli("config", "gemini", "--preset", "mock")
    assert "comments but no trailing commas" in result.stderr
    assert ":3:1:" in result.stderr  # line and column in the real file


def test_dry_run_writes_nothing_and_shows_both_diffs(cli, isolated_home: Path) -> None:
    result = cli("config", "gemini", "--preset", "mock", "--dry-run", "--json")
    document = result.json()
    assert document["dry_run"] and "selectedType" in document["diff"]
    assert "GOOGLE_GEMINI_BASE_URL=http://127.0.0.1:8000/api/gemini" in document["also"][0]["diff"]
    assert not (isolated_home / ".gemini").exists()


def test_a_human_dry_run_shows_both_diffs_and_names_both_files(cli, isolated_home: Path) -> None:
    result = cli("config", "gemini", "--preset", "mock", "--dry-run")
    assert result.exit_code == 0, result.stderr
    settings, env = _settings(isolated_home), _env(isolated_home)
    assert f"+++ {settings}" in result.stdout and f"+++ {env}" in result.stdout
    assert f"dry run: {settings} and {env} were not written" in " ".join(result.stdout.split())
    assert not (isolated_home / ".gemini").exists()


def test_an_unchanged_setup_is_not_rewritten(cli, isolated_home: Path) -> None:
    assert cli("config", "gemini", "--preset", "mock").exit_code == 0
    again = cli("config", "gemini", "--preset", "mock", "--json").json()
    assert not again["written"] and not again["also"][0]["written"]


def test_a_write_shows_both_files_and_one_backup(cli, isolated_home: Path) -> None:
    result = cli("config", "gemini", "--preset", "mock")
    assert result.exit_code == 0, result.stderr
    assert f"wrote {_settings(isolated_home)}" in result.stdout
    assert f"wrote {_env(isolated_home)}" in result.stdout
    assert result.stdout.count("backup:") == 1
    backups = list((isolated_home / ".pdnotes" / "backups" / "gemini").glob("*.json"))
    assert len(backups) == 1


def test_an_env_that_cannot_be_written_puts_settings_back(
    cli, isolated_home: Path, monkeypatch
) -> None:
    """settings.json is written first; the .env's write then fails: settings.json gets its old
    bytes back and there is nothing to undo."""
    from notes_cli import fileio
    from notes_cli.errors import ConfigWriteError

    path = _settings(isolated_home)
    path.parent.mkdir(parents=True)
    path.write_text(RICH, encoding="utf-8")
    real = fileio.atomic_write

    def failing(target: Path, data: bytes | str, *, mode: int | None = None) -> Path:
        if target.name == ".env":
            raise ConfigWriteError(f"cannot write {target}: No space left on device")
        return real(target, data, mode=mode)

    monkeypatch.setattr(fileio, "atomic_write", failing)
    result = cli("config", "gemini", "--preset", "mock")

    assert result.exit_code != 0 and "No space left" in result.stderr
    assert path.read_text(encoding="utf-8") == RICH and not _env(isolated_home).exists()
    monkeypatch.setattr(fileio, "atomic_write", real)
    assert "nothing to undo" in cli("config", "undo", "--client", "gemini").stdout


def test_an_env_that_cannot_be_written_leaves_the_bridge_record_as_it_was(
    cli, isolated_home: Path, monkeypatch
) -> None:
    """Through the bridge the step has three files: the bridge's record is put back too."""
    from notes_cli import fileio
    from notes_cli.errors import ConfigWriteError

    real = fileio.atomic_write

    def failing(target: Path, data: bytes | str, *, mode: int | None = None) -> Path:
        if target.name == ".env":
            raise ConfigWriteError(f"cannot write {target}: No space left on device")
        return real(target, data, mode=mode)

    monkeypatch.setattr(fileio, "atomic_write", failing)
    result = cli("config", "gemini", "--preset", "deepseek")

    assert result.exit_code != 0 and "No space left" in result.stderr
    assert not (isolated_home / ".pdnotes" / "bridge.json").exists()
    assert not _settings(isolated_home).exists() and not _env(isolated_home).exists()


KILLED_BETWEEN_FILES = """
import os, sys
from notes_cli import fileio
real = fileio.atomic_write
def dying(path, data, *, mode=None):
    if path.name == ".env":
        os._exit(9)  # killed after settings.json was replaced, before the .env was
    return real(path, data, mode=mode)
fileio.atomic_write = dying
from notes_cli.cli import main
sys.argv = ["pdnotes", *sys.argv[1:]]
main()
"""


def _killed_between_files(home: Path) -> None:
    """Run `config gemini --preset mock` in a process that dies between the two files."""
    repo = Path(__file__).resolve().parent.parent
    killed = subprocess.run(
        [sys.executable, "-c", KILLED_BETWEEN_FILES, "config", "gemini", "--preset", "mock"],
        env={**os.environ, "PYTHONPATH": str(repo)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert killed.returncode == 9, killed.stderr
    assert "gemini-api-key" in _settings(home).read_text(encoding="utf-8")  # half written


def test_a_step_killed_between_the_two_files_is_rolled_back_on_the_next_run(
    cli, isolated_home: Path
) -> None:
    path, env = _settings(isolated_home), _env(isolated_home)
    path.parent.mkdir(parents=True)
    path.write_text(RICH, encoding="utf-8")
    env.write_bytes(b"DEBUG=1\n")
    _killed_between_files(isolated_home)

    result = cli("config", "undo", "--client", "gemini")

    assert result.exit_code == 0, result.stderr
    assert path.read_text(encoding="utf-8") == RICH and env.read_bytes() == b"DEBUG=1\n"
    assert "rolled back" in result.stdout and f"{path} put back" in result.stdout


def test_a_write_after_a_killed_one_undoes_to_the_state_before_both(
    cli, isolated_home: Path
) -> None:
    path = _settings(isolated_home)
    path.parent.mkdir(parents=True)
    path.write_text(RICH, encoding="utf-8")
    _killed_between_files(isolated_home)
    assert cli("config", "gemini", "--preset", "mock").exit_code == 0
    assert cli("config", "undo", "--client", "gemini").exit_code == 0
    assert path.read_text(encoding="utf-8") == RICH and not _env(isolated_home).exists()


def test_rewriting_the_same_key_keeps_the_env_private(
    cli, isolated_home: Path, sentinel_key, monkeypatch
) -> None:
    """The .env already holds the key but was made world-readable by hand: the next run with
    --write-key-from-env makes it 0600 again, though no text changes."""
    monkeypatch.setenv("GW_KEY", sentinel_key)
    args = ("config", "gemini", "--base-url", "https://gw.example", "--model", "m",
            "--write-key-from-env", "GW_KEY")  # fmt: skip
    assert cli(*args).exit_code == 0
    _env(isolated_home).chmod(0o644)
    assert cli(*args).exit_code == 0
    assert stat.S_IMODE(os.stat(_env(isolated_home)).st_mode) == 0o600


def test_project_scope_writes_the_project_folder(cli, tmp_path: Path) -> None:
    result = cli("config", "gemini", "--preset", "mock", "--scope", "project")
    assert result.exit_code == 0
    assert (tmp_path / ".gemini" / "settings.json").is_file()
    assert (tmp_path / ".gemini" / ".env").is_file()


def test_a_project_env_file_that_shadows_the_user_one_is_warned_about(cli, tmp_path: Path) -> None:
    (tmp_path / ".env").write_text("DATABASE_URL=x\n")
    result = cli("config", "gemini", "--preset", "mock", "--json")
    assert any(str(tmp_path / ".env") in w for w in result.json()["warnings"])


def test_a_chat_only_preset_goes_through_the_bridge(cli, isolated_home: Path) -> None:
    result = cli("config", "gemini", "--preset", "deepseek", "--json")
    assert result.exit_code == 0, result.stderr
    env = dotenv.parse(_env(isolated_home).read_text())
    assert env["GOOGLE_GEMINI_BASE_URL"] == "http://127.0.0.1:8787"
    record = json.loads((isolated_home / ".pdnotes" / "bridge.json").read_text())
    assert "deepseek" in json.dumps(record)


def test_settings_file_that_is_a_fifo_is_refused(cli, isolated_home: Path) -> None:
    path = _settings(isolated_home)
    path.parent.mkdir(parents=True)
    os.mkfifo(path)
    result = cli("config", "gemini", "--preset", "mock")
    assert result.exit_code == 2
    assert "FIFO (named pipe), not a regular file" in result.stderr


def test_a_comment_after_the_last_member_stays_on_its_line(cli, isolated_home: Path) -> None:
    path = _settings(isolated_home)
    path.parent.mkdir(parents=True)
    path.write_text('{\n  "general": {"vimMode": true} // about vim\n}\n')
    assert cli("config", "gemini", "--preset", "mock").exit_code == 0
    lines = path.read_text().splitlines()
    assert lines[1] == '  "general": {"vimMode": true}, // about vim'
    assert lines[2] == '  "security": {'


def test_no_phone_home_turns_off_the_side_connections_and_keeps_the_rest(
    cli, isolated_home: Path
) -> None:
    path = _settings(isolated_home)
    path.parent.mkdir(parents=True)
    path.write_text(
        '{\n  "general": {"vimMode": true}, // mine\n  "telemetry": {"target": "local"}\n}\n'
    )
    assert cli("config", "gemini", "--preset", "mock", "--no-phone-home").exit_code == 0
    data = jsonc.parse(path.read_text(), path, GEMINI_DIALECT)
    assert data["general"] == {
        "vimMode": True,
        "enableAutoUpdate": False,
        "enableAutoUpdateNotification": False,
    }
    assert data["telemetry"] == {"target": "local", "enabled": False}
    assert data["privacy"] == {"usageStatisticsEnabled": False}
    assert "// mine" in path.read_text()


def test_show_names_each_value_with_the_layer_it_comes_from(
    cli, isolated_home: Path, monkeypatch
) -> None:
    assert cli("config", "gemini", "--preset", "mock").exit_code == 0
    system = isolated_home / "etc-gemini" / "settings.json"
    system.parent.mkdir()
    system.write_text('{"model": {"name": "from-system"}}')  # system overrides win
    monkeypatch.setenv("GEMINI_CLI_TRUST_WORKSPACE", "true")
    (setup,) = cli("config", "show", "--client", "gemini", "--json").json()["clients"]
    values = {v["name"]: (v["value"], v["source"]) for v in setup["values"]}
    assert values["GOOGLE_GEMINI_BASE_URL"] == (
        "http://127.0.0.1:8000/api/gemini",
        str(_env(isolated_home)),
    )
    assert values["model"] == ("from-system", str(system))
    assert values["folder trust"] == ("trusted", "GEMINI_CLI_TRUST_WORKSPACE=true")
    assert setup["request_url"].endswith("/v1beta/models/from-system:streamGenerateContent?alt=sse")
    monkeypatch.delenv("GEMINI_CLI_TRUST_WORKSPACE")  # untrusted: .gemini/.env is not read
    (setup,) = cli("config", "show", "--client", "gemini", "--json").json()["clients"]
    assert setup["request_url"].startswith("https://generativelanguage.googleapis.com/")


@pytest.mark.parametrize("newline", ["\n", "\r\n"], ids=["LF", "CRLF"])
def test_a_block_comment_over_lines_after_the_last_member_keeps_the_edit_out(
    cli, isolated_home: Path, newline: str
) -> None:
    # issue 36: the edit went into the comment (exit 0, settings.json invalid for Gemini CLI)
    import json5

    path = _settings(isolated_home)
    path.parent.mkdir(parents=True)
    text = '{\n  "ui": {"theme": "GitHub"} /* a note\n  over two lines */\n}\n'
    path.write_bytes(text.replace("\n", newline).encode())
    result = cli("config", "gemini", "--base-url", "https://gw.example/api", "--model", "m-1")
    assert result.exit_code == 0, result.stderr
    written = path.read_bytes().decode()
    assert f"/* a note{newline}  over two lines */" in written
    data = jsonc.parse(written, path, GEMINI_DIALECT)
    assert data == {
        "ui": {"theme": "GitHub"},
        "model": {"name": "m-1"},
        "security": {"auth": {"selectedType": "gemini-api-key"}},
    }
    assert json5.loads(written) == data  # an independent reader agrees
    doctor = cli("doctor", "--client", "gemini", "--offline", "--json")
    assert "invalid" not in doctor.stdout, doctor.stdout


@pytest.mark.parametrize("brk", ["\v", "\f", "\x1c", "\x1e", "\x85", "\u2028", "\u2029"])
def test_a_line_break_dotenv_does_not_know_stays_inside_its_value(
    cli, isolated_home: Path, brk: str
) -> None:
    """dotenv (Gemini CLI's parser) ends lines at LF, CRLF and CR only: `NOTE=keep<brk>GOOGLE_…`
    is one variable NOTE whose value holds the rest (node + dotenv 16.6.1 parse it so). pdnotes
    once split there too, took `GOOGLE_GEMINI_BASE_URL=…` for a line of its own and rewrote it:
    NOTE's value changed and the base URL Gemini CLI reads was never set."""
    env = _env(isolated_home)
    env.parent.mkdir(parents=True)
    kept = f"NOTE=keep{brk}GOOGLE_GEMINI_BASE_URL=https://old.example\r\n"
    env.write_bytes(kept.encode())
    assert dotenv.parse(kept) == {"NOTE": f"keep{brk}GOOGLE_GEMINI_BASE_URL=https://old.example"}
    result = cli("config", "gemini", "--base-url", "https://gw.example/api", "--model", "m-1")
    assert result.exit_code == 0, result.stderr
    text = env.read_bytes().decode()
    assert text.startswith(kept)  # NOTE's line, byte for byte
    assert text[len(kept) :] == "GOOGLE_GEMINI_BASE_URL=https://gw.example/api\r\n"
