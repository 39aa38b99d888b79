"""A static per-step estimate of one deployment (`pdnotes engine estimate`).

What published "saturated prefill" and "saturated decode" figures measure, and what NVIDIA
aiconfigurator's `cli estimate` answers: one node of the deployment runs a step with a given
batch per GPU at a given context, and nothing queues. The numbers are the cost model's own
(costmodel.NodeCost: the same calls the simulator makes for a step, plus the serving engine's
CPU time per step from the deployment's backend), so a figure from any paper or blog can be held
against pdnotes in one command. Closed-loop runs (queueing, batching dynamics) are `engine
simulate -c N`.

decode   batch = sequences per GPU, context = KV tokens each sequence holds (its prompt and the
         tokens produced so far): one decode step of batch x GPUs sequences per node
prefill  batch = prompt tokens per GPU, context = tokens per prompt: one prefill step of the
         prompts that make up batch x GPUs tokens per node, spread over its attention replicas
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any

from notes_cli.engine.core.costmodel import NodeCost, StepParts
from notes_cli.engine.core.profiles import Catalog, Deployment, NodeGroup
from notes_cli.errors import UsageError

PHASES = ("prefill", "decode")
SCHEMA = "pdnotes.engine.estimate/1"


@dataclass(frozen=True)
class Estimate:
    deployment: Deployment
    role: str  # the node group estimated: prefill, decode or colocated
    group: NodeGroup
    phase: str
    batch_per_gpu: int
    context_tokens: int
    gpus: int  # GPUs of one node of the group (tp x dp x pp)
    node_gpus: int  # GPUs per server (the chip's NVLink domain): "per node" throughput
    sequences: int  # decode: sequences in the step; prefill: prompts in it
    step_tokens: float  # tokens the step produces (decode, speculative gain included) or reads
    tokens_per_step: float  # per sequence: 1, or 1 + a + ... + a^n with speculative decoding
    parts: StepParts  # the GPU step (decode with speculation: the verify step)
    draft_ms: float  # speculative decoding's draft passes
    cpu_ms: float  # the serving engine's CPU time in the step (backend)
    step_ms: float
    kv_need_tokens: int
    kv_capacity_tokens: int

    @property
    def tokens_per_s_per_gpu(self) -> float:
        return self.step_tokens / self.step_ms * 1000.0 / self.gpus

    @property
    def tokens_per_s_per_node(self) -> float:
        return self.tokens_per_s_per_gpu * self.node_gpus

    @property
    def tokens_per_s_per_user(self) -> float:
        """Decode: tokens a sequence gains per second; prefill: one prompt's tokens per second
        of its step (its prefill speed)."""
        if self.phase == "decode":
            return self.tokens_per_step / self.step_ms * 1000.0
        return self.context_tokens / self.step_ms * 1000.0

    @property
    def cpu_visible_ms(self) -> float:
        """The engine's CPU time the step shows: all of it, or with an overlapping engine what
        the GPU's step does not cover."""
        return self.step_ms - self.parts.total - self.draft_ms

    @property
    def kv_fits(self) -> bool:
        return self.kv_need_tokens <= self.kv_capacity_tokens

    def to_json(self) -> dict[str, Any]:
        """The pdnotes.engine.estimate/1 document (finite numbers only: strict JSON)."""
        dep, g, p = self.deployment, self.group, self.parts
        return {
            "schema": SCHEMA,
            "deployment": dep.name,
            "model": dep.model,
            "role": self.role,
            "phase": self.phase,
            "chip": g.chip,
            "parallel": {"tp": g.tp, "dp": g.dp, "ep": g.ep, "pp": g.pp},
            "gpus": self.gpus,
            "node_gpus": self.node_gpus,
            "batch_per_gpu": self.batch_per_gpu,
            "context_tokens": self.context_tokens,
            "sequences": self.sequences,
            "step_ms": _num(self.step_ms),
            "tokens_per_step": _num(self.tokens_per_step),
            "tokens_per_s": {
                "per_gpu": _num(self.tokens_per_s_per_gpu),
                "per_node": _num(self.tokens_per_s_per_node),
                "per_user": _num(self.tokens_per_s_per_user),
            },
            "kv": {
                "fits": self.kv_fits,
                "need_tokens": self.kv_need_tokens,
                "capacity_tokens": self.kv_capacity_tokens,
            },
            "bound": p.bound,
            "breakdown_ms": {
                "compute": _num(p.compute + p.attention),
                "attention": _num(p.attention),
                "weights": _num(p.weights),
                "kv": _num(p.kv),
                "communication": _num(p.comm),
                "hidden_by_overlap": _num(p.hidden),
                "overheads": _num(p.overhead + self.draft_ms + self.cpu_visible_ms),
                "launch": _num(p.overhead),
                "draft": _num(self.draft_ms),
                "cpu": _num(self.cpu_ms),
                "cpu_visible": _num(self.cpu_visible_ms),
            },
            "settings": {
                "backend": dep.backend,
                "weight_dtype": dep.weight_dtype,
                "kv_dtype": dep.kv_dtype,
                "two_batch_overlap": bool(dep.two_batch_overlap),
                "expert_imbalance": dep.expert_load if g.ep > 1 else 1.0,
                "eplb": bool(dep.eplb),
                "mtp_acceptance": dep.mtp_acceptance,
                "mtp_tokens": dep.mtp_tokens or 1,
                "prefix_cache_hit": dep.prefix_cache_hit,
            },
        }


def _with_cpu(gpu_ms: float, cpu_ms: float, overlap: bool) -> float:
    """The step with the engine's CPU time, as the scheduler adds it (Worker.step_duration)."""
    return max(gpu_ms, cpu_ms) if overlap else gpu_ms + cpu_ms


def _num(value: float) -> float:
    if not math.isfinite(value):  # never: every term is a finite sum; guard strict JSON
        raise ValueError(f"non-finite estimate {value}")
    return round(value, 4)


def pick_group(deployment: Deployment, phase: str) -> tuple[str, NodeGroup]:
    """The node group a phase runs on: disagg's prefill or decode pool, else the colocated one
    (a disagg preset asked in another mode uses the phase's own pool)."""
    for role, group in ((phase, getattr(deployment, phase)), ("colocated", deployment.colocated)):
        if group is not None:
            return role, group
    role, group = deployment.worker_groups()[0]
    return role, group


def estimate(
    deployment: Deployment, catalog: Catalog, phase: str, batch_per_gpu: int, context: int
) -> Estimate:
    """One step of `phase` on one node of the deployment's `phase` group."""
    if phase not in PHASES:
        raise UsageError(f"unknown phase {phase!r}; choose prefill or decode")
    if batch_per_gpu < 1 or context < 1:
        raise UsageError("the batch and the context must be at least 1")
    role, group = pick_group(deployment, phase)
    chip = catalog.chips[group.chip]
    if deployment.prefill_mfu is not None:
        chip = chip.with_constant_mfu(deployment.prefill_mfu)
    model = catalog.models[deployment.model]
    cost = NodeCost.for_group(model, chip, group, deployment)
    gpus = group.tp * group.dp * group.pp
    fixed_cpu, seq_cpu = deployment.step_cpu_ms
    capacity = deployment.kv_capacity_tokens or cost.kv_capacity_tokens(
        deployment.gpu_memory_utilization, deployment.max_batch
    )
    if phase == "decode":
        sequences = batch_per_gpu * gpus
        kv_total = float(sequences) * context
        gain = cost.tokens_per_decode_step
        draft = 0.0
        if gain == 1.0:
            parts = cost.step_parts(sequences, kv_total, kv_total, eager=False)
        else:  # the verify step, then the draft passes (NodeCost.speculative_step_ms)
            n = cost.mtp_tokens
            parts = cost.step_parts(sequences * (1 + n), kv_total * (1 + n), kv_total, eager=False)
            plain = replace(cost, mtp_acceptance=0.0)
            draft = n * plain.decode_step_ms(sequences, kv_total) / model.layers
        cpu = fixed_cpu + seq_cpu * (sequences / group.dp) ** deployment.seq_exponent
        step = _with_cpu(parts.total + draft, cpu, deployment.cpu_overlap)
        return Estimate(
            deployment, role, group, phase, batch_per_gpu, context, gpus, chip.node_gpus,
            sequences, sequences * gain, gain, parts, draft, cpu, step,
            sequences * context, capacity,
        )  # fmt: skip
    tokens = batch_per_gpu * gpus
    prompts = max(1, round(tokens / context))
    parts = cost.prefill_parts([float(context)] * prompts)
    cpu = fixed_cpu + seq_cpu * (prompts / group.dp) ** deployment.seq_exponent
    step = _with_cpu(parts.total, cpu, deployment.cpu_overlap)
    return Estimate(
        deployment, role, group, phase, batch_per_gpu, context, gpus, chip.node_gpus,
        prompts, float(prompts * context), 1.0, parts, 0.0, cpu, step,
        prompts * context, capacity,
    )  # fmt: skip
