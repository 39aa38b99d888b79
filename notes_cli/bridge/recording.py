"""`bridge serve --record FILE`: one trace row per finished turn (notes_cli.trace.record), with
the upstream's token counts; a turn that failed leaves no row. Nothing of the request's text,
headers or key reaches the file: only token counts, salted block ids and a salted session id."""

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


def dropped(recorder: TraceRecorder | None, ticket: tuple[int, float]) -> None:
    if recorder is not None:
        recorder.drop(ticket)
