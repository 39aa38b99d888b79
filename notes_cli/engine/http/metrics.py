"""Prometheus metrics of one engine app, in a registry of its own (two apps in one process, as in
tests, never share counters).

Latency histograms are in simulated hardware seconds, like `usage.pd_timing`, so a scrape reads
the same numbers whatever `--speed` is; the inter-token gaps are the ones actually streamed
(wall time x speed). Gauges (queue depth, batch size, KV usage) and the KV bytes moved are read
from `service.state()` at scrape time, so they are never stale.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from notes_cli.engine.core.api import PdTiming

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"

# Buckets in seconds: TTFT spans queueing behind long prefills; token gaps are milliseconds.
_LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120)
_TOKEN_BUCKETS = (0.002, 0.005, 0.01, 0.015, 0.02, 0.03, 0.05, 0.075, 0.1, 0.25, 0.5, 1, 5)
_BATCH_BUCKETS = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512)


class EngineMetrics:
    """Counters and histograms the HTTP layer feeds, plus scrape-time engine gauges."""

    def __init__(self, state: Callable[[], dict[str, Any]]) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        self.requests = self._counter(
            "pdnotes_engine_requests", "HTTP requests by route and status.", ["route", "status"]
        )
        self.ttft = self._histogram("ttft_seconds", "Time to first token (simulated).")
        self.tpot = self._histogram(
            "tpot_seconds", "Time per output token after the first (simulated).", _TOKEN_BUCKETS
        )
        self.itl = self._histogram(
            "itl_seconds", "Gaps between streamed tokens (wall time x speed).", _TOKEN_BUCKETS
        )
        self.e2e = self._histogram("e2e_seconds", "Latency to the last token (simulated).")
        self.queue = self._histogram("queue_seconds", "Wait before prefill (simulated).")
        self.transfer = self._histogram(
            "kv_transfer_seconds", "KV cache transfer time (simulated).", _TOKEN_BUCKETS
        )
        self.output_tokens = self._counter("pdnotes_engine_output_tokens", "Generated tokens.")
        self.step_batch = Histogram(
            "pdnotes_engine_step_batch_size",
            "Sequences per scheduler step, by phase (prefill, decode, mixed).",
            ["phase"],
            buckets=_BATCH_BUCKETS,
            registry=self.registry,
        )
        self.registry.register(_StateCollector(state))

    def _counter(self, name: str, doc: str, labels: Iterable[str] = ()) -> Counter:
        return Counter(name, doc, list(labels), registry=self.registry)

    def _histogram(
        self, name: str, doc: str, buckets: tuple[float, ...] = _LATENCY_BUCKETS
    ) -> Histogram:
        return Histogram(f"pdnotes_engine_{name}", doc, buckets=buckets, registry=self.registry)

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

    def observe_step(self, phase: str, batch_size: int) -> None:
        """One scheduler step, from the engine's observer."""
        self.step_batch.labels(phase=phase).observe(batch_size)

    def render(self) -> bytes:
        """The Prometheus text exposition of this app's registry."""
        return generate_latest(self.registry)


class _StateCollector(Collector):
    """Per-node queue depth, batch size and KV usage, requests in flight and KV bytes moved per
    link, read from the engine's state at scrape time."""

    def __init__(self, state: Callable[[], dict[str, Any]]) -> None:
        self._state = state

    def describe(self) -> list[Metric]:
        return []  # label values depend on the engine's nodes; collected at scrape time only

    def collect(self) -> Iterator[Metric]:
        state = self._state()
        labels = ["node", "role"]
        queue = GaugeMetricFamily("pdnotes_engine_queue_depth", "Requests waiting.", labels=labels)
        batch = GaugeMetricFamily(
            "pdnotes_engine_batch_size", "Sequences in the running batch.", labels=labels
        )
        kv = GaugeMetricFamily(
            "pdnotes_engine_kv_usage_ratio", "Fraction of KV cache capacity in use.", labels=labels
        )
        for node in node_rows(state):
            values = [str(node.get("name", "?")), str(node.get("role", "?"))]
            queue.add_metric(values, _number(node, "queue"))
            batch.add_metric(values, _number(node, "batch_size"))
            kv.add_metric(values, _number(node, "kv_usage"))
        yield from (queue, batch, kv)
        yield from _request_metrics(state)
        yield from _link_metrics(state)


def _request_metrics(state: dict[str, Any]) -> Iterator[Metric]:
    requests = state.get("requests")
    if not isinstance(requests, dict):
        return
    gauge = GaugeMetricFamily(
        "pdnotes_engine_requests_in_flight", "Requests by scheduler state.", labels=["state"]
    )
    for name in ("waiting", "running"):
        gauge.add_metric([name], _number(requests, name))
    yield gauge


def _link_metrics(state: dict[str, Any]) -> Iterator[Metric]:
    labels = ["link", "profile"]
    moved = CounterMetricFamily(
        "pdnotes_engine_kv_transferred_bytes",
        "KV cache bytes moved prefill -> decode.",
        labels=labels,
    )
    transfers = CounterMetricFamily(
        "pdnotes_engine_kv_transfers", "KV cache transfers completed.", labels=labels
    )
    links = state.get("links")
    for link in links if isinstance(links, list) else []:
        if isinstance(link, dict):
            values = [str(link.get("name", "?")), str(link.get("profile", "?"))]
            moved.add_metric(values, _number(link, "bytes_moved"))
            transfers.add_metric(values, _number(link, "transfers"))
    yield from (moved, transfers)


def node_rows(state: dict[str, Any]) -> list[dict[str, Any]]:
    """The engine's nodes as a flat list of dicts."""
    nodes = state.get("nodes", [])
    return [n for n in nodes if isinstance(n, dict)] if isinstance(nodes, list) else []


def _number(row: dict[str, Any], key: str) -> float:
    value = row.get(key)
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    return 0.0
