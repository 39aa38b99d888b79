"""`pdnotes config qwen`: merges a modelProviders entry into Qwen Code's settings.json (JSON
with comments) and keeps every other byte: comments, unknown keys, their order, number
spellings; backups and undo byte for byte; no key in the file; refuses what it cannot read.
`config show --client qwen` resolves the layers the way Qwen Code does."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import pytest

from notes_cli.clients import jsonc
from notes_cli.clients.qwen.config import DIALECT as QWEN

RICH = """{
    // my Qwen Code settings: comments stay
    "ui": {"theme": "GitHub", "hideTips": true}, /* inline block */
    "model": {
        "name": "old-model", // the model I used before
        "generationConfig": {"timeout": 1.50E3}
    },
    "modelProviders": {
        "openai": [
            {"id": "other", "baseUrl": "https://other.example/v1", "envKey": "OTHER_KEY"},
            {"id": "deepseek-chat", "generationConfig": {"samplingParams": {"temperature": 0.2}}}
        ]
    },
    "url": "http://not-a-comment//here",
    "$version": 4
}
"""


def user_settings(home: Path) -> Path:
    return home / ".qwen" / "settings.json"


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(text.encode())
    return path


def parsed(path: Path) -> dict[str, Any]:
    return jsonc.parse(path.read_text(), path, QWEN)


def test_the_mock_preset_writes_a_working_openai_setup(cli, isolated_home: Path) -> None:
    result = cli("config", "qwen", "--preset", "mock")

    assert result.exit_code == 0, result.stderr
    data = json.loads(user_settings(isolated_home).read_text())  # a new file is plain JSON
    assert data == {
        "$version": 4,
        "security": {"auth": {"selectedType": "openai", "apiKey": "pdnotes-mock-no-key"}},
        "model": {"name": "pd-mock-1"},
        "modelProviders": {"openai": [{"id": "pd-mock-1", "baseUrl": "http://127.0.0.1:8000/api"}]},
    }
    assert "POST http://127.0.0.1:8000/api/chat/completions" in result.stdout


def test_a_rich_file_keeps_comments_unknown_keys_and_numbers(cli, isolated_home: Path) -> None:
    path = write(user_settings(isolated_home), RICH)

    result = cli("config", "qwen", "--preset", "deepseek")

    assert result.exit_code == 0, result.stderr
    text = path.read_text()
    for kept in (
        "// my Qwen Code settings: comments stay",
        "/* inline block */",
        "// the model I used before",
        '"timeout": 1.50E3',
        '"url": "http://not-a-comment//here"',
        '{"id": "other", "baseUrl": "https://other.example/v1", "envKey": "OTHER_KEY"}',
    ):
        assert kept in text
    data = parsed(path)
    assert data["ui"] == {"theme": "GitHub", "hideTips": True}
    assert data["model"] == {"name": "deepseek-chat", "generationConfig": {"timeout": 1500.0}}
    assert data["security"] == {"auth": {"selectedType": "openai"}}
    entry = data["modelProviders"]["openai"][1]
    assert entry == {
        "id": "deepseek-chat",
        "generationConfig": {"samplingParams": {"temperature": 0.2}},  # the user's, kept
        "baseUrl": "https://api.deepseek.com",
        "envKey": "DEEPSEEK_API_KEY",
    }
    assert list(data) == ["ui", "model", "modelProviders", "url", "$version", "security"]
    assert "export DEEPSEEK_API_KEY=<your API key>" in result.stdout


def test_undo_restores_the_file_byte_for_byte(cli, isolated_home: Path) -> None:
    path = write(user_settings(isolated_home), RICH.replace("\n", "\r\n"))
    before = path.read_bytes()

    assert cli("config", "qwen", "--preset", "deepseek").exit_code == 0
    assert re.search(rb"(?<!\r)\n", path.read_bytes()) is None  # CRLF kept, new lines too
    assert path.read_bytes() != before
    undone = cli("config", "undo", "--client", "qwen")

    assert undone.exit_code == 0, undone.stderr
    assert path.read_bytes() == before


def test_dry_run_shows_the_diff_and_writes_nothing(cli, isolated_home: Path) -> None:
    path = write(user_settings(isolated_home), RICH)

    result = cli("config", "qwen", "--base-url", "https://gw.example/v1", "--model", "m1",
                 "--dry-run")  # fmt: skip

    assert result.exit_code == 0, result.stderr
    assert path.read_text() == RICH
    assert '+    "security": {' in result.stdout
    assert '"baseUrl": "https://gw.example/v1"' in result.stdout
    assert not (isolated_home / ".pdnotes" / "backups" / "qwen").exists()


def test_the_key_stays_in_the_environment(
    cli, isolated_home: Path, sentinel_key: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GW_KEY", sentinel_key)

    result = cli("config", "qwen", "--base-url", "https://gw.example/v1", "--model", "m1",
                 "--key-env", "GW_KEY")  # fmt: skip

    assert result.exit_code == 0, result.stderr
    text = user_settings(isolated_home).read_text()
    assert sentinel_key not in text and sentinel_key not in result.stdout + result.stderr
    assert parsed(user_settings(isolated_home))["modelProviders"]["openai"][0]["envKey"] == "GW_KEY"
    shown = cli("config", "show", "--client", "qwen")
    assert sentinel_key not in shown.stdout
    assert "$GW_KEY" in shown.stdout


def test_a_key_given_as_key_env_is_refused(cli, isolated_home: Path, sentinel_key: str) -> None:
    result = cli("config", "qwen", "--base-url", "https://gw.example/v1", "--model", "m1",
                 "--key-env", sentinel_key)  # fmt: skip

    assert result.exit_code == 2
    assert sentinel_key not in result.stdout + result.stderr
    assert not user_settings(isolated_home).exists()


@pytest.mark.parametrize(
    ("text", "where"),
    [
        ('{\n  "model": {"name": "m"},\n}\n', ":3:1:"),  # a trailing comma: Qwen Code fails too
        ('{"a": 1, "a": 2}', "appears twice"),
        ('{"modelProviders": {"openai": {"id": "m"}}}', "not an array"),
        ('{"security": "openai"}', "not an object"),
    ],
)
def test_a_file_it_cannot_edit_is_left_alone(
    cli, isolated_home: Path, text: str, where: str
) -> None:
    path = write(user_settings(isolated_home), text)

    result = cli("config", "qwen", "--preset", "mock")

    assert result.exit_code == 2
    assert where in result.stderr
    assert path.read_text() == text


def test_a_pasted_url_is_cleaned_and_a_query_refused(cli, isolated_home: Path) -> None:
    pasted = cli("config", "qwen", "--base-url", "https://gw.example/v1/chat/completions/",
                 "--model", "m1")  # fmt: skip
    query = cli("config", "qwen", "--base-url", "https://gw.example/v1?team=a", "--model", "m1")
    key = cli("config", "qwen", "--base-url", "https://u:sk-live-0123456789abcdef@gw.example/v1",
              "--model", "m1")  # fmt: skip

    assert pasted.exit_code == 0, pasted.stderr
    entry = parsed(user_settings(isolated_home))["modelProviders"]["openai"][0]
    assert entry["baseUrl"] == "https://gw.example/v1"
    assert query.exit_code == 2 and "query parameters" in query.stderr
    assert key.exit_code == 2 and "sk-live-0123456789abcdef" not in key.stderr


def test_the_openai_preset_keeps_its_v1(cli, isolated_home: Path) -> None:
    result = cli("config", "qwen", "--preset", "openai", "--base-url", "https://api.openai.com",
                 "--model", "gpt-4o")  # fmt: skip

    assert result.exit_code == 0, result.stderr
    entry = parsed(user_settings(isolated_home))["modelProviders"]["openai"][0]
    assert entry["baseUrl"] == "https://api.openai.com/v1"


def test_project_scope_writes_the_project_file(cli, isolated_home: Path, tmp_path: Path) -> None:
    project = tmp_path / "work"
    project.mkdir()

    result = cli("config", "qwen", "--preset", "mock", "--scope", "project",
                 "--project-dir", str(project))  # fmt: skip

    assert result.exit_code == 0, result.stderr
    assert (project / ".qwen" / "settings.json").is_file()
    assert not user_settings(isolated_home).exists()


def test_a_fifo_is_refused_not_read(cli, isolated_home: Path) -> None:
    path = user_settings(isolated_home)
    path.parent.mkdir(parents=True)
    os.mkfifo(path)

    result = cli("config", "qwen", "--preset", "mock")

    assert result.exit_code == 2
    assert "FIFO" in result.stderr or "not a regular file" in result.stderr


def test_show_follows_qwen_codes_precedence(
    cli, isolated_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The provider entry's baseUrl outranks OPENAI_BASE_URL (shell or .env); a .env variable
    outranks security.auth.baseUrl; the shell outranks a .env."""
    write(user_settings(isolated_home), RICH)
    assert cli("config", "qwen", "--base-url", "https://entry.example/v1", "--model", "m1",
               "--key-env", "GW_KEY").exit_code == 0  # fmt: skip
    write(tmp_path / ".env", "OPENAI_BASE_URL=https://dotenv.example/v1\nGW_KEY='from-dotenv'\n")

    entry_wins = cli("config", "show", "--client", "qwen", "--json").json()["clients"][0]
    settings = parsed(user_settings(isolated_home))
    settings["model"]["name"] = "no-entry"
    settings["security"]["auth"]["baseUrl"] = "https://settings.example/v1"
    user_settings(isolated_home).write_text(json.dumps(settings))
    dotenv_wins = cli("config", "show", "--client", "qwen", "--json").json()["clients"][0]
    monkeypatch.setenv("OPENAI_BASE_URL", "https://shell.example/v1")
    shell_wins = cli("config", "show", "--client", "qwen", "--json").json()["clients"][0]

    assert entry_wins["request_url"] == "https://entry.example/v1/chat/completions"
    assert entry_wins["key_env"] == "GW_KEY"
    assert dotenv_wins["request_url"] == "https://dotenv.example/v1/chat/completions"
    assert shell_wins["request_url"] == "https://shell.example/v1/chat/completions"


# --- the endpoint pdnotes config qwen wrote, used by smoke and notes -------------------------


def test_smoke_and_notes_use_the_configured_qwen_endpoint(
    cli, isolated_home: Path, engine_server: Any, tmp_path: Path
) -> None:
    assert cli("config", "qwen", "--preset", "mock", "--base-url",
               engine_server.base_url).exit_code == 0  # fmt: skip

    smoke = cli("smoke", "--client", "qwen", "-n", "2", "--json")
    note = cli("notes", "generate", "--client", "qwen", "--lang", "en",
               "-o", str(tmp_path / "note.md"))  # fmt: skip

    assert smoke.exit_code == 0, smoke.stdout + smoke.stderr
    doc = smoke.json()
    assert doc["ok"] and [r["finish_reason"] for r in doc["runs"]] == ["stop"] * 2
    assert doc["url"] == engine_server.base_url + "/chat/completions"
    assert note.exit_code == 0, note.stdout + note.stderr
    assert f"at {engine_server.base_url}/chat/completions" in note.stderr
    assert (tmp_path / "note.md").read_text().strip()


def test_smoke_stops_where_qwen_code_would_without_a_key(cli, isolated_home: Path) -> None:
    assert cli("config", "qwen", "--base-url", "http://127.0.0.1:9/v1", "--model", "m1",
               "--key-env", "GW_KEY").exit_code == 0  # fmt: skip

    result = cli("smoke", "--client", "qwen")

    assert result.exit_code == 2
    # Qwen Code 0.24.4's own words (it prints them and exits 1)
    assert "Set the 'GW_KEY' environment variable." in result.stderr


def test_binary_or_huge_settings_are_refused(cli, isolated_home: Path) -> None:
    path = user_settings(isolated_home)
    path.parent.mkdir(parents=True)
    for content in (b'{"a": "\x00\x01\x02"}', b"{" + b" " * 11_000_000 + b"}"):
        path.write_bytes(content)
        result = cli("config", "qwen", "--preset", "mock")
        assert result.exit_code == 2, result.stderr
        assert "Traceback" not in result.stderr
        assert path.read_bytes() == content


def test_a_symlinked_settings_file_is_edited_at_its_target(cli, isolated_home: Path) -> None:
    target = write(isolated_home / "dotfiles" / "qwen.json", RICH)
    link = user_settings(isolated_home)
    link.parent.mkdir(parents=True)
    link.symlink_to(target)

    result = cli("config", "qwen", "--preset", "mock")

    assert result.exit_code == 0, result.stderr
    assert link.is_symlink()
    assert "// my Qwen Code settings: comments stay" in target.read_text()
    assert parsed(target)["model"]["name"] == "pd-mock-1"


def test_doctor_checks_qwen_code_once_it_has_a_settings_file(cli, isolated_home: Path) -> None:
    assert cli("config", "qwen", "--preset", "mock").exit_code == 0

    everyone = cli("doctor", "--offline")

    assert "Qwen Code" in everyone.stdout
    assert "POST http://127.0.0.1:8000/api/chat/completions" in everyone.stdout


def test_a_second_identical_run_changes_nothing(cli, isolated_home: Path) -> None:
    write(user_settings(isolated_home), RICH)
    assert cli("config", "qwen", "--preset", "deepseek").exit_code == 0
    after_first = user_settings(isolated_home).read_bytes()
    backups = sorted((isolated_home / ".pdnotes" / "backups" / "qwen").iterdir())

    again = cli("config", "qwen", "--preset", "deepseek")

    assert again.exit_code == 0, again.stderr
    assert user_settings(isolated_home).read_bytes() == after_first
    assert sorted((isolated_home / ".pdnotes" / "backups" / "qwen").iterdir()) == backups


def test_a_block_comment_over_lines_after_the_last_member_keeps_the_edit_out(
    cli, isolated_home: Path
) -> None:
    # issue 36: `config qwen` refused the file, naming a line it does not have
    import json5

    text = '{\n  "ui": {"theme": "GitHub"} /* a note\n  over two lines */\n}\n'
    path = write(user_settings(isolated_home), text)
    result = cli("config", "qwen", "--preset", "mock")
    assert result.exit_code == 0, result.stderr
    written = path.read_text()
    assert "/* a note\n  over two lines */" in written
    data = parsed(path)
    assert data["ui"] == {"theme": "GitHub"} and data["model"] == {"name": "pd-mock-1"}
    assert data["modelProviders"]["openai"][0]["id"] == "pd-mock-1"
    assert json5.loads(written) == data


# -- the context window (issue 38): the entry's generationConfig.contextWindowSize ---------------


def test_the_context_window_goes_into_the_entrys_generation_config_keeping_the_rest(
    cli, isolated_home: Path
) -> None:
    path = write(
        user_settings(isolated_home),
        '{\n  // mine\n  "modelProviders": {"openai": [{"id": "pd-mock-1", "baseUrl": "x",\n'
        '    "generationConfig": {"timeout": 60000}}]}\n}\n',
    )
    result = cli("config", "qwen", "--preset", "mock", "--context-window", "65_536")
    assert result.exit_code == 0, result.stderr
    (entry,) = parsed(path)["modelProviders"]["openai"]
    assert entry["generationConfig"] == {"timeout": 60000, "contextWindowSize": 65536}
    assert "// mine" in path.read_text()
    plain = cli("config", "qwen", "--preset", "mock", "--model", "other")
    assert plain.exit_code == 0, plain.stderr
    other = parsed(path)["modelProviders"]["openai"][1]
    assert other["id"] == "other" and "generationConfig" not in other  # none asked, none written


def test_the_context_window_read_from_the_gateways_models(
    cli, isolated_home: Path, engine_server: Any
) -> None:
    result = cli(
        "config", "qwen", "--base-url", engine_server.base_url, "--model", "pd-mock-1",
        "--context-window", "gateway",
    )  # fmt: skip
    assert result.exit_code == 0, result.stderr
    assert "context window 32768 (max_model_len)" in result.stdout
    (entry,) = parsed(user_settings(isolated_home))["modelProviders"]["openai"]
    assert entry["generationConfig"] == {"contextWindowSize": 32768}


def test_a_context_window_that_is_not_a_number_is_a_usage_error(cli, isolated_home: Path) -> None:
    result = cli("config", "qwen", "--preset", "mock", "--context-window", "lots")
    assert result.exit_code == 2 and "--context-window" in result.stderr
    assert not user_settings(isolated_home).exists()
