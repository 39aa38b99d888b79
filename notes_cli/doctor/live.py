"""Live doctor probes: call the endpoint each client will call, the way it calls it.

For one endpoint: `GET {base}/models` (`/v1/models` for Claude Code), then one small streamed
turn in the client's protocol with a budget a reasoning model can finish in. Failures become
findings with exact fixes; a 404 is diagnosed by trying the URL without (or with) `/v1`, and for
Codex by trying `/chat/completions` (a gateway without the Responses API).

Bounds: every probe is a wall clock (`--timeout`, default 10 s) and a byte cap whatever the
server does (an endless stream, pings only, a byte a second, a gzip bomb, endless headers), and
the probes of one endpoint share `BUDGET_PROBES` timeouts: an endpoint costs at most
`BUDGET_PROBES x --timeout` (30 s by default), a whole doctor that times the endpoints it probes.
A server that breaks a bound gets a finding named after it (`no-response`,
`stream-never-finished`, `response-too-large`, `headers-too-large`, `redirect-loop`).
"""

from __future__ import annotations

import dataclasses
import difflib
import re
import time
from collections.abc import Mapping, Sequence
from typing import Any

import httpx

from notes_cli.clients.endpoint import Endpoint
from notes_cli.clients.model_limits import limits_of
from notes_cli.doctor.client_shape import (
    Shape,
    Variant,
    client_setting_for,
    shaped_request,
    variants,
)
from notes_cli.doctor.findings import Finding, FindingClient, Probe
from notes_cli.doctor.registry import make
from notes_cli.doctor.resolved import ConfiguredWindow
from notes_cli.doctor.stream_limits import (
    StreamLimits,
    near_idle_timeout,
    suggested_ms,
    suggested_retries,
)
from notes_cli.doctor.turn_verdict import turn_problem
from notes_cli.gateway import (
    GatewayClient,
    proxy_for,
    redirects_to_itself,
    request_url,
    safe_url,
)
from notes_cli.gateway import errors as gw
from notes_cli.gateway.pace import Pace, judge_cut
from notes_cli.gateway.results import StreamResult

PROBE_PROMPT = "Reply with the single word: pong"
# Big enough that a reasoning model can think a little and still answer.
PROBE_MAX_TOKENS = 256
# A whole endpoint's probes share this many probe timeouts.
BUDGET_PROBES = 3

# Answers that prove the route exists even though the turn failed.
_ROUTE_EXISTS = frozenset({400, 401, 403, 422, 429})
_UNREACHABLE = (gw.Unreachable, gw.TLSError, gw.ConnectTimeout, gw.HeadersTimeout)
# A server that breaks one of the probe's bounds: the finding named after the bound.
_BOUND_FINDINGS: tuple[tuple[type[gw.GatewayError], str], ...] = (
    (gw.HeadersTimeout, "no-response"),
    (gw.IdleStreamTimeout, "stream-never-finished"),  # TotalTimeout too (a subclass)
    (gw.ResponseTooLarge, "response-too-large"),
    (gw.HeadersTooLarge, "headers-too-large"),
)

# The fix of `stream-never-finished` for each way a turn can be cut that is not slowness
# (keyed by `Pace.cause`, spelt with underscores).
_CUT_FIX: dict[str, dict[str, Any]] = {
    "stalled": {"variant": "stalled"},
    "no_first_token": {"variant": "no_first_token"},
    "over_budget": {"variant": "over_budget"},
}

# Statuses that say "this request body is wrong", worth narrowing down.
_SHAPE_ERRORS = frozenset({400, 413, 422})


def _shape_protocol(client: str) -> str | None:
    """The protocol of the client whose recorded shape the probe sends (`Client.protocol`)."""
    from notes_cli.clients import registry

    plugin = registry.get(client)
    return plugin.protocol if plugin is not None else None


def _client_name(client: str) -> str:
    from notes_cli.clients import registry

    return registry.titles()[client]


def probe_endpoint(
    endpoint: Endpoint,
    *,
    timeout: float = 10.0,
    static_findings: Sequence[Finding] = (),
    transport: httpx.BaseTransport | None = None,
    shape: Shape | None = None,
    limits: StreamLimits | None = None,
    window: ConfiguredWindow | None = None,
) -> tuple[list[Finding], list[Probe]]:
    """Probe one client's endpoint. Returns the findings (empty when all is well) and every
    probe made, in order, with URL (no secret), status and milliseconds. With `shape` (the
    client's recorded request, `doctor.client_shape`) the turn is sent in the client's real shape,
    and a shape the gateway refuses is narrowed down to the part it refuses. With `limits` (the
    client's idle timeout and retries, `doctor.stream_limits`) a silence near the idle timeout
    and a stream cut before its completion event name the setting to raise. With `window` (the
    context window the client is told the model has) a larger one than the gateway's /models
    states is `context-window-too-large`."""
    prober = _Prober(endpoint, timeout, static_findings, transport, shape)
    prober.limits = limits
    prober.window = window
    return prober.run()


def _shape_fix(shape: Shape, culprit: Variant | None, bridge: str | None) -> dict[str, Any]:
    """The registry variant and fields of `request-shape-rejected`'s fix: the client settings
    that stop it sending the refused tool types, else the refused part, else no part named.
    Through a pdnotes bridge (`bridge`: its root URL) the fix is its upstream's: it never
    suggests putting a bridge in front of the bridge."""
    client = _client_name(shape.client)
    if culprit is None:
        if bridge:
            return {"variant": "unnamed_bridged", "client_name": client, "bridge": bridge}
        return {"variant": "unnamed", "client_name": client}
    if culprit.drop_betas:
        return {"variant": "betas"}
    settings = [client_setting_for(shape, kind) for kind in sorted(culprit.drop_tool_types)]
    if culprit.drop_tool_types and all(settings):
        named = {
            "client_name": client,
            "settings": " and ".join(f"`{s}`" for s in settings),
            "kinds": ", ".join(f"`{k}`" for k in sorted(culprit.drop_tool_types)),
        }
        if bridge:
            return {"variant": "tool_types_bridged", "bridge": bridge, **named}
        return {"variant": "tool_types", **named}
    if bridge:
        return {"variant": "bridged", "culprit": culprit.culprit, "bridge": bridge}
    return {"culprit": culprit.culprit}


def closest_ids(wanted: str, served: Sequence[str], limit: int = 3) -> list[str]:
    """Served ids closest to `wanted`, ignoring case, hyphens, underscores, dots and spaces:
    an exact normalised match first, then the most similar."""
    norm = {_normalise(s): s for s in served}
    key = _normalise(wanted)
    exact = [norm[key]] if key in norm else []
    near = difflib.get_close_matches(key, list(norm), n=limit, cutoff=0.5)
    ordered = exact + [norm[n] for n in near if norm[n] not in exact]
    return ordered[:limit]


def _normalise(model_id: str) -> str:
    return re.sub(r"[-_.\s]", "", model_id.lower())


class _Prober:
    def __init__(
        self,
        endpoint: Endpoint,
        timeout: float,
        static_findings: Sequence[Finding],
        transport: httpx.BaseTransport | None,
        shape: Shape | None = None,
    ) -> None:
        self.endpoint = endpoint
        self.shape = shape if shape and _shape_protocol(shape.client) == endpoint.protocol else None
        self.timeout = timeout
        self.static = list(static_findings)
        self.transport = transport
        self.deadline = time.monotonic() + BUDGET_PROBES * timeout
        self.client: FindingClient = "env" if endpoint.client == "openai" else endpoint.client
        self.findings: list[Finding] = []
        self.probes: list[Probe] = []
        self.served: list[str] | None = None
        self.limits: StreamLimits | None = None
        self.window: ConfiguredWindow | None = None

    # ------------------------------------------------------------------ flow

    def run(self) -> tuple[list[Finding], list[Probe]]:
        if not self._models():
            return self.findings, self.probes
        as_recorded = Variant("as recorded") if self.shape else None
        try:
            result = self._stream(self.endpoint, "stream", as_recorded)
        except gw.GatewayError as exc:
            if not self._shape_rejected(exc):
                self._diagnose(exc)
            return self.findings, self.probes
        for issue in result.client_issues:
            self._add(
                "probe-failed",
                f"the test turn to {safe_url(request_url(self.endpoint))} returned, but {issue}",
            )
        # The answer itself, judged as smoke judges each run (doctor.turn_verdict).
        problem = turn_problem(
            self.client, result, PROBE_MAX_TOKENS, secrets=self.endpoint.sent_secrets()
        )
        if problem is not None:
            self.findings.append(problem)
            probe = self.probes[-1]
            self.probes[-1] = dataclasses.replace(
                probe, ok=problem.severity != "error", detail=f"{probe.detail}; {problem.message}"
            )
        if result.timings.max_gap_ms is not None:
            self._silence(result.timings.max_gap_ms, "")
        return self.findings, self.probes

    def _models(self) -> bool:
        """GET the model list; False when there is no point in probing further."""
        url = self.endpoint.models_url()
        start = time.perf_counter()
        try:
            with self._client(self.endpoint) as client:
                result = client.list_models()
        except gw.GatewayError as exc:
            self._record_failure("models", "GET", url, exc, start)
            if self._bound_broken(exc, turn=False):
                # A server that never answers is not asked again; after an endless or huge
                # model list the turn may still work (or show more).
                return not isinstance(exc, gw.HeadersTimeout)
            bridge = bridge_of(self.endpoint)
            if bridge is not None and self._bridge_failed(exc, bridge):
                return False
            if isinstance(exc, _UNREACHABLE):
                self._unreachable(exc)
                return False
            if isinstance(exc, gw.HttpStatusError) and exc.status in (401, 403):
                self._auth_rejected(exc)
                return False
            return True  # many gateways serve no model list; the turn decides
        self.served = result.ids
        self._window_check(result.entries, url)
        detail = f"{len(result.ids)} models" + self._via_proxy(url)
        self._record("models", "GET", url, result.status, result.timings.total_ms, True, detail)
        return True

    def _window_check(self, entries: Sequence[Mapping[str, Any]], url: str) -> None:
        """The configured window against the one /models states for the model: a client told
        of a larger window sends prompts the server refuses instead of compacting them."""
        window, model = self.window, self.endpoint.model
        entry = next((e for e in entries if e.get("id") == model), None)
        if window is None or entry is None:
            return
        served = limits_of(entry)
        if served.context_window is None or window.tokens <= served.context_window:
            return
        self._add(
            "context-window-too-large",
            f"{window.setting} says {window.tokens} tokens, but {safe_url(url)} states "
            f"{served.context_window} for {model} ({served.field}): the client compacts too "
            "late and the server refuses the longer prompts",
            setting=window.setting,
            served=served.context_window,
            tool=window.tool,
        )

    def _stream(
        self, endpoint: Endpoint, name: str, variant: Variant | None = None
    ) -> StreamResult:
        """One probe turn: the minimal body, or the client's shape (`variant` of it)."""
        url = request_url(endpoint)
        start = time.perf_counter()
        extra: dict[str, Any] | None = None
        if variant is not None and self.shape is not None:
            endpoint, extra = shaped_request(self.shape, endpoint, PROBE_PROMPT, variant)
        try:
            with self._client(endpoint) as client:
                result = client.stream(PROBE_PROMPT, max_tokens=PROBE_MAX_TOKENS, extra_body=extra)
        except gw.GatewayError as exc:
            pace = _pace_of(exc)
            self._record_failure(name, "POST", url, exc, start, pace.describe() if pace else None)
            raise
        detail = f"finish={result.finish_reason}, {result.output_tokens} tokens"
        if result.timings.ttft_ms is not None:
            detail += f", ttft {result.timings.ttft_ms:.0f} ms"
        self._record(name, "POST", url, result.status, result.timings.total_ms, True, detail)
        return result

    # ------------------------------------------------------------------ request shape

    def _shape_rejected(self, exc: gw.GatewayError) -> bool:
        """The client's shape failed with a request error: if the minimal body works, find the
        part the gateway refuses (one finding, `request-shape-rejected`). True when handled."""
        shape = self.shape
        if (
            shape is None
            or not isinstance(exc, gw.HttpStatusError)
            or exc.status not in _SHAPE_ERRORS
            or exc.is_model_error
        ):
            return False
        try:
            self._stream(self.endpoint, "stream (minimal)")
        except gw.GatewayError as minimal:
            # Refused too: the body is not the problem, report what is. Not answered (it runs
            # on the endpoint's leftover budget, 0.1 s at worst): it proves nothing, and the
            # client's own error stands, whatever the machine's load made of that budget.
            self._diagnose(minimal if isinstance(minimal, gw.HttpStatusError) else exc)
            return True
        culprit: Variant | None = None
        for variant in variants(shape):
            if self._remaining() <= 0:
                break
            try:
                self._stream(self.endpoint, f"stream ({variant.label})", variant)
            except gw.GatewayError:
                continue
            culprit = variant
            break
        self._add(
            "request-shape-rejected",
            f"the gateway refuses the request {_client_name(shape.client)} {shape.version} sends "
            f"({exc.status}: {exc.error_message or exc.message}), while a minimal turn works"
            + (f"; it is {culprit.culprit} (the turn works {culprit.label})" if culprit else ""),
            **_shape_fix(shape, culprit, bridge_of(self.endpoint)),
        )
        return True

    def _diagnose(self, exc: gw.GatewayError) -> None:
        if self._bound_broken(exc):
            if isinstance(exc, gw.IdleStreamTimeout) and not isinstance(exc, gw.TotalTimeout):
                self._silence(exc.seconds * 1000, "at least ")  # the probe gave up first
            return
        if isinstance(exc, gw.TruncatedStream):
            self._cut(exc)
            return
        if isinstance(exc, _UNREACHABLE):
            self._unreachable(exc)
        elif isinstance(exc, gw.HttpStatusError) and _redirect_loop(exc):
            self._add(
                "redirect-loop",
                f"{exc.url} redirects ({exc.status}) to itself: no client ever gets an answer",
            )
        elif isinstance(exc, gw.HttpStatusError) and exc.status in (401, 403):
            self._auth_rejected(exc)
        elif isinstance(exc, gw.HttpStatusError) and exc.is_model_error:
            self._model_unknown(exc.error_message or exc.message)
        elif isinstance(exc, gw.HttpStatusError) and exc.status == 404:
            self._not_found(exc)
        else:
            self._add(
                "probe-failed",
                f"the test turn to {exc_url(exc)} failed: {exc.message}",
                variant="turn_failed",
                gateway_fix=exc.fix or "",
            )

    # ------------------------------------------------------------------ 404

    def _not_found(self, exc: gw.HttpStatusError) -> None:
        for base, finding_id in self._v1_variants():
            variant = dataclasses.replace(self.endpoint, base_url=base)
            label = "without /v1" if finding_id == "base-url-v1-suffix" else "with /v1"
            found, problem = self._try(variant, f"stream ({label})")
            if not found:
                continue
            self._v1_finding(finding_id, base, exc, problem)
            if problem is not None:  # the right path, and a second problem behind it
                if self.served is None:
                    self._models_at(variant, f"models ({label})")
                self._diagnose(problem)
            return
        if self._chat_only(exc):
            return
        if self.served is not None and self.endpoint.model not in self.served:
            self._model_unknown(f"404 from {exc.url}")
            return
        self._add(
            "path-not-found",
            f"POST {exc.url} -> 404" + (f" ({exc.error_message})" if exc.error_message else ""),
            where=self._where(),
        )

    def _chat_only(self, exc: gw.HttpStatusError) -> bool:
        """A 404 on /responses or /v1/messages where chat completions answer: the fix is the
        bridge, with the exact commands for this endpoint."""
        endpoint = self.endpoint
        if endpoint.protocol == "responses":
            candidates = [endpoint.base_url]
            finding_id, client_path = "responses-unsupported", "/responses"
        elif endpoint.protocol == "anthropic":
            base = endpoint.base_url.rstrip("/")
            candidates = [base + "/v1", base] if not base.endswith("/v1") else [base]
            finding_id, client_path = "messages-unsupported", "/v1/messages"
        elif endpoint.protocol == "gemini":
            base = endpoint.base_url.rstrip("/")
            candidates = [base + "/v1", base] if not base.endswith("/v1") else [base]
            finding_id, client_path = "gemini-chat-only-endpoint", "/v1beta/models/…"
        else:
            return False
        for base in candidates:
            chat = dataclasses.replace(endpoint, protocol="chat", base_url=base)
            if not self._try(chat, "chat-completions")[0]:
                continue
            name = _client_of(endpoint)[1]
            self._add(
                finding_id,
                f"POST {exc.url} -> 404, but {safe_url(chat.request_url())} answers: this "
                f"gateway speaks chat completions only, and {name} calls {client_path}",
                command=bridge_command(endpoint, base),
            )
            return True
        return False

    def _try(self, endpoint: Endpoint, name: str) -> tuple[bool, gw.GatewayError | None]:
        """Probe a variant URL: (found, problem). The path is found when the turn works or the
        server answers with a client error other than 404 (a wrong key or model proves the
        route exists); `problem` is that error, to diagnose next."""
        if self._remaining() <= 0:
            return False, None
        try:
            self._stream(endpoint, name)
        except gw.HttpStatusError as exc:
            if exc.is_model_error or exc.status in _ROUTE_EXISTS:
                return True, exc
            return False, None
        except gw.GatewayError:
            return False, None
        return True, None

    def _models_at(self, endpoint: Endpoint, name: str) -> None:
        """The served ids at a corrected base URL, to suggest the closest model."""
        url = endpoint.models_url()
        start = time.perf_counter()
        try:
            with self._client(endpoint) as client:
                result = client.list_models()
        except gw.GatewayError as exc:
            self._record_failure(name, "GET", url, exc, start)
            return
        self.served = result.ids
        self._record(
            name,
            "GET",
            url,
            result.status,
            result.timings.total_ms,
            True,
            f"{len(result.ids)} models",
        )

    def _v1_variants(self) -> list[tuple[str, str]]:
        base = self.endpoint.base_url.rstrip("/")
        if base.endswith("/v1"):
            return [(base[: -len("/v1")], "base-url-v1-suffix")]
        if self.endpoint.protocol == "anthropic":
            return []  # Claude Code adds /v1 itself
        return [(base + "/v1", "base-url-v1-missing")]

    def _v1_finding(
        self,
        finding_id: str,
        base: str,
        exc: gw.HttpStatusError,
        problem: gw.GatewayError | None,
    ) -> None:
        fixed = self._request_url(base)
        if finding_id == "base-url-v1-suffix":
            why = "has a /v1 the gateway does not want"
            if self.endpoint.protocol == "anthropic":
                why = "ends in /v1, and Claude Code adds /v1/messages itself"
        else:
            why = "lacks the /v1 the gateway needs"
        line, file_line = self._static_location(finding_id)
        self._add(
            finding_id,
            f"the base URL {why}: POST {exc.url} -> 404, while POST {safe_url(fixed)} "
            + (f"exists (it answered {getattr(problem, 'status', '')})" if problem else "works"),
            variant="live" if finding_id == "base-url-v1-suffix" else None,
            file=file_line,
            line=line,
            where=self._where(),
            setting=self._config_line(base),
        )

    # ------------------------------------------------------------------ stream timing

    def _silence(self, gap_ms: float, at_least: str) -> None:
        """A silence in the turn's stream near the client's idle timeout: the setting to raise,
        with the silence measured."""
        limits = self.limits
        if limits is None or not near_idle_timeout(limits, gap_ms):
            return
        name = _client_name(limits.client)
        default = " (the default)" if limits.idle_ms == limits.idle_default else ""
        self._add(
            "stream-idle-gap",
            f"the test turn's stream from {safe_url(request_url(self.endpoint))} went silent "
            f"for {at_least}{gap_ms:.0f} ms, {gap_ms / limits.idle_ms:.0%} of {name}'s idle "
            f"timeout of {limits.idle_ms} ms{default}: a longer turn or a busier gateway passes "
            f"it, and {name} drops the stream",
            setting=limits.idle_setting,
            suggested=suggested_ms(limits, gap_ms),
            current=f"{limits.idle_ms} ms{default}",
            gap_ms=f"{at_least}{gap_ms:.0f}",
        )

    def _cut(self, exc: gw.TruncatedStream) -> None:
        """The stream ended before its completion event: how long it had been silent, and the
        client's retries (a relay's idle timeout is the usual cause)."""
        timings = exc.partial.timings
        ended = timings.ended_ms or timings.total_ms or 0.0
        last = timings.last_event_ms if timings.last_event_ms is not None else timings.headers_ms
        silence = max(ended - (last or 0.0), 0.0)
        message = (
            f"{exc.message}, {exc.partial.raw_events_count} events in and {silence:.0f} ms "
            f"after the last{' (after the headers)' if timings.last_event_ms is None else ''}, "
            f"{ended:.0f} ms into the turn"
        )
        if silence >= 1000:
            cause = (
                f"the stream was closed after {silence:.0f} ms of silence, which is what a relay's "
                "idle timeout does (nginx: proxy_read_timeout; a load balancer's idle timeout): "
                "raise it above the longest silence of a turn"
            )
        else:
            cause = "the gateway or a relay closed the stream mid-answer: check its logs"
        limits = self.limits
        if limits is None:
            self._add(
                "probe-failed",
                f"the test turn to {exc_url(exc)} failed: {message}",
                variant="turn_failed",
                gateway_fix=exc.fix or "",
            )
            return
        self._add(
            "stream-cut",
            message,
            cause=cause,
            setting=limits.retries_setting,
            suggested=suggested_retries(limits),
            current=limits.retries,
            maximum=limits.retries_max,
        )

    # ------------------------------------------------------------------ findings

    def _bridge_failed(self, exc: gw.GatewayError, bridge: str) -> bool:
        """The endpoint is a pdnotes bridge: say whether the bridge or its upstream failed."""
        if isinstance(exc, _UNREACHABLE):
            silent = f"the pdnotes bridge at {bridge} does not answer: {exc.message}"
            self._add("bridge-not-running", silent)
            return True
        said = exc.error_message if isinstance(exc, gw.HttpStatusError) else None
        status = exc.status if isinstance(exc, gw.HttpStatusError) else None
        if said and said.startswith("upstream ") and status in (401, 403, 502, 504):
            self._add(
                "bridge-upstream-failed",
                f"the pdnotes bridge at {bridge} answers, but its upstream does not: {said}",
            )
            return True
        return False

    def _bound_broken(self, exc: gw.GatewayError, *, turn: bool = True) -> bool:
        """Add the finding for a server that broke a probe bound; False for other errors. A
        finding already made for this endpoint (the model list and the turn often break the
        same bound) is not repeated."""
        finding_id = next((fid for kind, fid in _BOUND_FINDINGS if isinstance(exc, kind)), None)
        if finding_id is None:
            return False
        pace = _pace_of(exc) if turn else None
        if pace is not None:
            self._cut_stream(exc, pace)
        elif finding_id not in {f.id for f in self.findings}:
            proxy = proxy_for(self.endpoint.base_url) if finding_id == "no-response" else None
            self._add(
                finding_id,
                exc.message,
                variant="via_proxy" if proxy else None,
                gateway_fix=exc.fix or "",
                proxy=proxy,
            )
        return True

    def _cut_stream(self, exc: gw.GatewayError, pace: Pace) -> None:
        """A test turn still open at its deadline, judged by the tokens that came: slow but
        working is a warning (`stream-slow`) with the measured rate; a stall, a stream that
        never started or one over its budget is `stream-never-finished`, naming which."""
        found = {f.id for f in self.findings}
        if pace.slow:
            if "stream-slow" in found:
                return
            self._add(
                "stream-slow",
                f"the test turn to {exc_url(exc)} is {pace.describe()}, over doctor's "
                f"--timeout {self.timeout:g} s",
                timeout=pace.fitting_timeout() or "a larger value",
            )
            return
        if "stream-never-finished" in found:
            return
        self._add(
            "stream-never-finished",
            f"{exc.message}: {pace.describe()}",
            **_CUT_FIX[pace.cause.replace("-", "_")],
            gateway_fix=exc.fix or "",
        )

    def _unreachable(self, exc: gw.GatewayError) -> None:
        """Cannot connect; a proxy on the way is named (NO_PROXY is often the fix)."""
        proxy = proxy_for(self.endpoint.base_url)
        self._add(
            "unreachable",
            exc.message,
            variant="via_proxy" if proxy else None,
            gateway_fix=exc.fix or "",
            proxy=proxy,
        )

    def _auth_rejected(self, exc: gw.HttpStatusError) -> None:
        var = f"${self.endpoint.key_env}" if self.endpoint.key_env else "the configured key"
        message = exc.message
        if any(f.id in ("env-key-unset", "claude-credential-missing") for f in self.static):
            message += " (no key was sent: see the credential finding above)"
        elif not self.endpoint.key:
            message += " (no key was sent)"
        self._add("auth-rejected", message, variable=var, sent_as=self._auth_how())

    def _model_unknown(self, why: str) -> None:
        model = self.endpoint.model or "(no model set)"
        served = self.served or []
        near = closest_ids(model, served)
        message = f"the gateway does not serve model {model!r}: {why}"
        if near:
            where, setting = self._where_model(), self._model_line(near[0])
            closest = ", ".join(near)
            self._add(
                "model-unknown",
                message,
                variant="live_closest",
                where=where,
                setting=setting,
                closest=closest,
            )
        elif served:
            self._add("model-unknown", message, variant="live_served", served=", ".join(served[:8]))
        else:
            self._add("model-unknown", message, variant="live_unlisted")

    def _add(
        self,
        finding_id: str,
        message: str,
        *,
        variant: str | None = None,
        file: str | None = None,
        line: int | None = None,
        **fields: Any,
    ) -> None:
        """A live finding, built by the registry (severity and fix template are its). A message
        may quote the gateway (its model list, an error): the key the probes sent is masked as
        well as anything key-shaped."""
        self.findings.append(
            make(
                finding_id,
                self.client,
                message,
                variant=variant,
                file=file,
                line=line,
                secrets=self.endpoint.sent_secrets(),
                **fields,
            )
        )

    # ------------------------------------------------------------------ probes

    def _record(
        self,
        name: str,
        method: str,
        url: str,
        status: int | None,
        ms: float | None,
        ok: bool,
        detail: str,
    ) -> None:
        self.probes.append(
            Probe(
                self.client,
                name,
                method,
                safe_url(url),
                status,
                round(ms, 1) if ms is not None else None,
                ok,
                detail,
            )
        )

    def _record_failure(
        self,
        name: str,
        method: str,
        url: str,
        exc: gw.GatewayError,
        start: float,
        pace: str | None = None,
    ) -> None:
        status = exc.status if isinstance(exc, gw.HttpStatusError) else None
        ms = (time.perf_counter() - start) * 1000
        kind = getattr(exc, "kind", "error")
        detail = f"{kind}: {exc.message}" + (f": {pace}" if pace else "")
        self._record(name, method, url, status, ms, False, detail)

    def _client(self, endpoint: Endpoint) -> GatewayClient:
        timeout = min(self.timeout, max(self._remaining(), 0.1))
        return GatewayClient(
            endpoint, timeout=timeout, transport=self.transport, total_timeout=timeout
        )

    def _remaining(self) -> float:
        return self.deadline - time.monotonic()

    @staticmethod
    def _via_proxy(url: str) -> str:
        proxy = proxy_for(url)
        return f", via proxy {proxy}" if proxy else ""

    # ------------------------------------------------------------------ where to fix

    def _request_url(self, base: str) -> str:
        return request_url(dataclasses.replace(self.endpoint, base_url=base))

    def _where(self) -> str:
        source = self.endpoint.source or ""
        if self.endpoint.client == "openai" or not source:
            return "your environment"
        return source

    def _where_model(self) -> str:
        return self._where() if self._env_names() is not None else self._file_of_source()

    def _file_of_source(self) -> str:
        return (self.endpoint.source or "your config").split(" [", 1)[0]

    def _file_lines(self) -> tuple[str, str] | None:
        """How the client's file writes its base URL and model (None: no such file)."""
        from notes_cli.clients import registry

        plugin = registry.get(self.endpoint.client)
        return plugin.file_lines if plugin is not None else None

    def _env_names(self) -> tuple[str, str] | None:
        """The variables the client reads its base URL and model from (None: not variables)."""
        from notes_cli.clients import registry

        plugin = registry.get(self.endpoint.client)
        return plugin.env_names if plugin is not None else None

    def _config_line(self, base: str) -> str:
        lines, names = self._file_lines(), self._env_names()
        if lines is not None:
            return lines[0].format(base)
        if names is not None:
            if self.endpoint.source in (None, "environment", "default"):
                return f"export {names[0]}={base}"
            return f'"{names[0]}": "{base}" (inside "env")'
        return f"export OPENAI_BASE_URL={base}"

    def _model_line(self, model: str) -> str:
        lines, names = self._file_lines(), self._env_names()
        if lines is not None:
            return lines[1].format(model)
        if names is not None:
            return f'"{names[1]}": "{model}" (inside "env")'
        return f"--model {model}"

    def _auth_how(self) -> str:
        return {
            "bearer": "Authorization: Bearer",
            "x-api-key": "x-api-key",
            "x-goog-api-key": "x-goog-api-key",
            "both": "Authorization: Bearer and x-api-key",
            "none": "nothing: no key is configured",
        }[self.endpoint.auth_style]

    def _static_location(self, finding_id: str) -> tuple[int | None, str | None]:
        for finding in self.static:
            if finding.id == finding_id and finding.client == self.client:
                return finding.line, finding.file
        return None, self._file_of_source() if self._file_lines() is not None else None


def _pace_of(exc: gw.GatewayError) -> Pace | None:
    """How a test turn cut at its deadline was going (None for other errors: no stream)."""
    partial = getattr(exc, "partial", None)
    if not isinstance(exc, gw.IdleStreamTimeout) or partial is None:
        return None
    elapsed = partial.timings.total_ms
    if elapsed is None:
        return None
    return judge_cut(partial, max_tokens=PROBE_MAX_TOKENS, elapsed_ms=elapsed)


def _redirect_loop(exc: gw.GatewayError) -> bool:
    """A 3xx whose Location is the URL that was asked for."""
    if not isinstance(exc, gw.HttpStatusError) or not 300 <= exc.status < 400:
        return False
    return redirects_to_itself(exc.url, exc.location)


def bridge_of(endpoint: Endpoint) -> str | None:
    """The bridge's root URL when `endpoint` points at a pdnotes bridge (the bridge preset's
    address, or the one `pdnotes config --bridge` recorded), else None."""
    from notes_cli.clients import urls
    from notes_cli.clients.presets import load_preset

    parts = urls.split(endpoint.base_url)
    if parts is None:
        return None
    netloc = f"{parts.hostname}:{parts.port}"
    hosts = set(load_preset("bridge").hosts)
    try:
        from notes_cli.bridge.config import load_record

        record = load_record()
    except Exception:  # an unreadable record is the config's problem, not the probe's
        record = None
    if record is not None:
        hosts |= {f"127.0.0.1:{record.port}", f"localhost:{record.port}"}
    return f"{parts.scheme}://{netloc}" if netloc in hosts else None


def bridge_command(endpoint: Endpoint, chat_base: str) -> str:
    """The command that puts the bridge in front of a chat-only endpoint, for this client."""
    import shlex

    client = _client_of(endpoint)[0]
    args = ["pdnotes", "config", client, "--bridge", "--base-url", chat_base]
    if endpoint.key_env:
        args += [_key_flag(client), endpoint.key_env]
    args += ["--model", endpoint.model or "<model id>"]
    return shlex.join(args)


def _client_of(endpoint: Endpoint) -> tuple[str, str]:
    """(name, title) of the client behind `endpoint`: a registered one by its name, else the
    client speaking the Responses API for a Responses endpoint, and the one speaking the
    Messages API for the others (the plain SDKs' endpoints)."""
    from notes_cli.clients import registry
    from notes_cli.clients.plugin import speaker

    spoken = "responses" if endpoint.protocol == "responses" else "anthropic"
    plugin = registry.get(endpoint.client) or speaker(registry.CLIENTS, spoken)
    return plugin.name, plugin.title


def _key_flag(client: str) -> str:
    """The `config <client>` option naming the key's variable."""
    from notes_cli.clients import registry
    from notes_cli.clients.plugin import key_flag

    plugin = registry.get(client)
    assert plugin is not None, client  # `_client_of` names a registered client
    return key_flag(plugin)


def exc_url(exc: gw.GatewayError) -> str:
    return str(getattr(exc, "url", ""))
