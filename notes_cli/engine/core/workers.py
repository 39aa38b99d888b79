"""The scheduler's bookkeeping objects: one request in flight and one node.

Plain classes with __slots__: the simulator creates one `SchedRequest` per request and nothing per
token, so a decode step costs O(1) plus O(requests joining or finishing).
"""

from __future__ import annotations

from collections import deque
from typing import Any

from notes_cli.engine.core.costmodel import NodeCost
from notes_cli.engine.core.links import LinkChannel


class SchedRequest:
    """A request as the scheduler sees it: sizes, where it runs and when each phase happened."""

    __slots__ = (
        "request_id", "arrival_ms", "input_tokens", "output_tokens", "cancelled",
        "prefill_worker", "decode_worker", "prefill_start_ms", "prefill_end_ms",
        "transfer_start_ms", "transfer_end_ms", "transfer_bytes", "first_token_ms",
        "first_step_ms", "transfer_overlap_ms", "join_emit", "finish_emit", "prefilled", "started",
        "kv_admitted", "carried", "stalled_at_ms", "stall_ms",
    )  # fmt: skip

    def __init__(
        self,
        request_id: str,
        arrival_ms: float,
        input_tokens: int,
        output_tokens: int,
    ) -> None:
        self.request_id = request_id
        self.arrival_ms = arrival_ms
        self.input_tokens = max(1, input_tokens)
        self.output_tokens = max(1, output_tokens)
        self.cancelled = False
        self.prefill_worker: Worker | None = None
        self.decode_worker: Worker | None = None
        self.prefill_start_ms = 0.0
        self.prefill_end_ms = 0.0
        self.transfer_start_ms = 0.0
        self.transfer_end_ms = 0.0
        self.transfer_bytes = 0
        self.first_token_ms = 0.0
        self.first_step_ms = 0.0
        self.transfer_overlap_ms = 0.0  # link time hidden under the prefill (layer-wise)
        self.join_emit = 0  # index of the decode step that emits this request's first token
        self.finish_emit = 0  # ... and its last
        self.prefilled = 0  # prompt tokens prefilled so far (chunked mode)
        self.started = False  # has produced its first token
        self.kv_admitted = 0  # KV entries taken when it was admitted (prompt, or prompt + output)
        # Preemption (incremental KV): tokens produced before it was evicted, folded into
        # input_tokens (it is prefilled again over them) and taken off output_tokens.
        self.carried = 0
        self.stalled_at_ms = 0.0  # its last token before the eviction
        self.stall_ms = 0.0  # the longest gap an eviction caused

    @property
    def kv_need(self) -> int:
        """KV entries reserved for the whole request (prompt plus every output token)."""
        return self.input_tokens + self.output_tokens


class Worker:
    """One node. `role` is "prefill" or "decode" (disagg), "colocated" or "chunked"."""

    __slots__ = (
        "name", "role", "chip", "tp", "cost", "max_batch", "kv_capacity", "kv_used",
        "prefill_budget", "chunk_tokens", "queue", "queued_tokens", "queued_sq", "pending",
        "pending_kv", "ready", "prefilling", "running", "context", "busy", "busy_until",
        "step_start", "current", "chunks", "joiners", "emit", "last_emit_ms", "gaps",
        "gaps_base", "finish_at", "link", "incoming", "steps", "to_remove", "kv_incremental",
        "step_fixed_ms", "seq_step_ms", "seq_exponent", "preemptions", "split_prompts",
        "cpu_overlap", "gap_blocks", "gap_blocks_base",
    )  # fmt: skip

    def __init__(
        self,
        name: str,
        role: str,
        chip: str,
        tp: int,
        cost: NodeCost,
        *,
        max_batch: int,
        kv_capacity: int,
        prefill_budget: int,
        chunk_tokens: int,
        kv_incremental: bool = False,
        step_cpu_ms: tuple[float, float] = (0.0, 0.0),
        seq_exponent: float = 1.0,
        split_prompts: bool = True,
        cpu_overlap: bool = False,
    ) -> None:
        self.name = name
        self.role = role
        self.chip = chip
        self.tp = tp
        self.cost = cost
        self.max_batch = max_batch
        self.kv_capacity = kv_capacity
        self.kv_used = 0
        self.prefill_budget = prefill_budget
        self.chunk_tokens = chunk_tokens
        self.queue: deque[SchedRequest] = deque()  # waiting for prefill
        self.queued_tokens = 0
        self.queued_sq = 0.0
        self.pending: deque[SchedRequest] = deque()  # prefilled, waiting for KV memory here
        self.pending_kv = 0
        self.ready: deque[SchedRequest] = deque()  # KV in place, waiting for a batch slot
        self.prefilling: deque[SchedRequest] = deque()  # chunked: prompt partly prefilled
        self.running: dict[SchedRequest, None] = {}  # decoding (insertion-ordered set)
        self.context = 0  # KV entries the running batch reads every decode step
        self.busy = False
        self.busy_until = 0.0
        self.step_start = 0.0
        self.current: list[SchedRequest] = []  # the prefill batch in flight
        self.chunks: list[tuple[SchedRequest, int]] = []  # chunked: prompt chunks in flight
        self.joiners: list[SchedRequest] = []  # requests whose first token this step emits
        self.emit = 0  # decode steps that emitted tokens so far
        self.last_emit_ms = 0.0
        self.gaps: list[float] = []  # gaps[i - gaps_base] = time between emissions i-1 and i
        self.gaps_base = 1
        # the largest gap of each GAP_BLOCK emissions (block b: emissions b x GAP_BLOCK on),
        # gap_blocks[b - gap_blocks_base]: a record's largest gap without a scan (gap_max)
        self.gap_blocks: list[float] = []
        self.gap_blocks_base = 0
        self.finish_at: dict[int, list[SchedRequest]] = {}
        self.link: LinkChannel | None = None  # ingress link of a decode node
        self.incoming = 0  # KV transfers under way to this node
        self.steps = 0
        self.to_remove: list[SchedRequest] = []  # cancelled while decoding
        self.kv_incremental = kv_incremental  # KV grows as tokens are produced (paged)
        # the engine's CPU time in a step (scheduling, sampling, detokenising, streaming): fixed ms,
        # plus ms per sequence in the step; on the step's critical path
        self.step_fixed_ms, self.seq_step_ms = step_cpu_ms
        self.seq_exponent = seq_exponent  # n sequences cost seq_step_ms x n ** seq_exponent
        self.preemptions = 0
        self.split_prompts = split_prompts  # chunked: cut a prompt across steps
        self.cpu_overlap = cpu_overlap  # the CPU work runs under the GPU's next step

    def step_duration(self, gpu_ms: float, sequences: int) -> float:
        """A step's time: the GPU's plus the engine's CPU time, or the larger of the two when
        the engine overlaps them."""
        n = sequences if self.seq_exponent == 1.0 else sequences**self.seq_exponent
        cpu = self.step_fixed_ms + self.seq_step_ms * n
        if self.cpu_overlap:
            return gpu_ms if gpu_ms > cpu else cpu
        return gpu_ms + cpu

    def admit_kv(self, request: SchedRequest) -> int:
        """KV entries `request` takes when admitted: its prompt (incremental) or its prompt and
        every output token (reserved in full)."""
        return request.input_tokens if self.kv_incremental else request.kv_need

    def kv_admits(self, need: int) -> bool:
        """Room to admit a request taking `need` entries. Paged KV also keeps one step's growth
        of the running sequences free, so an admission does not force an eviction next step."""
        return self.kv_fits(need + len(self.running) if self.kv_incremental else need)

    def kv_held(self, request: SchedRequest) -> int:
        """KV entries a running request holds now (incremental: one more per decode step)."""
        if not self.kv_incremental:
            return request.kv_admitted
        return request.kv_admitted + max(0, self.emit - request.join_emit + 1)

    def kv_fits(self, need: int) -> bool:
        """Room for `need` more KV entries; an empty node takes anything (no deadlock)."""
        return self.kv_used + need <= self.kv_capacity or self.kv_used == 0

    def state(self) -> dict[str, Any]:
        """This node for GET /engine/state."""
        waiting = len(self.queue) + len(self.pending) + len(self.ready) + len(self.prefilling)
        return {
            "name": self.name,
            "role": self.role,
            "chip": self.chip,
            "tp": self.tp,
            "queue": waiting,
            "batch_size": len(self.running),
            "kv_used_tokens": self.kv_used,
            "kv_capacity_tokens": self.kv_capacity,
            "kv_usage": round(self.kv_used / self.kv_capacity, 4) if self.kv_capacity else 0.0,
            "busy": self.busy,
            "steps": self.steps,
            "preemptions": self.preemptions,
            "transfers_in_flight": self.incoming,
        }


GAP_BLOCK = 64  # emissions per block of Worker.gap_blocks


def gap_max(w: Worker, lo: int, hi: int) -> float:
    """The largest gap of emissions lo..hi (inclusive, lo <= hi, all still in w's history): the
    blocks wholly inside from gap_blocks, the ends scanned. A record's largest gap scanned its
    whole slice before, 1,024 gaps a request: this cut a planner run's CPU by 14 % (Llama-3.1-8B
    with 1,024-token answers, 15.4 -> 13.2 s, the same plan; docs/benchmarks/planner.md)."""
    gaps, base = w.gaps, w.gaps_base
    first, last = -(-lo // GAP_BLOCK), (hi + 1) // GAP_BLOCK - 1  # blocks wholly inside
    if last < first:
        return max(gaps[lo - base : hi + 1 - base])
    blocks = w.gap_blocks[first - w.gap_blocks_base : last + 1 - w.gap_blocks_base]
    best = max(blocks)
    head = gaps[lo - base : first * GAP_BLOCK - base]
    tail = gaps[(last + 1) * GAP_BLOCK - base : hi + 1 - base]
    for part in (head, tail):
        if part:
            top = max(part)
            if top > best:
                best = top
    return best
