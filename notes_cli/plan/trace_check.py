"""`engine plan --trace`: the pick replayed on the trace itself. The search probes candidates at
the rates it tries, with the trace's lengths and its aggregate reuse; this check runs the best
once more on the trace as recorded: at its own times in session order (each turn after its
session's previous answer and think time, trace/session_order.py) and through each node's
finite prefix cache (engine/simulate/trace_cache.py), judged by the same SLOs."""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, replace
from itertools import islice
from pathlib import Path
from typing import Any

from notes_cli.bench.stats import LatencyStats
from notes_cli.bench.workload import WorkItem
from notes_cli.engine.core.profiles import Catalog, Deployment
from notes_cli.plan.slo import PlanSlo
from notes_cli.trace.format import read_rows


@dataclass(frozen=True)
class TraceCheck:
    requests: int
    session_order: bool
    prefix_cache_hit: float
    met: bool
    binding: str | None
    ttft_ms: float | None  # at the SLOs' percentile (None: no such request)
    tpot_ms: float | None

    def to_json(self) -> dict[str, Any]:
        return {
            "requests": self.requests,
            "session_order": self.session_order,
            "prefix_cache_hit": round(self.prefix_cache_hit, 4),
            "met": self.met,
            "binding": self.binding,
            "ttft_ms": None if self.ttft_ms is None else round(self.ttft_ms, 3),
            "tpot_ms": None if self.tpot_ms is None else round(self.tpot_ms, 3),
        }


def check_on_trace(
    deployment: Deployment, catalog: Catalog, trace: Path, slo: PlanSlo, requests: int
) -> TraceCheck | None:
    """The pick on the first `requests` rows of `trace`; None for a trace not in the agent
    trace format (lengths-only traces have no sessions or blocks to replay)."""
    from notes_cli.engine.core.simcore import simulate
    from notes_cli.engine.simulate.runner import fold_record
    from notes_cli.engine.simulate.trace_cache import MAX_HIT, deployment_cache_shape
    from notes_cli.trace.prefix_cache import has_hash_ids, replay
    from notes_cli.trace.session_order import SessionOrder, has_sessions

    ordered, blocked = has_sessions(trace), has_hash_ids(trace)
    if not (ordered or blocked):
        return None
    hit = 0.0
    if blocked:
        nodes, blocks = deployment_cache_shape(deployment, catalog)
        found = replay(islice(read_rows(trace), requests), blocks, nodes=nodes)
        hit = min(found.hit_rate, MAX_HIT)
    rows = islice(read_rows(trace), requests)
    order = SessionOrder(rows) if ordered else None
    items: Iterable[Any] = (
        order.requests()
        if order is not None
        else (WorkItem(r.timestamp, r.input_length, r.output_length) for r in rows)
    )
    stats = LatencyStats(slo.bench())
    cached = replace(deployment, prefix_cache_hit=hit)
    for record in simulate(cached, items, catalog=catalog):
        if order is not None:
            order.finished(record)
        fold_record(stats, record)
    summaries = stats.summaries()
    percentile = slo.percentile * 100
    return TraceCheck(
        stats.completed,
        ordered,
        hit,
        stats.meets(),
        stats.binding(),
        _at(summaries.get("ttft_ms"), percentile),
        _at(summaries.get("tpot_ms"), percentile),
    )


def _at(summary: Any, percentile: float) -> float | None:
    value = float(summary.p90 if percentile == 90 else summary.p99) if summary else math.nan
    return None if math.isnan(value) else value
