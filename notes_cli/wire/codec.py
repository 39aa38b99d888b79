"""The codec API every protocol module (`chat`, `responses`, `anthropic`, `gemini`) provides, as
Protocols: what the engine, the gateway client and the bridge may call, checked by mypy
(`CODECS` below only type-checks while each module conforms). Typing only: nothing here runs
on a hot path, and callers keep calling the modules' own functions and classes.
"""

from __future__ import annotations

from typing import Any, Protocol

from notes_cli.wire import anthropic, chat, gemini, responses
from notes_cli.wire.errors import WireError
from notes_cli.wire.events import Event
from notes_cli.wire.turn import Reply, Turn, Usage


class StreamEncoder(Protocol):
    """Neutral events → one protocol's SSE bytes (server side)."""

    def head(self) -> bytes:
        """What goes out before any output (Responses `response.created`, Anthropic
        `message_start`; b"" for chat)."""
        ...

    def text(self, text: str) -> bytes:
        """One text delta: the per-token hot path (pre-rendered prefix and suffix)."""
        ...

    def encode(self, event: Event) -> bytes:
        """Any neutral event; FinishEvent / UsageEvent are remembered for `close`."""
        ...

    def close(self) -> bytes:
        """The closing events (finish, usage, `[DONE]` / `response.completed` /
        `message_stop`)."""
        ...

    def error(self, error: WireError) -> bytes:
        """The protocol's in-stream error event."""
        ...


class StreamEncoderFactory(Protocol):
    """A protocol's `StreamEncoder` class, as callers construct it."""

    def __call__(
        self,
        id: str,
        model: str,
        *,
        include_usage: bool = True,
        fingerprint: str | None = None,
        input_tokens: int = 0,
        created: int | None = None,
    ) -> StreamEncoder: ...


class StreamDecoder(Protocol):
    """One protocol's SSE → neutral events (client side). Decoders read junk as junk: they
    never raise on what a server sends."""

    @property
    def done(self) -> bool:
        """The protocol's completion event was seen."""
        ...

    @property
    def closed(self) -> bool:
        """The stream's last event was seen (stop reading)."""
        ...

    @property
    def native_finish(self) -> str | None:
        """The protocol's own finish word (`completed`, `max_output_tokens`, `end_turn`,
        `eos`, …) beside the neutral FinishEvent, for diagnostics."""
        ...

    def feed(self, data: str, event: str | None = None) -> list[Event]:
        """One SSE event's data (and its `event:` name) → the neutral events it carries."""
        ...


class StreamDecoderFactory(Protocol):
    """A protocol's `StreamDecoder` class."""

    def __call__(self) -> StreamDecoder: ...


class Codec(Protocol):
    """One protocol module: requests, replies, errors and usage both ways, and its streams."""

    def decode_request(self, body: bytes | str | dict[str, Any]) -> Turn:
        """Server side; WireError (400 naming the param) on bad input."""
        ...

    def encode_request(self, turn: Turn) -> dict[str, Any]:
        """Client side: a JSON-ready request body."""
        ...

    def dropped_tools(self, turn: Turn) -> list[str]:
        """Tools `encode_request` leaves out (the protocol cannot say them)."""
        ...

    def encode_reply(
        self, reply: Reply, *, created: int | None = None, fingerprint: str | None = None
    ) -> dict[str, Any]:
        """A non-streamed answer."""
        ...

    def decode_reply(self, body: dict[str, Any]) -> Reply: ...

    def native_finish(self, body: dict[str, Any]) -> str | None:
        """The reply's own finish word (`end_turn`, …)."""
        ...

    def encode_error(self, error: WireError) -> dict[str, Any]: ...

    def decode_error(self, status: int, body: Any) -> WireError: ...

    def new_id(self) -> str:
        """A fresh answer id in the protocol's style."""
        ...

    def usage_json(self, usage: Usage) -> dict[str, Any]: ...

    def decode_usage(self, raw: Any) -> Usage | None: ...

    # Read-only: a module's classes are not settable members.
    @property
    def StreamEncoder(self) -> StreamEncoderFactory: ...

    @property
    def StreamDecoder(self) -> StreamDecoderFactory: ...


CODECS: dict[str, Codec] = {
    "chat": chat,
    "responses": responses,
    "anthropic": anthropic,
    "gemini": gemini,
}
