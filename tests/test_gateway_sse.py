"""The SSE parser: what real servers send, split at any byte."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from notes_cli.gateway.sse import ServerSentEvent, SSEParser


def parse(*chunks: bytes) -> list[ServerSentEvent]:
    parser = SSEParser()
    events = [e for chunk in chunks for e in parser.feed(chunk)]
    return events + parser.close()


def test_plain_events_and_done() -> None:
    events = parse(b'data: {"a":1}\n\ndata: [DONE]\n\n')
    assert [e.data for e in events] == ['{"a":1}', "[DONE]"]
    assert events[0].event == "message"


def test_comments_and_keepalives_are_skipped() -> None:
    events = parse(b": keep-alive\n\n:ping\ndata: x\n\n: OPENROUTER PROCESSING\n\n")
    assert [e.data for e in events] == ["x"]


def test_event_names_ids_and_retry() -> None:
    events = parse(b"event: message_stop\nid: 7\nretry: 3000\ndata: {}\n\n")
    assert events == [ServerSentEvent(data="{}", event="message_stop", id="7", retry=3000)]


def test_multi_line_data_is_joined_with_newlines() -> None:
    assert parse(b"data: one\ndata: two\ndata:three\n\n")[0].data == "one\ntwo\nthree"


def test_crlf_split_between_reads_is_one_line_ending() -> None:
    events = parse(b"data: a\r", b"\n\r", b"\ndata: b\r\n\r\n")
    assert [e.data for e in events] == ["a", "b"]


def test_bare_cr_line_endings() -> None:
    assert [e.data for e in parse(b"data: a\r\rdata: b\r\r")] == ["a", "b"]


def test_missing_final_blank_line_is_flushed_at_close() -> None:
    parser = SSEParser()
    assert parser.feed(b'data: {"last": true}') == []
    assert [e.data for e in parser.close()] == ['{"last": true}']


def test_event_without_data_is_not_dispatched() -> None:
    assert parse(b"event: ping\n\ndata: x\n\n") == [ServerSentEvent(data="x")]


def test_utf8_split_inside_a_character() -> None:
    raw = "data: 预填充\n\n".encode()
    assert parse(raw[:8], raw[8:])[0].data == "预填充"


STREAM = (
    b": hello\r\n"
    b'event: message_start\r\ndata: {"type":"message_start"}\r\n\r\n'
    b"data: line1\ndata: line2\n\n"
    b"data: [DONE]\n\n"
)


@given(st.lists(st.integers(min_value=1, max_value=len(STREAM) - 1), max_size=8))
def test_any_split_gives_the_same_events(cuts: list[int]) -> None:
    points = sorted(set(cuts))
    pieces = [STREAM[a:b] for a, b in zip([0, *points], [*points, len(STREAM)], strict=True)]
    assert parse(*pieces) == parse(STREAM)
    assert [e.data for e in parse(STREAM)] == ['{"type":"message_start"}', "line1\nline2", "[DONE]"]


def test_a_line_that_never_ends_is_refused_at_the_bound() -> None:
    from notes_cli.gateway.sse import EventTooLarge

    parser = SSEParser(max_line=1000)
    parser.feed(b"data: " + b"[" * 900)
    with pytest.raises(EventTooLarge):
        parser.feed(b"[" * 200)


def test_an_event_of_many_short_lines_is_refused_at_the_bound() -> None:
    from notes_cli.gateway.sse import EventTooLarge

    parser = SSEParser(max_line=1000)
    with pytest.raises(EventTooLarge):
        parser.feed(b"data: xxxxxxxx\n" * 200)
    assert SSEParser(max_line=1000).feed(b"data: xxxxxxxx\n\n" * 200)  # separate events: fine


# Blocks of one `data: ` line take a shortcut when the stream has LF line ends; a stream with
# CR anywhere takes the line-by-line path. Both must give the same events, at any split.
_LINES = st.sampled_from(
    [
        b'data: {"a":1}',
        b"data: [DONE]",
        b"data:tight",
        b"data: ",
        b"data: \xe9\xa2\x84",
        b"event: message_stop",
        b"event: ping",
        b"event: ",
        b"event:  two spaces",
        b"event:tight",
        b"id: 7",
        b"retry: 250",
        b": keep-alive",
        b"",
        b"",
        b"",
    ]
)


@given(
    st.lists(_LINES, max_size=30),
    st.lists(st.integers(min_value=1, max_value=400), max_size=8),
)
def test_the_data_line_shortcut_gives_the_events_of_the_line_by_line_path(
    lines: list[bytes], cuts: list[int]
) -> None:
    stream = b"".join(line + b"\n" for line in lines)
    points = sorted({c for c in cuts if c < len(stream)})
    pieces = [stream[a:b] for a, b in zip([0, *points], [*points, len(stream)], strict=True)]
    line_by_line = parse(stream.replace(b"\n", b"\r\n"))
    assert parse(*pieces) == line_by_line


def test_an_event_name_read_before_its_data_arrives_is_kept() -> None:
    events = parse(b"event: message_stop\n", b'data: {"type":"message_stop"}\n\n')
    assert events == [ServerSentEvent(data='{"type":"message_stop"}', event="message_stop")]


def test_a_data_line_over_the_bound_is_refused_in_one_read_too() -> None:
    from notes_cli.gateway.sse import EventTooLarge

    with pytest.raises(EventTooLarge):
        SSEParser(max_line=1000).feed(b"data: " + b"x" * 2000 + b"\n\n")


@pytest.mark.parametrize(
    ("block", "name", "data"),
    [
        (b"event: message_stop\ndata: {}", "message_stop", "{}"),
        (b"event: \ndata: {}", "message", "{}"),
        (b"event:  spaced\ndata: {}", " spaced", "{}"),
        (b"event: a:b\ndata:  two", "a:b", " two"),
    ],
)
def test_an_event_line_and_a_data_line_read_as_the_line_by_line_path_reads_them(
    block: bytes, name: str, data: str
) -> None:
    expected = [ServerSentEvent(data=data, event=name)]
    assert parse(block + b"\n\n") == expected
    assert parse(block.replace(b"\n", b"\r\n") + b"\r\n\r\n") == expected
