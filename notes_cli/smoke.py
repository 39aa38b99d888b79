"""`pdnotes smoke`: n consecutive streamed turns, the way the chosen client sends them, and a
verdict on the source article's criteria:

1. every run returned: no connection error, HTTP error or timeout (no 401 / 404);
2. every run completed: the protocol's completion event with a natural stop (`stop`,
   `response.completed`, `end_turn`), non-empty text, not cut by the token limit;
3. latency is stable: no run took more than `STABLE_FACTOR` x the median time after connecting
   (ignoring differences under `STABLE_FLOOR_MS`, which are noise on fast links), and none timed
   out. Connecting is left out because only the first run opens the connection (DNS, TCP, TLS):
   a far gateway's 700 ms handshake before 200 ms answers is not unstable latency; it shows as
   `connect_ms` in the breakdown.

It also splits where the time went: network + gateway (connect, time to response headers) vs
the model (time to first token after the headers, decode rate), so a slow engine is not blamed
on the gateway. Retries are opt-in (`retries`), honour `Retry-After` and are reported.
Each run asks its own prompt (a nonce in front), so a server's prefix cache serves none of them
from another's; the prompt tokens the server says it took from its cache are shown.
"""

from __future__ import annotations

import os
import statistics
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from typing import Any

import httpx

from notes_cli.clients.endpoint import Endpoint
from notes_cli.doctor.findings import FindingClient
from notes_cli.doctor.turn_verdict import turn_problem
from notes_cli.gateway import GatewayClient, proxy_for, request_url, safe_url
from notes_cli.gateway import errors as gw
from notes_cli.gateway.pace import Pace, judge_cut
from notes_cli.gateway.results import StreamResult
from notes_cli.secrets import scrub

DEFAULT_PROMPT = "In one short sentence: what does prefill/decode disaggregation separate?"
NONCE_BYTES = 3
"""Each run's prompt starts with its own 6-hex-digit nonce (`fresh_prompt`): on a server with a
prefix cache (llama.cpp keeps every prompt it processed) the same prompt three times made runs
2 and 3 cache hits, and the latency verdict compared a cold run with warm ones."""
DEFAULT_MAX_TOKENS = 512  # room for a reasoning model to think and still answer
STABLE_FACTOR = 3.0
STABLE_FLOOR_MS = 500.0
PREVIEW_CHARS = 60
# First token this close after the headers: the server sent both together.
HEADERS_WITH_TOKEN_MS = 2.0
STABILITY_RULE = (
    f"stable = no run over {STABLE_FACTOR:g}x the median time after connecting (differences under "
    f"{STABLE_FLOOR_MS:.0f} ms ignored) and no timeout"
)


@dataclass
class SmokeRun:
    """One turn. `ok` = returned and completed with text; `problem` says why not."""

    index: int
    ok: bool
    status: int | None
    connect_ms: float | None
    headers_ms: float | None
    ttft_ms: float | None
    total_ms: float | None
    output_tokens: int | None
    tokens_source: str | None
    tokens_per_s: float | None
    finish_reason: str | None
    completed: bool
    preview: str
    attempts: int = 1
    problem: str | None = None
    fix: str | None = None  # what to change when `problem` is the answer's (not an error's)
    error: dict[str, Any] | None = None
    retried: list[str] = field(default_factory=list)
    pd_timing: dict[str, Any] | None = None
    server_timings: dict[str, Any] | None = None  # llama.cpp's own `timings` of the run
    # prompt tokens the server says it served from its cache (llama.cpp `timings.cache_n`, else
    # usage `prompt_tokens_details.cached_tokens`); None when it says nothing
    cached_tokens: int | None = None
    prompt: str = ""  # what this run asked (its nonce first)
    # A run still streaming at its deadline: how it was going (`gateway.pace.Pace.to_json`).
    pace: dict[str, Any] | None = None

    @property
    def slow(self) -> bool:
        """Cut at the deadline while tokens were still coming steadily: slow but working."""
        return self.pace is not None and self.pace.get("cause") == "slow"

    @property
    def timed_out(self) -> bool:
        kind = str(self.error.get("kind", "")) if self.error else ""
        return "timeout" in kind and not self.slow


@dataclass
class Verdict:
    ok: bool
    returned: bool
    completed: bool
    stable: bool
    reasons: list[str]
    rule: str = STABILITY_RULE
    # Some run was slow but working (cut at --timeout while still streaming steadily): not a
    # failure, but its end was not seen; `slow_reasons` says which, at what rate, what to change.
    slow: bool = False
    slow_reasons: list[str] = field(default_factory=list)


@dataclass
class Breakdown:
    """Medians over the runs that returned. `gateway_ms` = time to response headers (network
    + gateway + any queueing before the server answers); `model_ttft_ms` = first token after
    the headers; `decode_tokens_per_s` = output rate after the first token. `engine` carries
    the median of the server's own `usage.pd_timing` when it reports one: simulated hardware
    ms, and the engine's `speed` (wall time = simulated time / speed).
    `headers_with_first_token` is set when the server holds its headers until the first token
    (then the time to headers includes queueing and prefill, and the split cannot separate)."""

    connect_ms: float | None
    gateway_ms: float | None
    model_ttft_ms: float | None
    decode_tokens_per_s: float | None
    engine: dict[str, float] | None = None
    headers_with_first_token: bool = False


@dataclass
class SmokeReport:
    client: str
    protocol: str
    url: str
    model: str | None
    key: str
    proxy: str | None
    runs: list[SmokeRun]
    verdict: Verdict
    breakdown: Breakdown

    def to_json(self) -> dict[str, Any]:
        """The `pdnotes.smoke/1` document."""
        data = asdict(self)
        return {"schema": "pdnotes.smoke/1", "ok": self.verdict.ok, **data}


def run_smoke(
    endpoint: Endpoint,
    *,
    n: int = 3,
    prompt: str = DEFAULT_PROMPT,
    timeout: float = 30.0,
    retries: int = 0,
    max_tokens: int = DEFAULT_MAX_TOKENS,
    transport: httpx.BaseTransport | None = None,
    on_run: Callable[[SmokeRun], None] | None = None,
    sleep: Callable[[float], None] = time.sleep,
    shape: Any = None,
) -> SmokeReport:
    """Send `n` consecutive streamed turns (one connection pool, as the client would) and
    judge them. Each run is bounded by `timeout` seconds (connect, headers, idle gap, total).
    With `shape` (`doctor.client_shape.Shape`) every turn is the client's real request."""
    runs: list[SmokeRun] = []
    sent = endpoint
    if shape is not None:
        from notes_cli.doctor.client_shape import shaped_request

        sent, _ = shaped_request(shape, endpoint, prompt)  # (the headers: the same every run)
    client = GatewayClient(
        sent,
        timeout=timeout,
        connect_timeout=min(timeout, 10.0),
        total_timeout=timeout,
        transport=transport,
    )
    with client:
        for index in range(1, n + 1):
            asked = fresh_prompt(prompt)
            extra: dict[str, Any] | None = None
            if shape is not None:
                _, extra = shaped_request(shape, endpoint, asked)
            run = _one_run(client, index, asked, max_tokens, retries, timeout, sleep, extra)
            run.prompt = asked
            runs.append(run)
            if on_run is not None:
                on_run(run)
    url = request_url(endpoint)
    return SmokeReport(
        client=endpoint.client,
        protocol=endpoint.protocol,
        url=safe_url(url),
        model=endpoint.model,
        key=endpoint.masked_key,
        proxy=proxy_for(url),
        runs=runs,
        verdict=judge(runs),
        breakdown=breakdown(runs),
    )


def fresh_prompt(prompt: str) -> str:
    """`prompt` with a new nonce in front (where a prefix cache compares first), so no run is
    served from the cache another run filled: `(3fa9c1) In one short sentence: …`."""
    return f"({os.urandom(NONCE_BYTES).hex()}) {prompt}"


def _cached(result: StreamResult) -> int | None:
    """The prompt tokens the server served from its cache, as it reported them."""
    cache_n = (result.server_timings or {}).get("cache_n")
    if isinstance(cache_n, int) and not isinstance(cache_n, bool):
        return cache_n
    return result.cached_input_tokens


def _one_run(
    client: GatewayClient,
    index: int,
    prompt: str,
    max_tokens: int,
    retries: int,
    timeout: float,
    sleep: Callable[[float], None],
    extra_body: dict[str, Any] | None = None,
) -> SmokeRun:
    retried: list[str] = []
    for attempt in range(1, retries + 2):
        try:
            result = client.stream(prompt, max_tokens=max_tokens, extra_body=extra_body)
        except gw.GatewayError as exc:
            failed = _failed_run(index, exc, attempt, retried, max_tokens, timeout)
            wait = _retry_wait(exc, attempt, timeout)
            # A slow run is not retried: the next would be as slow.
            if attempt <= retries and wait is not None and not failed.slow:
                retried.append(f"{_short(exc)}; waited {wait:.1f} s")
                sleep(wait)
                continue
            return _scrubbed(failed, client.endpoint)
        judged = _finding_client(client.endpoint.client)
        run = _run_from(index, result, attempt, retried, judged, max_tokens)
        return _scrubbed(run, client.endpoint)
    raise AssertionError("unreachable: the loop always returns")


def _scrubbed(run: SmokeRun, endpoint: Endpoint) -> SmokeRun:
    """The run with the gateway's words (a finish reason, the answer's preview, a problem
    quoting them) cleared of the key the turn sent: a gateway may echo it anywhere."""
    sent = endpoint.sent_secrets()
    return replace(
        run,
        finish_reason=scrub(run.finish_reason, sent) if run.finish_reason else None,
        preview=scrub(run.preview, sent),
        problem=scrub(run.problem, sent) if run.problem else None,
        fix=scrub(run.fix, sent) if run.fix else None,
    )


def _finding_client(client: str) -> FindingClient:
    """Whose fix a run's problem gets: the plain OpenAI SDK (`--client openai`) has no client
    settings of its own."""
    from notes_cli.clients import registry

    return client if client in registry.names() else "env"


def _retry_wait(exc: gw.GatewayError, attempt: int, timeout: float) -> float | None:
    """Seconds to wait before retrying a transient failure, None when it is not transient.
    `Retry-After` wins (capped at the run timeout); otherwise 1 s, 2 s, 4 s…"""
    if isinstance(exc, gw.HttpStatusError):
        if exc.status != 429 and exc.status < 500:
            return None
        if exc.retry_after is not None:
            return min(exc.retry_after, timeout)
    elif not isinstance(exc, gw.Unreachable | gw.GatewayTimeout | gw.TruncatedStream):
        return None
    return float(min(2 ** (attempt - 1), timeout))


def _run_from(
    index: int,
    result: StreamResult,
    attempts: int,
    retried: list[str],
    client: FindingClient,
    max_tokens: int,
) -> SmokeRun:
    t = result.timings
    problem = fix = None
    # The answer judged exactly as doctor's stream probe judges it (doctor.turn_verdict).
    finding = turn_problem(client, result, max_tokens)
    if finding is not None:
        problem, fix = finding.message, finding.fix
    elif result.client_issues:
        problem = result.client_issues[0]
    return SmokeRun(
        index=index,
        ok=problem is None,
        status=result.status,
        connect_ms=_r(t.connect_ms),
        headers_ms=_r(t.headers_ms),
        ttft_ms=_r(t.ttft_ms),
        total_ms=_r(t.total_ms),
        output_tokens=result.output_tokens,
        tokens_source=result.tokens_source,
        tokens_per_s=_r(result.tokens_per_s),
        finish_reason=result.finish_reason,
        completed=result.completed,
        preview=_preview(result.text),
        attempts=attempts,
        problem=problem,
        fix=fix,
        retried=retried,
        pd_timing=result.pd_timing,
        server_timings=result.server_timings,
        cached_tokens=_cached(result),
    )


def _failed_run(
    index: int,
    exc: gw.GatewayError,
    attempts: int,
    retried: list[str],
    max_tokens: int,
    timeout: float,
) -> SmokeRun:
    partial: StreamResult | None = getattr(exc, "partial", None)
    t = partial.timings if partial is not None else None
    error = exc.to_json() if hasattr(exc, "to_json") else {"message": exc.message, "fix": exc.fix}
    problem = _short(exc)
    pace: Pace | None = None
    if isinstance(exc, gw.IdleStreamTimeout) and partial is not None and t is not None:
        # Cut at the deadline: the tokens that came say why (slow, stalled, never started…).
        pace = judge_cut(partial, max_tokens=max_tokens, elapsed_ms=t.total_ms or 0.0)
        problem = _slow_problem(pace, timeout) if pace.slow else f"{problem}: {pace.describe()}"
    return SmokeRun(
        index=index,
        ok=False,
        status=getattr(exc, "status", None) or (partial.status if partial else None),
        connect_ms=_r(t.connect_ms) if t else None,
        headers_ms=_r(t.headers_ms) if t else None,
        ttft_ms=_r(t.ttft_ms) if t else None,
        total_ms=_r(t.total_ms) if t else None,
        output_tokens=partial.output_tokens if partial else None,
        tokens_source=partial.tokens_source if partial else None,
        tokens_per_s=_r(pace.tokens_per_s) if pace and pace.slow else None,
        finish_reason=partial.finish_reason if partial else None,
        completed=False,
        preview=_preview(partial.text) if partial else "",
        attempts=attempts,
        problem=problem,
        error=error,
        retried=retried,
        pace=pace.to_json() if pace else None,
    )


def _slow_problem(pace: Pace, timeout: float) -> str:
    """What a slow run's row says: the rate, the first token, and the flag to change."""
    fit = pace.fitting_max_tokens(timeout)
    change = f"raise --timeout to {pace.fitting_timeout()}" if pace.needs_s else "raise --timeout"
    if fit is not None and pace.max_tokens and fit < pace.max_tokens:
        change += f" or lower --max-tokens to {fit}"
    return f"{pace.describe()}; its end was not seen within --timeout {timeout:g} s ({change})"


def judge(runs: list[SmokeRun]) -> Verdict:
    """The article's criteria, with the reason for every failed one."""
    reasons: list[str] = []
    slow = [r for r in runs if r.slow]
    failed = [r for r in runs if r.error and not r.slow]
    returned = not failed
    for run in failed:
        reasons.append(f"run {run.index} did not return: {run.problem}")
    incomplete = [r for r in runs if not r.error and r.problem]
    completed = returned and not incomplete
    for run in incomplete:
        reasons.append(f"run {run.index} {run.problem}")
    stable, why = _stability(runs)
    reasons.extend(why)
    slow_reasons = [f"run {r.index} {r.problem}" for r in slow]
    ok = returned and completed and stable
    return Verdict(
        ok, returned, completed, stable, reasons, slow=bool(slow), slow_reasons=slow_reasons
    )


def _stability(runs: list[SmokeRun]) -> tuple[bool, list[str]]:
    reasons = [f"run {r.index} timed out" for r in runs if r.timed_out]
    # A slow run counts with its time so far (its deadline): one run cut at 30 s among runs of
    # 2 s is unstable latency, whatever the cause.
    totals = [
        (r.index, r.total_ms - (r.connect_ms or 0.0))
        for r in runs
        if (not r.error or r.slow) and r.total_ms is not None
    ]
    if not reasons and len(totals) < min(2, len(runs)):  # too few to compare: not shown
        reasons.append(f"latency not judged: {len(totals)} of {len(runs)} runs returned")
    if len(totals) >= 2:
        median = statistics.median(t for _, t in totals)
        for index, total in totals:
            if total > STABLE_FACTOR * median and total - median > STABLE_FLOOR_MS:
                reasons.append(
                    f"run {index} took {total:.0f} ms after connecting, over "
                    f"{STABLE_FACTOR:g}x the median {median:.0f} ms"
                )
    return not reasons, reasons


def breakdown(runs: list[SmokeRun]) -> Breakdown:
    good = [r for r in runs if not r.error or r.slow]
    connects = [r.connect_ms for r in good if r.connect_ms is not None]
    headers = [r.headers_ms for r in good if r.headers_ms is not None]
    model = [
        r.ttft_ms - r.headers_ms for r in good if r.ttft_ms is not None and r.headers_ms is not None
    ]
    rates = [r.tokens_per_s for r in good if r.tokens_per_s is not None]
    model_ms = _median(model)
    return Breakdown(
        connect_ms=_median(connects),
        gateway_ms=_median(headers),
        model_ttft_ms=model_ms,
        decode_tokens_per_s=_median(rates),
        engine=_engine_median([r.pd_timing for r in good if r.pd_timing]),
        headers_with_first_token=model_ms is not None and model_ms < HEADERS_WITH_TOKEN_MS,
    )


def _engine_median(timings: list[dict[str, Any]]) -> dict[str, float] | None:
    if not timings:
        return None
    # The ms are the engine's simulated hardware time; `speed` (its --speed) says how much
    # faster than that its wall clock runs.
    keys = ("queue_ms", "prefill_ms", "transfer_ms", "decode_ms", "ttft_ms", "tpot_ms", "speed")
    result: dict[str, float] = {}
    for key in keys:
        values = [float(t[key]) for t in timings if isinstance(t.get(key), int | float)]
        if values:
            result[key] = round(statistics.median(values), 1)
    return result or None


def _median(values: list[float]) -> float | None:
    return round(statistics.median(values), 1) if values else None


def _short(exc: gw.GatewayError) -> str:
    status = getattr(exc, "status", None)
    kind = getattr(exc, "kind", "error")
    return f"{kind} {status}: {exc.message}" if status else f"{kind}: {exc.message}"


def _preview(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= PREVIEW_CHARS else flat[: PREVIEW_CHARS - 1] + "…"


def _r(value: float | None) -> float | None:
    return round(value, 1) if value is not None else None
