"""The engine's HTTP app: a thin Starlette adapter over `api.EngineService`.

Routes (docs/engine.md), under `prefix` (default `/api`):

    GET  {prefix}/models                 POST {prefix}/chat/completions
    POST {prefix}/responses              POST {prefix}/anthropic/v1/messages[?beta=true]
    GET  {prefix}/anthropic/v1/models    POST {prefix}/anthropic/v1/messages/count_tokens
    POST {prefix}/gemini/v1beta/models/MODEL:generateContent | :streamGenerateContent[?alt=sse]
         | :countTokens                  GET  {prefix}/gemini/v1beta/models   (also v1, v1alpha)
    HEAD on both bases and on /api/hello (Claude Code)
    GET  /health   GET /metrics   GET /engine/state   GET|POST|DELETE /engine/faults

Everything else is a 404 in the OpenAI error format (Anthropic's under the Anthropic base,
Google's under the Gemini base), which is how `{prefix}/v1/...` reproduces the article's
doubled-/v1 error. Each failure is an `ApiError` rendered by the route's own protocol module,
so nothing reaches a client as a bare 500 traceback and the server keeps serving.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import json
import os
import re
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, replace
from typing import Any

import anyio
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from notes_cli.engine.core import prompt
from notes_cli.engine.core.api import (
    Admitted,
    Completion,
    EngineService,
    EngineStopped,
    QueueFull,
    StepStats,
    TokenChunk,
)
from notes_cli.engine.http import dialects, http_errors
from notes_cli.engine.http.dialects import (
    CHAT,
    GEMINI,
    MESSAGES,
    PROTOCOLS,
    RESPONSES,
    Dialect,
    EngineCall,
    EngineStream,
    StreamEncoder,
)
from notes_cli.engine.http.faults import (
    FaultInjector,
    FaultPlan,
    FaultSpec,
    FaultSpecError,
    parse_fault,
)
from notes_cli.engine.http.http_errors import ApiError, invalid
from notes_cli.engine.http.metrics import CONTENT_TYPE, EngineMetrics
from notes_cli.engine.http.recording import RequestRecord
from notes_cli.trace.record import TraceRecorder
from notes_cli.wire import anthropic as wire_anthropic
from notes_cli.wire import chat as wire_chat
from notes_cli.wire import gemini as wire_gemini
from notes_cli.wire.codec import StreamEncoderFactory

DEFAULT_FINGERPRINT = "fp_pdnotes_mock_engine"
GEMINI_VERSIONS = frozenset({"v1beta", "v1", "v1alpha"})  # the @google/genai apiVersion values
_GEMINI_METHODS = frozenset({"generateContent", "streamGenerateContent", "countTokens"})
# A Gemini call on a path the engine does not serve (a base URL without /gemini, or with the
# version in it: the SDK adds it again): answered in Google's format, with the base URL to use.
_GEMINI_PATH = re.compile(r"/v1(?:beta|alpha)?/models/[^/].*:[A-Za-z]+$|/v1(?:beta|alpha)/models$")


class _Json(JSONResponse):
    """Compact JSON that survives any text a client sent us: a lone surrogate (legal in JSON
    escapes, not in UTF-8) is replaced instead of failing the response."""

    def render(self, content: Any) -> bytes:
        text = json.dumps(content, ensure_ascii=False, separators=(",", ":"))
        return text.encode("utf-8", errors="replace")


class _EventStream(StreamingResponse):
    """A StreamingResponse that writes from the request's own task.

    For servers older than ASGI 2.4 (uvicorn's h11 says 2.3) Starlette moves the body into a
    new task and waits for the disconnect in this one. A new task runs only after everything
    already runnable, and a new request's first token is produced at the end of a decode step
    together with a token for every other stream: it would be written after all of them. Here
    the disconnect watcher is the new task, and it cancels the stream if the client goes."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        finished = False

        async def cancel_on_disconnect(stream: anyio.CancelScope) -> None:
            # Once the response is complete, receive() says http.disconnect too (ASGI spec).
            # Not cancelling then also spares anyio formatting a reason (a task repr) per call.
            while (await receive())["type"] != "http.disconnect":
                pass
            if not finished:
                stream.cancel()

        try:
            async with anyio.create_task_group() as group:
                group.start_soon(cancel_on_disconnect, group.cancel_scope)
                await self.stream_response(send)
                finished = True
        except BaseExceptionGroup as errors:
            if len(errors.exceptions) != 1:
                raise
            error = errors.exceptions[0]
            context = None if error.__suppress_context__ else error.__context__
            raise error from error.__cause__ or context


class _StampReceived:
    """Notes in the scope when the app received each request: a generation's
    `admission_wall_ms` counts from there, so reading and parsing its body are reported."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        scope[_RECEIVED] = time.monotonic()
        await self.app(scope, receive, send)


_RECEIVED = "pdnotes.received_s"


@dataclass(frozen=True)
class Limits:
    """Admission limits that keep load from crashing the server. Claude Code bodies run to
    ~80 KB and Codex's to ~40 KB, so 8 MiB leaves room for long prompts."""

    max_body_bytes: int = 8 * 1024 * 1024
    # A connection must finish sending a request's headers within this many seconds of
    # opening (or of the request's first byte): idle half-open and slowloris connections are
    # closed instead of held forever (uvicorn arms its keep-alive timer only after a response).
    header_timeout_s: float = 10.0


def create_app(
    service: EngineService,
    *,
    prefix: str = "/api",
    api_key_env: str | None = None,
    faults: tuple[FaultSpec, ...] = (),
    limits: Limits | None = None,
    speed: float = 1.0,
    fingerprint: str = DEFAULT_FINGERPRINT,
    protocols: tuple[str, ...] = PROTOCOLS,
    recorder: TraceRecorder | None = None,
) -> Starlette:
    """Build the ASGI app over `service`. With `api_key_env`, requests must carry that
    variable's value (read now) as a Bearer token or `x-api-key`. `speed` is the service's
    wall-clock speed-up, used to report streamed token gaps in simulated time. `protocols`
    (chat, responses, anthropic, gemini) are the APIs served; the others' routes answer 404."""
    unknown = set(protocols) - set(PROTOCOLS)
    if unknown or not protocols:
        raise ValueError(f"protocols must be some of {', '.join(PROTOCOLS)}, not {protocols}")
    api_key = None
    if api_key_env:
        api_key = os.environ.get(api_key_env, "")
        if not api_key:
            raise ValueError(f"--api-key-env names {api_key_env}, which is unset or empty")
    engine = _EngineHttp(
        service,
        prefix=_normalise_prefix(prefix),
        api_key=api_key,
        injector=FaultInjector(tuple(faults)),
        limits=limits or Limits(),
        speed=speed,
        fingerprint=fingerprint,
        protocols=frozenset(protocols),
    )
    engine.recorder = recorder  # `engine serve --record` (engine/http/recording.py)
    return engine.build()


def _normalise_prefix(prefix: str) -> str:
    prefix = "/" + prefix.strip("/")
    return "" if prefix == "/" else prefix


class _EngineHttp:
    """Route handlers sharing one service, fault injector and metrics registry."""

    def __init__(
        self,
        service: EngineService,
        *,
        prefix: str,
        api_key: str | None,
        injector: FaultInjector,
        limits: Limits,
        speed: float,
        fingerprint: str,
        protocols: frozenset[str] = frozenset(PROTOCOLS),
    ) -> None:
        self.service = service
        self.prefix = prefix
        self.api_key = api_key
        self.injector = injector
        self.limits = limits
        self.speed = speed
        self.fingerprint = fingerprint
        self.protocols = protocols
        self.metrics = EngineMetrics(service.state)
        self.recorder: TraceRecorder | None = None

    # --- assembly ----------------------------------------------------------------------

    def build(self) -> Starlette:
        p = self.prefix
        anthropic = f"{p}/anthropic"
        served = self.protocols
        routes = [
            Route("/health", self.health, methods=["GET"]),
            Route("/metrics", self.prometheus, methods=["GET"]),
            Route("/engine/state", self.engine_state, methods=["GET"]),
            Route("/engine/faults", self.faults, methods=["GET", "POST", "DELETE"]),
        ]
        heads = {p or "/"}
        if served & {"chat", "responses"}:
            routes.append(Route(f"{p}/models", self.openai_models, methods=["GET"]))
        if "chat" in served:
            routes.append(Route(f"{p}/chat/completions", self._generation(CHAT), methods=["POST"]))
        if "responses" in served:
            routes.append(Route(f"{p}/responses", self._generation(RESPONSES), methods=["POST"]))
            heads.add(f"{p}/responses")  # Codex doctor HEADs /responses
        if "anthropic" in served:
            messages = self._generation(MESSAGES)
            routes.append(Route(f"{anthropic}/v1/messages", messages, methods=["POST"]))
            count = f"{anthropic}/v1/messages/count_tokens"
            routes.append(Route(count, self.count_tokens, methods=["POST"]))
            routes.append(Route(f"{anthropic}/v1/models", self.anthropic_models, methods=["GET"]))
            heads |= {anthropic, "/api/hello"}  # Claude Code HEADs its base and /api/hello
        if "gemini" in served:
            gemini = f"{p}/gemini/{{version}}/models"
            routes.append(Route(gemini, self.gemini_models, methods=["GET"]))
            routes.append(Route(gemini + "/{rest:path}", self.gemini_call, methods=["POST"]))
        for path in heads:
            routes.append(Route(path, self.head_ok, methods=["HEAD"]))
        app = Starlette(
            routes=routes, lifespan=self._lifespan, middleware=[Middleware(_StampReceived)]
        )
        app.add_exception_handler(HTTPException, self._http_exception)  # type: ignore[arg-type]
        app.add_exception_handler(Exception, self._unexpected)
        if self.injector.link_fallback:
            self._set_link_fallback(True)
        return app

    @contextlib.asynccontextmanager
    async def _lifespan(self, app: Starlette) -> AsyncIterator[None]:
        # A stream's first task group loads anyio's socket and stream modules (~8 ms): do it now,
        # or the first request after start-up would wait for it, and report it as queueing.
        async with anyio.create_task_group():
            pass
        start = getattr(self.service, "start", None)
        if start is not None:
            await start()
        add_observer = getattr(self.service, "add_observer", None)
        if add_observer is not None:
            add_observer(self._on_record)
        try:
            yield
        finally:
            stop = getattr(self.service, "stop", None)
            if stop is not None:
                await stop()

    def _on_record(self, item: Any) -> None:
        if isinstance(item, StepStats):
            self.metrics.observe_step(item.phase, item.batch_size)

    # --- errors ------------------------------------------------------------------------

    def _dialect_for(self, path: str) -> Dialect:
        if path.startswith(f"{self.prefix}/gemini/") or _GEMINI_PATH.search(path):
            return GEMINI
        return MESSAGES if path.startswith(f"{self.prefix}/anthropic") else CHAT

    def _error(self, dialect: Dialect, error: ApiError) -> JSONResponse:
        self.metrics.count(dialect.route, error.status)
        return _Json(dialects.error_body(dialect, error), error.status, headers=error.headers)

    async def _http_exception(self, request: Request, exc: HTTPException) -> Response:
        path = request.url.path
        if exc.status_code == 404:
            error = ApiError(404, "not_found", self._not_found_message(request.method, path))
        elif exc.status_code == 405:
            error = ApiError(
                405, "method_not_allowed", f"{request.method} is not allowed on {path}"
            )
        else:
            error = ApiError(exc.status_code, "invalid_request", str(exc.detail))
        if request.method == "HEAD":
            return Response(status_code=error.status)
        return self._error(self._dialect_for(path), error)

    def _not_found_message(self, method: str, path: str) -> str:
        hint = ""
        gemini = f"{self.prefix}/gemini"
        if _GEMINI_PATH.search(path) and "gemini" in self.protocols:
            hint = (
                f" Gemini's base URL (GOOGLE_GEMINI_BASE_URL) is {gemini}, without the API "
                "version: the SDK adds /v1beta itself."
            )
        elif "/v1/" in path and not path.startswith(f"{self.prefix}/anthropic/v1/"):
            hint = f" The base URL is {self.prefix or '/'} with no /v1 (drop the extra /v1)."
        return f"Invalid URL ({method} {path}): no such route on this engine.{hint}"

    async def _unexpected(self, request: Request, exc: Exception) -> Response:
        error = ApiError(500, "server_error", f"internal engine error: {type(exc).__name__}")
        return self._error(self._dialect_for(request.url.path), error)

    # --- small routes ------------------------------------------------------------------

    async def head_ok(self, request: Request) -> Response:
        return Response(status_code=200)

    async def health(self, request: Request) -> Response:
        return _Json({"status": "ok", "models": list(self.service.served_models)})

    async def prometheus(self, request: Request) -> Response:
        return Response(self.metrics.render(), media_type=CONTENT_TYPE)

    async def engine_state(self, request: Request) -> Response:
        state = dict(self.service.state())
        state["faults"] = self.injector.describe()
        return _Json(state)

    async def openai_models(self, request: Request) -> Response:
        if (failure := self._auth_failure(request, CHAT)) is not None:
            return failure
        models = self.service.served_models
        listed = wire_chat.encode_models(models, self.fingerprint)
        for entry in listed["data"]:  # as vLLM does: clients size their context from it
            entry["max_model_len"] = self.service.max_context_tokens
        return _Json(listed)

    async def anthropic_models(self, request: Request) -> Response:
        if (failure := self._auth_failure(request, MESSAGES)) is not None:
            return failure
        limit = self.service.max_context_tokens  # the window, as Anthropic's API names it
        return _Json(wire_anthropic.encode_models(self.service.served_models, input_limit=limit))

    async def count_tokens(self, request: Request) -> Response:
        """Anthropic's token count: a Messages body (max_tokens optional) → {"input_tokens": N},
        the count `usage.input_tokens` of the same turn reports."""
        if (failure := self._auth_failure(request, MESSAGES)) is not None:
            return failure
        try:
            turn = wire_anthropic.decode_request(await self._read_body(request))
            served = self.service.served_models
            if turn.model not in served:
                raise http_errors.model_not_found(turn.model, served)
        except ApiError as error:
            return self._error(MESSAGES, error)
        texts = (prompt.message_text(m) for m in turn.messages)
        return _Json({"input_tokens": sum(map(self.service.count_tokens, texts))})

    async def gemini_models(self, request: Request) -> Response:
        if request.path_params["version"] not in GEMINI_VERSIONS:
            raise HTTPException(404)
        if (failure := self._auth_failure(request, GEMINI)) is not None:
            return failure
        limit = self.service.max_context_tokens
        return _Json(wire_gemini.encode_models(self.service.served_models, input_limit=limit))

    async def gemini_call(self, request: Request) -> Response:
        """`models/MODEL:METHOD`: the model and the method are in the path (a model id may
        hold `/` and `:`; the method is after the last `:`), the stream's framing in `alt`."""
        model, _, method = request.path_params["rest"].rpartition(":")
        if request.path_params["version"] not in GEMINI_VERSIONS:
            raise HTTPException(404)
        if not model or method not in _GEMINI_METHODS:
            raise HTTPException(404)
        if (failure := self._auth_failure(request, GEMINI)) is not None:
            return failure
        try:
            if method == "countTokens":
                return await self._gemini_count(request, model)
            streamed = method == "streamGenerateContent"
            array = streamed and request.query_params.get("alt") != "sse"
            encoder = wire_gemini.JsonArrayStreamEncoder if array else None
            return await self._generate(
                request, GEMINI, model=model, streamed=streamed, encoder=encoder
            )
        except ApiError as error:
            return self._error(GEMINI, error)

    async def _gemini_count(self, request: Request, model: str) -> Response:
        """Gemini's token count: `{"contents"}` (or a whole `generateContentRequest`) →
        {"totalTokens": N}, the count `usageMetadata.promptTokenCount` of the same turn says."""
        turn = wire_gemini.decode_count_request(await self._read_body(request), model=model)
        served = self.service.served_models
        if turn.model not in served:
            raise http_errors.model_not_found(turn.model, served)
        texts = (prompt.message_text(m) for m in turn.messages)
        return _Json({"totalTokens": sum(map(self.service.count_tokens, texts))})

    async def faults(self, request: Request) -> Response:
        """Admin: GET lists faults; POST {"faults": [SPEC…], "replace": true} sets them;
        DELETE clears them. Guarded by the API key when one is configured."""
        if request.method != "GET" and (failure := self._auth_failure(request, CHAT)):
            return failure
        if request.method == "POST":
            try:
                document = await request.json()
                specs = _fault_specs(document)
            except (ValueError, FaultSpecError) as exc:
                return self._error(CHAT, invalid(str(exc), param="faults"))
            if isinstance(document, dict) and document.get("replace") is False:
                self.injector.add(specs)
            else:
                self.injector.set(specs)
        elif request.method == "DELETE":
            self.injector.set(())
        self._set_link_fallback(self.injector.link_fallback)
        return _Json({"faults": self.injector.describe()})

    def _set_link_fallback(self, on: bool) -> None:
        setter = getattr(self.service, "set_link_fallback", None)
        if setter is not None:
            setter(on)

    # --- auth and limits ---------------------------------------------------------------

    def _auth_failure(self, request: Request, dialect: Dialect) -> JSONResponse | None:
        if self.api_key is None:
            return None
        authorization = request.headers.get("authorization", "")
        bearer = authorization[7:].strip() if authorization[:7].lower() == "bearer " else ""
        x_api_key = request.headers.get("x-api-key", "")
        if _same_key(self.api_key, bearer) or _same_key(self.api_key, x_api_key):
            return None
        if dialect is GEMINI:  # Google's SDKs send `x-goog-api-key`; URLs may carry `?key=`
            google = request.headers.get("x-goog-api-key", "") or request.query_params.get("key")
            if _same_key(self.api_key, google or ""):
                return None
            return self._error(dialect, http_errors.bad_google_key(google or bearer or x_api_key))
        error = http_errors.bad_key(bearer or x_api_key, anthropic=dialect is MESSAGES)
        return self._error(dialect, error)

    async def _read_body(self, request: Request) -> bytes:
        limit = self.limits.max_body_bytes
        declared = request.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > limit:
            raise http_errors.too_large(limit)
        chunks: list[bytes] = []
        size = 0
        async for chunk in request.stream():
            size += len(chunk)
            if size > limit:
                raise http_errors.too_large(limit)
            chunks.append(chunk)
        return b"".join(chunks)

    def _check_request(self, call: EngineCall) -> int:
        """Exact model match and context length; returns the prompt's token count."""
        model = call.request.model
        served = self.service.served_models
        if model not in served:
            raise http_errors.model_not_found(model, served)
        prompt_tokens = sum(self.service.count_tokens(m.text) for m in call.request.messages)
        limit = self.service.max_context_tokens
        if prompt_tokens > limit:
            raise http_errors.context_too_long(limit, prompt_tokens)
        return prompt_tokens

    # --- generation --------------------------------------------------------------------

    def _generation(self, dialect: Dialect) -> Callable[[Request], Any]:
        async def endpoint(request: Request) -> Response:
            if (failure := self._auth_failure(request, dialect)) is not None:
                return failure
            try:
                return await self._generate(request, dialect)
            except ApiError as error:
                return self._error(dialect, error)

        return endpoint

    async def _generate(
        self,
        request: Request,
        dialect: Dialect,
        *,
        model: str | None = None,
        streamed: bool = False,
        encoder: StreamEncoderFactory | None = None,
    ) -> Response:
        """`model` / `stream`: the URL's (Gemini); `encoder`: another framing of the stream
        (Gemini's JSON array, sent as application/json)."""
        raw = await self._read_body(request)
        plan = self.injector.plan()
        await self._misbehave_before_headers(request, plan)
        try:
            call = dialects.parse(dialect, raw, model=model, stream=streamed)
        except ApiError:
            raise
        except (TypeError, ValueError, KeyError, AttributeError, RecursionError) as exc:
            raise invalid(f"The request body could not be understood: {exc}") from exc
        if plan.http_status is not None:
            raise http_errors.injected(plan.http_status, call.request.model)
        prompt_tokens = self._check_request(call)
        record = None
        if self.recorder is not None:
            record = RequestRecord(self.recorder, request.headers.raw, call.turn, prompt_tokens)
        try:
            return await self._admit(request, dialect, call, plan, prompt_tokens, encoder, record)
        except BaseException:
            if record is not None:
                record.close()
            raise

    async def _admit(
        self,
        request: Request,
        dialect: Dialect,
        call: EngineCall,
        plan: FaultPlan,
        prompt_tokens: int,
        encoder: StreamEncoderFactory | None,
        record: RequestRecord | None,
    ) -> Response:
        # An injected delay before the headers is the fault's time, not the engine's queue.
        delayed = plan.hang_s is not None or bool(plan.slow_headers_s)
        received = time.monotonic() if delayed else request.scope.get(_RECEIVED)
        asked = replace(call.request, received_s=received, ignore_eos=plan.no_stop)
        stream = self.service.generate(asked)
        try:
            admitted = await anext(stream)
        except QueueFull as exc:
            await _close(stream)
            raise http_errors.queue_full(exc.retry_after_s) from exc
        except EngineStopped as exc:
            raise ApiError(503, "overloaded", f"The engine is not serving: {exc}") from exc
        if not isinstance(admitted, Admitted):
            await _close(stream)
            raise TypeError(f"the engine's stream began with {admitted!r}, not ADMITTED")
        if not call.stream:
            return await self._respond_whole(dialect, call, stream, plan, record)
        self.metrics.count(dialect.route, 200)
        engine_stream: StreamEncoder = EngineStream(
            dialect, call, self.fingerprint, prompt_tokens, encoder
        )
        # The headers (and the protocol's head) go out now; the first token when it exists.
        events = self._stream_events(engine_stream, stream, plan, record)
        headers = {"cache-control": "no-cache", **self._labels(call)}
        media_type = "application/json" if encoder is not None else "text/event-stream"
        return _EventStream(events, media_type=media_type, headers=headers)

    async def _misbehave_before_headers(self, request: Request, plan: FaultPlan) -> None:
        if plan.hang_s is not None:
            await _sleep_while_connected(request, plan.hang_s)
            raise ApiError(504, "server_error", "injected hang-before-headers fault timed out")
        if plan.slow_headers_s:
            await _sleep_while_connected(request, plan.slow_headers_s)

    async def _respond_whole(
        self,
        dialect: Dialect,
        call: EngineCall,
        stream: AsyncIterator[Admitted | TokenChunk | Completion],
        plan: FaultPlan,
        record: RequestRecord | None = None,
    ) -> Response:
        texts: list[str] = []
        try:
            item = await anext(stream, None)
            while isinstance(item, TokenChunk):
                texts.append(item.text)
                if plan.stall_s and len(texts) == 1:
                    await asyncio.sleep(plan.stall_s)
                item = await anext(stream, None)
        except EngineStopped as exc:
            raise ApiError(503, "overloaded", f"The engine stopped serving: {exc}") from exc
        finally:
            await _close(stream)
        if not isinstance(item, Completion):
            raise TypeError(f"the engine's stream ended with {item!r}, not a Completion")
        self.metrics.observe(item.pd_timing, item.completion_tokens, ())
        self.metrics.count(dialect.route, 200)
        if record is not None:
            record.finish(item.completion_tokens)
        body = dialects.body(dialect, call, "".join(texts), item, self.fingerprint)
        return _Json(body, headers=self._labels(call))

    def _labels(self, call: EngineCall) -> dict[str, str]:
        """Headers on every answer: its id, and that it comes from the mock engine (the
        Anthropic format has no fingerprint field, so this is its only label)."""
        return {"x-request-id": call.request.request_id, "x-pdnotes-engine": self.fingerprint}

    async def _stream_events(
        self,
        encoder: StreamEncoder,
        stream: AsyncIterator[Admitted | TokenChunk | Completion],
        plan: FaultPlan,
        record: RequestRecord | None = None,
    ) -> AsyncIterator[bytes]:
        """SSE bytes: the protocol's head at once (the headers go out with it), the opening with
        the first token, each later token the moment the engine yields it, then the closing
        events with the usage."""
        gaps: list[float] = []
        clock = time.perf_counter
        try:
            head = encoder.head()
            if head:
                yield head
            item = await anext(stream, None)
            if not isinstance(item, TokenChunk):
                yield encoder.opening()  # an answer without a token still opens and closes
            else:
                yield encoder.opening() + encoder.token(item.text)
                if plan.stall_s:
                    await asyncio.sleep(plan.stall_s)
                last = clock()
                async for item in stream:
                    if not isinstance(item, TokenChunk):
                        break
                    now = clock()
                    gaps.append((now - last) * self.speed)
                    last = now
                    yield encoder.token(item.text)
            if not isinstance(item, Completion) or plan.cut_before_completion:
                return
            self.metrics.observe(item.pd_timing, item.completion_tokens, gaps)
            yield encoder.closing(item)
            if record is not None:
                record.finish(item.completion_tokens)
        except EngineStopped:
            return  # shutting down: end the stream; the client sees no completion event
        finally:
            if record is not None:
                record.close()  # (nothing when finished) cut, stopped or disconnected: no row
            await _close(stream)


def _same_key(expected: str, presented: str) -> bool:
    """Constant-time comparison: how long a wrong key takes to refuse says nothing about how
    much of it was right."""
    return bool(presented) and hmac.compare_digest(
        expected.encode("utf-8", "surrogateescape"), presented.encode("utf-8", "surrogateescape")
    )


async def _close(stream: AsyncIterator[Any]) -> None:
    aclose = getattr(stream, "aclose", None)
    if aclose is not None:
        await aclose()


async def _sleep_while_connected(request: Request, seconds: float) -> None:
    """Sleep, but stop early once the client has gone (bounded: no orphaned hangs)."""
    deadline = time.monotonic() + seconds
    while (left := deadline - time.monotonic()) > 0:
        await asyncio.sleep(min(0.1, left))
        if await request.is_disconnected():
            return


def _fault_specs(document: Any) -> list[FaultSpec]:
    raw = document.get("faults") if isinstance(document, dict) else document
    if isinstance(raw, str):
        raw = [raw]
    if not isinstance(raw, list) or not all(isinstance(s, str) for s in raw):
        raise ValueError('expected {"faults": ["500@first:2", …]}')
    return [parse_fault(s) for s in raw]


__all__ = ["DEFAULT_FINGERPRINT", "Limits", "create_app"]
