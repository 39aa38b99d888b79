"""Prefix caching for `engine simulate --trace`: a trace with `hash_ids` is replayed through the
deployment's prefix caches (one LRU per prefill or colocated node, holding as many blocks as the
node's KV memory fits) and the share of prompt tokens they serve becomes the deployment's
`prefix_cache_hit` for the run, so the cost model computes only the uncached part of each
prompt (docs/engine-model.md).

The share is the trace's aggregate: every prompt of the run is charged as if that share of it
were cached, not each its own hits. The cache is as large as the whole KV memory (a running
batch's KV competes for it in a real engine), so the rate is an upper bound at high load.
"""

from __future__ import annotations

from dataclasses import replace
from itertools import islice
from pathlib import Path
from typing import TYPE_CHECKING

from notes_cli.engine.simulate.configs import SimConfig
from notes_cli.trace.format import BLOCK_TOKENS, read_rows
from notes_cli.trace.prefix_cache import CacheReplay, replay

if TYPE_CHECKING:
    from notes_cli.engine.core.profiles import Catalog, Deployment
    from notes_cli.engine.simulate.engine_simulator import EngineSimulator

# The cost model takes a share below 1 (a prompt computes at least one token).
MAX_HIT = 0.999


def cache_shape(simulator: EngineSimulator, config: SimConfig) -> tuple[int, int]:
    """(nodes, blocks per node) of the configuration's prefix caches (deployment_cache_shape)."""
    return deployment_cache_shape(simulator.deployment(config), simulator.catalog_of(config))


def deployment_cache_shape(deployment: Deployment, catalog: Catalog) -> tuple[int, int]:
    """(nodes, blocks per node) of the prefix caches: the prefill nodes of a disaggregated
    deployment, else its colocated nodes; each node's whole KV capacity, in blocks."""
    from notes_cli.engine.core.costmodel import NodeCost

    model = catalog.models[deployment.model]
    for role, group in deployment.worker_groups():
        if role == "decode":
            continue
        cost = NodeCost.for_group(model, catalog.chips[group.chip], group, deployment)
        tokens = deployment.kv_capacity_tokens or cost.kv_capacity_tokens(
            deployment.gpu_memory_utilization
        )
        return group.count, tokens // BLOCK_TOKENS
    return 1, 0


def with_trace_cache(
    simulator: EngineSimulator,
    configs: list[SimConfig],
    trace: Path,
    requests: int,
    *,
    kv_aware: bool = True,
    enabled: bool = True,
) -> list[tuple[SimConfig, CacheReplay]]:
    """Each configuration with the hit rate its caches give on the first `requests` rows of
    `trace` (with `enabled` False: no prefix cache at all, hit rate 0)."""
    out = []
    for config in configs:
        nodes, blocks = cache_shape(simulator, config) if enabled else (1, 0)
        found = replay(islice(read_rows(trace), requests), blocks, nodes=nodes, kv_aware=kv_aware)
        out.append((replace(config, prefix_cache_hit=min(found.hit_rate, MAX_HIT)), found))
    return out
