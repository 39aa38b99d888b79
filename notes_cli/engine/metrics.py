"""Prometheus metrics of one engine app, in a registry of its own (two apps in one process, as in
tests, never share counters).

Latency histograms are in simulated hardware seconds, like `usage.pd_timing`, so a scrape reads
the same numbers whatever `--speed` is. Gauges (queue depth, batch size, KV usage) are read from
`service.state()` at scrape time, so they are never stale.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from notes_cli.engine.api import PdTiming

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"

# Buckets in seconds: TTFT spans queueing behind long prefills; token gaps are milliseconds.
_LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120)
_TOKEN_BUCKETS = (0.002, 0.005, 0.01, 0.015, 0.02, 0.03, 0.05, 0.075, 0.1, 0.25, 0.5, 1, 5)


class EngineMetrics:
    """Counters and histograms the HTTP layer feeds, plus scrape-time engine gauges."""

    def __init__(self, state: Callable[[], dict[str, Any]]) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        r = self.registry
        self.requests = Counter(
            "pdnotes_engine_requests",
            "HTTP requests by route and status.",
            ["route", "status"],
            registry=r,
        )
        self.ttft = Histogram(
            "pdnotes_engine_ttft_seconds",
            "Time to first token (simulated).",
            buckets=_LATENCY_BUCKETS,
            registry=r,
        )
        self.tpot = Histogram(
            "pdnotes_engine_tpot_seconds",
            "Time per output token after the first (simulated).",
            buckets=_TOKEN_BUCKETS,
            registry=r,
        )
        self.itl = Histogram(
            "pdnotes_engine_itl_seconds",
            "Gaps between streamed tokens (wall time x speed).",
            buckets=_TOKEN_BUCKETS,
            registry=r,
        )
        self.e2e = Histogram(
            "pdnotes_engine_e2e_seconds",
            "Request latency to the last token (simulated).",
            buckets=_LATENCY_BUCKETS,
            registry=r,
        )
        self.queue = Histogram(
            "pdnotes_engine_queue_seconds",
            "Time spent waiting before prefill (simulated).",
            buckets=_LATENCY_BUCKETS,
            registry=r,
        )
        self.transfer = Histogram(
            "pdnotes_engine_kv_transfer_seconds",
            "KV cache transfer time (simulated).",
            buckets=_TOKEN_BUCKETS,
            registry=r,
        )
        self.output_tokens = Counter(
            "pdnotes_engine_output_tokens", "Generated tokens.", registry=r
        )
        self.kv_bytes = Counter(
            "pdnotes_engine_kv_transferred_bytes",
            "KV cache bytes moved prefill -> decode.",
            registry=r,
        )
        r.register(_StateCollector(state))

    def count(self, route: str, status: int) -> None:
        self.requests.labels(route=route, status=str(status)).inc()

    def observe(self, timing: PdTiming, output_tokens: int, gaps_s: Iterable[float]) -> None:
        """Record one finished generation: its pd_timing and the token gaps the client saw."""
        self.ttft.observe(timing.ttft_ms / 1000)
        if output_tokens > 1:
            self.tpot.observe(timing.tpot_ms / 1000)
        self.e2e.observe((timing.ttft_ms + timing.tpot_ms * max(output_tokens - 1, 0)) / 1000)
        self.queue.observe(timing.queue_ms / 1000)
        self.transfer.observe(timing.transfer_ms / 1000)
        self.output_tokens.inc(output_tokens)
        for gap in gaps_s:
            self.itl.observe(gap)

    def add_transferred_bytes(self, count: float) -> None:
        if count > 0:
            self.kv_bytes.inc(count)

    def render(self) -> bytes:
        """The Prometheus text exposition of this app's registry."""
        return generate_latest(self.registry)


class _StateCollector(Collector):
    """Queue depth, running batch size and KV usage per node, read from the engine's state."""

    def __init__(self, state: Callable[[], dict[str, Any]]) -> None:
        self._state = state

    def describe(self) -> list[Metric]:
        return []  # values depend on the engine's nodes; collected at scrape time only

    def collect(self) -> Iterator[Metric]:
        queue = GaugeMetricFamily(
            "pdnotes_engine_queue_depth", "Requests waiting, per node.", labels=["node", "role"]
        )
        batch = GaugeMetricFamily(
            "pdnotes_engine_batch_size",
            "Requests in the running batch, per node.",
            labels=["node", "role"],
        )
        kv = GaugeMetricFamily(
            "pdnotes_engine_kv_usage_ratio",
            "Fraction of KV cache capacity in use, per node.",
            labels=["node", "role"],
        )
        for node in node_rows(self._state()):
            labels = [str(node.get("name", "?")), str(node.get("role", "?"))]
            queue.add_metric(labels, _number(node, "queue_depth", "queued", "waiting"))
            batch.add_metric(labels, _number(node, "batch_size", "running"))
            kv.add_metric(labels, _number(node, "kv_usage", "kv_used_fraction", "kv_usage_ratio"))
        yield queue
        yield batch
        yield kv


def node_rows(state: dict[str, Any]) -> list[dict[str, Any]]:
    """The engine's nodes as a flat list of dicts, whether state lists them or maps them."""
    nodes = state.get("nodes", [])
    if isinstance(nodes, dict):
        return [{"name": k, **v} for k, v in nodes.items() if isinstance(v, dict)]
    return [n for n in nodes if isinstance(n, dict)] if isinstance(nodes, list) else []


def _number(row: dict[str, Any], *keys: str) -> float:
    for key in keys:
        value = row.get(key)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
    return 0.0
