"""How efficiently a chip's kernels run a step: measured curves, or the old constant MFUs.

A chip row with `mfu_half_tokens` > 0 (templates/engine/kernels.toml, fitted to NVIDIA
aiconfigurator's measured per-operation databases by benchmarks/aiconfigurator/fit_kernels.py)
lets efficiency vary with what it depends on:

    GEMMs      mfu * M / (M + half), M = tokens each weight matrix sees in the step,
               half = mfu_half_tokens * (4096^2 / per-GPU matrix size) ** mfu_width_exp
               (tensor parallelism shrinks each GPU's matrices, so more tokens fill the GPU);
               fp8 weights use the fp8_* curve against the fp8 peak
    attention  attn_mfu * c / (c + attn_half_context), c = mean context a new token attends

Summed over a step's matrices these give linear forms the step cost evaluates cheaply:
compute = (linear FLOPs * M + half_flops) / (peak * mfu), with half_flops = 2 * params * half
for the dense weights. A MoE layer's routed experts run as one grouped GEMM at their own
measured curve (moe_*: best efficiency moe_mfu * S / (S + moe_width_half) for a per-GPU expert
matrix S, which TP splits and EP does not, and half at moe_half_rows (token, expert) rows per
GPU, i.e. M = moe_half_rows * ep / k), or, without one, like one GEMM of M * k rows; their half
term is paid in proportion to the experts the step touches. Attention adds attention FLOPs per
pair * attn_half_context per new token. Prefill stays compute-bound and decode memory-bound: at
small M the fitted compute curve meets the weight reads, not above.

A MoE layer also pays a fixed floor before it reads a byte (moe_floor_us, fp8_moe_floor_us,
w4_moe_floor_us by the experts' precision): aiconfigurator's moe_perf tables at decode sizes
(<= 256 tokens) measure 30-100 us per layer where reading the touched experts alone takes 2-15 us
at one token; the step cost adds it to the memory side (a decode step is read-bound; a prefill's
compute hides it). An MLA attention block likewise (mla_floor_us, every layer of an MLA model):
its module tables measure 30-90 us a layer at 16 heads per GPU where its reads take 15-40 us.
A GQA model's decode attention kernel likewise (attn_floor_us, every layer): the three engines'
generation-attention tables measure 9-16 us a layer at a few sequences, where the KV they read
takes 1-5 us; the step cost runs a decode step's attention after its GEMMs (costmodel.py).

Chips without measured curves, and deployments fitted to an older engine's constant MFU
(`prefill_mfu`, Chip.with_constant_mfu), get no extra terms: the old model.
"""

from __future__ import annotations

from dataclasses import dataclass

from notes_cli.engine.core.profiles import Chip, ModelShape

REFERENCE_MATRIX = 4096.0 * 4096.0  # the per-GPU matrix size mfu_half_tokens is given at
DENSE_GEMMS_PER_LAYER = 4  # QKV, attention output, MLP up (+gate), MLP down
EXPERT_GEMMS = 3  # gate, up, down
FP8_WEIGHTS = ("fp8",)  # weights the fp8 curve applies to (fp4 formats: no measured curve here)
W4_WEIGHTS = ("int4", "fp4", "nvfp4", "mxfp4")  # 4-bit experts: their own measured floor


@dataclass(frozen=True)
class StepEfficiency:
    measured: bool
    gemm_mfu: float  # best fraction of the weights' peak the GEMMs reach
    dense_half_params: float  # sum of params x half tokens over the non-expert weights
    expert_half_params: float  # the same over the routed experts (scaled by the share touched)
    expert_mfu: float  # best fraction of the weights' peak the experts' grouped GEMMs reach
    half_context: float  # mean context at which attention reaches half of attn_mfu
    attn_mfu: float | None  # None: attention runs at the GEMMs' MFU (constant-MFU chips)
    moe_floor_us: float = 0.0  # a MoE layer's fixed cost (us) at the experts' precision
    mla_floor_us: float = 0.0  # an MLA attention block's fixed cost (us) at decode
    attn_floor_us: float = 0.0  # a GQA decode attention kernel's fixed cost (us) a layer


def half_tokens(half_at_reference: float, width_exp: float, matrix: float) -> float:
    """Tokens at which a GEMM on a per-GPU matrix of `matrix` elements reaches half the chip's
    best efficiency."""
    # float(): a float power is typed Any (a negative base gives a complex)
    return float(half_at_reference * (REFERENCE_MATRIX / max(matrix, 1.0)) ** width_exp)


def step_efficiency(
    model: ModelShape, chip: Chip, tp: int, ep: int = 1, dp: int = 1, weights: str | None = None
) -> StepEfficiency:
    """The efficiency curve of `model` on `chip` (tp x dp GPUs per stage, ep-way experts,
    weights in `weights`), derived once per node: the step cost is the simulator's hot path."""
    if not chip.measured_kernels:
        return StepEfficiency(False, chip.mfu, 0.0, 0.0, chip.mfu, 0.0, None)
    mfu, half, width = chip.mfu, chip.mfu_half_tokens, chip.mfu_width_exp
    moe = (chip.moe_mfu, chip.moe_width_half, chip.moe_half_rows)
    floor = chip.moe_floor_us
    if weights in FP8_WEIGHTS and chip.fp8_mfu is not None and chip.fp8_tflops > 0:
        mfu, half, width = chip.fp8_mfu, chip.fp8_mfu_half_tokens, chip.fp8_mfu_width_exp
        moe = (chip.fp8_moe_mfu, chip.fp8_moe_width_half, chip.fp8_moe_half_rows)
        floor = chip.fp8_moe_floor_us or floor
    elif weights in W4_WEIGHTS:
        floor = chip.w4_moe_floor_us or floor
    dense = model.params_b * 1e9 - model.routed_params
    dense_matrix = dense / model.layers / DENSE_GEMMS_PER_LAYER / tp
    expert_half, expert_mfu = 0.0, mfu
    if model.is_moe:
        shards = max(1, tp * dp // max(ep, 1))  # without EP every expert is split over the GPUs
        expert_matrix = model.expert_params / EXPERT_GEMMS / shards
        one_expert = model.routed_params / model.experts  # one expert of every MoE layer
        moe_mfu, width_half, half_rows = moe
        if moe_mfu is not None:
            # measured grouped GEMMs: R = M * k / ep rows per GPU, so half R is M = half * ep / k
            expert_mfu = moe_mfu * expert_matrix / (expert_matrix + width_half)
            expert_half = one_expert * half_rows * ep
        else:  # one grouped GEMM over M * k rows fills the GPU like one GEMM of that many rows
            expert_half = one_expert * half_tokens(half, width, expert_matrix)
    return StepEfficiency(
        True,
        mfu,
        dense * half_tokens(half, width, dense_matrix),
        expert_half,
        expert_mfu,
        chip.attn_half_context if chip.attn_mfu is not None else 0.0,
        chip.attn_mfu,
        floor if model.is_moe else 0.0,
        chip.mla_floor_us if model.is_mla else 0.0,
        0.0 if model.is_mla else chip.attn_floor_us,
    )
