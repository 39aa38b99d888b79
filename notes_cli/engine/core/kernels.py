"""How efficiently a chip's kernels run a step: measured curves, or the old constant MFUs.

A chip row with `mfu_half_tokens` > 0 (templates/engine/kernels.toml, fitted to NVIDIA
aiconfigurator's measured per-operation databases by benchmarks/aiconfigurator/fit_kernels.py)
lets efficiency vary with what it depends on:

    GEMMs      mfu * M / (M + half_tokens), M = tokens in the step,
               half_tokens = mfu_half_tokens * (4096^2 / per-GPU matrix size) ** mfu_width_exp
               (tensor parallelism shrinks each GPU's matrices, so more tokens fill the GPU)
    attention  attn_mfu * c / (c + attn_half_context), c = mean context a new token attends

Both turn the roofline's compute time into a linear form the step cost evaluates without
divisions per step: FLOPs(M + half_tokens) / (peak * mfu), and likewise for attention with
(pairs + half_context * M). Prefill is still compute-bound and decode memory-bound: a decode
step's small M only lowers the compute side further below the weight reads.

Chips without measured curves, and deployments fitted to an older engine's constant MFU
(`prefill_mfu`, Chip.with_constant_mfu), give half_tokens = half_context = 0: the old model.
"""

from __future__ import annotations

from dataclasses import dataclass

from notes_cli.engine.core.profiles import Chip, ModelShape

REFERENCE_MATRIX = 4096.0 * 4096.0  # the per-GPU matrix size mfu_half_tokens is given at
GEMMS_PER_LAYER = 4  # QKV, attention output, MLP up (+gate), MLP down


@dataclass(frozen=True)
class StepEfficiency:
    measured: bool
    half_tokens: float  # tokens at which the GEMMs reach half their best efficiency
    half_context: float  # mean context at which attention reaches half of attn_mfu
    attn_mfu: float | None  # None: attention runs at the GEMMs' MFU (constant-MFU chips)


def per_gpu_matrix(model: ModelShape, tp: int) -> float:
    """Mean size (elements) of one weight matrix on one GPU: a layer's parameters over its
    GEMMs, split tp ways."""
    return model.params_b * 1e9 / model.layers / GEMMS_PER_LAYER / tp


def half_tokens(half_at_reference: float, width_exp: float, model: ModelShape, tp: int) -> float:
    """Tokens at which this model's per-GPU GEMMs reach half the chip's best efficiency."""
    return half_at_reference * (REFERENCE_MATRIX / per_gpu_matrix(model, tp)) ** width_exp


def step_efficiency(model: ModelShape, chip: Chip, tp: int) -> StepEfficiency:
    """The efficiency curve parameters of `model` on `chip` with tensor parallelism `tp`,
    derived once per node (the step cost is the simulator's hot path)."""
    if not chip.measured_kernels:
        return StepEfficiency(False, 0.0, 0.0, None)
    return StepEfficiency(
        True,
        half_tokens(chip.mfu_half_tokens, chip.mfu_width_exp, model, tp),
        chip.attn_half_context if chip.attn_mfu is not None else 0.0,
        chip.attn_mfu,
    )
