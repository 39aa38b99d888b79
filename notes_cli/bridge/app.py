"""The bridge's app: what it answers, on `bridge.http1`'s requests and responses.

    POST /v1/responses           Codex, the openai SDK's Responses client   (base URL …/v1)
    POST /v1/messages[?beta=true] Claude Code, the anthropic SDK             (base URL …/)
    POST /v1/messages/count_tokens Claude Code's pre-flight count (answered here, no upstream call)
    POST /v1/chat/completions    chat clients (OpenCode, Qwen Code): passed through, with fallbacks
    GET  /v1/models              both (one list whose entries carry both protocols' fields)
    POST /v1beta/models/MODEL:generateContent | :streamGenerateContent?alt=sse | :countTokens,
    GET  /v1beta/models          Gemini CLI, Google's SDKs (`bridge.gemini_route`)
    HEAD /, /v1, /api/hello, /v1/responses   the probes Claude Code and `codex doctor` send
    GET  /health                 the bridge and its upstream (for `pdnotes doctor`)

No framework: eight routes, and the streaming path is the one place where per-request and
per-event cost shows (docs/benchmarks/bridge.md), so nothing sits between the upstream's read
callback and the client's socket but the translation itself (`pump`).

Failures become the client protocol's error object: the bridge's own refusals (bad body,
local key, unknown `previous_response_id`), the upstream's 4xx/5xx (its message, key scrubbed,
status kept), a dead upstream (502 naming the URL), a silent one (504). After the first byte of
a stream has gone out, a failure is the protocol's in-stream error event (`response.failed`,
Anthropic `error`). A client that disconnects cancels the upstream request.
"""

from __future__ import annotations

import asyncio
import hmac
import logging
import math
import time
from dataclasses import replace
from typing import Any
from urllib.parse import parse_qs

from notes_cli.bridge import gemini_route, passthrough, recording, translate
from notes_cli.bridge.config import BridgeConfig
from notes_cli.bridge.fallback import Choice, NoUpstreamAnswered, Upstreams
from notes_cli.bridge.http1 import Request, Response
from notes_cli.bridge.pump import MalformedStream, Pump
from notes_cli.bridge.store import ResponseStore
from notes_cli.engine.core import prompt
from notes_cli.gateway import errors as gw
from notes_cli.gateway.relay import Upstream
from notes_cli.secrets import SentMasker, mask_sent, scrub
from notes_cli.trace.record import TraceRecorder
from notes_cli.wire import fastjson
from notes_cli.wire.errors import WireError, kind_for_status
from notes_cli.wire.turn import Message, Turn, Usage

log = logging.getLogger("pdnotes.bridge")

MAX_BODY_BYTES = 16 * 1024 * 1024  # the server refuses larger bodies with 413
SHOWN_CHARS = 2000
"""The most of any text from outside (a path, an upstream's error message) the bridge puts in
an answer; its log lines keep `LOG_CHARS`. Text is cut to this *before* it is scrubbed:
scrubbing costs more than linear time in the text, and one request must not hold the
single-threaded bridge for its other clients (a 60 KB path held it a minute)."""
LOG_CHARS = 8000  # a log line, its traceback included
_KEY_MARGIN = 256  # scrubbed past the cut as well, so a key across it is still seen whole
MAX_ID_CHARS = 256  # a longer previous_response_id is no id this bridge gave out (they are 29)
_JSON_HEADERS = [(b"content-type", b"application/json")]


class BridgeApp:
    """ASGI app for one `BridgeConfig`. `upstream_key` / `local_key` are the resolved secrets
    (read from the environment by the caller; never logged, scrubbed from every message)."""

    def __init__(
        self,
        config: BridgeConfig,
        *,
        upstream_key: str | None,
        local_key: str | None = None,
        upstream: Upstream | None = None,
        store_capacity: int = 256,
        fallback_keys: list[str | None] | None = None,
        upstreams: Upstreams | None = None,
    ) -> None:
        self.config = config
        self._upstream_key = upstream_key
        # the fallbacks' keys, in `config.fallbacks`' order (scrubbed from every message too)
        self._fallback_keys = list(fallback_keys or [])
        self._local_key = local_key.encode() if local_key else None
        self.upstream: Upstream | None = upstream
        self.upstreams = upstreams
        self.store: ResponseStore[list[Message]] = ResponseStore(store_capacity)
        self.tools = translate.ToolPolicy(log)
        self.requests = 0
        self.recorder: TraceRecorder | None = None  # `bridge serve --record` (bridge.recording)

    # --- requests ------------------------------------------------------------------------
    async def handle(self, request: Request, response: Response) -> None:
        method, path = request.method, request.path
        if path == "/v1/responses" and method == "POST":
            await self.turn(translate.RESPONSES, request, response)
        elif path == "/v1/messages" and method == "POST":
            await self.turn(translate.ANTHROPIC, request, response)
        elif path == "/v1/messages/count_tokens" and method == "POST":
            self._count_tokens(request, response)
        elif path == "/v1/chat/completions" and method == "POST":
            await self._chat(request, response)
        elif gemini_route.matches(request):
            await gemini_route.handle(self, request, response)
        elif path == "/v1/models" and method == "GET":
            await self._models(request, response)
        elif path == "/health" and method == "GET":
            await self._health(response)
        elif method == "HEAD":
            response.send(200, _JSON_HEADERS)
        else:
            leg = translate.ANTHROPIC if _is_anthropic(request) else translate.RESPONSES
            if not self.authorised(request):  # nothing of the request is read or echoed
                self.wire_error(
                    response, leg, WireError(401, "authentication", leg.bad_key_message)
                )
                return
            message = f"no route {method} {path} on the pdnotes bridge"  # (cut by `wire_error`)
            hint = _route_hint(path)
            self.wire_error(response, leg, WireError(404, "not_found", message + hint))

    async def aclose(self) -> None:
        """Close the upstreams' connections (the server calls this once it has stopped)."""
        if self.upstreams is not None:
            await self.upstreams.aclose()
        elif self.upstream is not None:
            await self.upstream.aclose()

    def choose_upstream(self) -> Choice:
        """This request's way to the upstreams (the first, then the fallbacks in order:
        `bridge.fallback`); `.url` names the one that answered."""
        if self.upstreams is None:
            keys = [k for k in (self._upstream_key, *self._fallback_keys) if k]
            self.upstreams = Upstreams(self._new_upstreams(), keys=keys)
        return self.upstreams.choice()

    def _new_upstreams(self) -> list[Upstream]:
        deadline = self.config.answer_timeout
        first = self.upstream or Upstream(
            self.config.upstream, self._upstream_key, answer_timeout=deadline
        )
        fallbacks = self.config.fallbacks
        keys = (self._fallback_keys + [None] * len(fallbacks))[: len(fallbacks)]
        rest = [
            Upstream(f.upstream, key, answer_timeout=deadline)
            for f, key in zip(fallbacks, keys, strict=True)
        ]
        return [first, *rest]

    # --- auth ---------------------------------------------------------------------------
    def authorised(self, request: Request) -> bool:
        expected = self._local_key
        if expected is None:
            return True
        for name, value in request.headers:
            if name == b"authorization" and value[:7].lower() == b"bearer ":
                if hmac.compare_digest(value[7:].strip(), expected):
                    return True
            elif name in (b"x-api-key", b"x-goog-api-key") and hmac.compare_digest(
                value.strip(), expected
            ):  # (x-goog-api-key: Google's SDKs)
                return True
        keys = parse_qs(request.query).get("key") or [""]  # Google's APIs also take ?key=
        return hmac.compare_digest(keys[0].encode(), expected)

    # --- one turn -----------------------------------------------------------------------
    async def turn(self, leg: translate.Leg, request: Request, response: Response) -> None:
        self.requests += 1
        if not self.authorised(request):
            self.wire_error(response, leg, WireError(401, "authentication", leg.bad_key_message))
            return
        ticket = self.recorder.begin() if self.recorder is not None else None
        try:
            turn = leg.decode_request(request.body)
            history = self._history(turn)
            turn, plan = translate.prepare(turn, history, self.config, self.tools)
        except WireError as error:
            self.wire_error(response, leg, error)
            if ticket is not None:
                recording.dropped(self.recorder, ticket)
            return
        # The client going away cancels this task (the server does), and so the upstream call.
        usage = None
        try:
            if turn.stream:
                usage = await self._stream(leg, turn, plan, response)
            else:
                usage = await self._whole(leg, turn, plan, response)
        finally:
            if ticket is not None:
                recording.record(self.recorder, ticket, request.headers, turn, usage)

    def _history(self, turn: Turn) -> list[Message]:
        previous = turn.extra.get("previous_response_id")
        if not previous:
            return []
        if len(previous) > MAX_ID_CHARS:  # (not echoed: ids this long are no id at all)
            raise WireError(
                400,
                "invalid_request",
                f"previous_response_id is {len(previous)} characters long; this bridge's ids "
                f"are {len(translate.RESPONSES.new_id())}. Send the id of a response it gave.",
                param="previous_response_id",
            )
        stored = self.store.get(str(previous))
        if stored is None:
            raise WireError(
                400,
                "invalid_request",
                f"previous_response_id {previous!r} is not known to this bridge: it keeps the "
                f"last {self.store.capacity} responses in memory only (conversations up to "
                f"{MAX_BODY_BYTES // (1024 * 1024)} MiB; it forgets them when restarted). Send "
                "the whole conversation in `input` instead.",
                param="previous_response_id",
            )
        return stored

    async def _stream(
        self, leg: translate.Leg, turn: Turn, plan: translate.Plan, response: Response
    ) -> Usage | None:
        """Stream the turn; the upstream's token counts when it finished well, else None."""
        response_id = leg.new_id()
        # a conversation is stored only while it fits in a request body: past that, a client
        # could not have sent it whole either (and the store's memory stays bounded)
        room = MAX_BODY_BYTES - len(plan.body) if plan.store else -1
        encoder = leg.stream_encoder(response_id, turn.model)
        pump = Pump(
            plan.decoder(), encoder, response, remember=room, scrub=self.scrub, mask=self.masker()
        )
        error: BaseException | None = None
        # runs once the request is written upstream: while the upstream works, not after
        asyncio.get_running_loop().call_soon(pump.prepare)
        choice = self.choose_upstream()
        try:
            await choice.stream("/chat/completions", plan.body, pump)
        except Exception as exc:  # worded for the client below (a cancel is not an Exception)
            error = exc
        if not pump.opened:  # failed before the upstream answered
            self.wire_error(response, leg, self.error_for(error, choice.url))
            return None
        tail, ok = self._stream_tail(pump, error, choice.url)
        pump.end(tail)
        if ok and pump.remembered:
            self.store.put(response_id, [*plan.history, pump.message()])
        return (pump.usage or Usage()) if ok else None

    def _stream_tail(
        self, pump: Pump, error: BaseException | None, url: str | None = None
    ) -> tuple[bytes, bool]:
        """What the stream still needs once the upstream call is over: the closing events, or
        the protocol's error event when the upstream failed or stopped before its finish."""
        tail = b""
        if pump.failed:  # the upstream's own error event went out: the stream is over
            return tail, False
        if error is None:
            try:
                tail = pump.close()
            except MalformedStream as exc:
                error = exc
        if error is None and not pump.complete:
            error = gw.UpstreamError(
                "the stream ended before its finish reason", url=url or self.config.upstream
            )
        if error is None:
            return tail + pump.encoder.close(), True
        held: list[bytes] = []
        pump.release(held)  # (text that waited to see whether it began a key)
        tail = b"".join([tail, *held])
        wire_error = self.error_for(error, url)
        log.warning("upstream stream failed: %s", wire_error.message)
        return tail + pump.encoder.error(wire_error), False

    async def _whole(
        self, leg: translate.Leg, turn: Turn, plan: translate.Plan, response: Response
    ) -> Usage | None:
        choice = self.choose_upstream()
        try:
            _, body = await choice.fetch("POST", "/chat/completions", plan.body)
        except Exception as exc:
            self.wire_error(response, leg, self.error_for(exc, choice.url))
            return None
        body = self.unsent(body)
        response_id = leg.new_id()
        try:
            reply = replace(plan.reply(body), id=response_id, model=turn.model)
            document = leg.encode_reply(reply)
        except _UNREADABLE as exc:
            self.wire_error(response, leg, self.unreadable_answer(exc, choice.url))
            return None
        response.send(200, _JSON_HEADERS, _json(document))
        if plan.store and len(plan.body) + len(body) <= MAX_BODY_BYTES:
            self.store.put(response_id, [*plan.history, Message("assistant", list(reply.parts))])
        return reply.usage or Usage()

    def unreadable_answer(self, exc: BaseException, url: str | None = None) -> WireError:
        """A 2xx answer the bridge cannot read (not JSON, nested too deep, not the shape it
        should have): the upstream's fault, so a 502 naming it."""
        said = "nested too deep" if isinstance(exc, RecursionError) else str(exc)
        message = f"the upstream {url or self.config.upstream} answered with a body the bridge "
        return WireError(502, "bad_gateway", message + f"cannot read: {said}")

    def error_for(self, error: BaseException | None, url: str | None = None) -> WireError:
        """`error` for the client in the protocol-neutral form, its message scrubbed. `url`
        names the upstream that failed (default: the first)."""
        url = url or self.config.upstream
        if isinstance(error, NoUpstreamAnswered):  # every upstream tried: each named
            busy = [e for _, e in error.tried if isinstance(e, gw.Busy)]
            if len(busy) == len(error.tried):  # every one full: come back, not "broken"
                return _busy(self.scrub(error.message), max(e.seconds for e in busy))
            return WireError(502, "bad_gateway", self.scrub(error.message))
        if isinstance(error, gw.Busy):
            return _busy(self.scrub(f"upstream {url}: {error.message}"), error.seconds)
        if isinstance(error, gw.HttpStatusError):
            said = error.error_message or error.message
            message = self.scrub(f"upstream {url} answered {error.status}: {said}")
            headers = {}
            if error.retry_after is not None:
                headers["retry-after"] = f"{error.retry_after:.0f}"
            status = error.status if 400 <= error.status < 600 else 502
            return WireError(
                status, kind_for_status(status), message, code=error.error_code, headers=headers
            )  # (its code is its words too: `wire_error` scrubs it, as every error the client gets)
        if isinstance(error, MalformedStream):
            return WireError(502, "bad_gateway", self.scrub(f"upstream {url} sent {error}"))
        if isinstance(error, gw.GatewayTimeout):
            message = self.scrub(f"upstream {url}: {error.message}")
            return WireError(504, "server_error", message)
        message = self.scrub(_describe(error, url))
        log.warning("%s", message)
        return WireError(502, "bad_gateway", message)

    # --- chat completions, passed through (`bridge.passthrough`) -----------------------------
    async def _chat(self, request: Request, response: Response) -> None:
        self.requests += 1
        leg = passthrough.CHAT
        if not self.authorised(request):
            self.wire_error(response, leg, WireError(401, "authentication", leg.bad_key_message))
            return
        ticket = self.recorder.begin() if self.recorder is not None else None
        try:
            body, stream = passthrough.prepare(request.body, self.config.model_map)
        except WireError as error:
            self.wire_error(response, leg, error)
            recording.dropped(self.recorder, ticket)
            return
        turn = recording.chat_turn(request.body) if ticket is not None else None
        usage = None
        try:
            usage = await self._pass(leg, body, stream, response, turn is not None)
        finally:
            if ticket is not None:
                if turn is None:
                    recording.dropped(self.recorder, ticket)
                else:
                    recording.record(self.recorder, ticket, request.headers, turn, usage)

    async def _pass(
        self, leg: translate.Leg, body: bytes, stream: bool, response: Response, record: bool
    ) -> Usage | None:
        """Pass the chat request through; when `record`, the answer's usage (None: failed)."""
        choice = self.choose_upstream()
        if not stream:
            try:
                _, answer = await choice.fetch("POST", "/chat/completions", body)
            except Exception as exc:
                self.wire_error(response, leg, self.error_for(exc, choice.url))
                return None
            response.send(200, _JSON_HEADERS, self.unsent(answer))
            return (recording.chat_usage(answer) or Usage()) if record else None
        tap = recording.UsageTap() if record else None
        sink = passthrough.RawStream(response, self.masker(), tap)
        try:
            await choice.stream("/chat/completions", body, sink)
        except Exception as exc:  # (a cancel, the client gone, is not an Exception)
            wire_error = self.error_for(exc, choice.url)
            if not sink.opened:
                self.wire_error(response, leg, wire_error)
                return None
            log.warning("upstream stream failed: %s", wire_error.message)
            sink.end(passthrough.stream_error(wire_error))
            return None
        sink.end()
        return (tap.usage or Usage()) if tap is not None else None

    # --- small routes -------------------------------------------------------------------
    async def _models(self, request: Request, response: Response) -> None:
        leg = translate.ANTHROPIC if _is_anthropic(request) else translate.RESPONSES
        if not self.authorised(request):
            self.wire_error(response, leg, WireError(401, "authentication", leg.bad_key_message))
            return
        choice = self.choose_upstream()
        try:
            _, body = await choice.fetch("GET", "/models")
        except gw.GatewayError as exc:
            self.wire_error(response, leg, self.error_for(exc, choice.url))
            return
        try:
            ids = translate.model_ids(self.unsent(body))
        except _UNREADABLE as exc:
            self.wire_error(response, leg, self.unreadable_answer(exc, choice.url))
            return
        response.send(200, _JSON_HEADERS, _json(translate.models_body(ids, self.config)))

    def _count_tokens(self, request: Request, response: Response) -> None:
        """Counted here by the bundled engine's rule (`engine.core.prompt`), not forwarded:
        chat-completions upstreams have no count endpoint, and Claude Code asks before every
        turn (docs/bridge.md). The upstream's own tokenizer may count differently."""
        leg = translate.ANTHROPIC
        if not self.authorised(request):
            self.wire_error(response, leg, WireError(401, "authentication", leg.bad_key_message))
            return
        try:
            turn = leg.decode_request(request.body)
        except WireError as error:
            self.wire_error(response, leg, error)
            return
        count = prompt.prompt_tokens(turn.messages)
        response.send(200, _JSON_HEADERS, _json({"input_tokens": count}))

    async def _health(self, response: Response) -> None:
        """The bridge answers; `upstream` says whether its upstream does (GET /models)."""
        started = time.perf_counter()
        report: dict[str, Any] = {"status": "ok", "bridge": "pdnotes", "upstream_url": None}
        choice = self.choose_upstream()  # with fallbacks: ok when one of them answers
        try:
            status, _ = await choice.fetch("GET", "/models")
            report["upstream"] = {"ok": True, "status": status}
        except gw.GatewayError as exc:
            said = exc.message
            if isinstance(exc, gw.HttpStatusError):
                report["upstream"] = {"ok": False, "status": exc.status, "error": self.scrub(said)}
            else:
                report["upstream"] = {"ok": False, "status": None, "error": self.scrub(said)}
        report["upstream_url"] = choice.url  # the one that answered, or the last tried
        report["upstream"]["ms"] = round((time.perf_counter() - started) * 1000, 1)
        response.send(200, _JSON_HEADERS, _json(report))

    # --- the keys the bridge sends upstream, out of what the upstream answers ---------------
    def masker(self) -> SentMasker | None:
        """For one streamed answer: None when the bridge sends no key (nothing to mask)."""
        return SentMasker(self._sent_keys()) or None

    def unsent(self, body: bytes) -> bytes:
        """A whole answer's bytes with the keys the bridge sent masked (`mask_sent`: only
        those values change; the JSON around them stays valid)."""
        keys = self._sent_keys()
        if not keys:
            return body
        text = body.decode("utf-8", "surrogateescape")
        masked = mask_sent(text, keys)
        return body if masked == text else masked.encode("utf-8", "surrogateescape")

    def _sent_keys(self) -> list[str]:
        return [k for k in (self._upstream_key, *self._fallback_keys) if k]

    def wire_error(self, response: Response, leg: translate.Leg, error: WireError) -> None:
        error.message = self.scrub(error.message)
        if error.code:
            error.code = self.scrub(error.code)
        headers = list(_JSON_HEADERS)
        headers += [(k.encode(), v.encode()) for k, v in error.headers.items()]
        response.send(error.status, headers, _json(leg.encode_error(error)))

    def scrub(self, text: str, limit: int = SHOWN_CHARS) -> str:
        """`text` as the bridge shows it: at most `limit` characters (cut before scrubbing),
        the bridge's keys (and anything key-shaped) masked."""
        local = self._local_key.decode() if self._local_key else None
        keys = [k for k in (self._upstream_key, *self._fallback_keys, local) if k]
        if len(text) <= limit:
            return scrub(text, keys)
        margin = max([_KEY_MARGIN, *map(len, keys)])
        return scrub(text[: limit + margin], keys)[:limit] + f"… (cut at {limit} characters)"


def _describe(error: BaseException | None, url: str) -> str:
    if isinstance(error, gw.GatewayError):
        return f"upstream {url}: {error.message}"
    if isinstance(error, MalformedStream):
        return f"upstream {url} sent {error}"
    if isinstance(error, WireError):
        return f"upstream {url} sent a chunk the bridge cannot read: {error.message}"
    return f"upstream {url} failed: {type(error).__name__}: {error}"


_UNREADABLE = (WireError, ValueError, TypeError, KeyError, RecursionError)
"""What reading an upstream's 2xx body can raise (RecursionError: JSON nested thousands deep)."""


def _json(document: Any) -> bytes:
    return fastjson.dumps(document)


def _busy(message: str, waited: float) -> WireError:
    """A 503 for a request that found every connection to the upstream(s) busy for `waited`
    seconds: it was never sent, so the client may safely ask again after Retry-After."""
    retry = str(max(1, math.ceil(waited)))
    return WireError(503, kind_for_status(503), message, headers={"retry-after": retry})


def _is_anthropic(request: Request) -> bool:
    return any(name in (b"anthropic-version", b"x-api-key") for name, _ in request.headers)


def _route_hint(path: str) -> str:
    if path.startswith("/v1/v1/"):
        return " (the base URL has one /v1 too many: Claude Code's is http://HOST:PORT)"
    if path in ("/responses", "/messages", "/chat/completions"):
        return " (Codex's base URL is http://HOST:PORT/v1)"
    return ""
