"""How much pdnotes reads from a gateway, and a content decoder that stays inside it.

A gateway pdnotes does not control can send a body that never ends, an event line that never
ends, or ~200 KB of gzip that decodes to 200 MB. Every answer is read through these bounds, on
both transports of the seam (`_transport`: `_h1` and the httpx adapters), and counted after
decoding, so a compressed body counts at its real size. The wall clock is bounded separately
(`total_timeout` in `client.py`).
"""

from __future__ import annotations

import zlib
from collections.abc import Iterator

MAX_HEAD_BYTES = 64 * 1024
"""Status line + headers (`_h1`; httpx's h11 stops at 100 KiB)."""
MAX_BODY_BYTES = 8 * 1024 * 1024
"""A whole JSON answer: a model list (OpenRouter's, the largest seen, is ~1 MB) or a turn."""
MAX_STREAM_BYTES = 64 * 1024 * 1024
"""One event stream, decoded: ~100k tokens of Responses API events, far above any turn."""
MAX_RELAYED_BODY_BYTES = 16 * 1024 * 1024
"""A whole answer the bridge relays (its model list, a non-streamed turn): the bridge takes
request bodies up to 16 MiB (`bridge.app.MAX_BODY_BYTES`), and an answer may echo as much."""
MAX_EVENT_LINE_BYTES = 4 * 1024 * 1024
"""One SSE line (a Responses `response.completed` repeats the whole answer in one line)."""
MAX_ERROR_BODY = 64 * 1024
"""What is kept of an error answer: enough for any error JSON or the <title> of a page."""
MAX_SHOWN_CHARS = 1000
"""What is shown (human or JSON) of each text of a gateway error: the start of the message,
then how many characters were left out."""
DRAIN_S = 0.25
DRAIN_BYTES = 64 * 1024
"""After a sink has its last event, the rest of the body (`[DONE]`, the chunked terminator) is
read so the connection can be reused: within DRAIN_S and DRAIN_BYTES, else the client hangs up."""
DECODE_PIECE = 64 * 1024
"""Decompressed output per step: memory stays this small whatever the compression ratio."""

ENCODINGS = "gzip, deflate"
"""What pdnotes accepts (sent as Accept-Encoding on the httpx path). No br / zstd: their
decoders cannot cap their output per step, so a bomb in them could not be stopped in time."""


class TooLarge(Exception):
    """An answer went over a bound; the client words it as `errors.ResponseTooLarge`."""

    def __init__(self, what: str, limit: int) -> None:
        super().__init__(f"{what} over {human(limit)}")
        self.what = what
        self.limit = limit


class UnsupportedEncoding(Exception):
    """A Content-Encoding pdnotes did not ask for and cannot decode within its bounds."""


def human(size: int) -> str:
    """1048576 -> '1 MiB'."""
    if size >= 1024 * 1024:
        return f"{size / (1024 * 1024):g} MiB"
    return f"{size / 1024:g} KiB" if size >= 1024 else f"{size} B"


class Decoder:
    """Content-Encoding decoding (identity, gzip, deflate) in pieces of at most DECODE_PIECE
    bytes, so the caller can count and stop between pieces."""

    __slots__ = ("_z", "_raw_deflate_tried")

    def __init__(self, coding: str | None) -> None:
        coding = (coding or "identity").strip().lower()
        self._raw_deflate_tried = True
        if coding in ("identity", ""):
            self._z = None
        elif coding in ("gzip", "x-gzip"):
            self._z = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)
        elif coding == "deflate":
            self._z = zlib.decompressobj()
            self._raw_deflate_tried = False  # servers send raw deflate as often as zlib's
        else:
            raise UnsupportedEncoding(f"unsupported content-encoding {coding!r}")

    def decode(self, data: bytes) -> Iterator[bytes]:
        z = self._z
        if z is None:
            if data:
                yield data
            return
        try:
            piece = z.decompress(data, DECODE_PIECE)
        except zlib.error:
            if self._raw_deflate_tried:
                raise UnsupportedEncoding("the compressed body is corrupt") from None
            self._raw_deflate_tried = True
            z = self._z = zlib.decompressobj(-zlib.MAX_WBITS)
            piece = z.decompress(data, DECODE_PIECE)
        self._raw_deflate_tried = True
        if piece:
            yield piece
        while z.unconsumed_tail:
            piece = z.decompress(z.unconsumed_tail, DECODE_PIECE)
            if piece:
                yield piece

    def flush(self) -> bytes:
        """What a finished compressed body still holds (small: its input was consumed)."""
        if self._z is None:
            return b""
        try:
            return self._z.flush(DECODE_PIECE)
        except zlib.error:
            return b""


class Counter:
    """Decoded bytes so far against one limit."""

    __slots__ = ("what", "limit", "seen")

    def __init__(self, what: str, limit: int) -> None:
        self.what = what
        self.limit = limit
        self.seen = 0

    def add(self, size: int) -> None:
        self.seen += size
        if self.seen > self.limit:
            raise TooLarge(self.what, self.limit)
