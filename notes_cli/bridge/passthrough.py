"""Chat completions passed through: `POST /v1/chat/completions` goes to the upstreams as it
came, so clients that speak chat themselves (OpenCode, Qwen Code, the openai SDK's
`chat.completions`) get the bridge's fallbacks, its key handling and its bounds.

Nothing is translated. The request body is read only to rename its model (`--model-map`) and
to see whether it streams; the answer's bytes go to the client as the upstream sent them,
written from the upstream's read callback like the translated streams (`bridge.pump`), with the
same backpressure. The answer keeps the upstream's model id (rewriting it would mean decoding
every chunk, which is what a pass-through is for not doing).

Failures are OpenAI error objects: before the answer starts, with the status (the upstreams'
fallbacks first: `bridge.fallback`); after it started, a last `data: {"error": {…}}` event and
the end of the stream (the openai SDK raises an `APIError` on such an event), with no
`data: [DONE]`, so a client cannot take the cut answer for a whole one.

When the bridge sends a key upstream, an upstream that echoes it must not show it to the
bridge's clients (who do not have it): each event is then read (`Unsend`), its text masked as
the translated streams' are (`secrets.SentMasker`, a key split across events included), and an
event is rewritten only where something changed or a text's last characters wait to see
whether they begin a key; every other event's bytes still go out as they came.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
from typing import Any, cast

from notes_cli.bridge.pump import SSE_HEADERS, ClientStream
from notes_cli.bridge.recording import UsageTap
from notes_cli.bridge.translate import RESPONSES, Leg
from notes_cli.gateway._limits import MAX_EVENT_LINE_BYTES
from notes_cli.gateway.relay import Reader
from notes_cli.secrets import SentMasker, mask_sent
from notes_cli.wire import _fields as f
from notes_cli.wire import chat, fastjson
from notes_cli.wire.codec import Codec
from notes_cli.wire.errors import WireError

CHAT = Leg("chat", cast(Codec, chat), "chatcmpl-", RESPONSES.bad_key_message)
"""The chat protocol as a leg for the bridge's error answers (OpenAI's error object)."""


def prepare(body: bytes, model_map: dict[str, str]) -> tuple[bytes, bool]:
    """The body to send upstream (its `model` renamed when the map has it; else the bytes as
    they came) and whether the client asked for a stream. A body that is not a JSON object,
    or has no string `model`, is a 400 (nothing goes upstream)."""
    data = f.decode_json_object(body)
    model = data.get("model")
    if not isinstance(model, str) or not model:
        raise WireError(400, "invalid_request", "`model` must be a model id", param="model")
    stream = data.get("stream") is True
    target = model_map.get(model)
    if target is None or target == model:
        return body, stream
    data["model"] = target
    return fastjson.dumps(data), stream


class RawStream:
    """The relay's sink for a passed-through stream: the upstream's bytes, as they come."""

    __slots__ = ("client", "opened", "tap", "unsend")

    def __init__(
        self, client: ClientStream, mask: SentMasker | None = None, tap: UsageTap | None = None
    ) -> None:
        self.client = client
        self.opened = False  # the upstream answered 2xx: the client's stream has begun
        self.unsend = Unsend(mask) if mask else None  # the keys sent upstream, masked
        self.tap = tap  # `bridge serve --record`: the usage read as the bytes go by

    def on_headers(self, status: int, headers: list[tuple[str, str]]) -> None:
        self.opened = True
        # the head waits for the end of this read: a first chunk in it goes in the same write
        asyncio.get_running_loop().call_soon(self._send, b"")

    def on_reader(self, reader: Reader) -> None:
        client = self.client
        client.on_pause, client.on_resume = reader.pause, reader.resume
        if client.paused:
            reader.pause()

    def on_body(self, data: bytes) -> bool:
        if self.tap is not None:
            self.tap.feed(data)
        if self.unsend is not None:
            data = self.unsend.feed(data)
        self._send(data)
        return False  # the stream's end is the upstream body's end

    def _send(self, data: bytes) -> None:
        client = self.client
        if client.started:
            if data:
                client.write(data)
        else:
            client.start(200, SSE_HEADERS, data)

    def end(self, error: dict[str, Any] | None = None) -> None:
        """The stream is over: with `error` (an OpenAI error object), it goes out as a last
        event first."""
        client = self.client
        client.on_pause = client.on_resume = None  # the upstream connection may serve another
        rest = self.unsend.close() if self.unsend is not None else b""
        if not client.started:
            client.start(200, SSE_HEADERS)
        client.end(rest + (b"" if error is None else b"data: " + fastjson.dumps(error) + b"\n\n"))


def stream_error(error: WireError) -> dict[str, Any]:
    """The in-stream error event's payload."""
    return chat.encode_error(error)


_EVENT_END = re.compile(rb"\r\n\r\n|\n\n|\r\r")


class Unsend:
    """A passed-through stream's events with the keys the bridge sent masked: the text of
    each `data:` chunk goes through one `SentMasker` (so a key split across chunks is seen
    whole), and a whole key anywhere else in an event (a finish reason, an id) is masked in
    its JSON text. Bytes wait only for the rest of their event. A text chunk is read the way
    the translated streams read it (`chat.StreamDecoder.text_event`: the chunk's framing
    checked against the last one's, only its text decoded), and goes out as it came unless
    its text changed; other chunks are decoded whole. Measured with benchmarks/bridge/run.py
    (docs/benchmarks/bridge.md): decoding every chunk whole doubled the pass-through's CPU
    per event."""

    __slots__ = ("mask", "buffer", "decoder", "forms")

    def __init__(self, mask: SentMasker) -> None:
        self.mask = mask
        self.buffer = b""
        self.decoder = chat.StreamDecoder()  # (for its `text_event` only)
        self.forms = tuple(form.encode() for form in mask.forms)

    def feed(self, data: bytes) -> bytes:
        buffer = self.buffer + data if self.buffer else data
        if buffer.endswith(b"\n\n") and buffer.find(b"\n\n") == len(buffer) - 2:
            self.buffer = b""  # (the per-token case: one whole event)
            return self._event(buffer)
        out: list[bytes] = []
        start = 0
        for end in _EVENT_END.finditer(buffer):
            out.append(self._event(buffer[start : end.end()]))
            start = end.end()
        self.buffer = buffer[start:]
        if len(self.buffer) > MAX_EVENT_LINE_BYTES:  # not SSE: let the bytes go, masked
            out.append(self._masked(self.buffer))
            self.buffer = b""
        return b"".join(out)

    def close(self) -> bytes:
        """The upstream's body ended: its unfinished event, and any text still held."""
        last, self.buffer = self.buffer, b""
        return (self._event(last) if last else b"") + self._held()

    def _event(self, block: bytes) -> bytes:
        text = self.decoder.text_event(block)
        if text is not None:
            shown = self.mask.feed(text)
            if shown == text and not self._echoes(block):
                return block  # (the common case: the upstream's bytes, unchanged)
            chunk = fastjson.loads_object(block.strip()[5:])
            return self._rewritten(chunk, shown) if chunk is not None else self._masked(block)
        data = block.strip()
        if not data.startswith(b"data:") or data[5:].strip() == b"[DONE]":
            return self._held() + self._masked(block)
        chunk = fastjson.loads_object(data[5:])
        with contextlib.suppress(WireError, ValueError, TypeError, KeyError, RecursionError):
            self.decoder.feed(data[5:].decode("utf-8", "replace"))  # (its template starts)
        delta = _delta(chunk)
        content = delta.get("content") if delta is not None else None
        if chunk is None or not isinstance(content, str):
            return self._held() + self._masked(block)
        shown = self.mask.feed(content)
        if shown == content and not self._echoes(block):
            return block
        return self._rewritten(chunk, shown)

    def _rewritten(self, chunk: dict[str, Any], text: str) -> bytes:
        """`chunk` with its text replaced by `text`, and any whole key in it masked."""
        delta = _delta(chunk)
        if delta is not None:
            delta["content"] = text
        masked = mask_sent(fastjson.dumps(chunk).decode("utf-8"), self.mask.sent)
        return b"data: " + masked.encode("utf-8") + b"\n\n"

    def _echoes(self, block: bytes) -> bool:
        for form in self.forms:  # noqa: SIM110 - a loop: no generator per event; `find`, not `in` (bridge.pump)
            if block.find(form) >= 0:
                return True
        return False

    def _held(self) -> bytes:
        held = self.mask.flush()
        if not held:
            return b""
        chunk = {"object": "chat.completion.chunk", "choices": [_text_choice(held)]}
        return b"data: " + fastjson.dumps(chunk) + b"\n\n"

    def _masked(self, block: bytes) -> bytes:
        if not self._echoes(block):
            return block
        text = block.decode("utf-8", "surrogateescape")
        return mask_sent(text, self.mask.sent).encode("utf-8", "surrogateescape")


def _delta(chunk: dict[str, Any] | None) -> dict[str, Any] | None:
    """The first choice's `delta` of a chat chunk (where its text is), else None."""
    choices = chunk.get("choices") if chunk is not None else None
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        return None
    delta = choices[0].get("delta")
    return delta if isinstance(delta, dict) else None


def _text_choice(text: str) -> dict[str, Any]:
    return {"index": 0, "delta": {"content": text}, "finish_reason": None}
