"""The default simulator of `pdnotes engine simulate`: the engine's own scheduler
(`notes_cli.engine.core.simcore`) on a virtual clock, with presets from the engine catalog.

A configuration's mode override and P:D ratio are applied to the preset's node groups: a ratio
P:D sets the prefill and decode node counts of a disaggregated preset; for a preset that only
has colocated nodes, it sets their count to P + D, so modes compare at equal chip counts.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import replace
from functools import cache
from typing import TYPE_CHECKING, Any, cast

from notes_cli.bench.workload import WorkItem
from notes_cli.engine.simulate.configs import Resolved, SimConfig

if TYPE_CHECKING:
    from notes_cli.engine.core.profiles import Catalog, Deployment


class EngineSimulator:
    """`Simulator` over the engine core. The catalog is loaded once per instance.

    `exact_gaps` puts every inter-token gap on each record, so pooled ITL (P99 TBT) is exact
    rather than each request's largest gap plus its mean; it costs a histogram add per token
    (about a fifth more time on 64-token outputs), so it is off unless a TBT SLO asks for it."""

    def __init__(self, catalog: Catalog | None = None, *, exact_gaps: bool = False) -> None:
        from notes_cli.engine.core.profiles import load_catalog

        self.catalog = catalog or load_catalog()
        self.exact_gaps = exact_gaps
        self._deployment = cache(self._build)
        self._preset = cache(self._resolve)

    def deployment(self, config: SimConfig) -> Deployment:
        """The catalog preset with the configuration's mode and node ratio applied."""
        return self._deployment(config)

    def catalog_of(self, config: SimConfig) -> Catalog:
        """The catalog the configuration's preset resolves in (a deployment file's own)."""
        return self._preset(config.preset)[1]

    def _resolve(self, preset: str) -> tuple[Deployment, Catalog]:
        """A preset name, or a deployment file read once (its rows in a catalog of its own)."""
        from notes_cli.engine.core.deployment_file import resolve_preset

        return resolve_preset(preset, self.catalog)

    def _build(self, config: SimConfig) -> Deployment:
        deployment = self._preset(config.preset)[0]
        if config.pd_ratio is not None:
            deployment = _with_ratio(deployment, *config.pd_ratio)
        if config.weight_dtype is not None:
            deployment = replace(deployment, weight_dtype=config.weight_dtype)
        if config.kv_dtype is not None:
            deployment = replace(deployment, kv_dtype=config.kv_dtype)
        if config.prefix_cache_hit is not None:
            deployment = replace(deployment, prefix_cache_hit=config.prefix_cache_hit)
        deployment = deployment.with_mode(config.mode)
        _check_weights_fit(deployment, self._preset(config.preset)[1])
        return deployment

    def resolve(self, config: SimConfig) -> Resolved:
        deployment = self.deployment(config)
        chips = {"prefill": 0, "decode": 0, "colocated": 0}
        for role, group in deployment.worker_groups():
            chips[role] += group.gpus  # nodes x tp x pp
        return Resolved(
            label=_label(deployment),
            mode=deployment.mode,
            prefill_chips=chips["prefill"],
            decode_chips=chips["decode"],
            colocated_chips=chips["colocated"],
            provenance=_provenance(deployment),
        )

    def run(self, config: SimConfig, items: Iterable[WorkItem], seed: int) -> Iterator[Any]:
        from notes_cli.engine.core.simcore import SimRequest, simulate

        # WorkItem has SimRequest's three fields under the same names; passing it through
        # saves an object per request on the simulator's hot path.
        requests = cast("Iterable[SimRequest]", items)
        catalog = self._preset(config.preset)[1]
        return simulate(
            self.deployment(config), requests, seed=seed, catalog=catalog, keep_gaps=self.exact_gaps
        )


def _check_weights_fit(deployment: Deployment, catalog: Catalog) -> None:
    """A node whose weights leave no room for KV would run one request at a time and look
    merely slow: say so instead (a preset's own kv_capacity_tokens is taken as given)."""
    from notes_cli.engine.core.costmodel import NodeCost
    from notes_cli.errors import UsageError

    if deployment.kv_capacity_tokens is not None:
        return
    model = catalog.models[deployment.model]
    for role, group in deployment.worker_groups():
        cost = NodeCost.for_group(model, catalog.chips[group.chip], group, deployment)
        if cost.kv_capacity_tokens(deployment.gpu_memory_utilization) > 0:
            continue
        gpus = group.stage_gpus * group.pp
        usable = gpus * cost.chip.hbm_gb * deployment.gpu_memory_utilization
        raise UsageError(
            f"{deployment.name}: a {role} node ({gpus} x {group.chip}) holds "
            f"{cost.weight_bytes / 1e9:,.0f} GB of {deployment.model} weights but has "
            f"{usable:,.0f} GB usable: no room for KV",
            fix="use more GPUs per node (tp, dp, pp) or narrower weights (--weight-dtype fp8)",
        )


def _with_ratio(deployment: Deployment, prefill: int, decode: int) -> Deployment:
    if deployment.prefill is not None and deployment.decode is not None:
        return replace(
            deployment,
            prefill=replace(deployment.prefill, count=prefill),
            decode=replace(deployment.decode, count=decode),
        )
    assert deployment.colocated is not None
    return replace(deployment, colocated=replace(deployment.colocated, count=prefill + decode))


CALIBRATED = "CALIBRATED by `pdnotes engine calibrate`"


def _provenance(deployment: Deployment) -> str | None:
    """Where a calibrated deployment's numbers come from (its records, endpoint, model)."""
    source = deployment.source
    if not source.startswith(CALIBRATED):
        return None
    return source.removeprefix(CALIBRATED).lstrip(": ")


def _label(deployment: Deployment) -> str:
    groups = deployment.worker_groups()
    if deployment.mode == "disagg":
        counts = {role: group.count for role, group in groups}
        shape = f"{counts['prefill']}P{counts['decode']}D"
    else:
        shape = f"x{sum(group.count for _, group in groups)}"
    precision = "".join(
        f" {what} {dtype}"
        for what, dtype in (("weights", deployment.weight_dtype), ("KV", deployment.kv_dtype))
        if dtype is not None
    )
    return f"{deployment.name} {deployment.mode} {shape}{precision}"
