"""What was valid stays valid (issue 11.7): a rewrite of settings.json or config.toml keeps a
UTF-8 BOM, CRLF line endings, single-quoted TOML strings and every number as the user spelled
it where pdnotes does not own the key; `undo` restores the bytes. Property tests over generated
files, plus the cases from the issue."""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from notes_cli.clients import files

BOM = "\ufeff"
LONE_LF = re.compile("(?<!\r)\n")

# -- number spellings --------------------------------------------------------------------------

_digits = st.from_regex(r"(0|[1-9][0-9]{0,6})", fullmatch=True)
_json_numbers = st.builds(
    lambda sign, whole, frac, exp: f"{sign}{whole}{frac}{exp}",
    st.sampled_from(["", "-"]),
    _digits,
    st.one_of(st.just(""), st.from_regex(r"\.[0-9]{1,5}", fullmatch=True)),
    st.one_of(st.just(""), st.from_regex(r"[eE][+-]?0{0,2}[0-9]{1,2}", fullmatch=True)),
)
_toml_numbers = st.one_of(
    st.sampled_from(["1_000", "0x1F", "0xdead_beef", "0o17", "0b1011", "+1", "-0", "+0.0",
                     "1.0", "1e3", "10E2", "6.626e-34", "1E+2", "inf", "-inf", "+inf", "nan",
                     "9_223_372_036_854_775_807", "3.141_592"]),
    _json_numbers.filter(lambda s: not re.match(r"-?0[0-9]", s)),
)  # fmt: skip
_words = st.text(st.characters(codec="utf-8", exclude_characters="'\"\\\r\n\x7f",
                               exclude_categories=("Cc", "Cs")), max_size=8)  # fmt: skip


def _render_json(tree: object, indent: int | str) -> str:
    """json.dumps layout, but with number literals (tuples ("num", literal)) as spelled."""
    literals: list[str] = []

    def mark(value: object) -> object:
        if isinstance(value, tuple):
            literals.append(value[1])
            return f"@@num{len(literals) - 1}@@"
        if isinstance(value, dict):
            return {k: mark(v) for k, v in value.items()}
        if isinstance(value, list):
            return [mark(v) for v in value]
        return value

    text = json.dumps(mark(tree), indent=indent, ensure_ascii=False)
    for i, literal in enumerate(literals):
        text = text.replace(f'"@@num{i}@@"', literal)
    return text


_json_leaf = st.one_of(_json_numbers.map(lambda s: ("num", s)), _words, st.booleans(), st.none())
_json_tree = st.recursive(
    _json_leaf,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(_words, inner, max_size=3)
    ),
    max_leaves=8,
)
_keys = _words.filter(lambda k: k not in ("env", "apiKeyHelper", "model"))


@st.composite
def settings_files(draw: st.DrawFn) -> str:
    tree = draw(st.dictionaries(_keys, _json_tree, max_size=5))
    if draw(st.booleans()):
        tree["env"] = {"KEEP_ME": draw(_words), "N": ("num", draw(_json_numbers))}
    text = _render_json(tree, draw(st.sampled_from([2, 4, "\t"]))) + draw(
        st.sampled_from(["\n", ""])
    )
    if draw(st.booleans()):
        text = text.replace("\n", "\r\n")
    return (BOM if draw(st.booleans()) else "") + text


def _settings_path(home: Path) -> Path:
    path = home / ".claude" / "settings.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    return path


def _assert_same_layout_marks(old: str, new: str) -> None:
    assert new.startswith(BOM) == old.startswith(BOM)
    if "\r\n" in old and not LONE_LF.search(old):
        assert not LONE_LF.search(new), "a CRLF file got LF lines"


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(document=settings_files())
def test_settings_keep_bom_crlf_and_number_spellings(
    cli, isolated_home: Path, document: str
) -> None:
    path = _settings_path(isolated_home)
    path.write_bytes(document.encode("utf-8"))

    result = cli("config", "claude", "--base-url", "https://gw.example", "--model", "m")
    assert result.exit_code == 0, result.stderr

    new = path.read_bytes().decode("utf-8")
    _assert_same_layout_marks(document, new)
    old_tree = files.parse_json(document.removeprefix(BOM), path, keep_numbers=True)
    new_tree = files.parse_json(new.removeprefix(BOM), path, keep_numbers=True)
    assert {k: v for k, v in new_tree.items() if k != "env"} == {
        k: v for k, v in old_tree.items() if k != "env"
    }  # JsonNumber compares by spelling: 1e3 stays 1e3
    for key, value in old_tree.get("env", {}).items():
        assert new_tree["env"][key] == value
    json.loads(new.removeprefix(BOM))  # strict JSON still
    assert cli("config", "undo", "--client", "claude").exit_code == 0
    assert path.read_bytes() == document.encode("utf-8")
    path.unlink()


def test_the_numbers_from_the_issue_keep_their_spelling(cli, isolated_home: Path) -> None:
    path = _settings_path(isolated_home)
    old = (
        BOM
        + '{\r\n  "a": 1.0,\r\n  "b": 1e3,\r\n  "c": 10E2,\r\n  "d": -0,\r\n  "e": 1E-7\r\n}\r\n'
    )
    path.write_bytes(old.encode("utf-8"))

    assert cli("config", "claude", "--base-url", "https://gw.example").exit_code == 0

    new = path.read_bytes().decode("utf-8")
    assert new.startswith(BOM) and not LONE_LF.search(new)
    for line in ('"a": 1.0,', '"b": 1e3,', '"c": 10E2,', '"d": -0,', '"e": 1E-7,'):
        assert f"  {line}\r\n" in new
    assert '"ANTHROPIC_BASE_URL": "https://gw.example"' in new


# -- config.toml -------------------------------------------------------------------------------

_bare = st.from_regex(r"[a-z][a-z0-9_]{0,7}", fullmatch=True).filter(
    lambda k: k not in ("model", "model_provider", "model_providers", "inf", "nan")
)
_toml_value = st.one_of(
    _toml_numbers,
    _words.map(lambda s: f"'{s}'"),
    _words.map(lambda s: f'"{s}"'),
    st.lists(_toml_numbers, max_size=3).map(lambda xs: "[" + ", ".join(xs) + "]"),
)


@st.composite
def codex_files(draw: st.DrawFn) -> str:
    lines = []
    if draw(st.booleans()):
        lines.append("model = 'm-1'")  # already our value, single-quoted: must stay as is
    for key in draw(st.lists(_bare, max_size=5, unique=True)):
        lines.append(f"{key} = {draw(_toml_value)}")
    for table in draw(st.lists(_bare, max_size=2, unique=True)):
        lines.append(f"\n[{table}]")
        lines += [
            f"{k} = {draw(_toml_value)}" for k in draw(st.lists(_bare, max_size=3, unique=True))
        ]
    if draw(st.booleans()):
        lines += ["", "[model_providers.gw]", "name = 'gw'", "base_url = 'https://gw.example/api'"]
    text = "\n".join(lines) + "\n"
    if draw(st.booleans()):
        text = text.replace("\n", "\r\n")
    return (BOM if draw(st.booleans()) else "") + text


def _config_path(home: Path) -> Path:
    path = home / ".codex" / "config.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    return path


def _is_subsequence(old_lines: list[str], new_lines: list[str]) -> bool:
    remaining = iter(new_lines)
    return all(any(line == candidate for candidate in remaining) for line in old_lines)


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(document=codex_files())
def test_config_toml_keeps_bom_crlf_quotes_and_number_spellings(
    cli, isolated_home: Path, document: str
) -> None:
    try:
        tomllib.loads(document.removeprefix(BOM))
    except tomllib.TOMLDecodeError:
        return  # e.g. a key repeated in a table: not a file Codex would read either
    path = _config_path(isolated_home)
    path.write_bytes(document.encode("utf-8"))

    result = cli("config", "codex", "--provider", "gw", "--model", "m-1",
                 "--base-url", "https://gw.example/api")  # fmt: skip
    assert result.exit_code == 0, result.stderr

    new = path.read_bytes().decode("utf-8")
    _assert_same_layout_marks(document, new)
    old_lines = document.removeprefix(BOM).splitlines()
    assert _is_subsequence(old_lines, new.removeprefix(BOM).splitlines()), new
    data = tomllib.loads(new.removeprefix(BOM))
    assert data["model"] == "m-1" and data["model_provider"] == "gw"
    assert cli("config", "undo", "--client", "codex").exit_code == 0
    assert path.read_bytes() == document.encode("utf-8")
    path.unlink()


def test_a_no_op_on_a_single_quoted_file_changes_nothing(cli, isolated_home: Path) -> None:
    path = _config_path(isolated_home)
    text = (
        "model = 'm'\nmodel_provider = 'gw'\n\n[model_providers.gw]\nname = 'gw'\n"
        "base_url = 'https://gw.example/api'\nwire_api = 'responses'\n"
    )
    path.write_text(text)
    args = ("config", "codex", "--provider", "gw", "--model", "m",
            "--base-url", "https://gw.example/api")  # fmt: skip

    dry = cli(*args, "--dry-run", "--json")
    assert dry.exit_code == 0 and dry.json()["changed"] is False, dry.stdout
    assert cli(*args).exit_code == 0
    assert path.read_text() == text
