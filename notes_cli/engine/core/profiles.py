"""Chips, links, model shapes and deployment presets, loaded from data files.

The shipped rows live in templates/engine/*.toml; a user's $PDNOTES_HOME/engine/*.toml may add
rows or override shipped ones by name. Every row carries a `source` note saying where its numbers
come from (see docs/engine-model.md).
"""

from __future__ import annotations

import tomllib
from collections.abc import Iterable
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from notes_cli.engine.core.backends import BACKENDS, KV_ALLOC
from notes_cli.engine.core.config import MODES
from notes_cli.errors import InputError, UsageError
from notes_cli.paths import pdnotes_home
from notes_cli.resources import template_path

_KINDS = ("chips", "links", "models", "deployments")

# Default fixed per-request overhead by mode, in ms (docs/engine-model.md, "Fixed overhead"):
# one engine's API server (HTTP, tokenisation, scheduling) costs a few ms; a PD stack adds the
# router hop, a second API server and the prefill/decode bootstrap handshake.
DEFAULT_OVERHEAD_MS = {"colocated": 5.0, "chunked": 5.0, "disagg": 20.0}


@dataclass(frozen=True)
class Chip:
    name: str
    tflops: float  # dense bf16/fp16 peak
    hbm_gb: float
    hbm_tbps: float
    mfu: float = 0.45  # fraction of peak FLOP/s a prefill (a step with prompt tokens) reaches
    bw_eff: float = 0.7  # fraction of HBM bandwidth a decode step reaches
    decode_mfu: float | None = None  # fraction of peak a compute-bound decode step reaches
    # (None: as `mfu`)
    eager_us_per_layer: float = 90.0  # launch overhead per layer per eager step
    graph_step_ms: float = 0.3  # residual per-step overhead with captured graphs
    intra_gbps: float = 0.0  # all-reduce bus bandwidth inside a node, GB/s (0: no comm term)
    allreduce_us: float = 10.0  # fixed latency of one all-reduce inside the node
    description: str = ""
    source: str = ""


@dataclass(frozen=True)
class Link:
    name: str
    line_gbps: float  # GB/s per direction
    peak_eff: float = 0.8  # fraction of line rate large messages reach
    alpha_ms: float = 0.2  # fixed per-transfer latency
    half_bytes: int = 262144  # message size that reaches half of the peak effective bandwidth
    nics: int = 1  # rails per node: each GPU's KV shard can move over its own NIC
    description: str = ""
    source: str = ""


@dataclass(frozen=True)
class ModelShape:
    name: str
    params_b: float
    layers: int
    hidden: int
    heads: int
    kv_heads: int
    head_dim: int
    dtype_bytes: int = 2
    description: str = ""
    source: str = ""

    @property
    def kv_bytes_per_token(self) -> int:
        """K and V for every layer, counting only the KV heads (grouped-query attention)."""
        return 2 * self.layers * self.kv_heads * self.head_dim * self.dtype_bytes

    @property
    def weight_bytes(self) -> float:
        return self.params_b * 1e9 * self.dtype_bytes


@dataclass(frozen=True)
class NodeGroup:
    count: int
    chip: str
    tp: int = 1
    pp: int = 1  # pipeline stages per node, each on its own tp GPUs

    @property
    def gpus(self) -> int:
        """Chips this group uses: nodes x tp x pp."""
        return self.count * self.tp * self.pp


@dataclass(frozen=True)
class Deployment:
    name: str
    mode: str
    model: str
    link: str
    prefill: NodeGroup | None = None
    decode: NodeGroup | None = None
    colocated: NodeGroup | None = None
    fallback_link: str = "tcp-25g"
    max_batch: int = 256
    prefill_token_budget: int = 8192
    chunk_tokens: int = 512
    decode_exec: str = "graph"
    gpu_memory_utilization: float = 0.9
    kv_capacity_tokens: int | None = None
    tp_efficiency: float = 1.0  # extra factor on TP compute; all-reduces are costed separately
    request_overhead_ms: float | None = None  # None: the mode's default (DEFAULT_OVERHEAD_MS)
    layerwise_transfer: bool = False  # KV moves layer by layer while the prefill still runs
    # The serving engine's own prefill kernels, when they are measured to differ from the
    # chip's default (e.g. DistServe's profile of its vLLM baseline); None: the chip's `mfu`.
    prefill_mfu: float | None = None
    # The serving engine (notes_cli/engine/core/backends.py): its CPU costs per request and per
    # step and how it hands out KV memory. None: no per-step CPU cost, KV reserved in full.
    backend: str | None = None
    step_overhead_ms: float | None = None  # None: the backend's (0 without one)
    seq_overhead_us: float | None = None  # None: the backend's (0 without one)
    kv_alloc: str | None = None  # "reserve" | "incremental"; None: the backend's ("reserve")
    description: str = ""
    source: str = ""

    @property
    def overhead_ms(self) -> float:
        """Fixed per-request time outside the GPUs (HTTP, tokenisation, scheduling; in PD stacks
        also the router and the KV bootstrap handshake), counted in TTFT."""
        if self.request_overhead_ms is not None:
            return self.request_overhead_ms
        extra = DEFAULT_OVERHEAD_MS["disagg"] - DEFAULT_OVERHEAD_MS["colocated"]
        if self.backend in BACKENDS:  # a PD stack adds the router hop and the handshake
            own = BACKENDS[self.backend].request_overhead_ms
            return own + (extra if self.mode == "disagg" else 0.0)
        return DEFAULT_OVERHEAD_MS.get(self.mode, 0.0)

    @property
    def step_cpu_ms(self) -> tuple[float, float]:
        """(ms every step costs, ms each sequence in it adds) outside the GPU kernels."""
        backend = BACKENDS.get(self.backend or "")
        fixed = self.step_overhead_ms
        if fixed is None:
            fixed = backend.step_overhead_ms if backend else 0.0
        per_seq = self.seq_overhead_us
        if per_seq is None:
            per_seq = backend.seq_overhead_us if backend else 0.0
        return fixed, per_seq / 1000.0

    @property
    def split_prompts(self) -> bool:
        """Chunked mode: may a prompt be cut across steps (vLLM), or must it go whole (TRT-LLM)?"""
        backend = BACKENDS.get(self.backend or "")
        return backend.split_prompts if backend else True

    @property
    def kv_allocation(self) -> str:
        """ "reserve" (prompt + every output token at admission) or "incremental" (as produced)."""
        if self.kv_alloc is not None:
            return self.kv_alloc
        backend = BACKENDS.get(self.backend or "")
        return backend.kv_alloc if backend else "reserve"

    def with_mode(self, mode: str | None) -> Deployment:
        """This deployment run in another mode (same nodes), or itself when mode is None."""
        if mode is None or mode == self.mode:
            return self
        if mode not in MODES:
            raise UsageError(f"unknown engine mode {mode!r}; choose one of {', '.join(MODES)}")
        if mode == "disagg" and (self.prefill is None or self.decode is None):
            raise UsageError(
                f"preset {self.name!r} has no separate prefill and decode nodes, so it cannot "
                "run disaggregated; pick a disagg preset, e.g. --preset h100-disagg"
            )
        return replace(self, mode=mode)

    def worker_groups(self) -> list[tuple[str, NodeGroup]]:
        """(role, group) pairs for this deployment's mode. Colocated and chunked modes turn a
        disagg preset's prefill and decode nodes into general workers (same GPU count)."""
        if self.mode == "disagg":
            assert self.prefill is not None and self.decode is not None
            return [("prefill", self.prefill), ("decode", self.decode)]
        if self.colocated is not None:
            return [("colocated", self.colocated)]
        return [("colocated", g) for g in (self.prefill, self.decode) if g is not None]


@dataclass
class Catalog:
    chips: dict[str, Chip] = field(default_factory=dict)
    links: dict[str, Link] = field(default_factory=dict)
    models: dict[str, ModelShape] = field(default_factory=dict)
    deployments: dict[str, Deployment] = field(default_factory=dict)

    def deployment(self, name: str) -> Deployment:
        """The named preset, or an InputError listing the known ones."""
        try:
            return self.deployments[name]
        except KeyError:
            known = ", ".join(sorted(self.deployments))
            raise UsageError(f"unknown engine preset {name!r}; known presets: {known}") from None


def shipped_profile_dir() -> Path:
    return template_path("engine")


def user_profile_dir() -> Path:
    return pdnotes_home() / "engine"


RawRows = dict[str, dict[str, dict[str, Any]]]
"""Rows as read from TOML, by kind then name: {"chips": {"h800": {...}}, ...}."""


def load_catalog(
    extra_dirs: Iterable[Path] | None = None,
    *,
    user: bool = True,
    overlay: RawRows | None = None,
) -> Catalog:
    """Shipped profiles, then the user's $PDNOTES_HOME/engine/*.toml (later rows win by name),
    validated so every deployment names a chip, link and model that exist. `user=False` leaves
    the user's folder out (the shipped rows only). `overlay` rows (a deployment file's) replace
    same-named rows whole, so a file means the same on every machine."""
    dirs = [shipped_profile_dir(), *([user_profile_dir()] if user else []), *(extra_dirs or ())]
    raw: RawRows = {kind: {} for kind in _KINDS}
    for folder in dirs:
        if not folder.is_dir():
            continue
        for path in sorted(folder.glob("*.toml")):
            _merge_file(raw, path)
    for kind, rows in (overlay or {}).items():
        raw[kind].update(rows)
    catalog = Catalog(
        chips={n: _build(Chip, n, row) for n, row in raw["chips"].items()},
        links={n: _build(Link, n, row) for n, row in raw["links"].items()},
        models={n: _build(ModelShape, n, row) for n, row in raw["models"].items()},
        deployments={n: _build_deployment(n, row) for n, row in raw["deployments"].items()},
    )
    _check_references(catalog)
    return catalog


def _merge_file(raw: dict[str, dict[str, dict[str, Any]]], path: Path) -> None:
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise InputError(f"cannot read engine profile file {path}: {exc}") from exc
    for kind in _KINDS:
        for name, row in data.get(kind, {}).items():
            if not isinstance(row, dict):
                raise InputError(f"{path}: [{kind}.{name}] must be a table")
            raw[kind][name] = {**raw[kind].get(name, {}), **row, "_file": str(path)}


def _build(cls: Any, name: str, row: dict[str, Any]) -> Any:
    known = {f.name for f in fields(cls)}
    where = row.get("_file", "?")
    unknown = sorted(set(row) - known - {"_file"})
    if unknown:
        raise InputError(f"{where}: [{name}] has unknown keys: {', '.join(unknown)}")
    try:
        return cls(name=name, **{k: v for k, v in row.items() if k in known and k != "name"})
    except TypeError as exc:
        raise InputError(f"{where}: [{name}] is incomplete: {exc}") from exc


def _build_deployment(name: str, row: dict[str, Any]) -> Deployment:
    row = dict(row)
    for role in ("prefill", "decode", "colocated"):
        if role in row:
            group = row[role]
            row[role] = NodeGroup(
                int(group["count"]),
                str(group["chip"]),
                int(group.get("tp", 1)),
                int(group.get("pp", 1)),
            )
            if min(row[role].count, row[role].tp, row[role].pp) < 1:
                where = row.get("_file", "?")
                raise InputError(f"{where}: [{name}.{role}] count, tp and pp must be at least 1")
    dep: Deployment = _build(Deployment, name, row)
    return dep


def _check_references(catalog: Catalog) -> None:
    for dep in catalog.deployments.values():
        problems = []
        if dep.mode not in MODES:
            problems.append(f"mode {dep.mode!r} is not one of {', '.join(MODES)}")
        if dep.model not in catalog.models:
            problems.append(f"model {dep.model!r} is not defined")
        for link in (dep.link, dep.fallback_link):
            if link not in catalog.links:
                problems.append(f"link {link!r} is not defined")
        groups = [g for g in (dep.prefill, dep.decode, dep.colocated) if g is not None]
        if not groups:
            problems.append("it has no node groups")
        problems += [
            f"chip {g.chip!r} is not defined" for g in groups if g.chip not in catalog.chips
        ]
        if dep.mode == "disagg" and (dep.prefill is None or dep.decode is None):
            problems.append("a disagg deployment needs both prefill and decode groups")
        if dep.backend is not None and dep.backend not in BACKENDS:
            problems.append(f"backend {dep.backend!r} is not one of {', '.join(BACKENDS)}")
        if dep.kv_alloc is not None and dep.kv_alloc not in KV_ALLOC:
            problems.append(f"kv_alloc {dep.kv_alloc!r} is not one of {', '.join(KV_ALLOC)}")
        if problems:
            raise InputError(f"engine preset {dep.name!r}: " + "; ".join(problems))
