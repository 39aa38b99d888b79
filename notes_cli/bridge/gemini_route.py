"""The bridge's Gemini routes (Gemini CLI, Google's SDKs; base URL `http://HOST:PORT`, to which
the SDK adds the API version):

    POST /v1beta/models/MODEL:generateContent
    POST /v1beta/models/MODEL:streamGenerateContent?alt=sse
    POST /v1beta/models/MODEL:countTokens        (counted here, no upstream call)
    GET  /v1beta/models                          (the upstream's models, in Gemini's form)

`v1` and `v1alpha` are served the same (`GET /v1/models` only for a Google client:
`matches`). A turn takes the same way as a Responses or Messages one (`BridgeApp.turn`:
auth, the model map, tools, the chat upstream, streaming, errors), with a `Leg` that knows the
model and the stream mode from the URL. A stream asked for without `?alt=sse` (Google's
JSON-array framing) is refused with a 400 that says so: Google's SDKs and Gemini CLI always
ask for SSE, and the bridge's stream path speaks SSE only.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable
from dataclasses import dataclass
from typing import Protocol
from urllib.parse import parse_qs, unquote

from notes_cli.bridge import translate
from notes_cli.bridge.config import BridgeConfig
from notes_cli.bridge.http1 import Request, Response
from notes_cli.engine.core import prompt
from notes_cli.gateway import errors as gw
from notes_cli.wire import fastjson, gemini
from notes_cli.wire.codec import StreamEncoder
from notes_cli.wire.errors import WireError
from notes_cli.wire.turn import Turn

PATH = re.compile(r"^/(?:v1beta|v1|v1alpha)/models(?:/(?P<rest>.+))?$")
BAD_KEY = "API key not valid. Please pass a valid API key."
_JSON_HEADERS = [(b"content-type", b"application/json")]
_METHODS = frozenset({"generateContent", "streamGenerateContent", "countTokens"})


class _Upstream(Protocol):
    def fetch(
        self, method: str, path: str, body: bytes | None = None
    ) -> Awaitable[tuple[int, bytes]]: ...


class Host(Protocol):
    """What these routes use of `bridge.app.BridgeApp` (typed here: app imports this module)."""

    config: BridgeConfig

    def authorised(self, request: Request) -> bool: ...

    def turn(self, leg: translate.Leg, request: Request, response: Response) -> Awaitable[None]: ...

    def wire_error(self, response: Response, leg: translate.Leg, error: WireError) -> None: ...

    def choose_upstream(self) -> _Upstream: ...

    def error_for(self, error: BaseException | None) -> WireError: ...

    def unreadable_answer(self, exc: BaseException) -> WireError: ...


@dataclass(frozen=True)
class GeminiLeg(translate.Leg):
    """Gemini as a client protocol: the model and the stream mode come from the URL."""

    model: str = ""
    streamed: bool = False

    def decode_request(self, raw: bytes) -> Turn:
        return gemini.decode_request(raw, model=self.model, stream=self.streamed)

    def stream_encoder(self, response_id: str, model: str) -> StreamEncoder:
        return gemini.StreamEncoder(response_id, model, include_usage=True)


LEG = GeminiLeg("gemini", gemini, "", BAD_KEY)


def matches(request: Request) -> bool:
    """A Gemini request: a Gemini path, or any path a Google SDK asks for (its
    `x-goog-api-key` or `x-goog-api-client` header, or `?key=`), so that a wrong base URL is
    a 404 in Google's format. `GET /v1/models` is the OpenAI / Anthropic list too: it is
    Gemini's only when a Google SDK asks (the Python SDK's default API version is `v1`)."""
    path = request.path
    if path != "/v1/models" and PATH.match(path) is not None:
        return True
    google = any(name in (b"x-goog-api-key", b"x-goog-api-client") for name, _ in request.headers)
    asked = google or "key" in parse_qs(request.query)
    return asked and path != "/health" and request.method != "HEAD"


async def handle(app: Host, request: Request, response: Response) -> None:
    """One request on a Gemini path (`matches` said so)."""
    match = PATH.match(request.path)
    if not app.authorised(request):  # nothing of the request is read or echoed
        app.wire_error(response, LEG, WireError(401, "authentication", BAD_KEY))
        return
    if match is None:  # a Google SDK on a path that is none of Gemini's
        said = f"no route {request.method} {request.path} on the pdnotes bridge"
        hint = (
            " (Gemini CLI's GOOGLE_GEMINI_BASE_URL is the bridge's root, http://HOST:PORT, "
            "without the API version: the SDK adds /v1beta itself)"
        )
        app.wire_error(response, LEG, WireError(404, "not_found", said + hint))
        return
    rest = match.group("rest")
    if rest is None and request.method == "GET":
        await _models(app, response)
        return
    # Percent-escapes are the model's own characters (`qwen%2Fqwen3-32b`, `my%20model`: a URL
    # library escapes what a path cannot carry), as the engine's router reads them.
    model, _, method = unquote(rest or "", errors="replace").rpartition(":")
    if request.method != "POST" or not model or method not in _METHODS:
        said = f"no route {request.method} {request.path} on the pdnotes bridge"
        app.wire_error(response, LEG, WireError(404, "not_found", said))
        return
    if method == "countTokens":
        _count_tokens(app, request, response, model)
        return
    streamed = method == "streamGenerateContent"
    if streamed and "sse" not in parse_qs(request.query).get("alt", []):
        said = "the pdnotes bridge streams Gemini answers as SSE only: add ?alt=sse"
        app.wire_error(response, LEG, WireError(400, "invalid_request", said, param="alt"))
        return
    await app.turn(GeminiLeg("gemini", gemini, "", BAD_KEY, model, streamed), request, response)


def _count_tokens(app: Host, request: Request, response: Response, model: str) -> None:
    """By the bundled engine's rule (`engine.core.prompt`), as the Messages count is: a
    chat-completions upstream has no count endpoint. The upstream's tokenizer may differ."""
    try:
        turn = gemini.decode_count_request(request.body, model=model)
    except WireError as error:
        app.wire_error(response, LEG, error)
        return
    count = prompt.prompt_tokens(turn.messages)
    response.send(200, _JSON_HEADERS, fastjson.dumps({"totalTokens": count}))


async def _models(app: Host, response: Response) -> None:
    try:
        _, body = await app.choose_upstream().fetch("GET", "/models")
    except gw.GatewayError as exc:
        app.wire_error(response, LEG, app.error_for(exc))
        return
    try:
        ids = translate.model_ids(body)
    except (ValueError, TypeError, KeyError, RecursionError) as exc:
        app.wire_error(response, LEG, app.unreadable_answer(exc))
        return
    aliases = list(app.config.model_map)
    listed = gemini.encode_models([*aliases, *(i for i in ids if i not in aliases)])
    response.send(200, _JSON_HEADERS, fastjson.dumps(listed))
