"""One streamed answer from the upstream to the client, event by event.

`Pump` is the relay's sink: the transport calls `on_body` from its read callback with whatever
bytes one read produced; they are parsed (SSE), decoded (chat chunk → neutral events), encoded
(neutral → the client's protocol) and written to the client's socket at once, in that same
callback. Nothing waits for more than the bytes in hand: a read that carried five chunks
becomes one write of five events, a read with half a chunk writes nothing until the other half
arrives. The stream's head (status line, headers, the protocol's opening events) goes out with
the first events when they come in the same read as the upstream's headers (one write, not
three: benchmarks/bridge), else at the end of that read.

A client that reads slower than the upstream writes pauses the upstream's reading
(`on_reader`), so an answer is never buffered whole in the bridge.

It also keeps what the answer said (text, reasoning, tool calls) as a neutral assistant message,
for the response store: up to `remember` characters, past which it forgets the answer (an
endless upstream would otherwise grow the bridge's memory for as long as the client reads).

The keys the bridge sent upstream are masked out of the answer's text (`mask`, a
`secrets.SentMasker`): an upstream that echoes its `Authorization` header would otherwise show
the bridge's key to its clients, who do not have it. A key split across events is masked
whole: the few characters at a text event's end that could begin one wait for the next. The
answer's other words (reasoning, each tool call's name, id and arguments) are masked the same
way, each channel with its own held tail, which goes out before any event of another kind.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import replace
from typing import Protocol

from notes_cli.gateway._limits import MAX_EVENT_LINE_BYTES
from notes_cli.gateway.relay import Reader
from notes_cli.gateway.sse import EventTooLarge, ServerSentEvent, SSEParser
from notes_cli.secrets import SentMasker, mask_sent
from notes_cli.wire import events as ev
from notes_cli.wire.codec import StreamEncoder
from notes_cli.wire.errors import WireError
from notes_cli.wire.turn import Message, Part, ReasoningPart, TextPart, ToolCallPart, Usage

Headers = list[tuple[bytes, bytes]]
REMEMBER_CHARS = 16 * 1024 * 1024  # the most of an answer kept for the store, by default
SSE_HEADERS: Headers = [
    (b"content-type", b"text/event-stream"),
    (b"cache-control", b"no-cache"),
    (b"x-accel-buffering", b"no"),
]


_MASKED = (ev.ReasoningDelta, ev.ToolCallBegin, ev.ToolCallDelta)  # words besides the text


def _general(block: bytes) -> list[ServerSentEvent]:
    parser = SSEParser()
    return parser.feed(block + b"\n\n")


class ChunkDecoder(Protocol):
    """`wire.chat.StreamDecoder`, or a filter around it."""

    @property
    def closed(self) -> bool: ...  # `[DONE]` seen

    @property
    def malformed(self) -> int: ...  # events that were not JSON objects (the decoder skips)

    def feed(self, data: str, event: str | None = None) -> list[ev.Event]: ...

    # the text of one whole `data:` event of a text-only chunk, else None
    # (`chat.StreamDecoder.text_event`)
    text_event: Callable[[bytes], str | None]


class ClientStream(Protocol):
    """Where the client's bytes go: `bridge.http1.Response` (a recorder in tests)."""

    started: bool
    on_pause: Callable[[], None] | None
    on_resume: Callable[[], None] | None

    @property
    def paused(self) -> bool: ...

    def start(self, status: int, headers: Headers, first: bytes = b"") -> None: ...

    def write(self, data: bytes) -> None: ...

    def end(self, data: bytes = b"") -> None: ...


class MalformedStream(Exception):
    """The upstream sent an event the chat decoder cannot read."""


class Pump:
    __slots__ = (
        "decoder",
        "encoder",
        "client",
        "head",
        "parser",
        "buffer",
        "opened",
        "finished",
        "texts",
        "reasoning",
        "calls",
        "order",
        "finish_seen",
        "room",
        "scrub",
        "failed",
        "fast",
        "usage",
        "mask",
        "side",
    )

    def __init__(
        self,
        decoder: ChunkDecoder,
        encoder: StreamEncoder,
        client: ClientStream,
        remember: int = REMEMBER_CHARS,
        scrub: Callable[[str], str] = str,
        mask: SentMasker | None = None,
    ) -> None:
        self.decoder = decoder
        self.encoder = encoder
        self.client = client
        self.head: bytes | None = None  # the protocol's opening events (`prepare`)
        self.parser: SSEParser | None = None  # the general parser, once a stream needs it
        self.buffer = b""
        self.opened = False  # the upstream answered 2xx: the client's stream has begun
        self.finished = False  # the decoder saw the upstream's `[DONE]`
        self.texts: list[str] = []
        self.reasoning: list[str] = []
        self.calls: dict[int, list[str]] = {}  # index → [call_id, name, kind, arguments…]
        self.order: list[str] = []  # "text" / "reasoning" / "call:N", in order of first sight
        self.finish_seen = False  # a neutral FinishEvent went to the encoder
        self.room = remember  # characters still to remember; below 0, the answer is forgotten
        self.scrub = scrub  # the bridge's keys out of the upstream's words (its error events)
        self.failed = False  # the upstream's error event went to the client: the stream's end
        self.fast = True  # the per-token shortcut, while the general parser is not needed
        self.usage: Usage | None = None  # the upstream's token counts (for --record)
        self.mask = mask or None  # the keys sent upstream, out of the answer's text
        # the same for reasoning ("reasoning") and each tool call's arguments (its index)
        self.side: dict[str | int, SentMasker] = {}

    def prepare(self) -> None:
        """Encode the opening events, numbered before any upstream byte is encoded. The app
        calls this once the upstream request is on its way, to do it while the upstream
        thinks rather than between its first bytes and the client's (15-30 µs)."""
        if self.head is None:
            self.head = self.encoder.head()
            prime = getattr(self.encoder, "prime", None)  # (the Responses encoder's)
            if prime is not None:
                prime()

    # --- the relay's sink ---------------------------------------------------------------
    def on_headers(self, status: int, headers: list[tuple[str, str]]) -> None:
        self.prepare()
        self.opened = True
        # The head waits for the end of this read: events in it go out in the same write.
        asyncio.get_running_loop().call_soon(self._send, b"")

    def on_reader(self, reader: Reader) -> None:
        client = self.client
        client.on_pause, client.on_resume = reader.pause, reader.resume
        if client.paused:
            reader.pause()

    def on_body(self, data: bytes) -> bool:
        # The per-token path: a read of exactly one `data: {json}\n\n` event whose JSON is
        # nothing but a text delta goes from the upstream's bytes to the client's in one step,
        # without the block split, the str copy or a neutral event (docs/benchmarks/bridge.md:
        # instructions per event). The decoder's template checks the framing with the JSON
        # around the text. Anything else, or an event `text_event` declines, takes the general
        # way below, which reads it the same.
        if self.fast and not self.buffer:
            text = self.decoder.text_event(data)
            if text is not None and self.mask is not None:
                text = self.mask.feed(text)
                if not text:
                    return False  # all of it held: it may begin a key
            if text is not None:
                if self.side:
                    self._send(b"".join(self._release_side([])))
                self.room -= len(text)
                if self.room >= 0:
                    if not self.texts:
                        self.order.append("text")
                    self.texts.append(text)
                elif self.order:  # too long to store: what was kept is let go
                    self.texts, self.reasoning, self.calls, self.order = [], [], {}, []
                client = self.client
                if client.started:
                    client.write(self.encoder.text(text))
                else:
                    self._send(self.encoder.text(text))
                return False
        out: list[bytes] = []
        if self.parser is None:
            self._fast(data, out)
        else:
            for event in self._parse(data):
                if self.finished:
                    break
                self._event(event.data, event.event, out)
        if out:
            self._send(out[0] if len(out) == 1 else b"".join(out))
        if self.finished:
            self.fast = False  # nothing is relayed after the end
        return self.finished

    def _send(self, data: bytes) -> None:
        client = self.client
        if client.started:
            client.write(data)
        else:
            client.start(200, SSE_HEADERS, (self.head or b"") + data)

    def end(self, tail: bytes) -> None:
        """The stream's closing bytes (the closing events, or an error event)."""
        client = self.client
        client.on_pause = client.on_resume = None  # the upstream connection may serve another
        if not client.started:
            client.start(200, SSE_HEADERS, self.head or b"")
        client.end(tail)

    def _fast(self, data: bytes, out: list[bytes]) -> None:
        """Chat upstreams send `data: {json}\n\n` and nothing else: split on the blank line
        and take the payload, without the general parser's per-line work (~4x cheaper per
        event, measured with benchmarks/bridge). Anything else in a block (an `event:` line,
        a comment, a multi-line data) goes through `SSEParser`; a CR anywhere switches the
        rest of the stream to it, since CRLF line ends need its care."""
        buffer = self.buffer + data if self.buffer else data
        # `find`, not `in`: bytes' `in` tries the operand as an int first and formats the
        # TypeError it gets (valgrind: ~1,800 instructions a test, against ~300)
        if buffer.find(b"\r") >= 0:
            self.fast = False  # CRLF line ends: the general parser from here on
            self.parser = SSEParser()
            self.buffer = b""
            for event in self._parse(buffer):
                if self.finished:
                    return
                self._event(event.data, event.event, out)
            return
        blocks = buffer.split(b"\n\n")
        self.buffer = blocks.pop()
        if len(self.buffer) > MAX_EVENT_LINE_BYTES:  # an upstream that never ends its event
            raise MalformedStream(f"an event over {MAX_EVENT_LINE_BYTES} bytes")
        for block in blocks:
            if self.finished:
                return
            if block[:6] == b"data: " and block.find(b"\n") < 0:
                self._event(block[6:].decode("utf-8", "replace"), "message", out)
            elif block:
                for event in _general(block):
                    self._event(event.data, event.event, out)

    def _parse(self, data: bytes) -> list[ServerSentEvent]:
        assert self.parser is not None
        try:
            return self.parser.feed(data)
        except EventTooLarge as exc:  # the general parser's own bound
            raise MalformedStream(str(exc)) from exc

    def close(self) -> bytes:
        """The upstream body ended: the events of a last event that had no blank line after."""
        out: list[bytes] = []
        parser = self.parser
        if parser is None:
            parser = SSEParser()
            parser.feed(self.buffer)
            self.buffer = b""
        for event in parser.close():
            if not self.finished:
                self._event(event.data, event.event, out)
        self.release(out)
        return b"".join(out)

    def release(self, out: list[bytes], keep: str | int | None = None) -> None:
        """The words held back in case they began a key (none did), before any other event:
        the text's, and every other channel's but `keep`'s (the channel of the event next)."""
        if self.mask is not None and self.mask.held:
            text = self.mask.flush()
            if self.room >= 0:
                self._keep(text, self.texts, "text")
            out.append(self.encoder.text(text))
        if self.side:
            self._release_side(out, keep)

    def _release_side(self, out: list[bytes], keep: str | int | None = None) -> list[bytes]:
        for channel in [c for c in self.side if c != keep]:
            held = self.side.pop(channel).flush()
            if held:
                event: ev.Event = (
                    ev.ReasoningDelta(held)
                    if channel == "reasoning"
                    else ev.ToolCallDelta(int(channel), held)
                )
                self._remember(event)
                out.append(self.encoder.encode(event))
        return out

    def _masked(self, event: ev.Event, out: list[bytes]) -> ev.Event | None:
        """A reasoning or tool-call event with the sent keys masked (None: all of it held)."""
        assert self.mask is not None
        if type(event) is ev.ToolCallBegin:
            self.release(out)
            sent = self.mask.sent
            return replace(
                event, call_id=mask_sent(event.call_id, sent), name=mask_sent(event.name, sent)
            )
        if type(event) is ev.ReasoningDelta:
            text = self._side_feed("reasoning", event.text, out)
            if not text and event.signature is None:
                return None
            return ev.ReasoningDelta(text, event.signature)
        assert type(event) is ev.ToolCallDelta
        text = self._side_feed(event.index, event.arguments, out)
        return ev.ToolCallDelta(event.index, text) if text else None

    def _side_feed(self, channel: str | int, text: str, out: list[bytes]) -> str:
        """`text` of one channel, masked, once the other channels' held words went out."""
        assert self.mask is not None
        self.release(out, keep=channel)
        masker = self.side.get(channel)
        if masker is None:
            masker = self.side[channel] = SentMasker(self.mask.sent)
        return masker.feed(text)

    def _event(self, data: str, name: str, out: list[bytes]) -> None:
        decoder = self.decoder
        malformed = decoder.malformed
        try:
            events = decoder.feed(data, None if name == "message" else name)
        except (WireError, ValueError, TypeError, KeyError, RecursionError) as exc:
            said = "nested too deep" if isinstance(exc, RecursionError) else exc
            raise MalformedStream(
                f"an event the bridge cannot read ({said}): {data[:80]!r}"
            ) from None
        if decoder.malformed != malformed and data.strip():
            # The decoder skips junk; for the bridge a garbled chunk means lost output, so the
            # client is told (an empty `data:` keep-alive stays harmless).
            raise MalformedStream(f"a chunk that is not a JSON object: {data[:80]!r}")
        encoder = self.encoder
        for event in events:
            if type(event) is ev.TextDelta:  # the per-token hot path: pre-rendered frames
                text = event.text
                if self.mask is not None:
                    if self.side:
                        self._release_side(out)
                    text = self.mask.feed(text)
                    if not text:
                        continue  # held: it may begin a key
                if self.room >= 0:
                    self._keep(text, self.texts, "text")
                out.append(encoder.text(text))
            elif type(event) is ev.ErrorEvent:  # an upstream may echo the key it was sent
                self.release(out)
                code = self.scrub(event.code) if event.code else None
                out.append(
                    encoder.encode(ev.ErrorEvent(self.scrub(event.message), event.status, code))
                )
                self.failed = self.finished = True  # nothing more is relayed after it
                return
            else:
                if self.mask is not None and type(event) in _MASKED:
                    masked = self._masked(event, out)
                    if masked is None:
                        continue  # held: it may begin a key
                    event = masked
                else:
                    self.release(out)
                self._remember(event)
                out.append(encoder.encode(event))
        if decoder.closed:
            self.finished = True

    def _keep(self, text: str, kept: list[str], item: str) -> None:
        self.room -= len(text)
        if self.room < 0:  # too long to store: what was kept is let go
            self.texts, self.reasoning, self.calls, self.order = [], [], {}, []
            return
        if not kept:
            self.order.append(item)
        kept.append(text)

    @property
    def remembered(self) -> bool:
        """Whether `message()` is the whole answer (it was not too long to keep)."""
        return self.room >= 0

    @property
    def complete(self) -> bool:
        """The upstream said it finished (its `[DONE]`, or at least a finish reason)."""
        return self.finished or self.finish_seen

    # --- what the answer said -----------------------------------------------------------
    def _remember(self, event: ev.Event) -> None:
        kind = type(event)
        if kind is ev.FinishEvent:
            self.finish_seen = True
        elif kind is ev.UsageEvent:
            self.usage = event.usage  # type: ignore[union-attr]
        elif self.room < 0:
            return
        elif kind is ev.TextDelta:
            self._keep(event.text, self.texts, "text")  # type: ignore[union-attr]
        elif kind is ev.ReasoningDelta:
            self._keep(event.text, self.reasoning, "reasoning")  # type: ignore[union-attr]
        elif kind is ev.ToolCallBegin:
            begin: ev.ToolCallBegin = event  # type: ignore[assignment]
            self.calls[begin.index] = [begin.call_id, begin.name, begin.kind]
            self.order.append(f"call:{begin.index}")
        elif kind is ev.ToolCallDelta:
            delta: ev.ToolCallDelta = event  # type: ignore[assignment]
            call = self.calls.get(delta.index)
            if call is not None:
                self._keep(delta.arguments, call, "")

    def message(self) -> Message:
        """The assistant's answer so far, as a neutral message."""
        parts: list[Part] = []
        for item in self.order:
            if item == "text":
                parts.append(TextPart("".join(self.texts)))
            elif item == "reasoning":
                parts.append(ReasoningPart("".join(self.reasoning)))
            else:
                call_id, name, kind, *arguments = self.calls[int(item[5:])]
                parts.append(ToolCallPart(call_id, name, "".join(arguments), kind))
        return Message("assistant", parts)
