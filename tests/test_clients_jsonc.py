"""`clients.jsonc`, the one JSONC reader and in-place editor of Gemini CLI's, Qwen Code's and
OpenCode's settings files: each client's dialect (trailing commas, unclosed comments, repeated
keys), errors with line and column, and edits that keep every other byte (comments, key order,
number spellings, indentation, CRLF). The clients' commands are tested end to end in
test_config_gemini, test_config_qwen and test_config_opencode."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st

from notes_cli.clients import files, jsonc
from notes_cli.clients.gemini.config import DIALECT as GEMINI
from notes_cli.clients.opencode.config import DIALECT as OPENCODE
from notes_cli.clients.qwen.config import DIALECT as QWEN
from notes_cli.errors import ConfigParseError

WHERE = Path("settings.json")
STRICT = [GEMINI, QWEN]
ALL = [GEMINI, QWEN, OPENCODE]


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
    assert jsonc.parse(text, WHERE, OPENCODE) == {"a": [1, 2], "b": {"c": ",}"}}


def test_a_lone_comma_is_still_an_error_for_opencode() -> None:
    assert refused('{"a": 1,,}', OPENCODE).column == 10  # the second comma is blanked
    assert refused("[,]", OPENCODE).line == 1


def test_an_unclosed_block_comment_is_an_error_only_for_opencode() -> None:
    text = '{"a": 1}\n  /* never closed'
    error = refused(text, OPENCODE)
    assert (error.line, error.column) == (2, 3) and "never closed" in error.message
    assert refused('{"a": 1} /*/', OPENCODE).column == 10
    for dialect in STRICT:  # strip-json-comments blanks it to the end of the text
        assert jsonc.parse(text, WHERE, dialect) == {"a": 1}


def test_a_repeated_key_is_refused_for_an_edit_and_named_with_its_position() -> None:
    text = '{\n  "model": "a",\n  // again\n  "model": "b"\n}'
    for dialect in ALL:
        error = refused(text, dialect, keep_numbers=True)
        assert (error.line, error.column) == (4, 3)
        assert f"{dialect.client} uses only the last one" in error.message
    assert refused(text, OPENCODE).line == 4  # OpenCode: refused even to read
    assert jsonc.parse(text, WHERE, GEMINI) == {"model": "b"}  # read as the client does


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
    assert needle in refused(text, QWEN).message


def test_a_top_level_that_is_not_an_object_names_no_other_clients_key() -> None:
    error = refused("[1, 2]", OPENCODE)
    assert "top level is a JSON array" in error.message and '"env"' not in (error.fix or "")


def test_numbers_keep_their_spelling_for_an_edit() -> None:
    data = jsonc.parse('{"t": 1.50E3, "n": -0}', WHERE, QWEN, keep_numbers=True)
    assert data == {"t": files.JsonNumber("1.50E3"), "n": files.JsonNumber("-0")}
    assert jsonc.parse('{"t": 1.50E3}', WHERE, QWEN) == {"t": 1500.0}


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
    edited = jsonc.set_values(text, {("b",): 2}, OPENCODE)
    assert edited == '{\n  "a": 1, // one\n  "b": 2\n}\n'
    assert jsonc.set_values('{"a": 1,}', {("b",): 2}, OPENCODE) == '{"a": 1, "b": 2}'
    assert jsonc.parse(edited, WHERE, OPENCODE) == {"a": 1, "b": 2}


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
    assert jsonc.parse(edited, WHERE, QWEN) == {"a": {"b": True}, "z": 0}


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
    assert jsonc.parse(fresh.text, WHERE, QWEN) == {"q": {"list": [{"id": "a"}]}}


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
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
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

    assert jsonc.parse(editor.text, WHERE, QWEN) == _expected(document, path, value)
    assert editor.text.startswith("// head comment\n")
    assert editor.text.endswith("// tail /* */\n")


def _replaces_an_object(document: Any, path: list[str]) -> bool:
    for key in path:
        if not isinstance(document, dict) or key not in document:
            return False
        document = document[key]
    return isinstance(document, dict) and bool(document)


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
    setting any path gives exactly the document with that path set, every comment kept (but
    those inside an object the edit replaces whole)."""
    assume(not _replaces_an_object(doc, path))
    body = json.dumps(doc, indent=2)
    text = "// head\n" + body.replace(",\n", ", // note\n") + "\n"
    if trailing:
        text = text.replace("\n}", ",\n}").replace("{,", "{")

    edited = jsonc.set_values(text, {tuple(path): value}, OPENCODE)

    assert jsonc.parse(edited, WHERE, OPENCODE) == _expected(doc, path, value)
    assert edited.count("// note") == text.count("// note") and edited.startswith("// head\n")
    assert ",," not in jsonc.blank_comments(edited).replace(" ", "").replace("\n", "")


# --- any comment layout, any line ends (issue 36) ---------------------------------------------
# A document written with, at every token boundary, nothing, spaces, line breaks, line comments
# and block comments (on one line or over several); an edit must give exactly the document
# with the new value as the client reads it, every comment kept. Read back by pdnotes' reader
# and by `json5`, an independent one whose comments are jsonc-parser's (a `//` comment ends at
# CR or LF): for Gemini CLI and Qwen Code (strip-json-comments: a `//` comment ends only at
# LF) the layouts end each `//` comment with LF or CRLF, where both readings agree.

_BREAKS = {"LF": ["\n"], "CRLF": ["\r\n"], "CR": ["\r"], "mixed": ["\n", "\r\n", "\r"]}
_layout_keys = st.sampled_from(["a", "b", "c"])
_layout_leaf = st.one_of(st.integers(-9, 9), st.sampled_from(["x", "//", "/*", "*/"]),
                         st.booleans(), st.none())  # fmt: skip
_layout_docs = st.recursive(
    _layout_leaf,
    lambda inner: st.lists(inner, max_size=2) | st.dictionaries(_layout_keys, inner, max_size=3),
    max_leaves=6,
)


@st.composite
def _jsonc_layouts(draw: st.DrawFn, document: dict[str, Any], dialect: jsonc.Dialect) -> str:
    style = draw(st.sampled_from(sorted(_BREAKS)))
    breaks = _BREAKS[style]
    # what may end a `//` comment for this client
    ends = breaks if dialect.cr_ends_line_comment else [b for b in breaks if b != "\r"] or ["\n"]
    counter = iter(range(10_000))

    def gap() -> str:
        pieces = []
        for kind in draw(st.lists(st.sampled_from(["space", "break", "line", "block", "lines"]),
                                  max_size=2)):  # fmt: skip
            n = next(counter)
            if kind == "space":
                pieces.append(" ")
            elif kind == "break":
                pieces.append(draw(st.sampled_from(breaks)))
            elif kind == "line":
                pieces.append(f"// c{n}" + draw(st.sampled_from(ends)))
            elif kind == "block":
                pieces.append(f"/* c{n} */")
            else:
                pieces.append(f"/* c{n}" + draw(st.sampled_from(breaks)) + f"c{n} */")
        return "".join(pieces)

    def write(value: Any) -> str:
        if isinstance(value, dict):
            members = [gap() + json.dumps(k) + gap() + ":" + gap() + write(v)
                       for k, v in value.items()]  # fmt: skip
            return "{" + _joined(members) + gap() + "}"
        if isinstance(value, list):
            return "[" + _joined([gap() + write(v) for v in value]) + gap() + "]"
        return json.dumps(value)

    def _joined(items: list[str]) -> str:
        text = (gap() + ",").join(items)
        if items and dialect.trailing_commas and draw(st.booleans()):
            text += gap() + ","
        return text

    return gap() + write(document) + gap()


def _replaced(document: Any, path: list[str]) -> Any:
    """What the edit of `path` replaces (None when it adds a member)."""
    for depth, key in enumerate(path):
        if not isinstance(document, dict) or key not in document:
            return None
        document = document[key]
        if depth < len(path) - 1 and not isinstance(document, dict):
            return document  # a member on the path that is not an object: replaced by one
    return document


@settings(max_examples=300, deadline=None)
@given(data=st.data())
@example(data=None)  # the reported layouts first (see `_reported`)
def test_an_edit_keeps_its_meaning_for_the_client_in_any_comment_layout(
    data: st.DataObject | None,
) -> None:
    import json5

    if data is None:
        for dialect, text, path, expected in _reported():
            edited = jsonc.set_values(text, {path: 1}, dialect)
            assert jsonc.parse(edited, WHERE, dialect) == expected
            assert json5.loads(edited) == expected
        return
    dialect = data.draw(st.sampled_from(ALL), label="dialect")
    document = data.draw(st.dictionaries(_layout_keys, _layout_docs, max_size=3), label="doc")
    text = data.draw(_jsonc_layouts(document, dialect), label="text")
    path = data.draw(st.lists(_layout_keys, min_size=1, max_size=3), label="path")
    value = data.draw(_layout_docs, label="value")
    # comments inside a value the edit replaces whole go with it: not this test's question
    assume(not isinstance(_replaced(document, path), dict | list))
    assert jsonc.parse(text, WHERE, dialect) == document  # (the layout means the document)
    assert json5.loads(text) == document

    edited = jsonc.set_values(text, {tuple(path): value}, dialect)

    expected = _expected(document, path, value)
    assert jsonc.parse(edited, WHERE, dialect) == expected
    assert json5.loads(edited) == expected
    for comment in re.findall(r"c\d+", text):
        assert edited.count(comment) == text.count(comment), comment


def _reported() -> list[tuple[jsonc.Dialect, str, tuple[str, ...], dict[str, Any]]]:
    """Issue 36's files: a block comment over two lines starting on the last member's line
    (Gemini CLI, Qwen Code, OpenCode), and a `//` comment ended by a lone CR (OpenCode)."""
    block = '{\n  "a": {"x": 0} /* a note\n  over two lines */\n}\n'
    lone_cr = '{\r  "a": 0, // mine\r  "b": 2\r}\r'
    return [
        *((d, block, ("c",), {"a": {"x": 0}, "c": 1}) for d in ALL),
        *((d, block, ("a", "y"), {"a": {"x": 0, "y": 1}}) for d in ALL),
        (OPENCODE, lone_cr, ("c",), {"a": 0, "b": 2, "c": 1}),
        (OPENCODE, lone_cr, ("b",), {"a": 0, "b": 1}),
    ]


_entries = st.lists(
    st.fixed_dictionaries({"id": st.sampled_from(["k", "m"])}, optional={"v": _layout_leaf}),
    max_size=3,
)


@settings(max_examples=150, deadline=None)
@given(data=st.data())
def test_an_array_entry_edit_keeps_its_meaning_in_any_comment_layout(data: st.DataObject) -> None:
    """`set_array_item` (Qwen Code's `modelProviders.openai` entries) on any layout: the entry
    with the id updated in place, or a new one appended after the last, comments kept."""
    import json5

    dialect = data.draw(st.sampled_from(ALL), label="dialect")
    entries = data.draw(_entries, label="entries")
    document = {"p": {"openai": entries}, **data.draw(st.dictionaries(st.just("a"), _layout_leaf))}
    text = data.draw(_jsonc_layouts(document, dialect), label="text")
    value = {"id": "k", "v": data.draw(_layout_leaf, label="value")}
    editor = jsonc.Editor(text, dialect)

    editor.set_array_item(("p", "openai"), ("id", "k"), value)

    expected = json.loads(json.dumps(document))
    found = [e for e in expected["p"]["openai"] if e["id"] == "k"]
    if found:
        found[0].update(value)
    else:
        expected["p"]["openai"].append(value)
    assert jsonc.parse(editor.text, WHERE, dialect) == expected
    assert json5.loads(editor.text) == expected
    for comment in re.findall(r"c\d+", text):
        assert editor.text.count(comment) == text.count(comment), comment


def test_an_edit_read_back_with_another_meaning_is_refused() -> None:
    # the guard behind every edit: whatever layout the editor might still misplace an edit in
    edited = '{"a": 1 /* , "b": 2 */}'
    with pytest.raises(ConfigParseError, match="the file was not changed"):
        jsonc.check_edit(edited, WHERE, GEMINI, {"a": 1, "b": 2})
    with pytest.raises(ConfigParseError, match="the file was not changed"):
        jsonc.check_edit('{"a": 1 // , "b": 2\r}', WHERE, GEMINI)  # no closing brace
    assert jsonc.check_edit(edited, WHERE, GEMINI, {"a": 1}) == {"a": 1}


@settings(max_examples=100, deadline=None)
@given(data=st.data())
def test_removing_an_entrys_member_keeps_the_meaning_in_any_comment_layout(
    data: st.DataObject,
) -> None:
    """`remove_from_array_item` (Qwen Code's stale `envKey`) on any layout: only that member
    goes (the comments inside it with it)."""
    import json5

    dialect = data.draw(st.sampled_from(ALL), label="dialect")
    entry = {"id": "k", **data.draw(st.dictionaries(st.sampled_from(["a", "envKey", "z"]),
                                                    _layout_leaf))}  # fmt: skip
    document = {"p": [{"id": "m"}, entry]}
    text = data.draw(_jsonc_layouts(document, dialect), label="text")
    editor = jsonc.Editor(text, dialect)

    removed = editor.remove_from_array_item(("p",), ("id", "k"), "envKey")

    assert removed == ("envKey" in entry)
    expected = {"p": [{"id": "m"}, {k: v for k, v in entry.items() if k != "envKey"}]}
    assert jsonc.parse(editor.text, WHERE, dialect) == expected
    assert json5.loads(editor.text) == expected
