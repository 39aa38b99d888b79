"""Roofline cost model: how long a prefill, a decode step or a KV transfer takes on given hardware.

Every step costs max(compute time, memory time) + a fixed per-step overhead:

    compute = FLOPs / (peak FLOP/s * tp * tp_efficiency * MFU)
    memory  = (weights / tp + KV bytes read / tp) / (HBM bandwidth * bandwidth efficiency)
    FLOPs   = 2 * params * new_tokens + 4 * layers * hidden * attended_pairs
    comm    = 2 * layers * (allreduce latency + 2 (tp-1)/tp * new_tokens * hidden * dtype / bus bw)

and with tp > 1 each step adds `comm`: two ring all-reduces per layer (after attention and after
the MLP, Megatron-style tensor parallelism) over the chip's intra-node link.

`attended_pairs` counts (query token, context token) pairs: n*n/2 for a causal prefill of n tokens,
the context length for each decoding sequence. Prefill steps run eager (per-layer launch cost);
decode steps use captured graphs or eager per the deployment. A KV transfer of s bytes takes
alpha + (s + half_bytes) / (line rate * peak efficiency), i.e. alpha + s / B_eff(s) with
B_eff(s) = line * peak_eff * s / (s + half_bytes). The formulas and their sources are in
docs/engine-model.md.
"""

from __future__ import annotations

from dataclasses import dataclass

from notes_cli.engine.core.profiles import Chip, Link, ModelShape

_TFLOPS = 1e12
_TB = 1e12
_MS_PER_S = 1e3


@dataclass(frozen=True)
class NodeCost:
    """Step times of one model on one node (a chip times a tensor-parallel degree)."""

    model: ModelShape
    chip: Chip
    tp: int = 1
    decode_exec: str = "graph"  # "graph" | "eager"
    tp_efficiency: float = 1.0

    @property
    def flops_per_ms(self) -> float:
        scale = self.tp * (self.tp_efficiency if self.tp > 1 else 1.0)
        return self.chip.tflops * _TFLOPS * scale * self.chip.mfu / _MS_PER_S

    @property
    def hbm_bytes_per_ms(self) -> float:
        return self.chip.hbm_tbps * _TB * self.chip.bw_eff / _MS_PER_S

    @property
    def eager_overhead_ms(self) -> float:
        return self.model.layers * self.chip.eager_us_per_layer / 1000.0

    @property
    def decode_overhead_ms(self) -> float:
        return self.chip.graph_step_ms if self.decode_exec == "graph" else self.eager_overhead_ms

    def step_ms(
        self, new_tokens: float, attended_pairs: float, kv_read_tokens: float, *, eager: bool
    ) -> float:
        """One forward pass over `new_tokens` query tokens (any mix of prefill and decode)."""
        m = self.model
        flops = 2.0 * m.params_b * 1e9 * new_tokens + 4.0 * m.layers * m.hidden * attended_pairs
        compute = flops / self.flops_per_ms
        read = (m.weight_bytes + kv_read_tokens * m.kv_bytes_per_token) / self.tp
        memory = read / self.hbm_bytes_per_ms
        overhead = self.eager_overhead_ms if eager else self.decode_overhead_ms
        if self.tp > 1:  # checked here: a method call per step costs ~5% of simulation speed
            overhead += self.allreduce_ms(new_tokens)
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
        """KV entries that fit beside the weights in this node's HBM."""
        usable = self.chip.hbm_gb * 1e9 * self.tp * gpu_memory_utilization
        return max(0, int((usable - self.model.weight_bytes) / self.model.kv_bytes_per_token))


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
    Each prefill GPU holds the KV of its own heads and sends it over its own NIC (Mooncake's
    transfer engine, NIXL, DLSlime), so streams = min(nics, prefill tp, decode tp, kv_heads)."""
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
