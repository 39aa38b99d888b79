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
# Generous, so a loaded machine cannot trip it: the linear code needs about a second of CPU for
# each input here, the quadratic code it replaced from ten minutes (key fragments, 10 MB) to hours.
linear = pytest.mark.timeout(300, method="signal")


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
    # Pieces of the key the request sent; 10 MB, as copying the text once per piece is quadratic
    # with a small constant (measured: 0.66 s of CPU at 300 KB, 66 s at 3 MB; the linear code
    # 0.7 s at 3 MB).
    "key-fragments": _repeat(KEY[3:17] + " ", 10 * MB),
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


# --------------------------------------------------------------------------- beyond scrubbing


@linear
@pytest.mark.parametrize("unit", ["pdnotes map step 1 of 2 (", "pdnotes map step 1 of 2 (x:"])
def test_the_engine_reads_a_prompt_made_of_map_step_headers_linearly(unit: str) -> None:
    from notes_cli.notes.knowledge import answer_for

    # A client of the mock engine sends any prompt; it is read for a map step's header.
    answer_for(_repeat(unit))
    step = answer_for(_repeat(unit) + "\npdnotes map step 1 of 1 (note kit: pd-disagg).\n")
    assert step is not None


@linear
@pytest.mark.parametrize("unit", ["[S1 ", "[S1 p", "[S1;", "【S1 p. 2"])
def test_citations_in_a_model_answer_are_read_linearly(unit: str) -> None:
    from notes_cli.notes.passages import citations, without_citations

    text = _repeat(unit) + " see [S2 p. 3]"
    assert citations(text)[-1].source == 2
    assert "[S2 p. 3]" not in without_citations(text)


@linear
@pytest.mark.parametrize(
    "body",
    [
        _repeat("<title>a"),  # a <title> never closed: each one scanned to the end
        _repeat("<title"),
        '{"error": {"message": "' + _repeat("\\a"),
        _repeat('{"message":"'),
    ],
)
def test_an_error_body_is_read_linearly(body: str) -> None:
    from notes_cli.gateway._http import parse_error_body
    from notes_cli.gateway._limits import MAX_ERROR_BODY
    from notes_cli.gateway.model_errors import model_unknown_gateway

    # The client keeps MAX_ERROR_BODY bytes; the parser is linear beyond that too.
    for kept in (body.encode()[:MAX_ERROR_BODY], body.encode()):
        message, _, _ = parse_error_body(kept)
        assert message
        assert model_unknown_gateway(404, message) is None
    assert parse_error_body(b"<html><title>502 " + b"a" * MB + b"</title>")[0]


@linear
@pytest.mark.parametrize("unit", ["1", "1.", "1.1.", "v"])
def test_a_clients_version_output_is_read_linearly(unit: str) -> None:
    from notes_cli.doctor.version import parse_version

    # `codex --version` prints what the binary on PATH (or $PDNOTES_CODEX_BIN) chooses.
    assert parse_version(_repeat(unit) + " codex-cli 0.171.0") in ((0, 171, 0), (1, 1, 1))
    assert parse_version("codex-cli " + "7" * 5000 + ".1.2") is None  # no traceback from int()


# The mock engine is a server: any client chooses the prompt it reads.
@linear
@pytest.mark.parametrize(
    "prompt",
    [
        _repeat("<system-reminder>"),  # opening tags never closed
        "say a" + " " * MB + "b",  # inner spaces before the end of an echo request
        "run: a" + " " * MB + "b",
        "请说a" + " " * MB + "b",
    ],
    ids=["reminders", "say", "run", "say-zh"],
)
def test_the_engine_reads_a_prompt_linearly(prompt: str) -> None:
    from notes_cli.engine.core.responder import echo_request, without_reminders
    from notes_cli.engine.core.tool_rule import run_command

    assert without_reminders(prompt) == prompt  # nothing closed: nothing to remove
    assert prompt.startswith("<") or echo_request(prompt) or run_command(prompt)
    ask = prompt + "\n<system-reminder>hidden</system-reminder>say pong.\nrun: ls  "
    assert echo_request(ask) == "pong"
    assert run_command(ask) == "ls"
    shown = without_reminders(ask)
    assert "hidden" not in shown and shown.endswith("say pong.\nrun: ls  ")


# A source (`notes generate|check --source`) is a file or page of any shape: one without
# sentence breaks was cut by slicing the rest once per passage (quadratic: 1 MB 9.8 s, 10 MB
# past 300 s, issue 36).
@linear
@pytest.mark.parametrize("unit", ["a", "word ", "字"])
def test_a_source_without_sentence_breaks_is_cut_linearly(unit: str) -> None:
    from notes_cli.notes.documents import Document, Page
    from notes_cli.notes.passages import split_passages

    def passages(size: int) -> list[str]:
        text = _repeat(unit, size)
        document = Document("big.txt", "text", None, (Page(None, text),))
        return [p.text for p in split_passages([document], max_tokens=1200)]

    small, large = passages(MB), passages(10 * MB)
    # The work grows with the text: ten times the text, ten times the passages, each in budget,
    # and nothing lost (the passages are the text in order).
    assert 9 * len(small) <= len(large) <= 11 * len(small)
    assert all(estimate <= 1200 for estimate in map(_tokens, large))
    assert "".join(large) == _repeat(unit, 10 * MB).strip()


def _tokens(text: str) -> int:
    from notes_cli.notes.tokens import estimate_tokens

    return estimate_tokens(text)
