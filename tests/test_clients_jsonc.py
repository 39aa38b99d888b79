"""`clients.jsonc`, the one JSONC reader and in-place editor of Gemini CLI's, Qwen Code's and
OpenCode's settings files: each client's dialect (trailing commas, unclosed comments, repeated
keys), errors with line and column, and edits that keep every other byte (comments, key order,
number spellings, indentation, CRLF). The clients' commands are tested end to end in
test_config_gemini, test_config_qwen and test_config_opencode."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from notes_cli.clients import files, jsonc
from notes_cli.errors import ConfigParseError

WHERE = Path("settings.json")
STRICT = [jsonc.GEMINI, jsonc.QWEN]
ALL = [jsonc.GEMINI, jsonc.QWEN, jsonc.OPENCODE]


def refused(text: str, dialect: jsonc.Dialect, **kwargs: Any) -> ConfigParseError:
    with pytest.raises(ConfigParseError) as caught:
        jsonc.parse(text, WHERE, dialect, **kwargs)
    return caught.value


# --- reading: comments, per-client dialects, positions ---------------------------------------


@pytest.mark.parametrize("dialect", ALL, ids=lambda d: d.client)
def test_comments_are_ignored_but_not_inside_strings(dialect: jsonc.Dialect) -> None:
    text = '// head\n{\n  "url": "http://x//y /* no */", /* block\n  over lines */ "n": 1 // end\n}'
    assert jsonc.parse(text, WHERE, dialect) == {"url": "http://x//y /* no */", "n": 1}


@pytest.mark.parametrize("dialect", ALL, ids=lambda d: d.client)
def test_an_empty_or_comment_only_file_is_an_empty_object(dialect: jsonc.Dialect) -> None:
    assert jsonc.parse("", WHERE, dialect) == {}
    assert jsonc.parse("// nothing yet\n/* really */\n", WHERE, dialect) == {}


@pytest.mark.parametrize("dialect", STRICT, ids=lambda d: d.client)
def test_a_trailing_comma_is_refused_where_the_client_refuses_it(dialect: jsonc.Dialect) -> None:
    error = refused('{\n  "a": 1, // one\n}\n', dialect)
    assert (error.line, error.column) == (3, 1)  # in the real file, past the comment
    assert f"{WHERE}:3:1:" in error.message
    assert f"{dialect.client} allows // and /* */ comments but no trailing commas" in (
        error.fix or ""
    )


def test_opencode_takes_trailing_commas_in_objects_and_arrays() -> None:
    text = '{\n  "a": [1, 2,], // two\n  "b": {"c": ",}",},\n}\n'
    assert jsonc.parse(text, WHERE, jsonc.OPENCODE) == {"a": [1, 2], "b": {"c": ",}"}}


def test_a_lone_comma_is_still_an_error_for_opencode() -> None:
    assert refused('{"a": 1,,}', jsonc.OPENCODE).column == 10  # the second comma is blanked
    assert refused("[,]", jsonc.OPENCODE).line == 1


def test_an_unclosed_block_comment_is_an_error_only_for_opencode() -> None:
    text = '{"a": 1}\n  /* never closed'
    error = refused(text, jsonc.OPENCODE)
    assert (error.line, error.column) == (2, 3) and "never closed" in error.message
    assert refused('{"a": 1} /*/', jsonc.OPENCODE).column == 10
    for dialect in STRICT:  # strip-json-comments blanks it to the end of the text
        assert jsonc.parse(text, WHERE, dialect) == {"a": 1}


def test_a_repeated_key_is_refused_for_an_edit_and_named_with_its_position() -> None:
    text = '{\n  "model": "a",\n  // again\n  "model": "b"\n}'
    for dialect in ALL:
        error = refused(text, dialect, keep_numbers=True)
        assert (error.line, error.column) == (4, 3)
        assert f"{dialect.client} uses only the last one" in error.message
    assert refused(text, jsonc.OPENCODE).line == 4  # OpenCode: refused even to read
    assert jsonc.parse(text, WHERE, jsonc.GEMINI) == {"model": "b"}  # read as the client does


@pytest.mark.parametrize("dialect", ALL, ids=lambda d: d.client)
def test_nesting_is_bounded(dialect: jsonc.Dialect) -> None:
    limit = files.MAX_NESTING
    assert jsonc.parse('{"a": ' * limit + "1" + "}" * limit, WHERE, dialect)
    deep = '{"a": ' * (limit + 1) + "1" + "}" * (limit + 1)
    assert "nests too deeply" in refused(deep, dialect).message
    huge = '{"a": ' * 5000 + "1" + "}" * 5000  # past Python's recursion limit: no traceback
    assert "nests too deeply" in refused(huge, dialect).message


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ('{"a": NaN}', "NaN is not a JSON number Qwen Code can keep"),
        ('{"a": 1e999}', "1e999 is not a JSON number"),
        ('{"a": "\\ud800"}', "lone surrogate"),
        ("[1, 2]", "not an object"),
        ('{"a": 1} tail', ":1:10:"),
        ('{\n  "a": "open\n}', ":2:13:"),  # a string ends at its line
    ],
)
def test_what_the_client_or_a_rewrite_could_not_keep_is_refused(text: str, needle: str) -> None:
    assert needle in refused(text, jsonc.QWEN).message


def test_a_top_level_that_is_not_an_object_names_no_other_clients_key() -> None:
    error = refused("[1, 2]", jsonc.OPENCODE)
    assert "top level is a JSON array" in error.message and '"env"' not in (error.fix or "")


def test_numbers_keep_their_spelling_for_an_edit() -> None:
    data = jsonc.parse('{"t": 1.50E3, "n": -0}', WHERE, jsonc.QWEN, keep_numbers=True)
    assert data == {"t": files.JsonNumber("1.50E3"), "n": files.JsonNumber("-0")}
    assert jsonc.parse('{"t": 1.50E3}', WHERE, jsonc.QWEN) == {"t": 1500.0}


# --- editing in place -------------------------------------------------------------------------

RICH = """// my settings
{
    "ui": {"theme": "GitHub"}, /* inline */
    "model": {
        "name": "old", // the one I used
        "timeout": 1.50E3
    },
    "url": "http://not-a-comment//here"
}
"""


def test_an_edit_changes_the_value_and_nothing_else() -> None:
    edited = jsonc.set_values(RICH, {("model", "name"): "new"})
    assert edited == RICH.replace('"name": "old"', '"name": "new"')


def test_a_new_member_goes_last_in_its_objects_indentation_keeping_a_line_comment() -> None:
    edited = jsonc.set_values(RICH, {("model", "id"): 7, ("general", "vim"): True})
    assert edited == RICH.replace(
        '"timeout": 1.50E3\n', '"timeout": 1.50E3,\n        "id": 7\n'
    ).replace(
        '"http://not-a-comment//here"\n',
        '"http://not-a-comment//here",\n    "general": {\n        "vim": true\n    }\n',
    )
    after_comment = jsonc.set_values('{\n  "a": {"b": 1} // about a\n}\n', {("c",): 2})
    assert after_comment == '{\n  "a": {"b": 1}, // about a\n  "c": 2\n}\n'


def test_a_one_line_object_stays_on_one_line() -> None:
    assert jsonc.set_values('{"a": {"b": 1}}', {("a", "c"): "d"}) == '{"a": {"b": 1, "c": "d"}}'


def test_an_existing_trailing_comma_is_reused_not_doubled() -> None:
    text = '{\n  "a": 1, // one\n}\n'
    edited = jsonc.set_values(text, {("b",): 2})
    assert edited == '{\n  "a": 1, // one\n  "b": 2\n}\n'
    assert jsonc.set_values('{"a": 1,}', {("b",): 2}) == '{"a": 1, "b": 2}'
    assert jsonc.parse(edited, WHERE, jsonc.OPENCODE) == {"a": 1, "b": 2}


def test_crlf_tabs_and_comments_inside_an_empty_object_are_kept() -> None:
    text = '{\r\n\t"a": { /* later */ },\r\n\t"b": 1\r\n}\r\n'
    edited = jsonc.set_values(text, {("a", "x"): {"y": 1}, ("c",): 2})
    assert edited == (
        '{\r\n\t"a": { /* later */\r\n\t\t"x": {\r\n\t\t\t"y": 1\r\n\t\t}\r\n\t},\r\n'
        '\t"b": 1,\r\n\t"c": 2\r\n}\r\n'
    )


def test_the_editor_writes_new_lines_as_crlf_in_a_crlf_file() -> None:
    editor = jsonc.Editor('{\r\n  "a": 1\r\n}\r\n')
    editor.set(("b", "c"), [1])
    assert (
        editor.text
        == '{\r\n  "a": 1,\r\n  "b": {\r\n    "c": [\r\n      1\r\n    ]\r\n  }\r\n}\r\n'
    )


def test_a_replaced_object_is_indented_under_its_key() -> None:
    edited = jsonc.set_values(RICH, {("model",): {"name": "new"}})
    assert '    "model": {\n        "name": "new"\n    },\n' in edited


def test_a_new_or_comment_only_file_keeps_its_comments_and_gets_an_object() -> None:
    assert jsonc.set_values("", {("a", "b"): 1}) == '{\n  "a": {\n    "b": 1\n  }\n}\n'
    assert jsonc.set_values("// mine\n", {("a",): 1}) == '// mine\n{\n  "a": 1\n}\n'


def test_a_member_on_the_path_that_is_not_an_object_is_replaced() -> None:
    edited = jsonc.set_values('{"a": 3, "z": 0}', {("a", "b"): True})
    assert jsonc.parse(edited, WHERE, jsonc.QWEN) == {"a": {"b": True}, "z": 0}


def test_set_array_item_updates_the_matching_entry_or_appends_one() -> None:
    text = '{\n  "p": [\n    {"id": "x", "keep": 1.0}, // x\n    {"id": "y"}\n  ]\n}\n'
    editor = jsonc.Editor(text)
    editor.set_array_item(("p",), ("id", "x"), {"id": "x", "url": "u"})
    assert editor.text == text.replace('"keep": 1.0}', '"keep": 1.0, "url": "u"}')
    editor.set_array_item(("p",), ("id", "z"), {"id": "z"})
    assert editor.text.endswith('    {"id": "y"},\n    {\n      "id": "z"\n    }\n  ]\n}\n')
    trailing = jsonc.Editor('{"p": [{"id": "x", "n": 1,},]}')  # OpenCode's trailing commas
    trailing.set_array_item(("p",), ("id", "x"), {"id": "x", "n": 2})
    assert trailing.text == '{"p": [{"id": "x", "n": 2,},]}'
    fresh = jsonc.Editor("{}")
    fresh.set_array_item(("q", "list"), ("id", "a"), {"id": "a"})
    assert jsonc.parse(fresh.text, WHERE, jsonc.QWEN) == {"q": {"list": [{"id": "a"}]}}


# --- properties -------------------------------------------------------------------------------

_keys = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=6)
_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(10**6), 10**6) | _keys,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_keys, inner, max_size=3),
    max_leaves=8,
)


def _expected(document: dict[str, Any], path: list[str], value: Any) -> dict[str, Any]:
    expected: dict[str, Any] = json.loads(json.dumps(document))
    cursor = expected
    for key in path[:-1]:
        if not isinstance(cursor.get(key), dict):
            cursor[key] = {}
        cursor = cursor[key]
    cursor[path[-1]] = value
    return expected


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    document=st.dictionaries(_keys, _values, max_size=4),
    path=st.lists(_keys, min_size=1, max_size=3),
    value=_values,
    indent=st.sampled_from([2, 4, "\t"]),
)
@example(document={}, path=["", "\x85"], value=None, indent=2)  # U+0085 is no line break in JSON
def test_set_changes_only_the_path(
    document: dict[str, Any], path: list[str], value: Any, indent: int | str
) -> None:
    text = "// head comment\n" + json.dumps(document, indent=indent) + "\n// tail /* */\n"
    editor = jsonc.Editor(text)

    editor.set(tuple(path), value)

    assert jsonc.parse(editor.text, WHERE, jsonc.QWEN) == _expected(document, path, value)
    assert editor.text.startswith("// head comment\n")
    assert editor.text.endswith("// tail /* */\n")


_small_keys = st.text("abcxyz_", min_size=1, max_size=4)
_leaf = st.one_of(st.integers(-5, 5), st.text("ab /*", max_size=4), st.booleans(), st.none())
_docs = st.recursive(
    _leaf, lambda inner: st.dictionaries(_small_keys, inner, max_size=3), max_leaves=8
).filter(lambda d: isinstance(d, dict))


@settings(max_examples=60, deadline=None)
@given(
    doc=_docs,
    path=st.lists(_small_keys, min_size=1, max_size=3),
    value=_leaf,
    trailing=st.booleans(),
)
def test_set_values_keeps_every_comment_and_trailing_comma(
    doc: dict[str, Any], path: list[str], value: Any, trailing: bool
) -> None:
    """Any object with a comment after each member (and, for OpenCode, trailing commas):
    setting any path gives exactly the document with that path set, every comment kept."""
    body = json.dumps(doc, indent=2)
    text = "// head\n" + body.replace(",\n", ", // note\n") + "\n"
    if trailing:
        text = text.replace("\n}", ",\n}").replace("{,", "{")

    edited = jsonc.set_values(text, {tuple(path): value})

    assert jsonc.parse(edited, WHERE, jsonc.OPENCODE) == _expected(doc, path, value)
    assert edited.count("// note") == text.count("// note") and edited.startswith("// head\n")
    assert ",," not in jsonc.blank_comments(edited).replace(" ", "").replace("\n", "")
