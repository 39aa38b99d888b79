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
"""

from __future__ import annotations

import asyncio
from typing import Any, cast

from notes_cli.bridge.pump import SSE_HEADERS, ClientStream
from notes_cli.bridge.translate import RESPONSES, Leg
from notes_cli.gateway.relay import Reader
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

    __slots__ = ("client", "opened")

    def __init__(self, client: ClientStream) -> None:
        self.client = client
        self.opened = False  # the upstream answered 2xx: the client's stream has begun

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
        if not client.started:
            client.start(200, SSE_HEADERS)
        client.end(b"" if error is None else b"data: " + fastjson.dumps(error) + b"\n\n")


def stream_error(error: WireError) -> dict[str, Any]:
    """The in-stream error event's payload."""
    return chat.encode_error(error)
