"""Fast offline simulation: the live engine's scheduler driven by a virtual clock.

Arrivals are consumed lazily and records are yielded as requests finish, so memory stays flat
however long the trace is; nothing is created per token.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from notes_cli.engine.core.api import RequestRecord
from notes_cli.engine.core.config import EngineConfig
from notes_cli.engine.core.profiles import Catalog, Deployment, load_catalog
from notes_cli.engine.core.scheduler import Scheduler
from notes_cli.engine.core.workers import SchedRequest


@dataclass(frozen=True, slots=True)
class SimRequest:
    """One request of a trace: when it arrives and how many tokens go in and come out."""

    arrival_ms: float
    input_tokens: int
    output_tokens: int


def resolve_deployment(
    target: Deployment | EngineConfig | str, catalog: Catalog | None = None
) -> tuple[Deployment, Catalog, bool]:
    """(deployment, catalog, start on the TCP fallback) for a preset name or deployment file
    path, a config or a deployment."""
    from notes_cli.engine.core.deployment_file import resolve_preset

    if isinstance(target, Deployment):
        return target, catalog or load_catalog(), False
    if isinstance(target, str):
        return (*resolve_preset(target, catalog), False)
    deployment, catalog = resolve_preset(target.preset, catalog)
    return deployment.with_mode(target.mode), catalog, target.link_fallback_tcp


def simulate(
    deployment_or_config: Deployment | EngineConfig | str,
    requests: Iterable[SimRequest],
    *,
    seed: int = 0,
    catalog: Catalog | None = None,
    keep_gaps: bool = False,
) -> Iterator[RequestRecord]:
    """Run `requests` (in arrival order) through the scheduler and yield a RequestRecord as each
    finishes. Deterministic: the same inputs give the same records (the scheduler draws no
    random numbers; `seed` is accepted so callers can thread one through). An arrival earlier
    than the previous one is treated as arriving at the current simulated time. With
    `keep_gaps` each record also lists its inter-token gaps (`itl_ms`, for P99 TBT); that
    costs memory per token, so it is off by default."""
    del seed
    deployment, catalog, fallback = resolve_deployment(deployment_or_config, catalog)
    scheduler = Scheduler(deployment, catalog, keep_gaps=keep_gaps, link_fallback=fallback)
    finished: deque[RequestRecord] = deque()
    scheduler.on_finish = lambda _request, record: finished.append(record)
    arrivals = iter(requests)
    upcoming = next(arrivals, None)
    index = 0
    overhead = scheduler.overhead_ms  # the GPUs see an arrival this much later
    while True:
        due = scheduler.next_event_time()
        if upcoming is not None and (due is None or upcoming.arrival_ms + overhead <= due):
            request = SchedRequest(
                str(index), upcoming.arrival_ms, upcoming.input_tokens, upcoming.output_tokens
            )
            scheduler.arrive_now(request, upcoming.arrival_ms)
            index += 1
            upcoming = next(arrivals, None)
        elif due is not None:
            scheduler.step()
        else:
            break
        while finished:
            yield finished.popleft()
