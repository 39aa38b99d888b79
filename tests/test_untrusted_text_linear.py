"""Text from outside (a gateway's body, a model's answer, a page) can be any size and any shape:
every pattern that runs on it must take time linear in its length (issue 24.1). Each test feeds
about 1 MB of the input that defeats one pattern; a quadratic pattern takes hours on it, so the
per-test timeout fails the test (the signal method: `re` checks for signals while it matches;
a thread could not act, the matching holds the GIL). No wall clock is compared. Each test also
checks the answer still does its job, so a "fix" that skips the text cannot pass."""

from __future__ import annotations

import pytest

from notes_cli import secrets

MB = 1_000_000
KEY = "sk-live0a1b2c3d4e5f6g7h8i9j"  # a key the request sent
linear = pytest.mark.timeout(20, method="signal")


def _repeat(unit: str, size: int = MB) -> str:
    return unit * (size // len(unit))


# Each: the adversarial run, and a credential after it that must still be masked.
SCRUB_INPUTS = {
    "letters": _repeat("a"),  # assignment pattern: a name that never meets its `=`
    "letters-and-digits": _repeat("a1"),
    "dotted": _repeat("a."),  # URL pattern: a scheme start after every `.`
    "dashed": _repeat("a-"),
    "assignments": _repeat("a="),
    "colons": _repeat("a:"),
    "quoted": _repeat('"a'),
    "bearer": _repeat("Bearer "),
    "bearer-spaces": "Bearer" + " " * MB,
    "key-prefixes": _repeat("sk-"),
    "url-schemes": _repeat("http://"),
    "url-ish": _repeat("a.b+c-d"),
    "credential-name-spaces": "api_key" + " " * MB,
    "long-token-segments": _repeat("abcdefghijklmno-"),
    # Pieces of the key the request sent; 3 MB, as copying the text once per piece is quadratic
    # with a small constant.
    "key-fragments": _repeat(KEY[3:17] + " ", 3 * MB),
}


@linear
@pytest.mark.parametrize("name", sorted(SCRUB_INPUTS))
def test_scrub_is_linear_and_still_masks(name: str) -> None:
    tail = ' then api_key="q8w7e6r5t4y3u2i1o0p9" and Bearer zx9cv8bn7m6as5df4 and ' + KEY
    shown = secrets.scrub(SCRUB_INPUTS[name] + tail, known=[KEY])
    assert "q8w7e6r5t4y3u2i1o0p9" not in shown
    assert "zx9cv8bn7m6as5df4" not in shown
    assert KEY not in shown and KEY[3:17] not in shown


def test_scrub_masks_each_run_holding_a_piece_of_the_key_and_nothing_around_it() -> None:
    text = f"cut: {KEY[:15]} and wrapped xx-{KEY[10:]} end"
    assert secrets.scrub(text, known=[KEY]) == f"cut: … and wrapped …{KEY[-4:]} end"


def test_scrub_masks_what_it_masked_before_at_the_start_of_a_run() -> None:
    # The linear patterns start a match only where a run starts; a name or scheme after
    # digits or dots is still found.
    shown = secrets.scrub("x _api_key=abcdef123456 see -.https://u:pw12345678@gw/")
    assert "abcdef123456" not in shown and "pw12345678" not in shown
    assert "_api_key=" in shown and "-.https://***@gw/" in shown


@linear
@pytest.mark.parametrize("unit", ["a", "a.", "/a", ";a=", "?a=b&", "a%2F"])
def test_mask_url_is_linear(unit: str) -> None:
    shown = secrets.mask_url("https://u:pw12345678@gw/" + _repeat(unit))
    assert "pw12345678" not in shown


@linear
@pytest.mark.parametrize("unit", ["a", "a1", "a-", "1"])
def test_looks_like_token_is_linear(unit: str) -> None:
    assert secrets.looks_like_token(_repeat(unit)) == (unit == "a1")
