"""`pdnotes trace cost`: what a trace's traffic costs a day at gateway rates, what the cluster
the planner picked for it costs, and the volume at which self-hosting breaks even.

- Volume: the trace's requests over its span (first to last arrival), scaled to a day; or a
  volume the user names. Every day is taken to look like the trace: same lengths, same reuse.
- Gateway: each request's fresh input, cached input and output tokens at the model's list
  prices (prices.py). The cached input is the upstream's own `cached_tokens` when every row
  records it (a recording through the bridge), else what an unbounded prefix cache serves over
  the trace's `hash_ids` (the provider's cache at its best), else none.
- Self-hosted: replicas of the planned instance, each carrying `capacity_rps` at the SLOs and
  costing its chips' hourly price around the clock; at least one runs even when idle.
- Break-even: gateway cost grows with volume, a replica's is fixed, so self-hosting breaks even
  at day_cost / gateway_cost_per_request requests a day, if one replica can carry that many.
  If not, a fully loaded replica costs more per request than the gateway: it never breaks even.
  (Past each replica's capacity the next one starts idle, so just above a multiple of the
  capacity the gateway can be cheaper again for a while.)
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from notes_cli.trace.format import TraceRow
from notes_cli.trace.prefix_cache import UNBOUNDED, PrefixCache
from notes_cli.trace.prices import GatewayPrice

DAY_S = 86_400.0


@dataclass(frozen=True)
class TraceVolume:
    requests: int
    span_s: float  # first to last arrival
    input_tokens: int
    cached_tokens: int
    output_tokens: int
    cached_from: str  # "recorded", "hash_ids" or "none"

    @property
    def per_day(self) -> float | None:
        """The recorded volume in requests a day (None: every request at one instant)."""
        return self.requests / self.span_s * DAY_S if self.span_s > 0 else None

    def to_json(self) -> dict[str, Any]:
        return {
            "requests": self.requests,
            "span_s": round(self.span_s, 3),
            "input_tokens": self.input_tokens,
            "cached_tokens": self.cached_tokens,
            "output_tokens": self.output_tokens,
            "cached_from": self.cached_from,
            "recorded_per_day": None if self.per_day is None else round(self.per_day, 1),
        }


def measure(rows: Iterable[TraceRow]) -> TraceVolume:
    """The trace's requests, span and token counts in one pass (memory: its distinct blocks)."""
    cache = PrefixCache(UNBOUNDED)
    requests = n_in = n_out = replayed = recorded = 0
    all_recorded, any_blocks = True, False
    first = last = 0.0
    for row in rows:
        if not requests:
            first = row.timestamp
        last = row.timestamp
        requests += 1
        n_in += row.input_length
        n_out += row.output_length
        any_blocks = any_blocks or bool(row.hash_ids)
        replayed += cache.lookup_and_insert(row) if row.hash_ids else 0
        if row.cached_tokens is None:
            all_recorded = False
        else:
            recorded += min(row.cached_tokens, row.input_length)
    if requests and all_recorded:
        cached, source = recorded, "recorded"
    elif any_blocks:
        cached, source = replayed, "hash_ids"
    else:
        cached, source = 0, "none"
    return TraceVolume(requests, (last - first) / 1000.0, n_in, cached, n_out, source)


@dataclass(frozen=True)
class Cluster:
    """One replica of the planned deployment."""

    label: str
    capacity_rps: float  # at the SLOs
    per_hour: float  # US$, its chips

    @property
    def per_day(self) -> float:
        return self.per_hour * 24.0

    def replicas(self, requests_per_day: float) -> int:
        rate = requests_per_day / DAY_S
        return max(1, math.ceil(rate / self.capacity_rps - 1e-9))

    def to_json(self) -> dict[str, Any]:
        return {
            "label": self.label,
            "capacity_rps": round(self.capacity_rps, 4),
            "capacity_per_day": round(self.capacity_rps * DAY_S, 1),
            "price_per_hour": round(self.per_hour, 4),
        }


@dataclass(frozen=True)
class GatewayCost:
    price: GatewayPrice
    per_request: float  # US$
    per_day: float  # US$ at the priced volume
    break_even_per_day: float | None  # requests a day; None: never

    def to_json(self) -> dict[str, Any]:
        return {
            **self.price.to_json(),
            "per_request": round(self.per_request, 8),
            "per_day": round(self.per_day, 4),
            "break_even_requests_per_day": None
            if self.break_even_per_day is None
            else round(self.break_even_per_day, 1),
        }


@dataclass(frozen=True)
class CostReport:
    volume: TraceVolume
    requests_per_day: float  # the volume priced (the recorded one unless named)
    cluster: Cluster
    gateways: tuple[GatewayCost, ...]

    @property
    def replicas(self) -> int:
        return self.cluster.replicas(self.requests_per_day)

    @property
    def self_hosted_per_day(self) -> float:
        return self.replicas * self.cluster.per_day

    def to_json(self) -> dict[str, Any]:
        return {
            "schema": "pdnotes.trace-cost/1",
            "trace": self.volume.to_json(),
            "requests_per_day": round(self.requests_per_day, 1),
            "self_hosted": {
                **self.cluster.to_json(),
                "replicas": self.replicas,
                "per_day": round(self.self_hosted_per_day, 4),
            },
            "gateway": [g.to_json() for g in self.gateways],
        }


def price(
    volume: TraceVolume,
    requests_per_day: float,
    cluster: Cluster,
    gateways: Iterable[GatewayPrice],
) -> CostReport:
    """The trace at `requests_per_day`, at each gateway's prices and on `cluster`."""
    fresh = volume.input_tokens - volume.cached_tokens
    rows = []
    for gateway in gateways:
        per_request = gateway.cost(fresh, volume.cached_tokens, volume.output_tokens) / max(
            1, volume.requests
        )
        rows.append(
            GatewayCost(
                gateway,
                per_request,
                per_request * requests_per_day,
                break_even(per_request, cluster),
            )
        )
    return CostReport(volume, requests_per_day, cluster, tuple(rows))


def break_even(per_request: float, cluster: Cluster) -> float | None:
    """Requests a day at which one replica costs what the gateway charges for them; None when
    one replica cannot carry that many (a full replica costs more per request)."""
    if per_request <= 0:
        return None
    volume = cluster.per_day / per_request
    return volume if volume <= cluster.capacity_rps * DAY_S else None
