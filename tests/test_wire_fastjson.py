"""`wire.fastjson` answers exactly as json does (it is only faster): the values clients and
upstreams send survive it unchanged, and what json accepts beyond msgspec (NaN, lone
surrogates, integers beyond 64 bits) still gets json's answer."""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from notes_cli.wire import fastjson

_json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()  # unbounded: beyond 64 bits too
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=20,
)


@given(_json_values)
def test_loads_gives_json_s_value(value: object) -> None:
    for text in (json.dumps(value), json.dumps(value, ensure_ascii=False)):
        assert fastjson.loads(text) == json.loads(text)
        assert fastjson.loads(text.encode("utf-8", "surrogatepass")) == json.loads(text)


@given(_json_values)
def test_dumps_round_trips(value: object) -> None:
    assert json.loads(fastjson.dumps(value)) == value


@pytest.mark.parametrize(
    "text",
    ["123456789012345678901234567890", "-9223372036854775809", "18446744073709551616"],
)
def test_integers_beyond_64_bits_stay_integers(text: str) -> None:
    value = fastjson.loads(text)
    assert value == int(text) and isinstance(value, int)


def test_what_only_json_reads_gets_json_s_answer() -> None:
    assert math.isnan(fastjson.loads("NaN"))
    assert fastjson.loads("1e400") == math.inf
    assert fastjson.loads('"\\ud800"') == "\ud800"
    assert fastjson.read('"\\ud800"') == ("\ud800", False)  # not known to be valid Unicode
    assert fastjson.read('"\\u00e9"') == ("é", True)
    with pytest.raises(ValueError):
        fastjson.loads("{} trailing")


def test_dumps_keeps_a_lone_surrogate_as_an_escape() -> None:
    assert fastjson.dumps({"a": "\ud800"}) == b'{"a":"\\ud800"}'
    assert fastjson.dumps({"a": "é", "b": [1, 2.5, None]}) == '{"a":"é","b":[1,2.5,null]}'.encode()
