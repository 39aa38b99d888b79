"""`chat.StreamDecoder.text_event`, the bridge's per-token shortcut: for every SSE event it
gives what `feed` would (the text of a chunk that is nothing but a text delta) or None (`feed`
must read it), never another answer, including for chunks made to look like the text chunk it
read last (`_TextTemplate`), and for events framed otherwise than one `data:` line."""

from __future__ import annotations

import json

import pytest

from notes_cli.wire import chat
from notes_cli.wire import events as ev

FIRST = b'{"id":"c","model":"m","choices":[{"index":0,"delta":{"role":"assistant"}}]}'


def text_chunk(content: str, **choice: object) -> bytes:
    base = {"index": 0, "delta": {"content": content}, "finish_reason": None}
    return json.dumps({"id": "c", "choices": [{**base, **choice}]}).encode()


def sse(chunk: bytes) -> bytes:
    """One whole SSE event, as the bridge's pump hands it over."""
    return b"data: " + chunk + b"\n\n"


def started() -> chat.StreamDecoder:
    decoder = chat.StreamDecoder()
    decoder.feed(FIRST.decode())
    return decoder


def feed_says(chunk: bytes) -> str | None:
    """What the general path makes of `chunk` (in a stream that has started)."""
    events = started().feed(chunk.decode("utf-8", "replace"))
    if len(events) == 1 and type(events[0]) is ev.TextDelta:
        return events[0].text
    return None


TEMPLATE = text_chunk("hi")
PREFIX, SUFFIX = TEMPLATE.split(b'"hi"')
assert b'"index": 0' in PREFIX and b"null" in SUFFIX  # (what the look-alikes below replace)

LOOK_ALIKES = [
    text_chunk("next"),  # the common case: only the text differs
    text_chunk('caf\u00e9 \u4e2d \\ " \n'),  # escapes, CJK, quotes
    PREFIX + b'"caf\\u00e9"' + SUFFIX,  # a \u escape where the template had none
    PREFIX + b'"a"  ' + SUFFIX,  # spaces after the string
    PREFIX + b'""' + SUFFIX,  # empty text: no event
    PREFIX + b"null" + SUFFIX,  # no text
    PREFIX + b"5" + SUFFIX,  # not a string
    LONE_SURROGATE := PREFIX + b'"\\ud800"' + SUFFIX,  # declined: msgspec refuses it
    PREFIX + b'"a","reasoning_content":"r"' + SUFFIX,  # more than the text in the delta
    PREFIX + b'"a"},"x":{"content":"b"' + SUFFIX,  # a second object smuggled in
    PREFIX.replace(b'"index": 0', b'"index": 1') + b'"a"' + SUFFIX,  # another choice
    PREFIX + b'"a"' + SUFFIX.replace(b"null", b'"st"'),  # a finish, the same length
    PREFIX + b'"a"' + SUFFIX[:-1] + b',"usage":{"prompt_tokens":1}}',  # usage
    text_chunk("a", finish_reason="stop"),
    b'{"error":{"message":"boom"},' + TEMPLATE[1:],  # an error event
    b"[DONE]",
    b'{"choices":[{"index":0,"delta":{"content":"a","content":null}}]}',  # a duplicate key
]


@pytest.mark.parametrize("chunk", LOOK_ALIKES, ids=range(len(LOOK_ALIKES)))
def test_a_chunk_shaped_like_the_last_text_chunk_is_read_as_feed_reads_it(chunk: bytes) -> None:
    decoder = started()
    assert decoder.text_event(sse(TEMPLATE)) == "hi"  # read in full: now the template
    said, expected = decoder.text_event(sse(chunk)), feed_says(chunk)
    assert said == expected or (said is None and chunk == LONE_SURROGATE)  # (declined: fine)
    assert decoder.text_event(sse(text_chunk("after"))) == "after"  # a template still works


# Not one `data:` line followed by a blank line: the SSE parser's work, never the shortcut's.
OTHER_FRAMING = [
    sse(TEMPLATE) + sse(text_chunk("b")),  # two events in one read
    sse(TEMPLATE)[:-1],  # no blank line yet
    sse(TEMPLATE)[:-2] + b"\r\n\r\n",  # CRLF line ends
    b"data: " + PREFIX + b'"a"\ndata: "b"' + SUFFIX + b"\n\n",  # a second data line
    b"data: " + PREFIX + b'"a"\r' + SUFFIX + b"\n\n",  # a lone CR ends the line
    b"data: " + PREFIX + b'"a"\n' + SUFFIX + b"\n\n",  # an LF where JSON allows whitespace
    b"data: " + PREFIX + b'\n"a"' + SUFFIX + b"\n\n",
    sse(TEMPLATE.replace(b", ", b",\r", 1)),  # a CR where JSON allows whitespace
    b"event: x\n" + sse(TEMPLATE),  # a named event
    b"data:" + TEMPLATE + b"\n\n",  # no space after the colon (the parser's to read)
]


@pytest.mark.parametrize("event", OTHER_FRAMING, ids=range(len(OTHER_FRAMING)))
def test_an_event_framed_otherwise_is_declined(event: bytes) -> None:
    decoder = started()
    assert decoder.text_event(event) is None  # before any template
    assert decoder.text_event(sse(TEMPLATE)) == "hi"
    assert decoder.text_event(event) is None  # and against the template
    assert decoder.text_event(sse(text_chunk("after"))) == "after"


def test_a_stream_of_text_chunks_is_read_whole_and_a_new_shape_is_learnt() -> None:
    decoder = started()
    said = [decoder.text_event(sse(text_chunk(f" t{i}"))) for i in range(5)]
    other = b'{"choices":[{"delta":{"content":"x"},"index":0}],"id":"c2"}'
    said += [decoder.text_event(sse(other)), decoder.text_event(sse(other.replace(b'"x"', b'"y"')))]
    assert said == [" t0", " t1", " t2", " t3", " t4", "x", "y"]


def test_before_the_answer_starts_every_chunk_takes_the_long_way() -> None:
    assert chat.StreamDecoder().text_event(sse(TEMPLATE)) is None
