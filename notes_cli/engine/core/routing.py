"""Least-expected-latency routing across several prefill / decode nodes (as LMDeploy's proxy
`--routing-strategy min_expected_latency`). Estimates use the cost model and each node's
current backlog; ties go to the first node, so routing is deterministic."""

from __future__ import annotations

from collections.abc import Sequence

from notes_cli.engine.core.workers import SchedRequest, Worker


def pick_prefill_node(pool: Sequence[Worker], request: SchedRequest, now: float) -> Worker:
    """The prefill (or colocated) node expected to start this prompt soonest."""
    if len(pool) == 1:
        return pool[0]
    return min(pool, key=lambda w: prefill_wait_ms(w, request.input_tokens, now))


def prefill_wait_ms(w: Worker, prompt_tokens: int, now: float) -> float:
    """Rest of the step in flight plus prefilling everything queued and this prompt."""
    n = prompt_tokens
    busy = max(0.0, w.busy_until - now) if w.busy else 0.0
    wait = w.cost.prefill_ms(w.queued_tokens + n, w.queued_sq + n * n)
    if w.role != "prefill":  # colocated / chunked: the node's decode batch shares it
        wait += w.cost.decode_step_ms(len(w.running) + 1, w.context + n)
        if not w.kv_fits(w.queued_tokens + n):
            wait *= 2.0
    return busy + wait


def pick_decode_node(pool: Sequence[Worker], request: SchedRequest, kv_bytes: int) -> Worker:
    """The decode node expected to produce this request's tokens soonest."""
    if len(pool) == 1:
        return pool[0]
    return min(pool, key=lambda w: decode_expected_ms(w, request, kv_bytes))


def decode_expected_ms(w: Worker, request: SchedRequest, kv_bytes: int) -> float:
    """KV transfer (sharing the link with transfers already heading there) plus a decode step
    with the batch this node will have, stretched when memory or batch slots are short."""
    assert w.link is not None
    transfer = w.link.estimate_ms(kv_bytes, w.incoming)
    batch = len(w.running) + len(w.ready) + len(w.pending) + w.incoming + 1
    step = w.cost.decode_step_ms(min(batch, w.max_batch), w.context + request.input_tokens)
    if not w.kv_fits(w.pending_kv + request.kv_need) or batch > w.max_batch:
        step *= 1 + len(w.pending) + max(0, batch - w.max_batch)
    return transfer + step
