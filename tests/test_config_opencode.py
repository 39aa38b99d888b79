"""`pdnotes config opencode`: merges an OpenAI-compatible provider into OpenCode's JSONC config,
keeping comments, unknown keys and indentation; references the key as `{env:NAME}`, never
writes it; backs up and undoes byte for byte; refuses a file it cannot parse; `config show`
lists OpenCode's layers in OpenCode's precedence."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from notes_cli.clients import jsonc
from notes_cli.clients.opencode.config import DIALECT as OPENCODE

COMMENTED = """{
  // my own settings, keep them
  "$schema": "https://opencode.ai/config.json",
  "theme": "tokyonight", /* inline */
  "autoupdate": false,
  "ratio": 1.50,
  "provider": {
    "other": { "npm": "@ai-sdk/anthropic" }, // a provider pdnotes does not own
  },
}
"""


def global_config(home: Path, name: str = "opencode.json") -> Path:
    return home / ".config" / "opencode" / name


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def data_of(path: Path) -> dict:  # type: ignore[type-arg]
    return jsonc.parse(path.read_text(), path, OPENCODE)


def test_mock_preset_writes_a_provider_and_model_opencode_can_use(cli, isolated_home) -> None:
    result = cli("config", "opencode", "--preset", "mock")

    assert result.exit_code == 0, result.stderr
    data = json.loads(global_config(isolated_home).read_text())  # a new file is plain JSON
    provider = data["provider"]["pdnotes-mock"]
    assert provider["npm"] == "@ai-sdk/openai-compatible"
    assert provider["options"] == {"baseURL": "http://127.0.0.1:8000/api"}  # no key: none needed
    # OpenCode refuses a `limit` without `output`: both are written.
    assert provider["models"]["pd-mock-1"]["limit"] == {"context": 32768, "output": 4096}
    assert data["model"] == "pdnotes-mock/pd-mock-1"
    assert "POST http://127.0.0.1:8000/api/chat/completions" in result.stdout


def test_comments_unknown_keys_and_number_spellings_are_kept(cli, isolated_home) -> None:
    path = write(global_config(isolated_home, "opencode.jsonc"), COMMENTED)

    result = cli("config", "opencode", "--preset", "mock")

    assert result.exit_code == 0, result.stderr
    text = path.read_text()
    for kept in ("// my own settings, keep them", "/* inline */", '"ratio": 1.50',
                 "// a provider pdnotes does not own", '"theme": "tokyonight"'):  # fmt: skip
        assert kept in text
    data = data_of(path)
    assert data["provider"]["other"] == {"npm": "@ai-sdk/anthropic"}
    assert data["model"] == "pdnotes-mock/pd-mock-1"
    assert not global_config(isolated_home).exists()  # the .jsonc is the file that was edited


def test_the_key_is_written_as_an_env_reference_never_as_itself(
    cli, isolated_home, monkeypatch
) -> None:
    secret = "sk-live-opencode-0123456789abcdef"
    monkeypatch.setenv("GW_KEY", secret)

    result = cli(
        "config", "opencode", "--base-url", "https://gw.example.com/v1", "--model", "qwen3",
        "--key-env", "GW_KEY", "--provider", "gw",
    )  # fmt: skip

    assert result.exit_code == 0, result.stderr
    text = global_config(isolated_home).read_text()
    assert '"apiKey": "{env:GW_KEY}"' in text
    assert secret not in text and secret not in result.stdout + result.stderr
    assert "export GW_KEY=sk-…cdef   # already set in this shell" in result.stdout  # masked


def test_a_literal_key_is_replaced_by_the_reference_and_masked_in_the_diff(
    cli, isolated_home
) -> None:
    secret = "sk-literal-in-file-0123456789abcdef"
    write(
        global_config(isolated_home),
        json.dumps({"provider": {"gw": {"options": {"baseURL": "https://gw.example.com/v1",
                   "apiKey": secret}}}, "model": "gw/m"}, indent=2),
    )  # fmt: skip

    dry = cli("config", "opencode", "--key-env", "GW_KEY", "--dry-run")

    assert dry.exit_code == 0, dry.stderr
    assert secret not in dry.stdout
    assert '+        "apiKey": "{env:GW_KEY}"' in dry.stdout
    assert "replaced the literal apiKey" in dry.stdout
    assert cli("config", "opencode", "--key-env", "GW_KEY").exit_code == 0
    assert secret not in global_config(isolated_home).read_text()


def test_a_pasted_url_is_cleaned_and_a_key_in_it_refused(cli, isolated_home) -> None:
    result = cli(
        "config", "opencode", "--base-url",
        "https://gw.example.com/v1/chat/completions?utm_source=x", "--model", "m",
    )  # fmt: skip
    assert result.exit_code == 0, result.stderr
    assert data_of(global_config(isolated_home))["provider"]["gateway"]["options"] == {
        "baseURL": "https://gw.example.com/v1"
    }
    refused = cli(
        "config", "opencode", "--base-url", "https://u:sk-abcdefghijklmnop1234@gw.example.com/v1",
        "--model", "m",
    )  # fmt: skip
    assert refused.exit_code == 2
    assert "sk-abcdefghijklmnop1234" not in refused.stdout + refused.stderr
    assert "--key-env" in refused.stderr


def test_undo_restores_the_commented_file_byte_for_byte(cli, isolated_home) -> None:
    path = write(global_config(isolated_home, "opencode.jsonc"), COMMENTED.replace("\n", "\r\n"))
    original = path.read_bytes()

    assert cli("config", "opencode", "--preset", "mock").exit_code == 0
    written = path.read_bytes()
    assert b"\r\n" in written and b"\n" not in written.replace(b"\r\n", b"")  # CRLF kept
    assert cli("config", "undo", "--client", "opencode").exit_code == 0
    assert path.read_bytes() == original


def test_a_second_identical_run_changes_nothing(cli, isolated_home) -> None:
    assert cli("config", "opencode", "--preset", "mock").exit_code == 0
    before = global_config(isolated_home).read_bytes()
    again = cli("config", "opencode", "--preset", "mock")
    assert "nothing written" in again.stdout
    assert global_config(isolated_home).read_bytes() == before


@pytest.mark.parametrize(
    ("text", "where"),
    [
        ('{\n  "model": "a/b",\n  "model": "c/d"\n}\n', ":3:3"),  # OpenCode keeps the last
        ('{\n  "provider": {\n    "x": 1\n  \n', ":5:1"),  # never closed
        ('{ "a": 1 } trailing', ":1:12"),
        ("[1, 2]", "not an object"),
    ],
)
def test_a_file_pdnotes_cannot_parse_is_never_overwritten(cli, isolated_home, text, where) -> None:
    path = write(global_config(isolated_home), text)

    result = cli("config", "opencode", "--preset", "mock")

    assert result.exit_code == 2
    assert where in result.stderr
    assert path.read_text() == text


def test_project_scope_writes_the_project_file(cli, tmp_path: Path) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    result = cli(
        "config", "opencode", "--preset", "mock", "--scope", "project",
        "--project-dir", str(project),
    )  # fmt: skip
    assert result.exit_code == 0, result.stderr
    assert data_of(project / "opencode.json")["model"] == "pdnotes-mock/pd-mock-1"


def test_output_limit_without_a_window_is_refused(cli, isolated_home) -> None:
    result = cli(
        "config", "opencode", "--base-url", "https://gw.example.com/v1", "--model", "m",
        "--output-limit", "1000",
    )  # fmt: skip
    assert result.exit_code == 2
    assert "--context-window" in result.stderr


def test_show_lists_the_layers_and_the_project_wins(
    cli, isolated_home, tmp_path: Path, monkeypatch
) -> None:
    assert cli("config", "opencode", "--preset", "mock").exit_code == 0
    project = tmp_path / "repo"
    (project / ".git").mkdir(parents=True)
    write(project / "opencode.jsonc", '{ // project\n  "model": "pdnotes-mock/other" }')
    monkeypatch.chdir(project)

    result = cli("config", "show", "--client", "opencode", "--json")

    assert result.exit_code == 0, result.stderr
    (setup,) = result.json()["clients"]
    assert setup["files"] == [
        str(global_config(isolated_home)),
        str(project / "opencode.jsonc"),
    ]
    model = next(v for v in setup["values"] if v["name"] == "model")
    assert model == {
        "name": "model",
        "value": "pdnotes-mock/other",
        "source": str(project / "opencode.jsonc"),
    }


def test_opencode_config_content_is_the_highest_layer(cli, isolated_home, monkeypatch) -> None:
    assert cli("config", "opencode", "--preset", "mock").exit_code == 0
    inline = {"provider": {"pdnotes-mock": {"options": {"baseURL": "http://127.0.0.1:9/x"}}}}
    monkeypatch.setenv("OPENCODE_CONFIG_CONTENT", json.dumps(inline))

    result = cli("config", "show", "--client", "opencode")

    assert result.exit_code == 0, result.stderr
    assert "POST http://127.0.0.1:9/x/chat/completions" in result.stdout
    assert "$OPENCODE_CONFIG_CONTENT" in result.stdout


def test_a_project_file_that_overrides_the_model_is_named(cli, tmp_path: Path) -> None:
    project = tmp_path / "repo"
    (project / ".git").mkdir(parents=True)
    write(project / "opencode.json", '{"model": "elsewhere/m"}')

    result = cli("config", "opencode", "--preset", "mock", "--project-dir", str(project))

    assert result.exit_code == 0, result.stderr
    assert f"{project / 'opencode.json'} sets model too" in result.stdout + result.stderr


def test_nesting_past_the_limit_is_refused_not_a_traceback(cli, isolated_home) -> None:
    path = write(global_config(isolated_home), '{"a": ' * 200 + "1" + "}" * 200)
    result = cli("config", "opencode", "--preset", "mock")
    assert result.exit_code == 2 and "nests too deeply" in result.stderr
    assert "Traceback" not in result.stderr and path.read_text().startswith('{"a": {"a"')


def test_context_window_from_the_gateways_models(cli, isolated_home, engine_server) -> None:
    result = cli(
        "config", "opencode", "--base-url", engine_server.base_url, "--model", "pd-mock-1",
        "--context-window", "gateway", "--output-limit", "2048",
    )  # fmt: skip
    assert result.exit_code == 0, result.stderr
    assert "context window 32768 (max_model_len)" in result.stdout
    model = data_of(global_config(isolated_home))["provider"]["gateway"]["models"]["pd-mock-1"]
    assert model["limit"] == {"context": 32768, "output": 2048}


def test_a_fifo_or_binary_file_is_refused_with_a_message(cli, isolated_home) -> None:
    import os

    path = global_config(isolated_home)
    path.parent.mkdir(parents=True)
    os.mkfifo(path)
    fifo = cli("config", "opencode", "--preset", "mock")
    assert fifo.exit_code == 2 and "Traceback" not in fifo.stderr and str(path) in fifo.stderr
    path.unlink()
    path.write_bytes(b'{"a": "\x00\xff\xfe"}')
    binary = cli("config", "opencode", "--preset", "mock")
    assert binary.exit_code == 2 and "Traceback" not in binary.stderr
    assert path.read_bytes() == b'{"a": "\x00\xff\xfe"}'


def test_a_symlinked_config_is_written_through_the_link(cli, isolated_home, tmp_path) -> None:
    target = write(tmp_path / "dotfiles" / "opencode.jsonc", COMMENTED)
    link = global_config(isolated_home, "opencode.jsonc")
    link.parent.mkdir(parents=True)
    link.symlink_to(target)

    assert cli("config", "opencode", "--preset", "mock").exit_code == 0

    assert link.is_symlink() and "// my own settings" in target.read_text()
    assert data_of(target)["model"] == "pdnotes-mock/pd-mock-1"


def test_a_block_comment_over_lines_after_the_last_member_keeps_the_edit_out(
    cli, isolated_home
) -> None:
    # issue 36: OpenCode read the edit as part of the comment (exit 0, the setup lost)
    import json5

    text = '{\n  "theme": "tokyonight" /* mine\n  and more */\n}\n'
    path = write(global_config(isolated_home), text)
    result = cli("config", "opencode", "--preset", "mock")
    assert result.exit_code == 0, result.stderr
    written = path.read_text()
    assert "/* mine\n  and more */" in written
    data = data_of(path)
    assert data["theme"] == "tokyonight" and data["model"] == "pdnotes-mock/pd-mock-1"
    assert "pdnotes-mock" in data["provider"]
    assert json5.loads(written) == data  # jsonc-parser's reading: an independent reader agrees


def test_a_line_comment_ends_at_a_lone_cr_as_opencode_reads_it(cli, isolated_home) -> None:
    # issue 36: OpenCode ends `//` at a lone CR; pdnotes read the next line as comment too and
    # turned a file OpenCode read as valid into one it rejects
    import json5

    text = '{\r  "theme": "tokyonight", // mine\r  "autoupdate": false\r}\r'
    path = write(global_config(isolated_home), text)
    assert json5.loads(text) == {"theme": "tokyonight", "autoupdate": False}
    assert data_of(path) == {"theme": "tokyonight", "autoupdate": False}
    result = cli("config", "opencode", "--preset", "mock")
    assert result.exit_code == 0, result.stderr
    written = path.read_bytes().decode()
    assert "// mine\r" in written
    data = json5.loads(written)
    assert data == data_of(path)
    assert data["theme"] == "tokyonight" and data["autoupdate"] is False
    assert data["model"] == "pdnotes-mock/pd-mock-1"
