"""Roofline cost model: how long a prefill, a decode step or a KV transfer takes on given hardware.

Every step costs max(compute time, memory time) + a fixed per-step overhead:

    compute = linear FLOPs / (weight-precision peak * G * MFU)
              + attention FLOPs / (bf16 peak * G * MFU)          G = tp x dp GPUs of a stage
    memory  = (weights read per GPU + KV bytes read per GPU) / (HBM bandwidth * bandwidth eff.)
    linear FLOPs    = 2 * active params * new_tokens
    attention FLOPs = 2 * heads * (qk_dim + v_dim) * (full layers * attended_pairs
                      + sliding layers * min(attended_pairs, new_tokens * window))
    comm    = attention all-reduces + MLP all-reduces or expert all-to-alls (EP)
    p2p     = (pp-1) * (allreduce latency + new_tokens * hidden * dtype / bus bw)

With tp > 1 each layer pays two ring all-reduces (after attention and after the MLP,
Megatron-style) over the chip's intra-node link; with expert parallelism (ep > 1) a MoE layer's
all-reduce becomes a dispatch and a combine all-to-all. A MoE step reads the non-expert weights
and only the experts its tokens touch: E * (1 - (1 - k/E)^tokens) per layer. On chips with
measured kernel curves (kernels.py, templates/engine/kernels.toml) the MFUs vary with the step:
the GEMMs' with the tokens in it and the TP degree, attention's with the context, the routed
experts' with their split and rows; KV reads at kv_bw_eff plus a per-sequence cost. Otherwise a
step that carries prompt tokens (prefill, chunked) computes at the chip's prefill MFU (`mfu`), a
pure decode step at its `decode_mfu`. With pipeline stages (pp > 1)
each stage holds layers / pp on its own GPUs and a step passes the stages in turn: compute and
weight reads are split over the stages but run one after another, so a step's latency is the
single-stage one plus the activations' hops between stages (`p2p`); the stages add KV memory and
KV rails, not speed (micro-batch pipelining is not modelled).

`attended_pairs` counts (query token, context token) pairs: n*n/2 for a causal prefill of n tokens,
the context length for each decoding sequence. Prefill steps run eager (per-layer launch cost);
decode steps use captured graphs or eager per the deployment. A KV transfer of s bytes takes
alpha + (s + half_bytes) / (line rate * peak efficiency), i.e. alpha + s / B_eff(s) with
B_eff(s) = line * peak_eff * s / (s + half_bytes). The formulas, MoE, MLA, precision, EP and
attention DP, and their sources are in docs/engine-model.md.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from notes_cli.engine.core.kernels import step_efficiency
from notes_cli.engine.core.profiles import (
    KV_DTYPES,
    WEIGHT_DTYPES,
    Chip,
    Deployment,
    Link,
    ModelShape,
    NodeGroup,
)

FP8_GEMM_DTYPES = ("fp8", "fp4", "nvfp4", "mxfp4")
"""Weight precisions whose GEMMs take fp8 (or narrower) activations, so an EP dispatch sends fp8."""
_NO_WINDOW = 1e30  # finite, so a step of zero tokens still attends to zero pairs (0 x inf is NaN)
_TFLOPS = 1e12
_TB = 1e12
_MS_PER_S = 1e3
_COMM_MEMO = 4096  # distinct token counts NodeCost remembers the communication of, per phase


@dataclass(frozen=True)
class StepParts:
    """One step's time by part, in ms, as the cost model adds them up: the kernels run for
    max(compute, weights + kv) (whichever bounds them) in a step carrying prompt tokens; in a
    decode step the attention kernels run apart, after the GEMMs, for max(compute, weights) +
    max(attention, kv); communication after them (or, with two-batch overlap, under them),
    then the fixed launch / graph overhead."""

    compute: float  # GEMMs and routed experts (and, in a prefill, attention) at their efficiencies
    weights: float  # weights read from HBM (the experts touched; MoE and MLA layers' floors)
    kv: float  # KV cache read (bytes, decode attention's cost per sequence and per layer)
    comm: float  # all-reduces, expert all-to-alls, pipeline hops
    overhead: float  # kernel launches (eager) or the captured graph's residual
    two_batch_overlap: bool = False
    attention: float = 0.0  # a decode step's attention compute, its kernels apart from the GEMMs
    apart: bool = False  # a decode step: attention after the GEMMs, not under their roofline

    @property
    def kernels(self) -> float:
        if self.apart:
            return max(self.compute, self.weights) + max(self.attention, self.kv)
        return max(self.compute, self.weights + self.kv)

    @property
    def bound(self) -> str:
        work = self.compute + self.attention
        return "compute" if work >= self.weights + self.kv else "memory"

    @property
    def hidden(self) -> float:
        """Communication (or compute) hidden by two-batch overlap."""
        return min(self.kernels, self.comm) if self.two_batch_overlap else 0.0

    @property
    def total(self) -> float:
        return self.kernels + self.comm - self.hidden + self.overhead


@dataclass(frozen=True)
class NodeCost:
    """Step times of one model on one node: tp x dp x pp chips, with ep-way expert parallelism,
    serving weights and KV at the given precision."""

    model: ModelShape
    chip: Chip
    tp: int = 1
    decode_exec: str = "graph"  # "graph" | "eager"
    tp_efficiency: float = 1.0
    pp: int = 1  # pipeline stages, each on its own tp x dp GPUs
    ep: int = 1  # expert parallelism over the tp x dp GPUs of a stage
    dp: int = 1  # attention data parallelism: dp replicas of tp GPUs split the batch
    weight_dtype: str | None = None  # None: the model's own precision
    kv_dtype: str | None = None  # None: the model's dtype_bytes
    # Wide EP and decoding speed-ups (Deployment's keys of the same names; docs/engine-model.md)
    dispatch_dtype: str | None = None  # None: fp8 with fp8/fp4 weights, else the activations'
    combine_dtype: str | None = None  # None: the activations' dtype
    two_batch_overlap: bool = False  # communication hidden under the other micro-batch
    expert_imbalance: float = 1.0  # the busiest GPU's expert work over the mean
    mtp_acceptance: float = 0.0  # speculative decoding's acceptance per draft token; 0: off
    mtp_tokens: int = 1  # draft tokens per decode step when on
    prefix_cache_hit: float = 0.0  # share of prompt tokens the prefix cache serves
    # Derived once in __post_init__: step_ms runs for every simulated step (the hot path).
    _prefill_flops_per_ms: float = field(init=False, repr=False, compare=False, default=0.0)
    _decode_flops_per_ms: float = field(init=False, repr=False, compare=False, default=0.0)
    _comm: bool = field(init=False, repr=False, compare=False, default=False)
    _hbm_bytes_per_ms: float = field(init=False, repr=False, compare=False, default=0.0)
    _prefill_attn_per_ms: float = field(init=False, repr=False, compare=False, default=0.0)
    _decode_attn_per_ms: float = field(init=False, repr=False, compare=False, default=0.0)
    _dense_linear: float = field(init=False, repr=False, compare=False, default=0.0)
    _expert_linear: float = field(init=False, repr=False, compare=False, default=0.0)
    _expert_flops_per_ms: float = field(init=False, repr=False, compare=False, default=1.0)
    _dense_half_flops: float = field(init=False, repr=False, compare=False, default=0.0)
    _expert_half_flops: float = field(init=False, repr=False, compare=False, default=0.0)
    _prefill_attn_half: float = field(init=False, repr=False, compare=False, default=0.0)
    _decode_attn_half: float = field(init=False, repr=False, compare=False, default=0.0)
    _kv_bytes_per_ms: float = field(init=False, repr=False, compare=False, default=0.0)
    _prefill_terms: tuple[float, ...] = field(init=False, repr=False, compare=False, default=())
    _decode_terms: tuple[float, ...] = field(init=False, repr=False, compare=False, default=())
    _weights_ms: float = field(init=False, repr=False, compare=False, default=0.0)
    _kv_full_ms: float = field(init=False, repr=False, compare=False, default=0.0)
    _kv_slid_ms: float = field(init=False, repr=False, compare=False, default=0.0)
    _expert_read_ms: float = field(init=False, repr=False, compare=False, default=0.0)
    _expert_token_ms: float = field(init=False, repr=False, compare=False, default=0.0)
    _expert_half_ms: float = field(init=False, repr=False, compare=False, default=0.0)
    _floor_ms: float = field(init=False, repr=False, compare=False, default=0.0)
    _attn_floor_ms: float = field(init=False, repr=False, compare=False, default=0.0)
    _decode_attn_token_ms: float = field(init=False, repr=False, compare=False, default=0.0)
    _seq_ms: float = field(init=False, repr=False, compare=False, default=0.0)
    _eager_ms: float = field(init=False, repr=False, compare=False, default=0.0)
    _decode_ms: float = field(init=False, repr=False, compare=False, default=0.0)
    _mtp_gain: float = field(init=False, repr=False, compare=False, default=1.0)
    # A step's communication by its token count, prefill / decode: steps repeat the same few
    # counts, and remembering them cut a planner run's CPU by 16 % (Llama-3.1-8B on 8 x H200,
    # 18.5 -> 15.5 s, the same plan; docs/benchmarks/planner.md). Bounded (_COMM_MEMO).
    _comm_eager: dict[float, float] = field(
        init=False, repr=False, compare=False, default_factory=dict
    )
    _comm_decode: dict[float, float] = field(
        init=False, repr=False, compare=False, default_factory=dict
    )
    _shape: _StepShape = field(init=False, repr=False, compare=False)

    @classmethod
    def for_group(
        cls, model: ModelShape, chip: Chip, group: NodeGroup, dep: Deployment
    ) -> NodeCost:
        """The cost of one node of `group` serving `model` as `dep` says (exec mode, precision)."""
        return cls(
            model,
            chip,
            group.tp,
            dep.decode_exec,
            dep.tp_efficiency,
            group.pp,
            group.ep,
            group.dp,
            dep.weight_dtype,
            dep.kv_dtype,
            dep.dispatch_dtype,
            dep.combine_dtype,
            bool(dep.two_batch_overlap),
            dep.expert_load,
            dep.mtp_acceptance,
            dep.mtp_tokens or 1,
            dep.prefix_cache_hit,
        )

    def __post_init__(self) -> None:
        gpus = self.tp * self.dp
        scale = gpus * (self.tp_efficiency if self.tp > 1 else 1.0)
        peak = self.chip.tflops * _TFLOPS * scale / _MS_PER_S
        object.__setattr__(self, "_shape", _StepShape.of(self))
        sh, m = self._shape, self.model
        weights = self.weight_dtype or m.weight_dtype
        eff = step_efficiency(m, self.chip, self.tp, self.ep, self.dp, weights)
        decode_mfu = self.chip.decode_mfu if self.chip.decode_mfu is not None else self.chip.mfu
        if eff.measured:  # one measured curve for both phases: the tokens in a step decide
            decode_mfu = eff.gemm_mfu
        # linear FLOPs are in bf16-peak units (fp8 counts 1/speedup): so are the half terms
        speedup = 2.0 * m.active_params / sh.linear_flops if sh.linear_flops else 1.0
        object.__setattr__(self, "_prefill_flops_per_ms", peak * eff.gemm_mfu)
        object.__setattr__(self, "_decode_flops_per_ms", peak * decode_mfu)
        object.__setattr__(self, "_prefill_attn_per_ms", peak * (eff.attn_mfu or eff.gemm_mfu))
        object.__setattr__(self, "_decode_attn_per_ms", peak * (eff.attn_mfu or decode_mfu))
        expert_linear = 0.0
        if m.is_moe and eff.measured:  # the routed experts at their own measured efficiency
            expert_linear = 2.0 * m.active_experts * m.routed_params / m.experts / speedup
        object.__setattr__(self, "_dense_linear", sh.linear_flops - expert_linear)
        object.__setattr__(self, "_expert_linear", expert_linear)
        object.__setattr__(self, "_expert_flops_per_ms", peak * eff.expert_mfu)
        # Each attention-DP replica runs the non-expert GEMMs on its own share of the tokens, so
        # each pays their fill-up (half) cost: dp times a node-wide GEMM's.
        dense_half = 2.0 * eff.dense_half_params / speedup * self.dp
        object.__setattr__(self, "_dense_half_flops", dense_half)
        object.__setattr__(self, "_expert_half_flops", 2.0 * eff.expert_half_params / speedup)
        pair = sh.prefill_attn_full + sh.prefill_attn_slid
        object.__setattr__(self, "_prefill_attn_half", pair * eff.half_context)
        pair = sh.decode_attn_full + sh.decode_attn_slid
        object.__setattr__(self, "_decode_attn_half", pair * eff.half_context)
        object.__setattr__(self, "_comm", gpus > 1 or self.pp > 1)
        hbm = self.chip.hbm_tbps * _TB / _MS_PER_S
        kv_bw_eff = self.chip.kv_bw_eff or self.chip.bw_eff
        object.__setattr__(self, "_hbm_bytes_per_ms", hbm * self.chip.bw_eff)
        object.__setattr__(self, "_kv_bytes_per_ms", hbm * kv_bw_eff)
        # A decode attention's cost per sequence: each DP replica reads only its own sequences,
        # all replicas at once, so a step's batch costs batch / dp sequences' worth.
        object.__setattr__(self, "_seq_ms", m.layers * self.chip.kv_seq_us / 1000.0 / self.dp)
        eager_ms = m.layers * self.chip.eager_us_per_layer / 1000.0
        decode_ms = self.chip.graph_step_ms if self.decode_exec == "graph" else eager_ms
        object.__setattr__(self, "_eager_ms", eager_ms)
        object.__setattr__(self, "_decode_ms", decode_ms)
        # The step cost's coefficients (ms), so step_ms only multiplies and adds.
        for phase, gemm_rate, attn_rate, attn_half, full, slid, seq, over in (
            ("_prefill_terms", self._prefill_flops_per_ms, self._prefill_attn_per_ms,
             self._prefill_attn_half, sh.prefill_attn_full, sh.prefill_attn_slid, 0.0, eager_ms),
            ("_decode_terms", self._decode_flops_per_ms, self._decode_attn_per_ms,
             self._decode_attn_half, sh.decode_attn_full, sh.decode_attn_slid, self._seq_ms,
             decode_ms),
        ):  # fmt: skip
            terms = (
                self._dense_linear / gemm_rate + attn_half / attn_rate,
                self._dense_half_flops / gemm_rate,
                full / attn_rate,
                slid / attn_rate,
                seq,
                over,
            )
            object.__setattr__(self, phase, terms)
        object.__setattr__(self, "_weights_ms", sh.dense_bytes / self._hbm_bytes_per_ms)
        object.__setattr__(self, "_kv_full_ms", sh.kv_full / self._kv_bytes_per_ms)
        object.__setattr__(self, "_kv_slid_ms", sh.kv_slid / self._kv_bytes_per_ms)
        read = sh.expert_bytes * sh.experts / self._hbm_bytes_per_ms
        object.__setattr__(self, "_expert_read_ms", read)
        # EP: every MoE layer waits for the GPU with the most expert work (EPLB evens it out)
        expert_rate = self._expert_flops_per_ms / (self.expert_imbalance if self.ep > 1 else 1.0)
        object.__setattr__(self, "_expert_token_ms", self._expert_linear / expert_rate)
        object.__setattr__(self, "_expert_half_ms", self._expert_half_flops / expert_rate)
        # Fixed costs a layer pays before it reads a byte, measured (aiconfigurator 0.12.0's
        # tables, kernels.toml, fit_kernels.py): every MoE layer's routing, top-k, permute,
        # grouped-GEMM launch and tail, finalize (moe_perf at <= 256 tokens: 30-70 us, where
        # reading one token's experts takes 2-15 us), and every MLA block's norms, rope, five
        # small GEMMs and attention kernel (mla module tables: ~37 us, where its reads at 16
        # heads per GPU take 15-40 us). Decode steps are read-bound, so they pay them in full
        # (DeepSeek-R1 fp8 on 8 x H200 at 16 sequences: +4 ms, 14 -> 18 ms against
        # aiconfigurator's 20); a prefill's compute hides them.
        floor_us = m.moe_layers * eff.moe_floor_us + m.layers * eff.mla_floor_us
        object.__setattr__(self, "_floor_ms", floor_us / 1000.0)
        # A decode step's attention is kernels of its own between the QKV and output GEMMs, not
        # work the GEMMs' roofline hides: step_ms adds max(attention compute, KV read) after
        # max(GEMMs, weights), as aiconfigurator sums its measured per-operation times. Each
        # GQA layer's attention kernel also costs attn_floor_us whatever it reads (kernels.toml:
        # the generation-attention tables of TRT-LLM, vLLM and SGLang, 9-12 us a layer at a few
        # sequences, where reading 8 sequences' 2K-token KV at TP8 takes 3 us). At TP1 the step
        # is bound by its weight reads and the two barely show; at TP8 its GEMMs are bound by
        # their small shards and the attention kernels came for free: Llama-3.1-8B on H100 at
        # 8 sequences, 1.78 ms a step against aiconfigurator's 2.11-2.26, now 2.27 (TP1 7.7 ->
        # 8.0 against 7.3-7.6). MLA models carry the attention kernel in mla_floor_us.
        attn_floor = 0.0 if m.is_mla else m.layers * eff.attn_floor_us / 1000.0
        object.__setattr__(self, "_attn_floor_ms", attn_floor)
        token_ms = self._decode_attn_half / self._decode_attn_per_ms
        object.__setattr__(self, "_decode_attn_token_ms", token_ms)
        # Speculative decoding: tokens a sequence gains per verify step, 1 + a + ... + a^n
        gain = sum(self.mtp_acceptance**i for i in range(self.mtp_tokens + 1))
        object.__setattr__(self, "_mtp_gain", gain if self.mtp_acceptance > 0 else 1.0)

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
        sh = self._shape
        window = new_tokens * sh.window
        slid_pairs = attended_pairs if attended_pairs < window else window
        slid_kv = kv_read_tokens if kv_read_tokens < window else window
        # ms per new token, fixed, per attended pair (full, sliding layers), per sequence read
        # and overhead of this phase, derived once (measured kernel curves included, kernels.py)
        per_token, fixed, per_pair, per_slid, per_seq, overhead = (
            self._prefill_terms if eager else self._decode_terms
        )
        compute = new_tokens * per_token + fixed + attended_pairs * per_pair + slid_pairs * per_slid
        weights = self._weights_ms + (self._floor_ms if new_tokens else 0.0)
        kv = kv_read_tokens * self._kv_full_ms + slid_kv * self._kv_slid_ms + new_tokens * per_seq
        if sh.experts:  # distinct experts the step's tokens touch, per MoE layer
            touched = 1.0 - sh.miss ** min(new_tokens, 1e6)
            weights += self._expert_read_ms * touched
            compute += new_tokens * self._expert_token_ms + self._expert_half_ms * touched
        if eager:
            core = max(compute, weights + kv)
        else:  # decode: the attention kernels after the GEMMs (__post_init__, _attn_floor_ms)
            attention = (
                new_tokens * self._decode_attn_token_ms
                + attended_pairs * per_pair
                + slid_pairs * per_slid
            )
            kv += self._attn_floor_ms if new_tokens else 0.0
            gemms = compute - attention
            core = (gemms if gemms > weights else weights) + (attention if attention > kv else kv)
        if self._comm:  # checked here: a method call per step costs ~5% of simulation speed
            memo = self._comm_eager if eager else self._comm_decode
            comm = memo.get(new_tokens)
            if comm is None:
                comm = self.allreduce_ms(new_tokens, None, not eager)
                comm += self.stage_hops_ms(new_tokens)
                if len(memo) < _COMM_MEMO:
                    memo[new_tokens] = comm
            return self._with_comm(core, comm) + overhead
        return core + overhead

    def step_parts(
        self, new_tokens: float, attended_pairs: float, kv_read_tokens: float, *, eager: bool
    ) -> StepParts:
        """step_ms by part (StepParts.total == step_ms): for `engine estimate`'s breakdown."""
        sh = self._shape
        window = new_tokens * sh.window
        slid_pairs = min(attended_pairs, window)
        slid_kv = min(kv_read_tokens, window)
        per_token, fixed, per_pair, per_slid, per_seq, overhead = (
            self._prefill_terms if eager else self._decode_terms
        )
        compute = new_tokens * per_token + fixed + attended_pairs * per_pair + slid_pairs * per_slid
        kv = kv_read_tokens * self._kv_full_ms + slid_kv * self._kv_slid_ms + new_tokens * per_seq
        weights = self._weights_ms + (self._floor_ms if new_tokens else 0.0)
        if sh.experts:
            touched = 1.0 - sh.miss ** min(new_tokens, 1e6)
            weights += self._expert_read_ms * touched
            compute += new_tokens * self._expert_token_ms + self._expert_half_ms * touched
        attention = 0.0
        if not eager:  # as step_ms: a decode step's attention kernels apart from the GEMMs
            attention = (
                new_tokens * self._decode_attn_token_ms
                + attended_pairs * per_pair
                + slid_pairs * per_slid
            )
            kv += self._attn_floor_ms if new_tokens else 0.0
            compute -= attention
        comm = 0.0
        if self._comm:
            comm = self.allreduce_ms(new_tokens, None, not eager) + self.stage_hops_ms(new_tokens)
        return StepParts(
            compute, weights, kv, comm, overhead, self.two_batch_overlap, attention, not eager
        )

    def _with_comm(self, core: float, comm: float) -> float:
        """A step's GPU time with its communication: after the kernels, or, with two-batch
        overlap, the two micro-batches' communication and compute interleaved, so only the
        larger of the two shows (SGLang's TBO, DeepSeek's dual micro-batch overlap)."""
        if self.two_batch_overlap:
            return core if core > comm else comm
        return core + comm

    def allreduce_ms(
        self, new_tokens: float, busiest: float | None = None, low_latency: bool = False
    ) -> float:
        """Communication of one step inside a pipeline stage, not overlapped with compute.
        Attention: one ring all-reduce per layer over the tp GPUs of each dp replica, of that
        replica's activations (new_tokens / dp x hidden). MLP: dense layers the same; a MoE
        layer with ep > 1 a dispatch and a combine all-to-all (alltoall_ms), with ep = 1 one
        all-reduce over all tp x dp GPUs of the whole step's activations (dp = 1: over tp).
        `busiest`: the tokens of the replica that holds the most (default new_tokens / dp,
        balanced); its all-reduces and its sends set the step's pace. `low_latency`: a decode
        step's all-to-all (DeepEP's low-latency kernels)."""
        m = self.model
        gpus = self.tp * self.dp
        if gpus <= 1 or self.chip.intra_gbps <= 0:
            return 0.0
        rank = new_tokens / self.dp if busiest is None else busiest
        replica = self._ring_ms(rank, self.tp)
        dense_mlp_layers = m.layers - m.moe_layers
        total = (m.layers + dense_mlp_layers) * replica
        if m.moe_layers:
            if self.ep > 1:
                total += m.moe_layers * self.alltoall_ms(rank * self.dp, low_latency)
            else:
                total += m.moe_layers * self._ring_ms(new_tokens, gpus)
        return total

    def _ring_ms(self, tokens: float, gpus: int) -> float:
        """One all-reduce of tokens x hidden activations over `gpus` GPUs (0 for one): the
        ring's 2(n-1)/n of the message over the bus, or, on chips with measured all-reduce
        kernels, the faster of the engines' one-shot kernel (each GPU reads its n-1 peers'
        whole message: the small messages of decode steps) and two-shot (reduce-scatter and
        all-gather, a fixed cost more: the large ones of prefills). aiconfigurator's TRT-LLM
        all-reduce tables (kernels.toml) at 8 GPUs: a 64-token step of a 4096-wide model takes
        17.6 us where the ring term alone gave 7.7; an 8,192-token one 575 us where it gave 780."""
        if gpus <= 1:
            return 0.0
        chip = self.chip
        message = tokens * self.model.hidden * self.model.dtype_bytes
        ring = 2.0 * (gpus - 1) / gpus * message / (chip.intra_gbps * 1e9) * _MS_PER_S
        if chip.allreduce_oneshot_gbps > 0:
            one = (gpus - 1) * message / (chip.allreduce_oneshot_gbps * 1e9) * _MS_PER_S
            two = chip.allreduce_twoshot_us / 1000.0 + ring
            ring = one if one < two else two
        return chip.allreduce_us / 1000.0 + ring

    def alltoall_ms(self, new_tokens: float, low_latency: bool = False) -> float:
        """Expert parallelism, one MoE layer: dispatch sends each token's activations to the
        GPUs holding its experts, combine brings the results back (DeepEP's kernels). Each of
        the tp x dp GPUs sends its share of the step's tokens, m = new_tokens / (tp x dp).
        A token goes once to each distinct GPU among its k experts' (DeepEP sends per rank, not
        per expert), and across nodes once to each distinct node, where NVLink forwards it
        (DeepEP's internode kernels). With group-limited routing (the model's topk_group, the
        groups placed one per node) its experts lie on at most topk_group nodes. Routing spread
        evenly, k picks among C candidates reach C * (1 - (1 - 1/C)^k) distinct ones:
            gpus  = that over C = min(ep, topk_group x node_gpus) GPUs
            nodes = that over min(nodes, topk_group) nodes; remote = nodes x (nodes-1)/nodes
            per direction: RDMA m x remote copies over each GPU's NIC (scaleout_gbps), NVLink
            m x (gpus x (ep-1)/ep - remote) copies (intra_gbps), at the same time
        `low_latency` (decode steps): DeepEP's low-latency kernels, which decode uses, send a
        token once per expert (their buffers are laid out per local expert) straight to its
        GPU, k x (ep - node_gpus) / ep copies over RDMA and k x (node_gpus - 1) / ep over
        NVLink: no dedup, so group-limited routing saves nothing there.
        Dispatch in dispatch_dtype (fp8 with fp8/fp4 weights), combine in combine_dtype
        (bf16). Time = 2 latencies + the slower link of each direction, times the expert
        imbalance (the busiest GPU receives the most)."""
        if self.ep <= 1:
            return 0.0
        m, chip, sh = self.model, self.chip, self._shape
        per_gpu = new_tokens / (self.tp * self.dp) * m.hidden
        nvlink, remote = sh.ll_copies if low_latency else sh.normal_copies
        latency_us = chip.scaleout_us if remote else chip.allreduce_us
        total = 0.0
        for dtype in (sh.dispatch_bytes, sh.combine_bytes):
            message = per_gpu * dtype
            on = message * nvlink / (chip.intra_gbps * 1e9) if chip.intra_gbps else 0.0
            off = message * remote / (chip.scaleout_gbps * 1e9)
            total += latency_us / 1000.0 + max(on, off) * _MS_PER_S * self.expert_imbalance
        return total

    def stage_hops_ms(self, new_tokens: float) -> float:
        """Pipeline parallelism: the step's activations (new_tokens x hidden) hop from each
        stage to the next, pp - 1 point-to-point sends over the intra-node link."""
        if self.pp <= 1 or self.chip.intra_gbps <= 0:
            return 0.0
        message = new_tokens * self.model.hidden * self.model.dtype_bytes
        send = message / (self.chip.intra_gbps * 1e9) * _MS_PER_S
        return (self.pp - 1) * (self.chip.allreduce_us / 1000.0 + send)

    def prefill_ms(self, total_tokens: float, sum_sq_tokens: float) -> float:
        """A prefill batch of prompts with Σn = total_tokens and Σn² = sum_sq_tokens. With a
        prefix-cache hit rate h the first h·n tokens of each prompt are cached: only (1 - h)·n
        are computed, attending to (n² - (h·n)²) / 2 pairs and reading the cached KV."""
        h = self.prefix_cache_hit
        if h:
            cached = total_tokens * h
            pairs = sum_sq_tokens * (1.0 - h * h) / 2.0
            return self.step_ms(total_tokens - cached, pairs, cached, eager=True)
        return self.step_ms(total_tokens, sum_sq_tokens / 2.0, 0.0, eager=True)

    def prefill_time_ms(self, prompt_tokens: int) -> float:
        """Prefill of a single prompt (with attention DP: on one replica)."""
        if self.dp > 1:
            return self.prefill_batch_ms((prompt_tokens,))
        return self.prefill_ms(prompt_tokens, float(prompt_tokens) ** 2)

    def prefill_batch_ms(self, prompts: Iterable[int]) -> float:
        """A prefill batch of these prompts. With attention DP each prompt runs whole on one
        replica (SGLang, DeepSeek: a request lives on one DP rank), each taken by the replica
        with the fewest tokens so far; the replicas meet at every MoE layer's all-to-all, so
        the busiest replica's attention and dense layers set the step's pace, while the routed
        experts and their weight reads are spread over all tp x dp GPUs. With dp = 1 it is
        prefill_ms of the batch."""
        sizes = [float(n) for n in prompts]
        if self.dp == 1 or not sizes:
            return self.prefill_ms(sum(sizes), sum(n * n for n in sizes))
        return self.prefill_parts(sizes).total

    def prefill_parts(self, prompts: Iterable[float]) -> StepParts:
        """prefill_batch_ms by part (the prefix-cache hit rate applied)."""
        sizes = [float(n) for n in prompts]
        h = self.prefix_cache_hit  # cached tokens: computed neither here nor in attention's pairs
        new = 1.0 - h
        if self.dp == 1:
            total, squares = sum(sizes), sum(n * n for n in sizes)
            pairs = squares * (1.0 - h * h) / 2.0
            return self.step_parts(total * new, pairs, total * h, eager=True)
        total = sum(sizes) * new
        loads = [0.0] * self.dp
        sq_loads = [0.0] * self.dp
        for n in sizes:
            i = loads.index(min(loads))
            loads[i] += n * new
            sq_loads[i] += n * n * (1.0 - h * h)
        per_token, fixed, per_pair, per_slid, _per_seq, overhead = self._prefill_terms
        window = self._shape.window
        busiest, local = 0.0, 0.0  # the slowest replica's tokens and its own compute (ms)
        for tokens, sq in zip(loads, sq_loads, strict=True):
            pairs = sq / 2.0
            slid = min(pairs, tokens * window)
            # node-wide rates are over tp x dp GPUs; one replica has tp of them
            own = self.dp * (tokens * per_token + pairs * per_pair + slid * per_slid)
            if own > local:
                busiest, local = tokens, own
        compute = local + fixed
        sh = self._shape
        weights = self._weights_ms + (self._floor_ms if total else 0.0)
        kv = sum(sizes) * h * self._kv_full_ms  # the cached KV the new tokens attend to
        if sh.experts:
            touched = 1.0 - sh.miss ** min(total, 1e6)
            weights += self._expert_read_ms * touched
            compute += total * self._expert_token_ms + self._expert_half_ms * touched
        comm = 0.0
        if self._comm:
            comm = self.allreduce_ms(total, busiest) + self.stage_hops_ms(busiest)
        return StepParts(compute, weights, kv, comm, overhead, self.two_batch_overlap)

    def decode_step_ms(self, batch: int, context_tokens: float) -> float:
        """One token for each of `batch` sequences holding `context_tokens` KV entries in total.
        With speculative decoding (mtp_acceptance > 0) the time per token a sequence gains:
        the verify step (1 + n query tokens per sequence over the same KV) plus n draft passes
        of one layer's size each (DeepSeek's MTP module is one layer), over the tokens a step
        gains on average, 1 + a + ... + a^n."""
        if self._mtp_gain == 1.0:
            return self.step_ms(batch, context_tokens, context_tokens, eager=False)
        return self.speculative_step_ms(batch, context_tokens) / self._mtp_gain

    def speculative_step_ms(self, batch: int, context_tokens: float) -> float:
        """One verify step of n draft tokens per sequence plus its n draft passes."""
        n = self.mtp_tokens
        queries = 1 + n
        verify = self.step_ms(
            batch * queries, context_tokens * queries, context_tokens, eager=False
        )
        one = self.step_ms(batch, context_tokens, context_tokens, eager=False)
        return verify + n * one / self.model.layers

    @property
    def tokens_per_decode_step(self) -> float:
        """Tokens a sequence gains per decode step: 1, or 1 + a + ... + a^n speculating."""
        return self._mtp_gain

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

    def dp_chunked_step_ms(
        self, batch: int, context_tokens: float, chunks: Iterable[tuple[float, float]]
    ) -> float:
        """A chunked-prefill step with attention DP: `batch` decodes holding `context_tokens`
        KV entries, spread evenly over the dp replicas, plus prompt chunks (tokens, tokens of
        that prompt already prefilled). A request lives on one replica, so each chunk runs whole
        on one, the replica with the fewest new tokens so far; the replicas meet at every MoE
        layer's all-to-all, so the busiest one's attention and dense layers set the step's pace
        while the routed experts, the weight reads and the decodes' KV reads are spread over
        all tp x dp GPUs (as prefill_parts for a prefill batch). Spreading one prompt's tokens
        over every replica, as step_ms does, makes a lone prompt's chunk dp times too fast.
        With dp = 1 it is step_ms of the whole step."""
        chunks = list(chunks)
        chunk_total = sum(c for c, _ in chunks)
        pairs = float(context_tokens) + sum(c * (prior + c / 2.0) for c, prior in chunks)
        kv_read = float(context_tokens) + sum(prior for _, prior in chunks)
        new_tokens = batch + chunk_total
        eager = chunk_total > 0
        if self.dp == 1 or not chunks:
            return self.step_ms(new_tokens, pairs, kv_read, eager=eager)
        loads = [batch / self.dp] * self.dp
        rank_pairs = [float(context_tokens) / self.dp] * self.dp
        for tokens, prior in chunks:
            i = loads.index(min(loads))
            loads[i] += tokens
            rank_pairs[i] += tokens * (prior + tokens / 2.0)
        sh = self._shape
        per_token, fixed, per_pair, per_slid, per_seq, overhead = self._prefill_terms
        busiest, local = 0.0, 0.0  # the slowest replica's tokens and its own compute (ms)
        for tokens, rpairs in zip(loads, rank_pairs, strict=True):
            slid = min(rpairs, tokens * sh.window)
            # node-wide rates are over tp x dp GPUs; one replica has tp of them
            own = self.dp * (tokens * per_token + rpairs * per_pair + slid * per_slid)
            if own > local:
                busiest, local = tokens, own
        compute = local + fixed
        window = new_tokens * sh.window
        slid_kv = kv_read if kv_read < window else window
        memory = self._weights_ms + kv_read * self._kv_full_ms + slid_kv * self._kv_slid_ms
        memory += new_tokens * per_seq + self._floor_ms
        if sh.experts:
            touched = 1.0 - sh.miss ** min(new_tokens, 1e6)
            memory += self._expert_read_ms * touched
            compute += new_tokens * self._expert_token_ms + self._expert_half_ms * touched
        if self._comm:
            comm = self.allreduce_ms(new_tokens, busiest) + self.stage_hops_ms(busiest)
            return self._with_comm(max(compute, memory), comm) + overhead
        return max(compute, memory) + overhead

    def roofline_decode_floor_ms(self) -> float:
        """Weights a batch-1 step reads over raw HBM bandwidth: the fastest a decode step
        could ever be."""
        sh = self._shape
        read = sh.dense_bytes + sh.expert_bytes * sh.experts * (1.0 - sh.miss)
        return read / (self.chip.hbm_tbps * _TB) * _MS_PER_S

    def prefill_compute_ms(self, prompt_tokens: int) -> float:
        """Compute time alone (no weight reads, overhead or communication) of one prefill,
        spread over all the node's GPUs: what any batch's share of the work costs at least
        (with attention DP one prompt alone runs on one replica, prefill_time_ms)."""
        sh, full = self._shape, float(prompt_tokens)
        h = self.prefix_cache_hit
        n = full * (1.0 - h)  # tokens computed; the cached ones are only attended to
        pairs = full * full * (1.0 - h * h) / 2.0
        gemm = self._dense_linear * n + self._dense_half_flops
        experts = self._expert_linear * n
        if sh.experts:
            experts += self._expert_half_flops * (1.0 - sh.miss ** min(n, 1e6))
        attn = (
            sh.prefill_attn_full * pairs
            + sh.prefill_attn_slid * min(pairs, n * sh.window)
            + self._prefill_attn_half * n
        )
        compute = gemm / self._prefill_flops_per_ms + attn / self._prefill_attn_per_ms
        return compute + experts / self._expert_flops_per_ms

    def linear_ms_per_token(self) -> float:
        """Prefill compute per token of the weights' GEMMs alone (no attention): what any step
        costs per token at least."""
        return self._shape.linear_flops / self._prefill_flops_per_ms

    def weights_read_ms(self, new_tokens: float) -> float:
        """Weights one step of `new_tokens` tokens reads per GPU, in ms (no KV)."""
        sh = self._shape
        read = sh.dense_bytes
        if sh.experts:
            read += sh.expert_bytes * sh.experts * (1.0 - sh.miss ** min(new_tokens, 1e6))
        return read / self._hbm_bytes_per_ms

    @property
    def weight_bytes(self) -> float:
        """All weights held by one node (every GPU of every stage): the non-expert weights once
        per attention replica (dp), the routed experts once, at the served precision."""
        m = self.model
        per = self._shape.weight_per_param
        return ((m.params_b * 1e9 - m.routed_params) * self.dp + m.routed_params) * per

    @property
    def kv_bytes_per_token(self) -> float:
        """Bytes one context token costs in the full-attention layers, at the KV precision."""
        return self.model.full_layers * self.model.kv_elems_per_layer * self._shape.kv_per_elem

    @property
    def kv_copies(self) -> int:
        """Copies of each token's KV a dp replica keeps: MLA's latent is not split by heads, so
        each of its tp GPUs holds it whole; GQA splits by KV head, beyond kv_heads GPUs the
        heads are replicated."""
        if self.model.is_mla:
            return self.tp
        return self.tp // min(self.tp, self.model.kv_heads)

    def kv_capacity_tokens(self, gpu_memory_utilization: float = 0.9, max_seqs: int = 0) -> int:
        """KV entries that fit beside the weights in this node's HBM (all tp x dp x pp GPUs),
        each token counted once per copy kept (kv_copies); a sliding-window model first sets
        aside each of `max_seqs` sequences' window in its sliding layers."""
        m = self.model
        gpus = self.tp * self.dp * self.pp
        usable = self.chip.hbm_gb * 1e9 * gpus * gpu_memory_utilization - self.weight_bytes
        if m.sliding_window and max_seqs:
            slid = m.sliding_layers * m.kv_elems_per_layer * self._shape.kv_per_elem
            usable -= max_seqs * m.sliding_window * slid * self.kv_copies
        return max(0, int(usable / (self.kv_bytes_per_token * self.kv_copies)))


@dataclass(frozen=True)
class _StepShape:
    """What a step costs per unit, per GPU of a stage, derived once per NodeCost.

    linear_flops      FLOPs per new token of the weights' GEMMs, scaled to the bf16 peak
                      (fp8 weights on fp8 tensor cores count half)
    *_attn_full/slid  attention FLOPs per attended pair, full and sliding-window layers
    window            the sliding window (tokens; 0: none)
    dense_bytes       non-expert weights each GPU reads every step
    expert_bytes      one routed expert of all MoE layers, per GPU
    experts, miss     E and 1 - k/E: a step of T tokens touches E * (1 - miss^T) experts
    kv_full/slid      KV bytes per GPU per context token read, full / sliding layers
    kv_per_elem, weight_per_param   the served precisions' bytes
    dispatch_bytes    bytes per activation an EP dispatch sends (1 with fp8 / fp4 weights)
    combine_bytes     bytes per activation an EP combine sends back
    normal_copies     (NVLink, RDMA) copies of each token an EP GPU sends per direction,
                      DeepEP's normal kernels (per-GPU and per-node dedup)
    ll_copies         the same for its low-latency (decode) kernels (one per expert)
    """

    linear_flops: float
    prefill_attn_full: float
    prefill_attn_slid: float
    decode_attn_full: float
    decode_attn_slid: float
    window: float
    dense_bytes: float
    expert_bytes: float
    experts: int
    miss: float
    kv_full: float
    kv_slid: float
    kv_per_elem: float
    weight_per_param: float
    dispatch_bytes: float
    combine_bytes: float
    normal_copies: tuple[float, float]
    ll_copies: tuple[float, float]

    @classmethod
    def of(cls, cost: NodeCost) -> _StepShape:
        m, chip = cost.model, cost.chip
        wdtype = cost.weight_dtype or m.weight_dtype
        per_param = WEIGHT_DTYPES[wdtype] if wdtype else float(m.dtype_bytes)
        per_elem = KV_DTYPES[cost.kv_dtype] if cost.kv_dtype else float(m.dtype_bytes)
        speedup = chip.peak_tflops(wdtype or "bf16") / chip.tflops
        prefill_pair, decode_pair = attention_flops_per_pair(m)
        slid_layers = m.layers - m.full_layers
        gpus = cost.tp * cost.dp
        kv_split = cost.dp * (1 if m.is_mla else min(cost.tp, m.kv_heads))
        kv_token = m.kv_elems_per_layer * per_elem / kv_split
        if cost.dispatch_dtype is not None:
            dispatch = KV_DTYPES[cost.dispatch_dtype]
        else:
            dispatch = 1.0 if wdtype in FP8_GEMM_DTYPES else float(m.dtype_bytes)
        combine = KV_DTYPES[cost.combine_dtype] if cost.combine_dtype else float(m.dtype_bytes)
        return cls(
            linear_flops=2.0 * m.active_params / speedup,
            prefill_attn_full=prefill_pair * m.full_layers,
            prefill_attn_slid=prefill_pair * slid_layers,
            decode_attn_full=decode_pair * m.full_layers,
            decode_attn_slid=decode_pair * slid_layers,
            window=float(m.sliding_window or _NO_WINDOW),
            dense_bytes=(m.params_b * 1e9 - m.routed_params) * per_param / cost.tp,
            expert_bytes=m.moe_layers * m.expert_params * per_param / gpus,
            experts=m.experts,
            miss=1.0 - m.active_experts / m.experts if m.experts else 1.0,
            kv_full=kv_token * m.full_layers,
            kv_slid=kv_token * slid_layers,
            kv_per_elem=per_elem,
            weight_per_param=per_param,
            dispatch_bytes=dispatch,
            combine_bytes=combine,
            normal_copies=expert_copies(m, cost.ep, chip.node_gpus),
            ll_copies=expert_copies(m, cost.ep, chip.node_gpus, low_latency=True),
        )


def _distinct(picks: int, among: float) -> float:
    """Expected distinct items when `picks` are drawn evenly among `among` (with repeats)."""
    if among <= 1.0:
        return min(1.0, among)
    return among * (1.0 - (1.0 - 1.0 / among) ** picks)


def expert_copies(
    model: ModelShape, ep: int, node_gpus: int, *, low_latency: bool = False
) -> tuple[float, float]:
    """(NVLink, RDMA) copies of one token an EP GPU sends per direction of a MoE layer's
    all-to-all (NodeCost.alltoall_ms): one per distinct destination GPU other than itself, of
    which one per distinct other node crosses the network and NVLink forwards the rest; with
    `low_latency` one per expert, each straight to its GPU."""
    if ep <= 1 or not model.is_moe:
        return 0.0, 0.0
    k = model.active_experts
    local = min(ep, node_gpus)
    if low_latency:
        return k * (local - 1) / ep, k * (ep - local) / ep
    nodes = ep / local
    limit = model.topk_group if model.topk_group and nodes > model.topk_group else nodes
    gpus = _distinct(k, min(float(ep), limit * local))
    remote = _distinct(k, limit) * (nodes - 1.0) / nodes if nodes > 1 else 0.0
    nvlink = max(0.0, gpus * (ep - 1) / ep - remote)
    return nvlink, remote


def attention_flops_per_pair(model: ModelShape) -> tuple[float, float]:
    """(prefill, decode) attention FLOPs per (query, context token) pair per layer: Q.K^T and
    the weighted sum of V, 2 * heads * (qk_dim + v_dim), from heads x head_dim (not hidden:
    Qwen3-32B has hidden 5120 but 64 x 128 = 8192). MLA prefill attends per head with
    qk_dim = nope + rope and v_head_dim; MLA decode runs "absorbed" in the latent (FlashMLA,
    DeepSeek-V3 report): keys of kv_lora_rank + rope and values of kv_lora_rank per head."""
    m = model
    if m.is_mla:
        qk = (m.qk_nope_head_dim or m.head_dim) + m.qk_rope_head_dim
        v = m.v_head_dim or m.head_dim
        prefill = 2.0 * m.heads * (qk + v)
        decode = 2.0 * m.heads * (m.kv_lora_rank + m.qk_rope_head_dim + m.kv_lora_rank)
        return prefill, decode
    pair = 4.0 * m.heads * m.head_dim
    return pair, pair


def kv_streams(
    prefill: NodeGroup, decode: NodeGroup, model: ModelShape | int, nics: int | None = None
) -> int:
    """Rails one request's KV moves over at once. Each prefill GPU holds the KV of its own heads
    (TP; beyond kv_heads the heads are replicated, not split further) and of its own layers
    (PP), and sends that shard over its own NIC; the receiving side has as many GPUs, each with
    its own NIC. So: min(nics, min(tp_p, kvh) * pp_p, min(tp_d, kvh) * pp_d). With pp = 1 this is
    min(nics, tp_p, tp_d, kvh). A request lives in one attention-DP replica, so dp adds no rails.
    MLA's latent is not split by heads (every TP GPU holds the same copy): one copy crosses, one
    GPU per pipeline stage sends it, min(nics, pp_p, pp_d). `model` may be the KV head count
    (a GQA model). Without `nics`, the GPUs' limit alone (the link caps it later)."""
    if isinstance(model, int):
        kv_heads, mla = model, False
    else:
        kv_heads, mla = model.kv_heads, model.is_mla
    width = 1 if mla else kv_heads
    senders = min(prefill.tp, width) * prefill.pp
    receivers = min(decode.tp, width) * decode.pp
    return max(1, min(senders, receivers) if nics is None else min(nics, senders, receivers))


def kv_bytes(model: ModelShape, tokens: int, kv_dtype: str | None = None) -> int:
    """Bytes of one request's KV cache for `tokens` tokens at `kv_dtype` (None: the model's
    dtype_bytes), one copy: what crosses the link. Full-attention layers keep every token
    (GQA: K and V of the KV heads; MLA: one latent + rope key per layer), sliding-window
    layers at most the window."""
    per_elem = KV_DTYPES[kv_dtype] if kv_dtype else float(model.dtype_bytes)
    per_layer = model.kv_elems_per_layer * per_elem
    slid = min(tokens, model.sliding_window) * (model.layers - model.full_layers)
    return int(per_layer * (tokens * model.full_layers + slid))


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
