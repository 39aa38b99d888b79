"""One streamed answer from the upstream to the client, event by event.

`Pump` is the relay's sink: the transport calls `on_body` from its read callback with whatever
bytes one read produced; they are parsed (SSE), decoded (chat chunk → neutral events), encoded
(neutral → the client's protocol) and written to the client at once. Nothing waits for more
than the bytes in hand: a read that carried five chunks becomes one write of five events, a
read with half a chunk writes nothing until the other half arrives.

Writing happens in the read callback itself (`writer`, the ASGI `send` of the response body),
not in the request's task: handing each event to the task cost a wake-up, a loop turn and an
epoll call per event, about a fifth of the bridge's CPU per streamed event (measured with
benchmarks/bridge). A `send` that must wait (the client reads slower than the upstream writes:
the server's flow control) is handed, suspended, to the request's task, which drives it to its
end and writes what queued up meanwhile, in order; so does everything when no writer is set.

It also keeps what the answer said (text, reasoning, tool calls) as a neutral assistant message,
for the response store.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from typing import Any, Protocol

from notes_cli.gateway._limits import MAX_EVENT_LINE_BYTES
from notes_cli.gateway.sse import EventTooLarge, ServerSentEvent, SSEParser
from notes_cli.wire import events as ev
from notes_cli.wire.errors import WireError
from notes_cli.wire.turn import Message, Part, ReasoningPart, TextPart, ToolCallPart


def _general(block: bytes) -> list[ServerSentEvent]:
    parser = SSEParser()
    return parser.feed(block + b"\n\n")


class ChunkDecoder(Protocol):
    """`wire.chat.StreamDecoder`, or a filter around it."""

    closed: bool  # `[DONE]` seen
    malformed: int  # events that were not JSON objects (the decoder skips them)

    def feed(self, data: str, event: str | None = None) -> list[ev.Event]: ...


class MalformedStream(Exception):
    """The upstream sent an event the chat decoder cannot read."""


class Pump:
    __slots__ = (
        "decoder",
        "encoder",
        "parser",
        "buffer",
        "pending",
        "waiter",
        "headers",
        "finished",
        "texts",
        "reasoning",
        "calls",
        "order",
        "loop",
        "finish_seen",
        "writer",
        "inflight",
        "write_error",
    )

    def __init__(self, decoder: ChunkDecoder, encoder: Any) -> None:
        self.decoder = decoder
        self.encoder = encoder
        self.parser: SSEParser | None = None  # the general parser, once a stream needs it
        self.buffer = b""
        self.pending: list[bytes] = []
        self.waiter: asyncio.Future[None] | None = None
        self.headers = False
        self.finished = False  # the decoder saw the upstream's `[DONE]`
        self.texts: list[str] = []
        self.reasoning: list[str] = []
        self.calls: dict[int, list[str]] = {}  # index → [call_id, name, kind, arguments…]
        self.order: list[str] = []  # "text" / "reasoning" / "call:N", in order of first sight
        self.loop = asyncio.get_running_loop()
        self.finish_seen = False  # a neutral FinishEvent went to the encoder
        # bytes → a `send` coroutine; set once the response has started (see the docstring)
        self.writer: Callable[[bytes], Coroutine[Any, Any, None]] | None = None
        self.inflight: tuple[Coroutine[Any, Any, None], Any] | None = None  # a waiting send
        self.write_error: BaseException | None = None  # what a direct send raised

    # --- the relay's sink ---------------------------------------------------------------
    def on_headers(self, status: int, headers: list[tuple[str, str]]) -> None:
        self.headers = True
        self._wake()

    def on_body(self, data: bytes) -> bool:
        out: list[bytes] = []
        if self.parser is None:
            self._fast(data, out)
        else:
            for event in self._parse(data):
                if self.finished:
                    break
                self._event(event.data, event.event, out)
        if out:
            waiter = self.waiter
            idle = waiter is not None and not waiter.done()  # parked, with nothing queued
            if idle and self.writer is not None and self.inflight is None:
                self._write_now(b"".join(out))  # nothing is ahead of these: write them now
            else:
                self.pending.extend(out)
                self._wake()
        return self.finished

    def _write_now(self, data: bytes) -> None:
        assert self.writer is not None
        send = self.writer(data)
        try:
            waiting = send.send(None)
        except StopIteration:
            return  # written
        except BaseException as exc:  # the task raises it, as if its own send had
            self.write_error, self.writer = exc, None
            self._wake()
            return
        self.inflight = (send, waiting)
        self._wake()

    async def finish_inflight(self) -> None:
        """Drive the send that had to wait to its end (the task's side; see the docstring)."""
        inflight = self.inflight
        if inflight is None:
            return
        send, waiting = inflight
        try:
            while True:
                if waiting is None:  # a bare `yield`: run again on the next loop turn
                    await asyncio.sleep(0)
                else:  # a future, as a Task would: resume once it is done
                    await asyncio.wait([waiting])
                try:
                    waiting = send.send(None)
                except StopIteration:
                    return
        except BaseException:
            send.close()
            raise
        finally:
            self.inflight = None

    def _fast(self, data: bytes, out: list[bytes]) -> None:
        """Chat upstreams send `data: {json}\n\n` and nothing else: split on the blank line
        and take the payload, without the general parser's per-line work (~4x cheaper per
        event, measured with benchmarks/bridge). Anything else in a block (an `event:` line,
        a comment, a multi-line data) goes through `SSEParser`; a CR anywhere switches the
        rest of the stream to it, since CRLF line ends need its care."""
        buffer = self.buffer + data if self.buffer else data
        if b"\r" in buffer:
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
            if block[:6] == b"data: " and b"\n" not in block:
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

    def close(self) -> None:
        """The upstream body ended: flush a last event that had no blank line after it."""
        out: list[bytes] = []
        parser = self.parser
        if parser is None:
            parser = SSEParser()
            parser.feed(self.buffer)
            self.buffer = b""
        for event in parser.close():
            if not self.finished:
                self._event(event.data, event.event, out)
        if out:
            self.pending.extend(out)

    def _event(self, data: str, name: str, out: list[bytes]) -> None:
        decoder = self.decoder
        malformed = decoder.malformed
        try:
            events = decoder.feed(data, None if name == "message" else name)
        except (WireError, ValueError, TypeError, KeyError) as exc:
            raise MalformedStream(
                f"an event the bridge cannot read ({exc}): {data[:80]!r}"
            ) from None
        if decoder.malformed != malformed and data.strip():
            # The decoder skips junk; for the bridge a garbled chunk means lost output, so the
            # client is told (an empty `data:` keep-alive stays harmless).
            raise MalformedStream(f"a chunk that is not a JSON object: {data[:80]!r}")
        encoder = self.encoder
        for event in events:
            if type(event) is ev.TextDelta:  # the per-token hot path: pre-rendered frames
                text = event.text
                if not self.texts:
                    self.order.append("text")
                self.texts.append(text)
                out.append(encoder.text(text))
            else:
                self._remember(event)
                out.append(encoder.encode(event))
        if decoder.closed:
            self.finished = True

    @property
    def complete(self) -> bool:
        """The upstream said it finished (its `[DONE]`, or at least a finish reason)."""
        return self.finished or self.finish_seen

    # --- the writer's side --------------------------------------------------------------
    def take(self) -> bytes:
        data = b"".join(self.pending)
        self.pending.clear()
        return data

    async def wait(self) -> None:
        """Until there are bytes to write (or headers, a send to finish, a wake from `wake`)."""
        if self.pending or self.inflight is not None or self.write_error is not None:
            return
        self.waiter = self.loop.create_future()
        try:
            await self.waiter
        finally:
            self.waiter = None

    def wake(self) -> None:
        self._wake()

    def _wake(self) -> None:
        waiter = self.waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    # --- what the answer said -----------------------------------------------------------
    def _remember(self, event: ev.Event) -> None:
        kind = type(event)
        if kind is ev.TextDelta:
            if not self.texts:
                self.order.append("text")
            self.texts.append(event.text)  # type: ignore[union-attr]
        elif kind is ev.ReasoningDelta:
            if not self.reasoning:
                self.order.append("reasoning")
            self.reasoning.append(event.text)  # type: ignore[union-attr]
        elif kind is ev.ToolCallBegin:
            begin: ev.ToolCallBegin = event  # type: ignore[assignment]
            self.calls[begin.index] = [begin.call_id, begin.name, begin.kind]
            self.order.append(f"call:{begin.index}")
        elif kind is ev.FinishEvent:
            self.finish_seen = True
        elif kind is ev.ToolCallDelta:
            delta: ev.ToolCallDelta = event  # type: ignore[assignment]
            call = self.calls.get(delta.index)
            if call is not None:
                call.append(delta.arguments)

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
