"""`engine serve --record FILE`: one trace row per answered request (notes_cli.trace.record),
with the engine's own token counts. A request that fails or is cut leaves no row; nothing of
its text, headers or key reaches the file."""

from __future__ import annotations

from collections.abc import Iterable

from notes_cli.engine.core import prompt
from notes_cli.trace.record import TraceRecorder, prompt_pieces
from notes_cli.wire.turn import Turn


class RequestRecord:
    """One request's row, begun on arrival: `finish` with the answer's length, or `close`
    (nothing written) when there is none. Either is final; later calls do nothing."""

    def __init__(
        self,
        recorder: TraceRecorder,
        headers: Iterable[tuple[bytes, bytes]],
        turn: Turn,
        prompt_tokens: int,
    ) -> None:
        self._recorder = recorder
        self._ticket = recorder.begin()
        self._session = recorder.session(headers)
        self._turn = turn
        self._prompt_tokens = prompt_tokens
        self._open = True

    def finish(self, output_tokens: int) -> None:
        if self._open:
            self._open = False
            self._recorder.finish(
                self._ticket,
                session=self._session,
                prompt=prompt_pieces(self._turn, prompt.message_text),
                input_tokens=self._prompt_tokens,
                output_tokens=output_tokens,
                cached_tokens=None,  # the engine models a share, not each request's hit
            )

    def close(self) -> None:
        if self._open:
            self._open = False
            self._recorder.drop(self._ticket)
