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

# The busiest GPU's expert work over the mean under expert parallelism without EPLB: LMSYS
# measured EPLB speeding SGLang's DeepSeek prefill 1.49x (blog, 2025-05, "Deploying DeepSeek
# with PD Disaggregation and Large-scale Expert Parallelism"), the imbalance it removes.
UNBALANCED_EXPERTS = 1.5

# Bytes per weight of each precision a deployment may serve in (docs/engine-model.md,
# "Precision"). The block-scaled 4-bit formats carry their scales: nvfp4 one fp8 scale per 16
# values (4.5 bits), mxfp4 one 8-bit exponent per 32 (4.25 bits); int4 is weight-only.
WEIGHT_DTYPES = {
    "bf16": 2.0,
    "fp16": 2.0,
    "fp8": 1.0,
    "int4": 0.5,
    "fp4": 0.5,
    "nvfp4": 0.5625,
    "mxfp4": 0.53125,
}
KV_DTYPES = {"bf16": 2.0, "fp16": 2.0, "fp8": 1.0}


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
    # Measured all-reduce kernels (kernels.toml): small messages go one-shot, every GPU reading
    # its n-1 peers' whole message at allreduce_oneshot_gbps; large ones two-shot, a fixed
    # allreduce_twoshot_us more and the ring's bytes at intra_gbps; the engine takes the
    # faster. 0: the ring term alone.
    allreduce_oneshot_gbps: float = 0.0
    allreduce_twoshot_us: float = 0.0
    fp8_tflops: float = 0.0  # dense fp8 peak (0: no fp8 tensor cores, fp8 weights compute at bf16)
    fp4_tflops: float = 0.0  # dense fp4 peak (0: none, 4-bit weights compute at bf16)
    node_gpus: int = 8  # GPUs one NVLink domain joins (a GB200 NVL72 rack: 72)
    scaleout_gbps: float = 50.0  # each GPU's own network rate beyond it, GB/s (400 Gb/s NIC)
    scaleout_us: float = 20.0  # fixed latency of one all-to-all across nodes
    # Measured kernel curves (templates/engine/kernels.toml; 0 / None: the constant MFUs above).
    # GEMMs reach mfu * M / (M + half) with M tokens in the step, half = mfu_half_tokens *
    # (4096^2 / per-GPU matrix size) ** mfu_width_exp; causal attention attn_mfu * c / (c +
    # attn_half_context) at mean context c; KV reads kv_bw_eff of HBM plus kv_seq_us per
    # decoding sequence per layer; fp8_* the same curve for fp8 weights against the fp8 peak.
    mfu_half_tokens: float = 0.0
    mfu_width_exp: float = 0.0
    attn_mfu: float | None = None
    attn_half_context: float = 0.0
    kv_bw_eff: float | None = None
    kv_seq_us: float = 0.0
    fp8_mfu: float | None = None
    fp8_mfu_half_tokens: float = 0.0
    fp8_mfu_width_exp: float = 0.0
    # A MoE layer's grouped expert GEMMs: moe_mfu * S / (S + moe_width_half) * R / (R +
    # moe_half_rows), S = one expert matrix per GPU, R = (token, expert) rows per GPU.
    moe_mfu: float | None = None
    moe_width_half: float = 0.0
    moe_half_rows: float = 0.0
    fp8_moe_mfu: float | None = None
    fp8_moe_width_half: float = 0.0
    fp8_moe_half_rows: float = 0.0
    # A MoE layer's fixed cost before it reads a byte (routing, top-k, permute, the grouped
    # GEMMs' launch and tail, finalize), us, for bf16 / fp8 / 4-bit weight-only experts: at
    # decode batches it outweighs reading the few experts touched (kernels.toml).
    moe_floor_us: float = 0.0
    fp8_moe_floor_us: float = 0.0
    w4_moe_floor_us: float = 0.0
    mla_floor_us: float = 0.0  # an MLA attention block's fixed cost at decode, us (kernels.toml)
    # A GQA decode attention kernel's fixed cost per layer, us, whatever it reads: the
    # generation-attention tables of all three engines measure 10-16 us at a few sequences
    # (kernels.toml). MLA models carry it in mla_floor_us.
    attn_floor_us: float = 0.0
    kernel_source: str = ""
    description: str = ""
    source: str = ""

    def peak_tflops(self, weight_dtype: str) -> float:
        """Dense peak the GEMMs of weights in `weight_dtype` run at: fp8 weights use the fp8
        tensor cores (W8A8), fp4/nvfp4/mxfp4 the fp4 ones where the chip has them; bf16, int4
        (weight-only, dequantised to bf16) and formats the chip lacks run at the bf16 peak."""
        if weight_dtype == "fp8" and self.fp8_tflops > 0:
            return self.fp8_tflops
        if weight_dtype in ("fp4", "nvfp4", "mxfp4") and self.fp4_tflops > 0:
            return self.fp4_tflops
        return self.tflops

    @property
    def measured_kernels(self) -> bool:
        """Whether efficiencies follow measured kernel curves (else constant MFUs)."""
        return self.mfu_half_tokens > 0

    def with_constant_mfu(self, prefill_mfu: float) -> Chip:
        """This chip running an engine whose prefill speed was measured as one constant MFU
        (presets fitted to older engines): the kernel curves are off, decode uses decode_mfu."""
        return replace(self, mfu=prefill_mfu, mfu_half_tokens=0.0, attn_mfu=None)


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
    """A model's shape as its config.json gives it. Zero means "absent": a dense model has no
    experts, a GQA model no kv_lora_rank, a model without sliding windows no window."""

    name: str
    params_b: float  # all parameters (every expert), billions
    layers: int
    hidden: int
    heads: int  # attention (query) heads
    kv_heads: int
    head_dim: int
    dtype_bytes: int = 2  # bytes of the checkpoint's activations and, by default, weights and KV
    weight_dtype: str | None = None  # the released weights' precision (None: by dtype_bytes)
    ffn: int = 0  # dense MLP width (intermediate_size; params_b already counts it)
    # Mixture of experts (DeepSeek/Qwen3-MoE/gpt-oss config names in docs/engine-model.md).
    experts: int = 0  # routed experts per MoE layer (n_routed_experts, num_experts)
    active_experts: int = 0  # routed experts each token uses (num_experts_per_tok)
    shared_experts: int = 0  # always-on experts (n_shared_experts; params_b counts them)
    expert_ffn: int = 0  # one expert's MLP width (moe_intermediate_size)
    dense_layers: int = 0  # leading layers with a dense MLP (first_k_dense_replace)
    # Group-limited routing (config.json topk_group of n_group groups): with the groups placed
    # one per node (EPLB's hierarchical policy), a token's experts lie on at most this many
    # nodes. 0: no limit.
    topk_group: int = 0
    # Multi-head latent attention (MLA): one compressed latent per token per layer.
    kv_lora_rank: int = 0
    qk_rope_head_dim: int = 0
    qk_nope_head_dim: int = 0
    v_head_dim: int = 0
    # Sliding-window attention: `sliding_layers` of the layers keep only the last window tokens.
    sliding_window: int = 0
    sliding_layers: int = 0
    description: str = ""
    source: str = ""

    @property
    def is_moe(self) -> bool:
        return self.experts > 0

    @property
    def is_mla(self) -> bool:
        return self.kv_lora_rank > 0

    @property
    def moe_layers(self) -> int:
        return self.layers - self.dense_layers if self.is_moe else 0

    @property
    def expert_params(self) -> int:
        """One routed expert of one layer: gate, up and down projections (SwiGLU)."""
        return 3 * self.hidden * self.expert_ffn

    @property
    def routed_params(self) -> float:
        """Parameters of all routed experts of all MoE layers."""
        return float(self.moe_layers * self.experts * self.expert_params)

    @property
    def active_params(self) -> float:
        """Parameters one token passes through: all but the routed experts it is not sent to."""
        idle = self.moe_layers * (self.experts - self.active_experts) * self.expert_params
        return self.params_b * 1e9 - idle

    @property
    def kv_elems_per_layer(self) -> int:
        """Values cached per token per layer: MLA's latent and rope key, else K and V of the
        KV heads (grouped-query attention)."""
        if self.is_mla:
            return self.kv_lora_rank + self.qk_rope_head_dim
        return 2 * self.kv_heads * self.head_dim

    @property
    def full_layers(self) -> int:
        """Layers that attend to (and cache) the whole context."""
        return self.layers - (self.sliding_layers if self.sliding_window else 0)

    @property
    def kv_bytes_per_token(self) -> int:
        """KV bytes per context token of the full-attention layers at dtype_bytes (the sliding
        layers add at most `sliding_window` tokens' worth per sequence; costmodel.kv_bytes)."""
        return self.full_layers * self.kv_elems_per_layer * self.dtype_bytes

    @property
    def weight_bytes(self) -> float:
        """All weights at the checkpoint's precision."""
        per = WEIGHT_DTYPES[self.weight_dtype] if self.weight_dtype else self.dtype_bytes
        return self.params_b * 1e9 * per


@dataclass(frozen=True)
class NodeGroup:
    count: int
    chip: str
    tp: int = 1
    pp: int = 1  # pipeline stages per node, each on its own tp x dp GPUs
    ep: int = 1  # expert parallelism: the routed experts split over ep of the tp x dp GPUs
    dp: int = 1  # attention data parallelism: dp attention replicas of tp GPUs each

    @property
    def gpus(self) -> int:
        """Chips this group uses: nodes x tp x dp x pp."""
        return self.count * self.tp * self.dp * self.pp

    @property
    def stage_gpus(self) -> int:
        """GPUs of one pipeline stage of one node: attention on tp x dp, experts over all."""
        return self.tp * self.dp


GROUP_KEYS = ("count", "chip", "tp", "pp", "ep", "dp")
"""A node group's keys, in the order NodeGroup takes them."""


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
    # Precision served (docs/engine-model.md, "Precision"); None: the model's own.
    weight_dtype: str | None = None  # one of WEIGHT_DTYPES
    kv_dtype: str | None = None  # one of KV_DTYPES
    # The serving engine (notes_cli/engine/core/backends.py): its CPU costs per request and per
    # step and how it hands out KV memory. None: no per-step CPU cost, KV reserved in full.
    backend: str | None = None
    step_overhead_ms: float | None = None  # None: the backend's (0 without one)
    seq_overhead_us: float | None = None  # None: the backend's (0 without one)
    # A step of n sequences costs seq_overhead_us x n ** exponent (None: 1, linear). Below 1 the
    # cost per sequence falls with the batch, as `engine calibrate` finds on a CPU engine whose
    # batched decode shares one pass over the weights (docs/engine-model.md).
    seq_overhead_exponent: float | None = None
    kv_alloc: str | None = None  # "reserve" | "incremental"; None: the backend's ("reserve")
    # Wide expert parallelism and decoding speed-ups (docs/engine-model.md, "Wide EP"; each
    # default and its source is there). None / 0: the default.
    dispatch_dtype: str | None = None  # EP dispatch: None = fp8 with fp8/fp4 weights, else bf16
    combine_dtype: str | None = None  # EP combine: None = the activations' (bf16), as DeepEP's
    two_batch_overlap: bool | None = None  # None = off: comm and compute one after another
    expert_imbalance: float | None = None  # busiest GPU's expert load / mean; None: by `eplb`
    # Expert-parallel load balancing (EPLB) runs: None / False = off, as vLLM, SGLang and
    # TensorRT-LLM ship; it sets expert_imbalance's default (expert_load below).
    eplb: bool | None = None
    mtp_acceptance: float = 0.0  # speculative decoding: a draft token's acceptance; 0 = off
    mtp_tokens: int | None = None  # draft tokens per step when on; None = 1 (DeepSeek's MTP)
    prefix_cache_hit: float = 0.0  # share of prompt tokens found in the prefix cache
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
    def expert_load(self) -> float:
        """The busiest GPU's expert work over the mean, with ep > 1: `expert_imbalance` where
        set, else 1.0 with EPLB (balanced routing, what the measured MoE kernels assume) and
        UNBALANCED_EXPERTS without it (docs/engine-model.md, "Wide EP")."""
        if self.expert_imbalance is not None:
            return self.expert_imbalance
        return 1.0 if self.eplb else UNBALANCED_EXPERTS

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
    def seq_exponent(self) -> float:
        """How the per-sequence CPU time grows with the sequences in a step (n ** exponent)."""
        return 1.0 if self.seq_overhead_exponent is None else self.seq_overhead_exponent

    @property
    def cpu_overlap(self) -> bool:
        """Does the engine's CPU work per step run under the GPU's next step (max, not sum)?"""
        backend = BACKENDS.get(self.backend or "")
        return backend.cpu_overlap if backend else False

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
            where = row.get("_file", "?")
            unknown = sorted(set(group) - set(GROUP_KEYS))
            if unknown:
                raise InputError(f"{where}: [{name}.{role}] has unknown keys: {', '.join(unknown)}")
            row[role] = NodeGroup(
                int(group["count"]),
                str(group["chip"]),
                *(int(group.get(key, 1)) for key in GROUP_KEYS[2:]),
            )
            g = row[role]
            small = [k for k in GROUP_KEYS if k != "chip" and getattr(g, k) < 1]
            if small:
                raise InputError(
                    f"{where}: [{name}.{role}] {' and '.join(small)} must be at least 1"
                )
            if g.stage_gpus % g.ep:
                raise InputError(
                    f"{where}: [{name}.{role}] ep = {g.ep} must divide tp x dp = {g.stage_gpus} "
                    "(the experts are spread over the GPUs that run attention)"
                )
    dep: Deployment = _build(Deployment, name, row)
    for key, table in (("weight_dtype", WEIGHT_DTYPES), ("kv_dtype", KV_DTYPES)):
        value = getattr(dep, key)
        if value is not None and value not in table:
            raise InputError(
                f"{row.get('_file', '?')}: [{name}] {key} = {value!r} is not one of "
                f"{', '.join(table)}"
            )
    return dep


def model_problems(m: ModelShape) -> list[str]:
    """What makes a model row inconsistent (its formulas would mislead), or nothing."""
    out = []
    if min(m.layers, m.hidden, m.heads, m.kv_heads, m.head_dim) < 1 or m.params_b <= 0:
        out.append("params_b, layers, hidden, heads, kv_heads and head_dim must be positive")
    if m.weight_dtype is not None and m.weight_dtype not in WEIGHT_DTYPES:
        out.append(f"weight_dtype {m.weight_dtype!r} is not one of {', '.join(WEIGHT_DTYPES)}")
    if m.experts:
        if not 1 <= m.active_experts <= m.experts or m.expert_ffn < 1:
            out.append("an MoE row needs 1 <= active_experts <= experts and expert_ffn >= 1")
        if not 0 <= m.dense_layers < m.layers:
            out.append("dense_layers must be below layers")
        elif m.active_params <= 0:
            out.append("params_b is smaller than its routed experts (3 x hidden x expert_ffn each)")
        if m.topk_group < 0:
            out.append("topk_group must be 0 (no limit) or more")
    elif m.active_experts or m.shared_experts or m.expert_ffn or m.dense_layers or m.topk_group:
        out.append(
            "active_experts, shared_experts, expert_ffn, dense_layers and topk_group need experts"
        )
    if m.kv_lora_rank and m.qk_rope_head_dim < 1:
        out.append("an MLA row (kv_lora_rank) needs qk_rope_head_dim")
    if bool(m.sliding_window) != bool(m.sliding_layers) or not 0 <= m.sliding_layers <= m.layers:
        out.append("sliding_window and sliding_layers go together (sliding_layers <= layers)")
    return out


def _check_references(catalog: Catalog) -> None:
    for model in catalog.models.values():
        problems = model_problems(model)
        if problems:
            raise InputError(f"engine model {model.name!r}: " + "; ".join(problems))
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
        shape = catalog.models.get(dep.model)
        if shape is not None and not shape.is_moe and any(g.ep > 1 for g in groups):
            problems.append(f"ep > 1 needs a mixture-of-experts model; {dep.model!r} is dense")
        if dep.backend is not None and dep.backend not in BACKENDS:
            problems.append(f"backend {dep.backend!r} is not one of {', '.join(BACKENDS)}")
        if dep.kv_alloc is not None and dep.kv_alloc not in KV_ALLOC:
            problems.append(f"kv_alloc {dep.kv_alloc!r} is not one of {', '.join(KV_ALLOC)}")
        problems += deployment_setting_problems(dep)
        if problems:
            raise InputError(f"engine preset {dep.name!r}: " + "; ".join(problems))


def deployment_setting_problems(dep: Deployment) -> list[str]:
    """What is out of range among a deployment's EP, speculative-decoding and cache settings."""
    out = []
    for key in ("dispatch_dtype", "combine_dtype"):
        value = getattr(dep, key)
        if value is not None and value not in KV_DTYPES:
            out.append(f"{key} {value!r} is not one of {', '.join(KV_DTYPES)}")
    if dep.expert_imbalance is not None and not 1.0 <= dep.expert_imbalance <= 16.0:
        out.append(f"expert_imbalance {dep.expert_imbalance} must be 1 to 16 (busiest / mean)")
    if not 0.0 <= dep.mtp_acceptance < 1.0:
        out.append(f"mtp_acceptance {dep.mtp_acceptance} must be at least 0 and below 1")
    if dep.mtp_tokens is not None and not 1 <= dep.mtp_tokens <= 16:
        out.append(f"mtp_tokens {dep.mtp_tokens} must be 1 to 16")
    exponent = dep.seq_overhead_exponent
    if exponent is not None and not 0.0 < exponent <= 2.0:
        out.append(f"seq_overhead_exponent {exponent} must be above 0 and at most 2")
    if not 0.0 <= dep.prefix_cache_hit < 1.0:
        out.append(f"prefix_cache_hit {dep.prefix_cache_hit} must be at least 0 and below 1")
    return out
