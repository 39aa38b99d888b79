"""`bridge serve --record FILE`: one trace row per finished turn (notes_cli.trace.record), with
the upstream's token counts; a turn that failed leaves no row. Every route that reaches the
model records: Responses and Messages (translated), Gemini's (translated the same way) and
chat completions (passed through: the prompt and the usage read beside the bytes). Nothing of
the request's text, headers or key reaches the file: only token counts, salted block ids and a
salted session id."""

from __future__ import annotations

from collections.abc import Iterable

from notes_cli.engine.core import prompt
from notes_cli.trace.record import TraceRecorder, prompt_pieces
from notes_cli.wire.turn import Turn, Usage


def record(
    recorder: TraceRecorder | None,
    ticket: tuple[int, float],
    headers: Iterable[tuple[bytes, bytes]],
    turn: Turn,
    usage: Usage | None,
) -> None:
    if recorder is None:
        return
    if usage is None:
        recorder.drop(ticket)
        return
    recorder.finish(
        ticket,
        session=recorder.session(headers),
        prompt=prompt_pieces(turn, prompt.message_text),
        # an upstream that sends no usage: the engine's count of the prompt, one output token
        input_tokens=usage.input_tokens or prompt.prompt_tokens(turn.messages),
        output_tokens=usage.output_tokens,
        cached_tokens=usage.cached_input_tokens,
    )


def dropped(recorder: TraceRecorder | None, ticket: tuple[int, float] | None) -> None:
    if recorder is not None and ticket is not None:
        recorder.drop(ticket)


# --- chat completions passed through (bridge.passthrough): the prompt and the usage are read
# only when recording, so the pass-through stays a pass-through otherwise.


def chat_turn(body: bytes) -> Turn | None:
    """The prompt of a passed-through chat request, for its block ids (None: the upstream may
    take a body the bridge's strict reader does not; the turn is then not recorded)."""
    from notes_cli.wire import chat
    from notes_cli.wire.errors import WireError

    try:
        return chat.decode_request(body)
    except WireError:
        return None


def chat_usage(answer: bytes) -> Usage | None:
    """The usage of a whole chat answer, or None."""
    from notes_cli.wire import fastjson

    data = fastjson.loads_object(answer)
    return _usage(data.get("usage")) if data is not None else None


class UsageTap:
    """Reads a passed-through stream's usage chunk (OpenAI sends it last, with
    `stream_options.include_usage`) as its bytes go by; other events are only scanned for the
    word `"usage"`. An event is kept only until its end, at most MAX_EVENT_BYTES."""

    __slots__ = ("buffer", "usage")

    MAX_EVENT_BYTES = 1 << 20

    def __init__(self) -> None:
        self.buffer = b""
        self.usage: Usage | None = None

    def feed(self, data: bytes) -> None:
        buffer = self.buffer + data
        start = 0
        while True:
            end = buffer.find(b"\n\n", start)
            if end < 0:
                break
            event = buffer[start:end]
            if b'"usage"' in event:
                self._read(event)
            start = end + 2
        rest = buffer[start:]
        self.buffer = rest if len(rest) <= self.MAX_EVENT_BYTES else b""

    def _read(self, event: bytes) -> None:
        from notes_cli.wire import fastjson

        for line in event.splitlines():
            if line.startswith(b"data:"):
                data = fastjson.loads_object(line[5:].strip())
                found = _usage(data.get("usage")) if data is not None else None
                if found is not None:
                    self.usage = found


def _usage(raw: object) -> Usage | None:
    from notes_cli.wire import chat
    from notes_cli.wire.errors import WireError

    try:
        return chat.decode_usage(raw)
    except WireError:
        return None
