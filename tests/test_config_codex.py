"""`pdnotes config codex`: merges a provider into config.toml changing only what it owns,
writes safely (backup, atomic, mode, symlink), and refuses what would break Codex."""

from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path
from typing import Any

import pytest
import tomlkit
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

FIXTURES = Path(__file__).parent / "fixtures" / "config"
OWNED_PROVIDER_KEYS = ("name", "base_url", "env_key", "wire_api", "query_params")


def config_path(home: Path) -> Path:
    return home / ".codex" / "config.toml"


def write_config(home: Path, text: str) -> Path:
    path = config_path(home)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def backups(home: Path, client: str = "codex") -> list[Path]:
    folder = home / ".pdnotes" / "backups" / client
    return sorted(folder.glob("*.json")) if folder.is_dir() else []


def assert_only_owned_changed(old: str, new: str, provider: str) -> None:
    """Everything pdnotes does not own is the same in both documents: the same values, and
    the same lines byte for byte, in the same order (blank lines aside: a new table gets one).
    Both documents are compared with the owned keys taken out, so a repeated line (two
    `name = "x"` in different tables) cannot be mistaken for a moved one, as a line diff did."""
    before, after = _unowned(old, provider), _unowned(new, provider)
    assert after[0] == before[0], "a value pdnotes does not own changed"
    assert after[1] == before[1], "a line pdnotes does not own changed"


def _unowned(text: str, provider: str) -> tuple[dict[str, Any], list[str]]:
    """`text` without what pdnotes owns (top-level model and model_provider, and the owned
    keys of [model_providers.PROVIDER]): its values, and its non-blank lines."""
    doc = tomlkit.parse(text)
    for key in ("model", "model_provider"):
        doc.pop(key, None)
    providers = doc.get("model_providers")
    if providers is not None and provider in providers:
        table = providers[provider]
        for key in OWNED_PROVIDER_KEYS:
            table.pop(key, None)
        if not table:  # only owned keys: the table itself is pdnotes' (it may have added it)
            del providers[provider]
        if not providers:
            del doc["model_providers"]
    lines = [line for line in tomlkit.dumps(doc).splitlines() if line.strip()]
    return doc.unwrap(), lines


# -- the rich hand-written document ---------------------------------------------------------------


def test_rich_config_keeps_every_byte_it_does_not_own(cli, isolated_home: Path) -> None:
    original = (FIXTURES / "rich.toml").read_text(encoding="utf-8")
    path = write_config(isolated_home, original)

    result = cli("config", "codex", "--preset", "taotoken", "--model", "glm-4.6")

    assert result.exit_code == 0, result.stderr
    new = path.read_text(encoding="utf-8")
    assert_only_owned_changed(original, new, "taotoken")
    doc = tomlkit.parse(new)
    assert doc["model"] == "glm-4.6" and doc["model_provider"] == "taotoken"
    assert dict(doc["model_providers"]["taotoken"]) == {
        "name": "TaoToken",
        "base_url": "https://taotoken.net/api",
        "env_key": "TAOTOKEN_API_KEY",
        "wire_api": "responses",
    }
    assert '"/home/me/src/日本語-プロジェクト"' in new
    assert 'model = "glm-4.6"   # the model I use most' in new  # the comment stays


def test_undo_restores_the_original_byte_for_byte(cli, isolated_home: Path) -> None:
    original = (FIXTURES / "rich.toml").read_bytes()
    path = config_path(isolated_home)
    path.parent.mkdir(parents=True)
    path.write_bytes(original)
    os.chmod(path, 0o640)

    assert cli("config", "codex", "--preset", "mock").exit_code == 0
    assert path.read_bytes() != original
    undone = cli("config", "undo", "--client", "codex")

    assert undone.exit_code == 0, undone.stderr
    assert path.read_bytes() == original
    assert stat.S_IMODE(path.stat().st_mode) == 0o640


def test_updating_an_existing_provider_changes_only_differing_keys(cli, isolated_home) -> None:
    text = (
        'model = "a"\nmodel_provider = "gw"\n\n[model_providers.gw]\nname = "GW"  # mine\n'
        'base_url = "https://old.example/api"\nenv_key = "GW_KEY"\nrequest_max_retries = 0\n'
    )
    path = write_config(isolated_home, text)

    result = cli("config", "codex", "--provider", "gw", "--base-url", "https://new.example/api")

    assert result.exit_code == 0, result.stderr
    assert path.read_text() == text.replace("old.example", "new.example").replace(
        "request_max_retries = 0\n", 'request_max_retries = 0\nwire_api = "responses"\n'
    )


def test_new_file_is_created_with_the_provider(cli, isolated_home: Path) -> None:
    result = cli("config", "codex", "--preset", "mock")

    assert result.exit_code == 0, result.stderr
    catalog = config_path(isolated_home).parent / "pdnotes-models.json"  # the preset's catalog
    assert config_path(isolated_home).read_text() == (
        f'model = "pd-mock-1"\nmodel_provider = "pdnotes-mock"\nmodel_context_window = 32768\n'
        f'model_catalog_json = "{catalog}"\n\n'
        "[model_providers.pdnotes-mock]\n"
        'name = "pdnotes mock engine"\nbase_url = "http://127.0.0.1:8000/api"\n'
        'wire_api = "responses"\n'
    )
    assert "Codex will call: POST http://127.0.0.1:8000/api/responses" in result.stdout


def test_second_identical_run_writes_nothing(cli, isolated_home: Path) -> None:
    cli("config", "codex", "--preset", "mock")
    result = cli("config", "codex", "--preset", "mock")

    assert result.exit_code == 0
    assert "nothing written" in result.stdout
    assert len(backups(isolated_home)) == 1


# -- URL cleaning and refusals --------------------------------------------------------------------


def test_pasted_url_is_cleaned_and_the_user_is_told(cli, isolated_home: Path) -> None:
    url = "https://taotoken.net/api/v1/chat/completions?utm_source=blog&utm_medium=x&region=cn"
    result = cli("config", "codex", "--preset", "taotoken", "--model", "m", "--base-url", url)

    assert result.exit_code == 0, result.stderr
    provider = tomlkit.parse(config_path(isolated_home).read_text())["model_providers"]["taotoken"]
    assert provider["base_url"] == "https://taotoken.net/api"
    assert dict(provider["query_params"]) == {"region": "cn"}
    for said in ("utm_medium, utm_source", "/chat/completions", "removed /v1", "region"):
        assert said in result.stdout
    assert "POST https://taotoken.net/api/responses?region=cn" in result.stdout
    notes = [ln for ln in result.stdout.splitlines() if ln.startswith("• ")]
    assert len(notes) == 4 and all(n.startswith("• cleaned the base URL: ") for n in notes)


def test_responses_suffix_is_stripped(cli, isolated_home: Path) -> None:
    result = cli(
        "config",
        "codex",
        "--provider",
        "gw",
        "--model",
        "m",
        "--base-url",
        "https://gw.example/api/responses/",
    )
    assert result.exit_code == 0
    assert 'base_url = "https://gw.example/api"' in config_path(isolated_home).read_text()


@pytest.mark.parametrize("reserved", ["openai", "ollama", "lmstudio"])
def test_reserved_provider_ids_are_refused_with_the_fix(cli, isolated_home, reserved) -> None:
    result = cli(
        "config",
        "codex",
        "--provider",
        reserved,
        "--base-url",
        "https://x.example/v1",
        "--model",
        "m",
    )

    assert result.exit_code == 2
    assert f"--provider {reserved}-custom" in result.stderr
    assert not config_path(isolated_home).exists()


def test_openai_preset_uses_a_custom_id(cli, isolated_home: Path) -> None:
    assert cli("config", "codex", "--preset", "openai", "--model", "gpt-5.1").exit_code == 0
    doc = tomlkit.parse(config_path(isolated_home).read_text())
    assert doc["model_provider"] == "openai-custom"
    assert doc["model_providers"]["openai-custom"]["base_url"] == "https://api.openai.com/v1"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--wire-api", "chat"], "no longer supported"),
        (["--env-key", "sk-abcdefghijklmnopqrstuvwxyz123456"], "NAME of an environment variable"),
        (["--base-url", "taotoken.net/api"], "no http:// or https:// scheme"),
        (["--preset", "nope"], "no preset named 'nope'"),
    ],
)
def test_bad_flags_exit_2_and_write_nothing(cli, isolated_home, args, message) -> None:
    base = ["config", "codex", "--provider", "gw", "--model", "m", "--base-url", "https://gw/api"]
    result = cli(*base, *args)

    assert result.exit_code == 2
    assert message in result.stderr
    assert "sk-abcdefghijklmnopqrstuvwxyz123456" not in result.stderr
    assert not config_path(isolated_home).exists()


def test_model_is_required_when_nothing_provides_one(cli) -> None:
    result = cli("config", "codex", "--preset", "taotoken")
    assert result.exit_code == 2
    assert "--model" in result.stderr


def test_export_line_masks_a_key_already_set(cli, monkeypatch) -> None:
    monkeypatch.setenv("TAOTOKEN_API_KEY", "sk-live0123456789abcd")
    result = cli("config", "codex", "--preset", "taotoken", "--model", "m")
    assert "export TAOTOKEN_API_KEY=sk-…abcd" in result.stdout
    assert "sk-live0123456789abcd" not in result.stdout


# -- dry run and JSON -----------------------------------------------------------------------------


def test_dry_run_prints_a_diff_and_writes_nothing(cli, isolated_home: Path) -> None:
    original = (FIXTURES / "rich.toml").read_text()
    path = write_config(isolated_home, original)

    result = cli("config", "codex", "--preset", "mock", "--dry-run")

    assert result.exit_code == 0
    assert path.read_text() == original
    assert backups(isolated_home) == []
    assert '-model = "gpt-5.1"   # the model I use most' in result.stdout
    assert '+model = "pd-mock-1"   # the model I use most' in result.stdout
    assert "+[model_providers.pdnotes-mock]" in result.stdout


def test_json_output_follows_the_contract(cli, isolated_home: Path) -> None:
    result = cli(
        "config",
        "codex",
        "--preset",
        "taotoken",
        "--model",
        "m",
        "--json",
        "--base-url",
        "https://taotoken.net/api?utm_source=x",
    )

    doc = result.json()
    assert doc["schema"] == "pdnotes.config-write/1"
    assert doc["written"] is True and doc["file"] == str(config_path(isolated_home))
    assert doc["request_url"] == "https://taotoken.net/api/responses"
    assert doc["export_line"] == "export TAOTOKEN_API_KEY=<your API key>"
    assert doc["backup"] and Path(doc["backup"]).exists()
    assert doc["diff"].startswith("--- /dev/null")
    assert any("utm_source" in n for n in doc["notes"])


# -- safety: unparseable, odd files, atomicity, symlinks, backups ---------------------------------


def test_unparseable_file_is_never_overwritten(cli, isolated_home: Path) -> None:
    broken = 'model = "m"\n[model_providers.gw\nname = "x"\n'
    path = write_config(isolated_home, broken)

    result = cli("config", "codex", "--preset", "mock")

    assert result.exit_code == 2
    assert f"{path}:2:" in result.stderr  # file, line and column
    assert "Traceback" not in result.stderr
    assert path.read_text() == broken
    assert backups(isolated_home) == []


def test_binary_file_gets_a_clear_message(cli, isolated_home: Path) -> None:
    path = config_path(isolated_home)
    path.parent.mkdir(parents=True)
    path.write_bytes(b"\x7fELF\x00\x01\x02binary")

    result = cli("config", "codex", "--preset", "mock")

    assert result.exit_code == 2
    assert "binary file" in result.stderr and "Traceback" not in result.stderr
    assert path.read_bytes() == b"\x7fELF\x00\x01\x02binary"


def test_huge_file_is_refused_without_reading_it_all(cli, isolated_home: Path) -> None:
    path = config_path(isolated_home)
    path.parent.mkdir(parents=True)
    with path.open("wb") as handle:
        handle.truncate(11 * 1024 * 1024)  # sparse: 11 MB without writing them

    result = cli("config", "codex", "--preset", "mock")

    assert result.exit_code == 2
    assert "11.5 MB" in result.stderr and "Traceback" not in result.stderr


def test_unreadable_file_gets_a_clear_message(cli, isolated_home: Path) -> None:
    # Tests run as root, which reads any mode; a folder in place of the file is the
    # unreadable case root still hits; PermissionError is simulated in the next test.
    config_path(isolated_home).mkdir(parents=True)

    result = cli("config", "codex", "--preset", "mock")

    assert result.exit_code == 2
    assert "is a folder, not a file" in result.stderr and "Traceback" not in result.stderr


def test_permission_denied_on_read_is_an_input_error(cli, isolated_home, monkeypatch) -> None:
    path = write_config(isolated_home, 'model = "m"\n')
    real_open = os.open

    def deny(name, *args, **kwargs):  # type: ignore[no-untyped-def]
        if Path(name) == path:  # tests run as root, where chmod 000 does not deny
            raise PermissionError(13, "Permission denied")
        return real_open(name, *args, **kwargs)

    monkeypatch.setattr(os, "open", deny)
    result = cli("config", "codex", "--preset", "mock")

    assert result.exit_code == 2
    assert "permission denied" in result.stderr and "Traceback" not in result.stderr


def test_a_codex_home_it_may_not_enter_is_an_input_error(cli, isolated_home, monkeypatch):
    """CODEX_HOME mode 000: looking for a symlink at config.toml raised PermissionError before
    any read. Root enters any folder, so the lstat's refusal is simulated; the real chmod is
    test_a_codex_home_with_mode_000_is_an_input_error."""
    path = write_config(isolated_home, 'model = "x"\n')
    real_lstat = os.lstat

    def deny(name, *args, **kwargs):  # type: ignore[no-untyped-def]
        if Path(name).parent == path.parent:
            raise PermissionError(13, "Permission denied", str(name))
        return real_lstat(name, *args, **kwargs)

    with monkeypatch.context() as patch:
        patch.setattr(os, "lstat", deny)
        result = cli("config", "codex", "--preset", "mock")

    assert result.exit_code == 2 and "Traceback" not in result.stderr
    assert f"cannot reach {path}: permission denied" in result.stderr
    assert "nothing was changed" in result.stderr
    assert path.read_text() == 'model = "x"\n' and backups(isolated_home) == []


def test_a_codex_home_with_mode_000_is_an_input_error(cli, isolated_home, modes_deny) -> None:
    path = write_config(isolated_home, 'model = "x"\n')
    path.parent.chmod(0)
    try:
        result = cli("config", "codex", "--preset", "mock")
    finally:
        path.parent.chmod(0o755)

    assert result.exit_code == 2 and "Traceback" not in result.stderr
    assert f"cannot reach {path}: permission denied" in result.stderr
    assert path.read_text() == 'model = "x"\n' and backups(isolated_home) == []


def test_symlinked_config_is_written_through_to_its_target(cli, isolated_home, tmp_path) -> None:
    target = tmp_path / "dotfiles" / "codex.toml"
    target.parent.mkdir()
    target.write_text('# from my dotfiles repo\nmodel = "x"\n')
    link = config_path(isolated_home)
    link.parent.mkdir(parents=True)
    link.symlink_to(target)

    assert cli("config", "codex", "--preset", "mock").exit_code == 0

    assert link.is_symlink() and link.resolve() == target.resolve()
    assert 'model_provider = "pdnotes-mock"' in target.read_text()
    assert target.read_text().startswith("# from my dotfiles repo\n")


def test_write_keeps_the_mode_and_leaves_no_temp_files(cli, isolated_home: Path) -> None:
    path = write_config(isolated_home, 'model = "x"\n')
    os.chmod(path, 0o600)

    assert cli("config", "codex", "--preset", "mock").exit_code == 0

    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert sorted(p.name for p in path.parent.iterdir()) == ["config.toml", "pdnotes-models.json"]


def test_unwritable_folder_is_a_clear_error_and_nothing_changes(
    cli, isolated_home, monkeypatch
) -> None:
    path = write_config(isolated_home, 'model = "x"\n')

    def refuse(*args, **kwargs):  # type: ignore[no-untyped-def]
        raise PermissionError(13, "Permission denied")

    # Root ignores folder modes, so the refusal is simulated where the temp file is created.
    monkeypatch.setattr("notes_cli.fileio.tempfile.mkstemp", refuse)
    result = cli("config", "codex", "--preset", "mock")

    assert result.exit_code != 0
    assert "Permission denied" in result.stderr and "nothing was changed" in result.stderr
    assert path.read_text() == 'model = "x"\n'


def test_only_the_last_ten_backups_are_kept(cli, isolated_home: Path) -> None:
    for n in range(13):
        result = cli("config", "codex", "--preset", "mock", "--model", f"m{n}")
        assert result.exit_code == 0
    kept = backups(isolated_home)
    assert len(kept) == 10
    newest = kept[-1].with_suffix(".bak").read_text()
    assert 'model = "m11"' in newest


def test_a_file_where_the_backup_folder_goes_is_a_clear_error(cli, isolated_home: Path) -> None:
    path = write_config(isolated_home, 'model = "x"\n')
    folder = isolated_home / ".pdnotes" / "backups" / "codex"
    folder.parent.mkdir(parents=True)
    folder.write_text("not a folder")

    result = cli("config", "codex", "--preset", "mock")

    assert result.exit_code == 1 and "Traceback" not in result.stderr
    assert f"cannot save a backup in {folder}, so nothing was changed" in result.stderr
    assert "is a file, not a folder" in result.stderr
    assert path.read_text() == 'model = "x"\n' and folder.read_text() == "not a folder"


def test_undo_when_the_undone_folder_cannot_be_made_changes_nothing(
    cli, isolated_home: Path
) -> None:
    path = config_path(isolated_home)
    for model in ("a", "b"):
        assert cli("config", "codex", "--preset", "mock", "--model", model).exit_code == 0
    (isolated_home / ".pdnotes" / "backups" / "codex" / "undone").write_text("")

    result = cli("config", "undo", "--client", "codex")

    assert result.exit_code == 1 and "Traceback" not in result.stderr
    assert "cannot save a backup in" in result.stderr and "nothing was changed" in result.stderr
    assert 'model = "b"' in path.read_text() and len(backups(isolated_home)) == 2


def test_a_backup_folder_that_cannot_be_created_is_a_clear_error(
    cli, isolated_home, monkeypatch
) -> None:
    """`backups/` read-only and `backups/codex` not made yet. Root ignores folder modes, so
    the refusal is simulated at the mkdir; the real chmod is
    test_a_read_only_backups_folder_is_a_clear_error (skipped as root)."""
    path = write_config(isolated_home, 'model = "x"\n')
    folder = isolated_home / ".pdnotes" / "backups" / "codex"
    real_mkdir = Path.mkdir

    def refuse(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        if self == folder:
            raise PermissionError(13, "Permission denied", str(self))
        return real_mkdir(self, *args, **kwargs)

    with monkeypatch.context() as patch:
        patch.setattr(Path, "mkdir", refuse)
        result = cli("config", "codex", "--preset", "mock")

    assert result.exit_code == 1 and "Traceback" not in result.stderr
    assert f"cannot save a backup in {folder}, so nothing was changed" in result.stderr
    assert "Permission denied" in result.stderr
    assert path.read_text() == 'model = "x"\n' and not folder.exists()


def test_a_backup_whose_meta_cannot_be_written_leaves_no_copy(
    cli, isolated_home, monkeypatch
) -> None:
    from notes_cli import fileio

    path = write_config(isolated_home, 'model = "x"\n')
    real_write = fileio.atomic_write

    def meta_fails(target, data, **kwargs):  # type: ignore[no-untyped-def]
        if Path(target).suffix == ".json":
            raise OSError(28, "No space left on device")
        return real_write(target, data, **kwargs)

    with monkeypatch.context() as patch:
        patch.setattr(fileio, "atomic_write", meta_fails)
        result = cli("config", "codex", "--preset", "mock")

    assert result.exit_code == 1 and "Traceback" not in result.stderr
    assert "cannot save a backup in" in result.stderr and "No space left" in result.stderr
    assert path.read_text() == 'model = "x"\n'
    assert not list((isolated_home / ".pdnotes" / "backups" / "codex").iterdir())


def test_a_read_only_backups_folder_is_a_clear_error(cli, isolated_home, modes_deny) -> None:
    path = write_config(isolated_home, 'model = "x"\n')
    assert cli("config", "claude", "--preset", "mock").exit_code == 0
    (isolated_home / ".pdnotes" / "backups").chmod(0o555)
    try:
        result = cli("config", "codex", "--preset", "mock")
    finally:
        (isolated_home / ".pdnotes" / "backups").chmod(0o755)

    assert result.exit_code == 1 and "Traceback" not in result.stderr
    assert "cannot save a backup in" in result.stderr and "Permission denied" in result.stderr
    assert path.read_text() == 'model = "x"\n'


def test_repeated_undo_walks_back_through_history(cli, isolated_home: Path) -> None:
    path = config_path(isolated_home)
    for model in ("a", "b", "c"):
        cli("config", "codex", "--preset", "mock", "--model", model)

    cli("config", "undo", "--client", "codex")
    assert 'model = "b"' in path.read_text()
    cli("config", "undo", "--client", "codex")
    assert 'model = "a"' in path.read_text()
    cli("config", "undo", "--client", "codex")
    assert not path.exists()
    last = cli("config", "undo", "--client", "codex")
    assert last.exit_code == 0 and "nothing to undo: no codex backup" in last.stdout


# -- property: generated documents ----------------------------------------------------------------

_bare_key = st.from_regex(r"[a-z][a-z0-9_]{0,8}", fullmatch=True).filter(
    lambda k: k not in ("model", "model_provider", "model_providers", "profile")
)
_text = st.text(
    st.characters(blacklist_categories=("Cs", "Cc"), blacklist_characters="\"\\'"), max_size=12
)
# TOML's four string forms: a rewrite of an unchanged value would turn 'x' into "x".
_QUOTES = ('"{}"', "'{}'", "'''{}'''", '"""{}"""')


def _quoted(strings: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    return st.tuples(strings, st.sampled_from(_QUOTES)).map(lambda pair: pair[1].format(pair[0]))


_string = _quoted(_text)
_value = st.one_of(
    _string,
    st.integers(-1000, 10**6).map(str),
    st.booleans().map(lambda b: str(b).lower()),
    st.lists(st.integers(0, 99).map(str), max_size=3).map(lambda xs: "[" + ", ".join(xs) + "]"),
)
_comment = _text.map(lambda s: f"# {s}")
_spacing = st.sampled_from([" = ", "=", "  =  "])


@st.composite
def _pairs(draw: st.DrawFn) -> list[str]:
    keys = draw(st.lists(_bare_key, max_size=4, unique=True))
    lines = []
    for key in keys:
        line = f"{key}{draw(_spacing)}{draw(_value)}"
        if draw(st.booleans()):
            line += f"   {draw(_comment)}"
        lines.append(line)
        if draw(st.integers(0, 3)) == 0:
            lines.append(draw(_comment))
    return lines


@st.composite
def codex_documents(draw: st.DrawFn) -> str:
    """config.toml files as people write them: comments, blank lines, unicode, other providers,
    MCP servers, trust entries, profiles, unknown keys; sometimes already naming our model."""
    out: list[str] = []
    if draw(st.booleans()):
        out.append(draw(_comment))
    if draw(st.booleans()):
        out.append(
            f"model = {draw(_string)}" + (f"  {draw(_comment)}" if draw(st.booleans()) else "")
        )
    if draw(st.booleans()):
        out.append(f"model_provider = {draw(_quoted(_bare_key))}")
    out += draw(_pairs())
    if draw(st.booleans()):  # our provider already exists, partly hand-edited
        out.append("[model_providers.gw]")
        out.append(f"name = {draw(_string)}   {draw(_comment)}")
        if draw(st.booleans()):
            out.append('base_url = "https://old.example/v1"')
        out += draw(_pairs())
    headers = draw(
        st.lists(
            st.one_of(
                _bare_key.map(lambda k: f"[model_providers.{k}]"),
                _bare_key.map(lambda k: f"[mcp_servers.{k}]"),
                _text.map(lambda s: f'[projects."/home/{s}"]'),
                _bare_key.map(lambda k: f"[profiles.{k}]"),
                _bare_key.map(lambda k: f"[{k}]"),
            ),
            max_size=5,
            unique=True,
        )
    )
    for header in headers:
        out.append(draw(st.sampled_from(["", "\n"])) + header)
        if header.startswith("[model_providers."):
            out.append(f"name = {draw(_string)}")
        out += draw(_pairs())
    ending = draw(st.sampled_from(["\n", "", "\n\n"]))
    return "\n".join(out) + ending


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(document=codex_documents())
def test_generated_documents_keep_unowned_bytes_and_undo_restores_them(
    cli, isolated_home: Path, document: str
) -> None:
    try:
        tomlkit.parse(document)
    except Exception:
        return  # generated text TOML itself rejects (e.g. a duplicated table): not our case
    # Hypothesis runs every example in the same fixture home: start each from nothing, so a
    # failing example (which stops before any cleanup) replays the same when shrunk.
    shutil.rmtree(isolated_home / ".pdnotes", ignore_errors=True)
    path = write_config(isolated_home, document)

    result = cli(
        "config",
        "codex",
        "--provider",
        "gw",
        "--model",
        "m-1",
        "--base-url",
        "https://gw.example/api",
        "--env-key",
        "GW_KEY",
    )
    assert result.exit_code == 0, result.stderr

    new = path.read_text(encoding="utf-8")
    assert_only_owned_changed(document, new, "gw")
    parsed = tomlkit.parse(new)
    assert parsed["model"] == "m-1" and parsed["model_provider"] == "gw"
    assert parsed["model_providers"]["gw"]["wire_api"] == "responses"
    assert cli("config", "undo", "--client", "codex").exit_code == 0
    assert path.read_bytes() == document.encode("utf-8")


@st.composite
def already_configured_documents(draw: st.DrawFn) -> str:
    """config.toml already holding exactly what the command would set, in any string form."""
    top = [
        f"model = {draw(_quoted(st.just('m-1')))}",
        f"model_provider = {draw(_quoted(st.just('gw')))}",
    ]
    provider = [
        f"name = {draw(_quoted(_text.filter(bool)))}",  # an empty name is replaced: a change
        f"base_url = {draw(_quoted(st.just('https://gw.example/api')))}",
        f"env_key = {draw(_quoted(st.just('GW_KEY')))}",
        f"wire_api = {draw(_quoted(st.just('responses')))}",
    ]
    lines = [*draw(st.permutations(top)), *draw(_pairs()), "", "[model_providers.gw]"]
    lines += [*draw(st.permutations(provider)), *draw(_pairs())]
    return "\n".join(lines) + "\n"


@settings(
    max_examples=30,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(document=already_configured_documents())
def test_a_run_that_changes_nothing_keeps_every_byte(cli, isolated_home, document) -> None:
    shutil.rmtree(isolated_home / ".pdnotes", ignore_errors=True)  # hypothesis reuses the home
    path = write_config(isolated_home, document)
    args = ("config", "codex", "--provider", "gw", "--model", "m-1")
    args += ("--base-url", "https://gw.example/api", "--env-key", "GW_KEY")

    dry = cli(*args, "--dry-run")
    real = cli(*args)

    assert dry.exit_code == 0 and real.exit_code == 0, dry.stderr + real.stderr
    assert "no change" in dry.stdout and "nothing written" in real.stdout, dry.stdout
    assert path.read_bytes() == document.encode("utf-8")
    assert backups(isolated_home) == []


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            'model_providers = { other = { name = "O" } }\n',
            'model_providers = { other = { name = "O" }, gw = {name = "gw", '
            'base_url = "https://gw.example/api", wire_api = "responses"}}\n'
            'model = "m"\nmodel_provider = "gw"\n',
        ),
        (
            'model_providers.gw.name = "G"\n',
            'model_providers.gw.name = "G"\n'
            'model_providers.gw.base_url = "https://gw.example/api"\n'
            'model_providers.gw.wire_api = "responses"\nmodel = "m"\nmodel_provider = "gw"\n',
        ),
    ],
)
def test_inline_and_dotted_provider_styles_are_kept(cli, isolated_home, text, expected) -> None:
    path = write_config(isolated_home, text)
    result = cli(
        "config",
        "codex",
        "--provider",
        "gw",
        "--model",
        "m",
        "--base-url",
        "https://gw.example/api",
    )
    assert result.exit_code == 0, result.stderr
    assert path.read_text() == expected


@pytest.mark.parametrize(
    "text", ["model_providers = { gw = 5 }\n", '[[model_providers]]\nname = "x"\n']
)
def test_provider_shapes_it_cannot_merge_are_refused(cli, isolated_home, text) -> None:
    path = write_config(isolated_home, text)
    result = cli(
        "config",
        "codex",
        "--provider",
        "gw",
        "--model",
        "m",
        "--base-url",
        "https://gw.example/api",
    )
    assert result.exit_code == 2
    assert "is not a table" in result.stderr and "Traceback" not in result.stderr
    assert path.read_text() == text


GW_ARGS = ("config", "codex", "--provider", "gw", "--model", "m")
GW_ARGS += ("--base-url", "https://gw.example/api")


@pytest.mark.parametrize(
    "text",
    [
        "model_providers.other.name = 'Other'\n",
        "model_providers.other.name = 'Other'\ntui.notifications = true\n",
        "model_providers.other.name = 'Other'\n[model_providers.q]\nname = 'Q'\n",
        "approval_policy = 'never'\nmodel_providers.other.name = 'Other'\n[tui]\nx = 1\n",
    ],
)
def test_a_new_provider_beside_dotted_providers_leaves_top_level_keys_top_level(
    cli, isolated_home, text
) -> None:
    import tomllib

    path = write_config(isolated_home, text)
    result = cli(*GW_ARGS)
    assert result.exit_code == 0, result.stderr

    before, after = tomllib.loads(text), tomllib.loads(path.read_text())
    assert after.pop("model") == "m" and after.pop("model_provider") == "gw"
    provider = after["model_providers"].pop("gw")
    assert provider == {"name": "gw", "base_url": "https://gw.example/api", "wire_api": "responses"}
    assert after == before  # the user's `tui` and other providers mean what they meant


def test_an_edit_toml_would_read_differently_is_refused_and_nothing_is_written(
    cli, isolated_home, monkeypatch
) -> None:
    from notes_cli.clients.codex import config as codex_config

    # Without the dotted-key handling, tomlkit puts [model_providers.gw] above `model = …`.
    monkeypatch.setattr(codex_config, "_dotted_piece", lambda doc, key: None)
    text = "model_providers.other.name = 'Other'\ntui.notifications = true\n"
    path = write_config(isolated_home, text)

    for args in (GW_ARGS, (*GW_ARGS, "--dry-run")):
        result = cli(*args)
        assert result.exit_code == 1, result.stdout + result.stderr
        assert "top-level model / model_provider" in result.stderr
        assert "nothing was written" in result.stderr and "Traceback" not in result.stderr
    assert path.read_text() == text
    assert backups(isolated_home) == []


def test_an_edit_that_would_pass_the_toml_limits_is_refused(
    cli, isolated_home, monkeypatch
) -> None:
    from notes_cli.clients import toml_bounds

    text = "".join(f"k{i} = 1\n" for i in range(40))  # 80 pieces
    monkeypatch.setattr(toml_bounds, "MAX_PIECES", 85)  # the provider's lines pass it
    path = write_config(isolated_home, text)

    result = cli(*GW_ARGS)
    assert result.exit_code == 1, result.stdout + result.stderr
    assert "could not read it back; nothing was written" in result.stderr
    assert path.read_text() == text and backups(isolated_home) == []
