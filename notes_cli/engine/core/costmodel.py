"""Roofline cost model: how long a prefill, a decode step or a KV transfer takes on given hardware.

Every step costs max(compute time, memory time) + a fixed per-step overhead:

    compute = FLOPs / (peak FLOP/s * tp * tp_efficiency * MFU of the phase)
    memory  = (weights / tp + KV bytes read / tp) / (HBM bandwidth * bandwidth efficiency)
    FLOPs   = 2 * params * new_tokens + 4 * layers * hidden * attended_pairs
    comm    = 2 * layers * (allreduce latency + 2 (tp-1)/tp * new_tokens * hidden * dtype / bus bw)
    p2p     = (pp-1) * (allreduce latency + new_tokens * hidden * dtype / bus bw)

and with tp > 1 each step adds `comm`: two ring all-reduces per layer (after attention and after
the MLP, Megatron-style tensor parallelism) over the chip's intra-node link. A step that carries
prompt tokens (prefill, chunked) computes at the chip's prefill MFU (`mfu`), a pure decode step
at its `decode_mfu` (small-batch GEMMs reach less of the peak). With pipeline stages (pp > 1)
each stage holds layers / pp on its own tp GPUs and a step passes the stages in turn: compute
and weight reads are split over the stages but run one after another, so a step's latency is the
tp-only one plus the activations' hops between stages (`p2p`); the stages add KV memory and KV
rails, not speed (micro-batch pipelining is not modelled).

`attended_pairs` counts (query token, context token) pairs: n*n/2 for a causal prefill of n tokens,
the context length for each decoding sequence. Prefill steps run eager (per-layer launch cost);
decode steps use captured graphs or eager per the deployment. A KV transfer of s bytes takes
alpha + (s + half_bytes) / (line rate * peak efficiency), i.e. alpha + s / B_eff(s) with
B_eff(s) = line * peak_eff * s / (s + half_bytes). The formulas and their sources are in
docs/engine-model.md.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from notes_cli.engine.core.kernels import step_efficiency
from notes_cli.engine.core.profiles import Chip, Link, ModelShape, NodeGroup

_TFLOPS = 1e12
_TB = 1e12
_MS_PER_S = 1e3


@dataclass(frozen=True)
class NodeCost:
    """Step times of one model on one node (a chip times tensor-parallel x pipeline degrees)."""

    model: ModelShape
    chip: Chip
    tp: int = 1
    decode_exec: str = "graph"  # "graph" | "eager"
    tp_efficiency: float = 1.0
    pp: int = 1  # pipeline stages, each on its own tp GPUs
    # Derived once in __post_init__: step_ms runs for every simulated step (the hot path).
    _prefill_flops_per_ms: float = field(init=False, repr=False, compare=False, default=0.0)
    _decode_flops_per_ms: float = field(init=False, repr=False, compare=False, default=0.0)
    _comm: bool = field(init=False, repr=False, compare=False, default=False)
    _hbm_bytes_per_ms: float = field(init=False, repr=False, compare=False, default=0.0)
    _prefill_attn_per_ms: float = field(init=False, repr=False, compare=False, default=0.0)
    _decode_attn_per_ms: float = field(init=False, repr=False, compare=False, default=0.0)
    _half_tokens: float = field(init=False, repr=False, compare=False, default=0.0)
    _half_context: float = field(init=False, repr=False, compare=False, default=0.0)
    _kv_bytes_per_ms: float = field(init=False, repr=False, compare=False, default=0.0)
    _seq_ms: float = field(init=False, repr=False, compare=False, default=0.0)
    _gemm_flops_per_token: float = field(init=False, repr=False, compare=False, default=0.0)
    _attn_flops_per_pair: float = field(init=False, repr=False, compare=False, default=0.0)
    _weights_ms: float = field(init=False, repr=False, compare=False, default=0.0)
    _kv_ms_per_token: float = field(init=False, repr=False, compare=False, default=0.0)
    _eager_ms: float = field(init=False, repr=False, compare=False, default=0.0)
    _decode_ms: float = field(init=False, repr=False, compare=False, default=0.0)

    def __post_init__(self) -> None:
        scale = self.tp * (self.tp_efficiency if self.tp > 1 else 1.0)
        peak = self.chip.tflops * _TFLOPS * scale / _MS_PER_S
        eff = step_efficiency(self.model, self.chip, self.tp)
        decode_mfu = self.chip.decode_mfu if self.chip.decode_mfu is not None else self.chip.mfu
        if eff.measured:  # one measured curve for both phases: the tokens in a step decide
            decode_mfu = self.chip.mfu
        object.__setattr__(self, "_prefill_flops_per_ms", peak * self.chip.mfu)
        object.__setattr__(self, "_decode_flops_per_ms", peak * decode_mfu)
        object.__setattr__(self, "_prefill_attn_per_ms", peak * (eff.attn_mfu or self.chip.mfu))
        object.__setattr__(self, "_decode_attn_per_ms", peak * (eff.attn_mfu or decode_mfu))
        object.__setattr__(self, "_half_tokens", eff.half_tokens)
        object.__setattr__(self, "_half_context", eff.half_context)
        object.__setattr__(self, "_comm", self.tp > 1 or self.pp > 1)
        hbm = self.chip.hbm_tbps * _TB / _MS_PER_S
        kv_bw_eff = self.chip.kv_bw_eff or self.chip.bw_eff
        eager_ms = self.model.layers * self.chip.eager_us_per_layer / 1000.0
        decode_ms = self.chip.graph_step_ms if self.decode_exec == "graph" else eager_ms
        object.__setattr__(self, "_hbm_bytes_per_ms", hbm * self.chip.bw_eff)
        object.__setattr__(self, "_kv_bytes_per_ms", hbm * kv_bw_eff)
        object.__setattr__(self, "_seq_ms", self.model.layers * self.chip.kv_seq_us / 1000.0)
        m = self.model
        object.__setattr__(self, "_gemm_flops_per_token", 2.0 * m.params_b * 1e9)
        object.__setattr__(self, "_attn_flops_per_pair", 4.0 * m.layers * m.hidden)
        object.__setattr__(self, "_weights_ms", m.weight_bytes / self.tp / self._hbm_bytes_per_ms)
        kv_ms = m.kv_bytes_per_token / self.tp / self._kv_bytes_per_ms
        object.__setattr__(self, "_kv_ms_per_token", kv_ms)
        object.__setattr__(self, "_eager_ms", eager_ms)
        object.__setattr__(self, "_decode_ms", decode_ms)

    @property
    def flops_per_ms(self) -> float:
        """FLOP/s (per ms) a prefill step reaches on this node."""
        return self._prefill_flops_per_ms

    @property
    def decode_flops_per_ms(self) -> float:
        """FLOP/s (per ms) a pure decode step reaches on this node (the chip's decode MFU)."""
        return self._decode_flops_per_ms

    @property
    def hbm_bytes_per_ms(self) -> float:
        return self._hbm_bytes_per_ms

    @property
    def eager_overhead_ms(self) -> float:
        return self._eager_ms

    @property
    def decode_overhead_ms(self) -> float:
        return self._decode_ms

    def step_ms(
        self, new_tokens: float, attended_pairs: float, kv_read_tokens: float, *, eager: bool
    ) -> float:
        """One forward pass over `new_tokens` query tokens (any mix of prefill and decode).
        `eager` marks a step that carries prompt tokens: it runs eager and computes at the
        prefill MFU; otherwise it is a pure decode step (decode MFU, graph or eager per
        decode_exec)."""
        # Measured kernels (kernels.py): GEMMs at mfu * M / (M + half_tokens) and attention at
        # attn_mfu * c / (c + half_context) give these linear forms (both 0 with constant MFUs).
        gemm = self._gemm_flops_per_token * (new_tokens + self._half_tokens)
        attn = self._attn_flops_per_pair * (attended_pairs + self._half_context * new_tokens)
        memory = self._weights_ms + kv_read_tokens * self._kv_ms_per_token
        if eager:
            compute = gemm / self._prefill_flops_per_ms + attn / self._prefill_attn_per_ms
            overhead = self._eager_ms
        else:
            compute = gemm / self._decode_flops_per_ms + attn / self._decode_attn_per_ms
            memory += new_tokens * self._seq_ms  # decode attention's per-sequence cost
            overhead = self._decode_ms
        if self._comm:  # checked here: a method call per step costs ~5% of simulation speed
            overhead += self.allreduce_ms(new_tokens) + self.stage_hops_ms(new_tokens)
        return max(compute, memory) + overhead

    def allreduce_ms(self, new_tokens: float) -> float:
        """Tensor-parallel communication of one step: 2 all-reduces per layer of the
        activations (new_tokens x hidden), ring algorithm, not overlapped with compute."""
        if self.tp <= 1 or self.chip.intra_gbps <= 0:
            return 0.0
        m = self.model
        message = new_tokens * m.hidden * m.dtype_bytes
        ring = 2.0 * (self.tp - 1) / self.tp * message / (self.chip.intra_gbps * 1e9) * _MS_PER_S
        return 2 * m.layers * (self.chip.allreduce_us / 1000.0 + ring)

    def stage_hops_ms(self, new_tokens: float) -> float:
        """Pipeline parallelism: the step's activations (new_tokens x hidden) hop from each
        stage to the next, pp - 1 point-to-point sends over the intra-node link."""
        if self.pp <= 1 or self.chip.intra_gbps <= 0:
            return 0.0
        message = new_tokens * self.model.hidden * self.model.dtype_bytes
        send = message / (self.chip.intra_gbps * 1e9) * _MS_PER_S
        return (self.pp - 1) * (self.chip.allreduce_us / 1000.0 + send)

    def prefill_ms(self, total_tokens: float, sum_sq_tokens: float) -> float:
        """A prefill batch of prompts with Σn = total_tokens and Σn² = sum_sq_tokens."""
        return self.step_ms(total_tokens, sum_sq_tokens / 2.0, 0.0, eager=True)

    def prefill_time_ms(self, prompt_tokens: int) -> float:
        """Prefill of a single prompt."""
        return self.prefill_ms(prompt_tokens, float(prompt_tokens) ** 2)

    def decode_step_ms(self, batch: int, context_tokens: float) -> float:
        """One token for each of `batch` sequences holding `context_tokens` KV entries in total."""
        return self.step_ms(batch, context_tokens, context_tokens, eager=False)

    def mixed_step_ms(
        self, batch: int, context_tokens: float, chunk_tokens: int, chunk_prior: float
    ) -> float:
        """A chunked-prefill step: `batch` decodes plus a prompt chunk of `chunk_tokens` whose
        prompt already has `chunk_prior` tokens prefilled. Runs eager (graphs cover pure decode
        batches only); without a chunk it is a plain decode step."""
        if chunk_tokens <= 0:
            return self.decode_step_ms(batch, context_tokens)
        pairs = context_tokens + chunk_tokens * (chunk_prior + chunk_tokens / 2.0)
        kv_read = context_tokens + chunk_prior
        return self.step_ms(batch + chunk_tokens, pairs, kv_read, eager=True)

    def roofline_decode_floor_ms(self) -> float:
        """Weights over raw HBM bandwidth: the fastest a batch-1 decode step could ever be."""
        return self.model.weight_bytes / self.tp / (self.chip.hbm_tbps * _TB) * _MS_PER_S

    def kv_capacity_tokens(self, gpu_memory_utilization: float = 0.9) -> int:
        """KV entries that fit beside the weights in this node's HBM (all tp x pp GPUs)."""
        usable = self.chip.hbm_gb * 1e9 * self.tp * self.pp * gpu_memory_utilization
        return max(0, int((usable - self.model.weight_bytes) / self.model.kv_bytes_per_token))


def kv_streams(
    prefill: NodeGroup, decode: NodeGroup, kv_heads: int, nics: int | None = None
) -> int:
    """Rails one request's KV moves over at once. Each prefill GPU holds the KV of its own heads
    (TP; beyond kv_heads the heads are replicated, not split further) and of its own layers
    (PP), and sends that shard over its own NIC; the receiving side has as many GPUs, each with
    its own NIC. So: min(nics, min(tp_p, kvh) * pp_p, min(tp_d, kvh) * pp_d). With pp = 1 this is
    min(nics, tp_p, tp_d, kvh). Without `nics`, the GPUs' limit alone (the link caps it later)."""
    senders = min(prefill.tp, kv_heads) * prefill.pp
    receivers = min(decode.tp, kv_heads) * decode.pp
    return max(1, min(senders, receivers) if nics is None else min(nics, senders, receivers))


def kv_bytes(model: ModelShape, tokens: int) -> int:
    """Bytes of KV cache for `tokens` tokens (GQA-aware)."""
    return tokens * model.kv_bytes_per_token


def link_bytes_per_ms(link: Link) -> float:
    """Peak effective bandwidth of a link, bytes per millisecond."""
    return link.line_gbps * 1e9 * link.peak_eff / _MS_PER_S


def effective_bandwidth_gbps(link: Link, message_bytes: int) -> float:
    """B_eff(s): small messages run far below line rate, large ones near peak_eff of it."""
    return link.line_gbps * link.peak_eff * message_bytes / (message_bytes + link.half_bytes)


def transfer_ms(link: Link, message_bytes: int, streams: int = 1) -> float:
    """Time to move one request's KV over an otherwise idle link: alpha + s / B_eff(s), where
    with `streams` rails in parallel each moves s / streams (its own shard) at its own rate.
    Each prefill GPU holds the KV of its own heads and layers and sends it over its own NIC
    (Mooncake's transfer engine, NIXL, DLSlime): streams = kv_streams(...)."""
    return link.alpha_ms + (message_bytes / streams + link.half_bytes) / link_bytes_per_ms(link)


def layerwise_split_ms(
    link: Link, message_bytes: int, streams: int, layers: int, prefill_ms: float
) -> tuple[float, float]:
    """(visible, overlapped) link time when KV moves layer by layer during the prefill
    (LMDeploy/DLSlime, Mooncake, DistServe). Layer i's KV (s / layers, split over the streams)
    leaves once layer i is computed, one layer every prefill_ms / layers. If the link keeps up,
    only the last layer's message remains after the prefill; otherwise the link is the
    bottleneck and what it could not finish while the other layers ran remains. The fixed alpha
    is paid after the prefill (the decode side's final handshake). Assumes the link is
    otherwise idle during the prefill."""
    per_layer = (message_bytes / layers / streams + link.half_bytes) / link_bytes_per_ms(link)
    hidden_window = prefill_ms * (layers - 1) / layers
    visible = max(per_layer, layers * per_layer - hidden_window)
    return visible, layers * per_layer - visible
