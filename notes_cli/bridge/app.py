"""The bridge's ASGI app.

    POST /v1/responses           Codex, the openai SDK's Responses client   (base URL …/v1)
    POST /v1/messages[?beta=true] Claude Code, the anthropic SDK             (base URL …/)
    GET  /v1/models              both (one list whose entries carry both protocols' fields)
    HEAD /, /v1, /api/hello, /v1/responses   the probes Claude Code and `codex doctor` send
    GET  /health                 the bridge and its upstream (for `pdnotes doctor`)

A plain ASGI callable rather than a Starlette app: seven routes, and the streaming path is the
one place where per-event cost shows (docs/benchmarks-bridge.md), so nothing sits between the
upstream's read callback and uvicorn's `send` but the translation itself.

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
import time
from dataclasses import replace
from typing import Any

from notes_cli.bridge import translate
from notes_cli.bridge.config import BridgeConfig
from notes_cli.bridge.pump import MalformedStream, Pump
from notes_cli.bridge.store import ResponseStore
from notes_cli.gateway import errors as gw
from notes_cli.gateway.relay import Upstream
from notes_cli.secrets import scrub
from notes_cli.wire import fastjson
from notes_cli.wire.errors import WireError, kind_for_status
from notes_cli.wire.turn import Message

log = logging.getLogger("pdnotes.bridge")

MAX_BODY_BYTES = 16 * 1024 * 1024
_SSE_HEADERS = [
    (b"content-type", b"text/event-stream"),
    (b"cache-control", b"no-cache"),
    (b"x-accel-buffering", b"no"),
]
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
    ) -> None:
        self.config = config
        self._upstream_key = upstream_key
        self._local_key = local_key.encode() if local_key else None
        self.upstream: Upstream | None = upstream
        self.store: ResponseStore[list[Message]] = ResponseStore(store_capacity)
        self.tools = translate.ToolPolicy(log)
        self.requests = 0

    # --- ASGI ---------------------------------------------------------------------------
    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        kind = scope["type"]
        if kind == "lifespan":
            await self._lifespan(receive, send)
            return
        if kind != "http":
            return
        method, path = scope["method"], scope["path"]
        if path == "/v1/responses" and method == "POST":
            await self._turn(translate.RESPONSES, scope, receive, send)
        elif path == "/v1/messages" and method == "POST":
            await self._turn(translate.ANTHROPIC, scope, receive, send)
        elif path == "/v1/models" and method == "GET":
            await self._models(scope, send)
        elif path == "/health" and method == "GET":
            await self._health(send)
        elif method == "HEAD":
            await _respond(send, 200, b"", _JSON_HEADERS)
        else:
            leg = translate.ANTHROPIC if _is_anthropic(scope) else translate.RESPONSES
            message = f"no route {method} {path} on the pdnotes bridge"
            hint = _route_hint(path)
            await self._error(send, leg, WireError(404, "not_found", message + hint))

    async def _lifespan(self, receive: Any, send: Any) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                if self.upstream is None:
                    self.upstream = Upstream(self.config.upstream, self._upstream_key)
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                if self.upstream is not None:  # the app owns its upstream, given or made
                    await self.upstream.aclose()
                await send({"type": "lifespan.shutdown.complete"})
                return

    def _upstream(self) -> Upstream:
        if self.upstream is None:  # served without lifespan (some test harnesses)
            self.upstream = Upstream(self.config.upstream, self._upstream_key)
        return self.upstream

    # --- auth ---------------------------------------------------------------------------
    def _authorised(self, scope: dict[str, Any]) -> bool:
        expected = self._local_key
        if expected is None:
            return True
        for name, value in scope["headers"]:
            if name == b"authorization" and value[:7].lower() == b"bearer ":
                if hmac.compare_digest(value[7:].strip(), expected):
                    return True
            elif name == b"x-api-key" and hmac.compare_digest(value.strip(), expected):
                return True
        return False

    # --- one turn -----------------------------------------------------------------------
    async def _turn(
        self, leg: translate.Leg, scope: dict[str, Any], receive: Any, send: Any
    ) -> None:
        self.requests += 1
        if not self._authorised(scope):
            error = WireError(401, "authentication", leg.bad_key_message)
            await self._error(send, leg, error)
            return
        try:
            raw = await _read_body(receive)
            turn = leg.decode_request(raw)
            history = self._history(turn)
            turn, plan = translate.prepare(turn, history, self.config, self.tools)
        except WireError as error:
            await self._error(send, leg, error)
            return
        watcher = asyncio.ensure_future(_disconnected(receive))
        try:
            if turn.stream:
                await self._stream(leg, turn, plan, send, watcher)
            else:
                await self._whole(leg, turn, plan, send, watcher)
        finally:
            watcher.cancel()

    def _history(self, turn: Any) -> list[Message]:
        previous = turn.extra.get("previous_response_id")
        if not previous:
            return []
        stored = self.store.get(str(previous))
        if stored is None:
            raise WireError(
                400,
                "invalid_request",
                f"previous_response_id {previous!r} is not known to this bridge: it keeps the "
                f"last {self.store.capacity} responses in memory only (and forgets them when "
                "restarted). Send the whole conversation in `input` instead.",
                param="previous_response_id",
            )
        return stored

    async def _stream(
        self,
        leg: translate.Leg,
        turn: Any,
        plan: translate.Plan,
        send: Any,
        watcher: asyncio.Future[None],
    ) -> None:
        upstream = self._upstream()
        response_id = leg.new_id()
        encoder = leg.stream_encoder(response_id, turn.model)
        # before any upstream byte is encoded: the head's events are numbered first
        head = encoder.head()
        pump = Pump(plan.decoder(), encoder)
        task = asyncio.ensure_future(upstream.stream("/chat/completions", plan.body, pump))
        task.add_done_callback(lambda _: pump.wake())
        cancel = _cancel_on(watcher, task)
        try:
            while not pump.headers and not task.done():
                await pump.wait()
            if not pump.headers:  # failed (or cancelled) before the upstream answered
                await self._upstream_failed(send, leg, task)
                return
            await send({"type": "http.response.start", "status": 200, "headers": _SSE_HEADERS})
            if head:
                await send({"type": "http.response.body", "body": head, "more_body": True})
            pump.writer = lambda data: send(
                {"type": "http.response.body", "body": data, "more_body": True}
            )
            while True:
                await pump.finish_inflight()
                if pump.write_error is not None:
                    raise pump.write_error
                data = pump.take()
                if data:
                    await send({"type": "http.response.body", "body": data, "more_body": True})
                if task.done():
                    break
                await pump.wait()
            pump.writer = None
            tail, ok = self._stream_tail(pump, encoder, task)
            await send({"type": "http.response.body", "body": tail, "more_body": False})
            if ok and plan.store:
                self.store.put(response_id, [*plan.history, pump.message()])
        finally:
            cancel()
            if not task.done():
                task.cancel()

    def _stream_tail(
        self, pump: Pump, encoder: Any, task: asyncio.Future[None]
    ) -> tuple[bytes, bool]:
        """What the stream still needs once the upstream call is over: the closing events, or
        the protocol's error event when the upstream failed or stopped before its finish."""
        if task.cancelled():
            return b"", False
        error = task.exception()
        if error is None:
            try:
                pump.close()
            except MalformedStream as exc:
                error = exc
        tail = pump.take()
        if error is None and not pump.complete:
            error = gw.UpstreamError(
                "the stream ended before its finish reason", url=self.config.upstream
            )
        if error is None:
            return tail + encoder.close(), True
        wire_error = self._wire_error(error)
        log.warning("upstream stream failed: %s", wire_error.message)
        return tail + encoder.error(wire_error), False

    async def _whole(
        self,
        leg: translate.Leg,
        turn: Any,
        plan: translate.Plan,
        send: Any,
        watcher: asyncio.Future[None],
    ) -> None:
        upstream = self._upstream()
        task = asyncio.ensure_future(upstream.fetch("POST", "/chat/completions", plan.body))
        cancel = _cancel_on(watcher, task)
        try:
            await asyncio.wait([task])
        finally:
            cancel()
        if task.cancelled() or task.exception() is not None:
            await self._upstream_failed(send, leg, task)
            return
        _, body = task.result()
        response_id = leg.new_id()
        try:
            reply = replace(plan.reply(body), id=response_id, model=turn.model)
            document = leg.encode_reply(reply)
        except (WireError, ValueError, TypeError, KeyError) as exc:
            message = f"the upstream {self.config.upstream} answered with a body the bridge "
            message += f"cannot read: {exc}"
            await self._error(send, leg, WireError(502, "bad_gateway", self._scrub(message)))
            return
        await _respond(send, 200, _json(document), _JSON_HEADERS)
        if plan.store:
            self.store.put(response_id, [*plan.history, Message("assistant", list(reply.parts))])

    async def _upstream_failed(
        self, send: Any, leg: translate.Leg, task: asyncio.Future[Any]
    ) -> None:
        if task.cancelled():
            return  # the client went away: nobody to answer
        error = task.exception()
        await self._error(send, leg, self._wire_error(error))

    def _wire_error(self, error: BaseException | None) -> WireError:
        url = self.config.upstream
        if isinstance(error, gw.HttpStatusError):
            said = error.error_message or error.message
            message = self._scrub(f"upstream {url} answered {error.status}: {said}")
            headers = {}
            if error.retry_after is not None:
                headers["retry-after"] = f"{error.retry_after:.0f}"
            status = error.status if 400 <= error.status < 600 else 502
            return WireError(
                status, kind_for_status(status), message, code=error.error_code, headers=headers
            )
        if isinstance(error, MalformedStream):
            return WireError(502, "bad_gateway", self._scrub(f"upstream {url} sent {error}"))
        if isinstance(error, gw.GatewayTimeout):
            message = self._scrub(f"upstream {url}: {error.message}")
            return WireError(504, "server_error", message)
        message = self._scrub(_describe(error, url))
        log.warning("%s", message)
        return WireError(502, "bad_gateway", message)

    # --- small routes -------------------------------------------------------------------
    async def _models(self, scope: dict[str, Any], send: Any) -> None:
        leg = translate.ANTHROPIC if _is_anthropic(scope) else translate.RESPONSES
        if not self._authorised(scope):
            await self._error(send, leg, WireError(401, "authentication", leg.bad_key_message))
            return
        try:
            _, body = await self._upstream().fetch("GET", "/models")
            ids = translate.model_ids(body)
        except (gw.GatewayError, ValueError) as exc:
            await self._error(send, leg, self._wire_error(exc))
            return
        await _respond(send, 200, _json(translate.models_body(ids, self.config)), _JSON_HEADERS)

    async def _health(self, send: Any) -> None:
        """The bridge answers; `upstream` says whether its upstream does (GET /models)."""
        started = time.perf_counter()
        report: dict[str, Any] = {"status": "ok", "bridge": "pdnotes", "upstream_url": None}
        report["upstream_url"] = self.config.upstream
        try:
            status, _ = await self._upstream().fetch("GET", "/models")
            report["upstream"] = {"ok": True, "status": status}
        except gw.GatewayError as exc:
            said = exc.message
            if isinstance(exc, gw.HttpStatusError):
                report["upstream"] = {"ok": False, "status": exc.status, "error": self._scrub(said)}
            else:
                report["upstream"] = {"ok": False, "status": None, "error": self._scrub(said)}
        report["upstream"]["ms"] = round((time.perf_counter() - started) * 1000, 1)
        await _respond(send, 200, _json(report), _JSON_HEADERS)

    async def _error(self, send: Any, leg: translate.Leg, error: WireError) -> None:
        error.message = self._scrub(error.message)
        headers = list(_JSON_HEADERS)
        headers += [(k.encode(), v.encode()) for k, v in error.headers.items()]
        await _respond(send, error.status, _json(leg.encode_error(error)), headers)

    def _scrub(self, text: str) -> str:
        local = self._local_key.decode() if self._local_key else None
        return scrub(text, (k for k in (self._upstream_key, local) if k))


def _describe(error: BaseException | None, url: str) -> str:
    if isinstance(error, gw.GatewayError):
        return f"upstream {url}: {error.message}"
    if isinstance(error, MalformedStream):
        return f"upstream {url} sent {error}"
    if isinstance(error, WireError):
        return f"upstream {url} sent a chunk the bridge cannot read: {error.message}"
    return f"upstream {url} failed: {type(error).__name__}: {error}"


def _cancel_on(watcher: asyncio.Future[None], task: asyncio.Future[Any]) -> Any:
    """Cancel `task` when the client disconnects; returns the un-registration."""

    def on_disconnect(_: asyncio.Future[None]) -> None:
        if not watcher.cancelled() and not task.done():
            task.cancel()

    watcher.add_done_callback(on_disconnect)
    return lambda: watcher.remove_done_callback(on_disconnect)


async def _disconnected(receive: Any) -> None:
    """Returns once the client has gone (uvicorn also says so once the response is complete,
    by which time nothing is left to cancel)."""
    while (await receive())["type"] != "http.disconnect":
        pass


async def _read_body(receive: Any) -> bytes:
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            raise WireError(400, "invalid_request", "the client went away mid-request")
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > MAX_BODY_BYTES:
            raise WireError(413, "request_too_large", f"request body over {MAX_BODY_BYTES} bytes")
        chunks.append(chunk)
        if not message.get("more_body"):
            return b"".join(chunks)


async def _respond(send: Any, status: int, body: bytes, headers: list[tuple[bytes, bytes]]) -> None:
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def _json(document: Any) -> bytes:
    return fastjson.dumps(document)


def _is_anthropic(scope: dict[str, Any]) -> bool:
    return any(name in (b"anthropic-version", b"x-api-key") for name, _ in scope["headers"])


def _route_hint(path: str) -> str:
    if path.startswith("/v1/v1/"):
        return " (the base URL has one /v1 too many: Claude Code's is http://HOST:PORT)"
    if path in ("/responses", "/messages", "/chat/completions"):
        return " (Codex's base URL is http://HOST:PORT/v1)"
    if path == "/v1/chat/completions":
        return " (the bridge serves Responses and Messages; call the upstream for chat)"
    return ""
