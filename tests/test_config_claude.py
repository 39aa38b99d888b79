"""`pdnotes config claude`: merges the gateway into a settings file's env block, keeps every
other key, their order and the indentation, and writes a token only when explicitly asked."""

from __future__ import annotations

import json
import stat
import subprocess
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from notes_cli.clients.claude.config import MODEL_VARIABLES

FIXTURES = Path(__file__).parent / "fixtures" / "config"


def user_settings(home: Path) -> Path:
    return home / ".claude" / "settings.json"


def write_settings(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def test_rich_settings_keep_other_keys_order_and_indentation(cli, isolated_home: Path) -> None:
    original = (FIXTURES / "rich_settings.json").read_text()
    path = write_settings(user_settings(isolated_home), original)

    result = cli("config", "claude", "--preset", "deepseek")

    assert result.exit_code == 0, result.stderr
    new_text = path.read_text()
    new, old = json.loads(new_text), json.loads(original)
    assert list(new) == list(old)  # same keys, same order, nothing added at the top level
    assert {k: v for k, v in new.items() if k != "env"} == {
        k: v for k, v in old.items() if k != "env"
    }
    assert new["env"] == {
        **old["env"],
        "ANTHROPIC_BASE_URL": "https://api.deepseek.com/anthropic",
        "ANTHROPIC_MODEL": "deepseek-chat",
        "ANTHROPIC_DEFAULT_OPUS_MODEL": "deepseek-chat",
        "ANTHROPIC_DEFAULT_SONNET_MODEL": "deepseek-chat",
        "ANTHROPIC_DEFAULT_HAIKU_MODEL": "deepseek-chat",
    }
    assert '\n    "permissions": {\n        "allow": [' in new_text  # 4-space indent kept
    assert "ANTHROPIC_AUTH_TOKEN" not in new_text  # no token written by default
    assert "export ANTHROPIC_AUTH_TOKEN=<your API key>" in result.stdout
    assert "POST https://api.deepseek.com/anthropic/v1/messages" in result.stdout


def test_undo_restores_settings_byte_for_byte(cli, isolated_home: Path) -> None:
    original = (FIXTURES / "rich_settings.json").read_bytes()
    path = user_settings(isolated_home)
    path.parent.mkdir(parents=True)
    path.write_bytes(original)

    assert cli("config", "claude", "--preset", "mock").exit_code == 0
    assert cli("config", "undo", "--client", "claude").exit_code == 0
    assert path.read_bytes() == original


def test_mock_preset_writes_a_placeholder_token_not_a_secret(cli, isolated_home: Path) -> None:
    result = cli("config", "claude", "--preset", "mock")

    env = json.loads(user_settings(isolated_home).read_text())["env"]
    assert env["ANTHROPIC_BASE_URL"] == "http://127.0.0.1:8000/api/anthropic"
    assert env["ANTHROPIC_AUTH_TOKEN"] == "pdnotes-mock-no-key"
    assert env["ANTHROPIC_MODEL"] == "pd-mock-1"
    assert "still needed" not in result.stdout
    doctor = cli("doctor", "--offline", "--client", "claude", "--json").json()
    assert "key-in-file" not in {f["id"] for f in doctor["findings"]}
    assert doctor["ok"] is True


def test_token_env_writes_a_top_level_api_key_helper(cli, isolated_home: Path) -> None:
    result = cli(
        "config",
        "claude",
        "--preset",
        "taotoken",
        "--model",
        "glm-4.6",
        "--token-env",
        "TAOTOKEN_API_KEY",
    )

    assert result.exit_code == 0, result.stderr
    data = json.loads(user_settings(isolated_home).read_text())
    assert data["apiKeyHelper"] == "printenv TAOTOKEN_API_KEY"
    assert "apiKeyHelper" not in data["env"]
    assert "export TAOTOKEN_API_KEY=<your API key>" in result.stdout


@pytest.mark.parametrize(
    ("scope", "relative"),
    [("project", ".claude/settings.json"), ("local", ".claude/settings.local.json")],
)
def test_scopes_write_the_project_files(cli, tmp_path: Path, scope: str, relative: str) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    result = cli(
        "config", "claude", "--preset", "mock", "--scope", scope, "--project-dir", str(project)
    )

    assert result.exit_code == 0, result.stderr
    assert (project / relative).is_file()


def test_literal_token_needs_the_flag_and_reads_the_environment(
    cli, isolated_home: Path, monkeypatch
) -> None:
    monkeypatch.setenv("GW_TOKEN", "sk-gw-0123456789abcdef")
    result = cli(
        "config",
        "claude",
        "--base-url",
        "https://gw.example/api",
        "--model",
        "m",
        "--write-token-from-env",
        "GW_TOKEN",
    )

    assert result.exit_code == 0, result.stderr
    path = user_settings(isolated_home)
    assert json.loads(path.read_text())["env"]["ANTHROPIC_AUTH_TOKEN"] == "sk-gw-0123456789abcdef"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert "sk-gw-0123456789abcdef" not in result.stdout + result.stderr
    assert "sk-…cdef" in result.stdout


def test_literal_token_in_a_git_tracked_file_warns(cli, tmp_path: Path, monkeypatch) -> None:
    project = tmp_path / "repo"
    (project / ".claude").mkdir(parents=True)
    settings = write_settings(project / ".claude" / "settings.json", "{}\n")
    git = ["git", "-c", "user.email=t@example.com", "-c", "user.name=t"]
    subprocess.run(["git", "init", "-q", str(project)], check=True, timeout=30)
    subprocess.run([*git, "-C", str(project), "add", "."], check=True, timeout=30)
    monkeypatch.setenv("GW_TOKEN", "sk-gw-0123456789abcdef")

    result = cli(
        "config",
        "claude",
        "--base-url",
        "https://gw.example/api",
        "--scope",
        "project",
        "--project-dir",
        str(project),
        "--write-token-from-env",
        "GW_TOKEN",
    )

    assert result.exit_code == 0, result.stderr
    assert "git tracks" in result.stderr
    assert "ANTHROPIC_AUTH_TOKEN" in settings.read_text()


def test_literal_token_from_an_unset_variable_is_refused(cli, isolated_home: Path) -> None:
    result = cli("config", "claude", "--preset", "mock", "--write-token-from-env", "NOPE_TOKEN")
    assert result.exit_code == 2
    assert "NOPE_TOKEN is not set" in result.stderr
    assert not user_settings(isolated_home).exists()


@pytest.mark.parametrize(
    ("url", "written"),
    [
        ("https://gw.example/api/v1", "https://gw.example/api"),
        ("https://gw.example/api/v1/messages", "https://gw.example/api"),
        ("https://gw.example/anthropic/?utm_source=x", "https://gw.example/anthropic"),
    ],
)
def test_base_url_is_cleaned_for_claude(cli, isolated_home: Path, url: str, written: str) -> None:
    result = cli("config", "claude", "--base-url", url)
    assert result.exit_code == 0, result.stderr
    env = json.loads(user_settings(isolated_home).read_text())["env"]
    assert env["ANTHROPIC_BASE_URL"] == written


@pytest.mark.parametrize(
    "broken",
    ['{\n  "env": {\n    "A": "1",\n  }\n}\n', '// comment\n{"env": {}}\n', "[1, 2]\n"],
)
def test_unparseable_settings_are_never_overwritten(cli, isolated_home: Path, broken) -> None:
    path = write_settings(user_settings(isolated_home), broken)

    result = cli("config", "claude", "--preset", "mock")

    assert result.exit_code == 2
    assert f"{path}:" in result.stderr and "Traceback" not in result.stderr
    assert path.read_text() == broken
    assert not (isolated_home / ".pdnotes" / "backups").exists()


def test_a_claude_home_with_a_name_too_long_is_a_clear_error(cli, tmp_path: Path) -> None:
    home = tmp_path / ("a" * 300)  # over the 255 bytes a folder name may have

    result = cli("config", "claude", "--preset", "mock", "--claude-home", str(home))

    assert result.exit_code == 2 and "Traceback" not in result.stderr
    assert "name too long for the file system" in result.stderr
    assert "nothing was changed" in result.stderr and "use a shorter path" in result.stderr
    assert not (tmp_path / "home" / ".pdnotes" / "backups").exists()


def test_non_object_env_is_refused(cli, isolated_home: Path) -> None:
    path = write_settings(user_settings(isolated_home), '{"env": ["A=1"]}\n')
    result = cli("config", "claude", "--preset", "mock")
    assert result.exit_code == 2 and '"env"' in result.stderr
    assert path.read_text() == '{"env": ["A=1"]}\n'


def test_dry_run_json_reports_the_diff(cli, isolated_home: Path) -> None:
    result = cli("config", "claude", "--preset", "mock", "--dry-run", "--json")
    doc = result.json()
    assert doc["schema"] == "pdnotes.config-write/1"
    assert doc["written"] is False and doc["dry_run"] is True
    assert '+    "ANTHROPIC_BASE_URL": "http://127.0.0.1:8000/api/anthropic",' in doc["diff"]
    assert doc["request_url"] == "http://127.0.0.1:8000/api/anthropic/v1/messages"
    assert not user_settings(isolated_home).exists()


@pytest.mark.parametrize(
    ("content", "message"),
    [(b'{"env": {}}\x00\x00', "binary file"), (b"\xff\xfe{}", "not UTF-8")],
)
def test_odd_settings_files_get_a_clear_message(cli, isolated_home, content, message) -> None:
    path = user_settings(isolated_home)
    path.parent.mkdir(parents=True)
    path.write_bytes(content)

    result = cli("config", "claude", "--preset", "mock")

    assert result.exit_code == 2
    assert message in result.stderr and "Traceback" not in result.stderr
    assert path.read_bytes() == content


def test_leaving_the_mock_removes_its_placeholder_token(cli, isolated_home: Path) -> None:
    cli("config", "claude", "--preset", "mock")
    result = cli("config", "claude", "--preset", "deepseek")

    env = json.loads(user_settings(isolated_home).read_text())["env"]
    assert "ANTHROPIC_AUTH_TOKEN" not in env
    assert "removed the mock engine's placeholder token" in result.stdout
    assert "still needed: export ANTHROPIC_AUTH_TOKEN=<your API key>" in result.stdout


# -- property: generated settings files ----------------------------------------------------------

_json_scalar = st.one_of(
    st.none(), st.booleans(), st.integers(-(10**6), 10**6), st.text(max_size=10)
)
_json_value = st.recursive(
    _json_scalar,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=6,
)
_other_keys = st.text(min_size=1, max_size=10).filter(
    lambda k: k not in ("env", "apiKeyHelper", "model", "permissions")
)


@st.composite
def settings_documents(draw: st.DrawFn) -> str:
    data = draw(st.dictionaries(_other_keys, _json_value, max_size=5))
    if draw(st.booleans()):
        env = draw(
            st.dictionaries(
                st.from_regex(r"[A-Z][A-Z_]{0,10}", fullmatch=True), st.text(max_size=8), max_size=3
            )
        )
        data["env"] = env
    indent = draw(st.sampled_from([2, 4, "\t"]))
    return json.dumps(data, indent=indent, ensure_ascii=draw(st.booleans())) + "\n"


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(document=settings_documents())
def test_generated_settings_keep_other_keys_and_undo_restores_them(
    cli, isolated_home: Path, document: str
) -> None:
    path = write_settings(user_settings(isolated_home), document)
    old = json.loads(document)

    assert cli("config", "claude", "--preset", "deepseek").exit_code == 0

    new = json.loads(path.read_text(encoding="utf-8"))
    assert [k for k in new if k != "env"] == [k for k in old if k != "env"]
    assert {k: v for k, v in new.items() if k != "env"} == {
        k: v for k, v in old.items() if k != "env"
    }
    owned = {"ANTHROPIC_BASE_URL", *MODEL_VARIABLES}
    old_env = old.get("env", {})
    assert list(new["env"])[: len(old_env)] == list(old_env)  # env keeps its order too
    assert {k: new["env"][k] for k in old_env if k not in owned} == {
        k: v for k, v in old_env.items() if k not in owned
    }
    assert new["env"]["ANTHROPIC_BASE_URL"] == "https://api.deepseek.com/anthropic"
    assert cli("config", "undo", "--client", "claude").exit_code == 0
    assert path.read_bytes() == document.encode("utf-8")
    path.unlink()


GATEWAY = ("config", "claude", "--base-url", "https://gw.example", "--model", "m")


def test_a_rewrite_past_the_read_limit_is_refused_and_nothing_is_written(
    cli, isolated_home: Path
) -> None:
    # 200 KB compact; written indented, each of its 100,000 items 61 levels deep takes a
    # 125-byte line: 12.5 MB, which pdnotes would then refuse to read (show, config, undo).
    nested = "[" * 60 + ",".join(["1"] * 100_000) + "]" * 60
    path = write_settings(user_settings(isolated_home), '{"deep":' + nested + "}")
    before = path.read_bytes()

    for args in (GATEWAY, (*GATEWAY, "--dry-run")):
        result = cli(*args)
        assert result.exit_code == 1, result.stdout + result.stderr
        assert "more than the 10.5 MB pdnotes reads" in result.stderr, result.stderr
        assert "nothing was written" in result.stderr and "Traceback" not in result.stderr
    assert path.read_bytes() == before
    assert not (isolated_home / ".pdnotes" / "backups").exists()
    assert cli("config", "show", "--client", "claude").exit_code == 0


def test_a_settings_file_near_the_read_limit_is_written_and_undone(
    cli, isolated_home: Path
) -> None:
    from notes_cli.fileio import MAX_CONFIG_BYTES

    filler = "x" * (MAX_CONFIG_BYTES - 2_000)
    path = write_settings(user_settings(isolated_home), json.dumps({"notes": filler}, indent=2))
    before = path.read_bytes()

    assert cli(*GATEWAY).exit_code == 0
    assert MAX_CONFIG_BYTES - 2_000 < path.stat().st_size <= MAX_CONFIG_BYTES
    assert cli("config", "show", "--client", "claude").exit_code == 0
    undo = cli("config", "undo", "--client", "claude")
    assert undo.exit_code == 0, undo.stderr
    assert path.read_bytes() == before

    path.write_text(json.dumps({"notes": "x" * (MAX_CONFIG_BYTES - 20)}), encoding="utf-8")
    result = cli(*GATEWAY)  # the env block would push it past the limit
    assert result.exit_code == 1 and "could not read it back" in result.stderr


@pytest.mark.parametrize(
    ("text", "key", "where"),
    [
        (
            "{\n"
            '  "permissions": {"allow": ["Bash(npm test)", "Bash(git diff:*)"]},\n'
            '  "model": "opus",\n'
            '  "permissions": {"deny": ["Read(./.env)"]}\n'
            "}\n",
            "permissions",
            "settings.json:4:3",
        ),
        (
            '{"env": {"ANTHROPIC_MODEL": "a",\n "X": {"ANTHROPIC_MODEL": 1},\n'
            ' "\\u0041NTHROPIC_MODEL": "b"}}',
            "ANTHROPIC_MODEL",
            "settings.json:3:2",
        ),
    ],
)
def test_a_repeated_key_is_refused_rather_than_silently_dropped(
    cli, isolated_home: Path, text: str, key: str, where: str
) -> None:
    path = write_settings(user_settings(isolated_home), text)

    for args in (GATEWAY, (*GATEWAY, "--dry-run")):
        result = cli(*args)
        assert result.exit_code == 2, result.stdout + result.stderr
        assert f'{where}: the key "{key}" appears twice in one object' in result.stderr
        assert "the file was not changed" in result.stderr and "Traceback" not in result.stderr
    assert path.read_text() == text
    assert not (isolated_home / ".pdnotes" / "backups").exists()
    assert cli("config", "show", "--client", "claude").exit_code == 0  # reading is fine


# -- the context window (issue 38): env.CLAUDE_CODE_MAX_CONTEXT_TOKENS ---------------------------


def test_the_context_window_goes_into_the_env_block_keeping_the_rest(
    cli, isolated_home: Path
) -> None:
    path = write_settings(
        user_settings(isolated_home), '{"env": {"MY_VAR": "1"}, "theme": "dark"}\n'
    )
    args = ("config", "claude", "--base-url", "https://gw.example", "--model", "gemma-3")
    result = cli(*args, "--context-window", "65_536")
    assert result.exit_code == 0, result.stderr
    data = json.loads(path.read_text())
    assert data["env"]["CLAUDE_CODE_MAX_CONTEXT_TOKENS"] == "65536"
    assert data["env"]["MY_VAR"] == "1" and data["theme"] == "dark"
    again = cli(*args)  # none asked: the written window stays
    assert again.exit_code == 0, again.stderr
    assert json.loads(path.read_text())["env"]["CLAUDE_CODE_MAX_CONTEXT_TOKENS"] == "65536"
    assert cli("config", "undo", "--client", "claude").exit_code == 0
    assert path.read_text() == '{"env": {"MY_VAR": "1"}, "theme": "dark"}\n'


def test_the_context_window_read_from_the_anthropic_gateways_models(
    cli, isolated_home: Path, start_engine_server
) -> None:
    engine = start_engine_server(max_context_tokens=12_288)  # not the mock preset's 32768
    result = cli(
        "config", "claude", "--base-url", engine.anthropic_base_url, "--model", "pd-mock-1",
        "--context-window", "gateway",
    )  # fmt: skip
    assert result.exit_code == 0, result.stderr
    assert "context window 12288 (max_input_tokens)" in result.stdout
    env = json.loads(user_settings(isolated_home).read_text())["env"]
    assert env["CLAUDE_CODE_MAX_CONTEXT_TOKENS"] == "12288"


def test_a_gateway_that_does_not_list_the_model_writes_nothing(
    cli, isolated_home: Path, engine_server
) -> None:
    result = cli(
        "config", "claude", "--base-url", engine_server.anthropic_base_url, "--model", "other",
        "--context-window", "gateway",
    )  # fmt: skip
    assert result.exit_code == 2
    assert "does not list 'other'" in result.stderr and "--context-window <tokens>" in result.stderr
    assert not user_settings(isolated_home).exists()


def test_a_bridged_window_is_read_from_the_chat_upstreams_models(
    cli, isolated_home: Path, start_engine_server
) -> None:
    engine = start_engine_server(max_context_tokens=12_288)
    result = cli(
        "config", "claude", "--bridge", "--base-url", engine.base_url, "--model", "pd-mock-1",
        "--context-window", "gateway",
    )  # fmt: skip
    assert result.exit_code == 0, result.stderr
    env = json.loads(user_settings(isolated_home).read_text())["env"]
    assert env["CLAUDE_CODE_MAX_CONTEXT_TOKENS"] == "12288"
    assert env["ANTHROPIC_BASE_URL"].startswith("http://127.0.0.1:8787")


def test_a_window_for_a_claude_model_id_says_claude_code_keeps_its_own(
    cli, isolated_home: Path
) -> None:
    """Claude Code (2.1.197 and 2.1.332) reads the variable only for a model id not starting
    with claude-: written as asked, but said."""
    args = ("config", "claude", "--base-url", "https://gw.example", "--context-window", "65536")
    claude = cli(*args, "--model", "claude-sonnet-4-5")
    assert claude.exit_code == 0, claude.stderr
    assert "only for a model id not starting with claude-" in claude.stdout
    other = cli(*args, "--model", "gemma-3")
    assert other.exit_code == 0 and "claude-:" not in other.stdout
