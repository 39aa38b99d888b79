"""The server's side of a bench run: its Prometheus `/metrics`, sampled while the load runs.

vLLM, SGLang, llama.cpp (`llama-server --metrics`) and the bundled engine publish what explains
latency: requests waiting (queue depth), requests running, KV-cache usage and prefix-cache hits.
bench scrapes `/metrics` at the root of the endpoint's host once at the start, every
`interval_s` during the run and once at the end, over the gateway's `RepeatedGet` (for plain
http, the same lean HTTP/1.1 code the requests use, on their event loop: a scrape reads its
answer as it arrives and parses only the lines below, ~0.1 ms, so it holds no request back and
costs no thread, httpx client or TLS context; docs/benchmarks/simulate-bench.md). Gauges are
reported as their mean and peak over the samples; the cache hit rate from counters, as the
difference between the last and the first sample. A server without metrics (404, not
Prometheus text, unreachable) costs one failed scrape and leaves the report's `server_metrics`
null with the reason: a run never fails over metrics.

Names, per server (first found wins):
- waiting: vllm:num_requests_waiting, sglang:num_queue_reqs, llamacpp:requests_deferred,
  lmdeploy:num_requests_waiting (`lmdeploy serve api_server --enable-metrics`),
  pdnotes_engine_requests_in_flight{state="waiting"}
- running: vllm:num_requests_running, sglang:num_running_reqs, llamacpp:requests_processing,
  lmdeploy:num_requests_running, pdnotes_engine_requests_in_flight{state="running"}
- KV usage (0..1): vllm:kv_cache_usage_perc, vllm:gpu_cache_usage_perc, sglang:token_usage,
  lmdeploy:gpu_cache_usage_perc, pdnotes_engine_kv_usage_ratio (the fullest node)
- cache hit rate: vllm:prefix_cache_hits_total / vllm:prefix_cache_queries_total, llama.cpp's
  llamacpp:prompt_tokens_cached_total / (cached + llamacpp:prompt_tokens_total), else
  sglang:cache_hit_rate (a gauge).
"""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

SCRAPE_TIMEOUT_S = 2.0
MAX_METRICS_BYTES = 4 * 1024 * 1024

GAUGES: dict[str, tuple[tuple[str, dict[str, str]], ...]] = {
    "waiting": (
        ("vllm:num_requests_waiting", {}),
        ("sglang:num_queue_reqs", {}),
        ("llamacpp:requests_deferred", {}),
        ("lmdeploy:num_requests_waiting", {}),
        ("pdnotes_engine_requests_in_flight", {"state": "waiting"}),
    ),
    "running": (
        ("vllm:num_requests_running", {}),
        ("sglang:num_running_reqs", {}),
        ("llamacpp:requests_processing", {}),
        ("lmdeploy:num_requests_running", {}),
        ("pdnotes_engine_requests_in_flight", {"state": "running"}),
    ),
    "kv_usage": (
        ("vllm:kv_cache_usage_perc", {}),
        ("vllm:gpu_cache_usage_perc", {}),
        ("sglang:token_usage", {}),
        ("lmdeploy:gpu_cache_usage_perc", {}),
        ("pdnotes_engine_kv_usage_ratio", {}),
    ),
}
# (hits counter, counter of the rest or None when the second is the total) per server.
HIT_COUNTERS = (
    ("vllm:prefix_cache_hits_total", "vllm:prefix_cache_queries_total", False),
    ("llamacpp:prompt_tokens_cached_total", "llamacpp:prompt_tokens_total", True),
)
HIT_GAUGE = "sglang:cache_hit_rate"


def metrics_url(base_url: str) -> str:
    """`/metrics` at the root of the endpoint's host (where every server above serves it)."""
    parts = urlsplit(base_url)
    return f"{parts.scheme}://{parts.netloc}/metrics"


# Every sample name the report reads: a scrape parses only these lines.
READ = frozenset(
    {name for rows in GAUGES.values() for name, _labels in rows}
    | {name for hits, other, _ in HIT_COUNTERS for name in (hits, other)}
    | {HIT_GAUGE}
)


def parse(
    text: str, names: frozenset[str] | None = None
) -> dict[str, list[tuple[dict[str, str], float]]]:
    """Prometheus text → sample name → [(labels, value)]. Raises ValueError if it is not.
    With `names`, only those samples' lines are parsed (the rest, comments included, are
    skipped unread: the bundled engine's page is 95% histogram buckets, parsed 10x faster)."""
    from prometheus_client.parser import text_string_to_metric_families

    if names is not None:
        text = "".join(line for line in text.splitlines(True) if _sample_name(line) in names)
    samples: dict[str, list[tuple[dict[str, str], float]]] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            samples.setdefault(sample.name, []).append((dict(sample.labels), float(sample.value)))
    return samples


def _sample_name(line: str) -> str:
    """The sample name a Prometheus text line starts with ('' for comments and blank lines)."""
    if line.startswith("#"):
        return ""
    end = len(line)
    for stop in ("{", " "):
        at = line.find(stop, 0, end)
        if at != -1:
            end = at
    return line[:end].strip()


def _gauge(samples: dict[str, list[tuple[dict[str, str], float]]], key: str) -> float | None:
    for name, labels in GAUGES[key]:
        rows = [v for have, v in samples.get(name, ()) if labels.items() <= have.items()]
        if rows:
            # Several series (one per engine node): queue and running add up, KV is the fullest.
            return max(rows) if key == "kv_usage" else sum(rows)
    return None


def _counter(samples: dict[str, list[tuple[dict[str, str], float]]], name: str) -> float | None:
    rows = samples.get(name)
    return sum(v for _labels, v in rows) if rows else None


@dataclass
class MetricsView:
    """What the samples said. `gauges`: name → (mean, peak); `hit_rate`: prefix-cache hits
    over the run (None when the server does not count them)."""

    url: str
    samples: int = 0
    failures: int = 0
    error: str | None = None
    gauges: dict[str, tuple[float, float]] = field(default_factory=dict)
    hit_rate: float | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "url": self.url,
            "samples": self.samples,
            "failed_scrapes": self.failures,
            **{
                name: {"mean": round(mean, 4), "max": round(peak, 4)}
                for name, (mean, peak) in self.gauges.items()
            },
            "cache_hit_rate": None if self.hit_rate is None else round(self.hit_rate, 4),
        }


class MetricsSampler:
    """`async with MetricsSampler(url) as sampler: ...run...`; then `sampler.view()` (None when
    no scrape succeeded; `sampler.error` says why)."""

    def __init__(self, url: str, interval_s: float = 1.0) -> None:
        self.url = url
        self.interval_s = interval_s
        self.error: str | None = None
        self._scrapes: list[dict[str, list[tuple[dict[str, str], float]]]] = []
        self._failures = 0
        self._task: asyncio.Task[None] | None = None
        self._getter: Any = None

    async def __aenter__(self) -> MetricsSampler:
        from notes_cli.gateway.fetch import RepeatedGet

        self._getter = RepeatedGet(self.url, timeout=SCRAPE_TIMEOUT_S, max_bytes=MAX_METRICS_BYTES)
        if await self._scrape():
            self._task = asyncio.create_task(self._loop())
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            await self._scrape()
        await self._getter.aclose()

    async def _loop(self) -> None:
        while True:
            await asyncio.sleep(self.interval_s)
            await self._scrape()

    async def _scrape(self) -> bool:
        try:
            body = await self._getter.get()
            # Only the lines the report reads are parsed (0.1 ms for the bundled engine's page).
            self._scrapes.append(parse(body.decode("utf-8", "replace"), READ))
            return True
        except Exception as exc:  # metrics are extra: note why, never fail the run
            self._failures += 1
            self.error = self.error or f"{type(exc).__name__}: {str(exc)[:160]}"
            return False

    def view(self) -> MetricsView | None:
        if not self._scrapes:
            return None
        view = MetricsView(self.url, len(self._scrapes), self._failures, self.error)
        for key in GAUGES:
            values = [v for s in self._scrapes if (v := _gauge(s, key)) is not None]
            if values:
                view.gauges[key] = (sum(values) / len(values), max(values))
        view.hit_rate = self._hit_rate()
        return view

    def _hit_rate(self) -> float | None:
        first, last = self._scrapes[0], self._scrapes[-1]
        for hits_name, other_name, other_is_misses in HIT_COUNTERS:
            values = [_counter(s, n) for s in (first, last) for n in (hits_name, other_name)]
            if any(v is None for v in values):
                continue
            h0, o0, h1, o1 = (float(v or 0.0) for v in values)
            hits, other = h1 - h0, o1 - o0
            total = hits + other if other_is_misses else other
            return hits / total if total > 0 else None
        gauge = [v for _labels, v in last.get(HIT_GAUGE, ())]
        return gauge[0] if gauge else None
