"""Turn a finished request's timestamps into the RequestRecord users and metrics see."""

from __future__ import annotations

from notes_cli.engine.core.api import RequestRecord
from notes_cli.engine.core.workers import SchedRequest, Worker, gap_max


def build_record(
    r: SchedRequest, w: Worker, now: float, mode: str, overhead_ms: float, *, keep_gaps: bool
) -> RequestRecord:
    """`r` produced its last token on decode node `w` at `now`. The first token comes from the
    prefill pass; the queue time is what is left of TTFT after the fixed overhead, prefill and
    transfer, so the parts always add up. Inter-token gaps: the wait from the first token to the
    first decode step, then the node's per-step gap history (a slice, no per-token work)."""
    n = r.output_tokens + r.carried  # an evicted request folded its tokens into its prompt
    ttft = r.first_token_ms - r.arrival_ms
    prefill = r.prefill_end_ms - r.prefill_start_ms
    transfer = r.transfer_end_ms - r.transfer_start_ms
    decode = now - r.first_token_ms
    gaps: list[float] = []
    largest = 0.0
    lo, hi = r.join_emit + 1, r.finish_emit
    if n > 1 and not keep_gaps and w.gaps_base <= lo <= hi <= w.emit:
        largest = r.first_step_ms  # the largest gap without copying the history (gap_max)
        top = gap_max(w, lo, hi)
        if top > largest:
            largest = top
        if r.carried and r.stall_ms > largest:
            largest = r.stall_ms
    elif n > 1:
        gaps = [r.first_step_ms]
        gaps += w.gaps[lo - w.gaps_base : hi + 1 - w.gaps_base]
        if r.carried:  # the wait from its last token before the eviction to the next one
            gaps.append(r.stall_ms)
        largest = max(gaps)
    return RequestRecord(
        request_id=r.request_id,
        arrival_ms=r.arrival_ms,
        input_tokens=r.input_tokens - r.carried,
        output_tokens=n,
        queue_ms=max(0.0, ttft - overhead_ms - prefill - transfer),
        prefill_ms=prefill,
        transfer_ms=transfer,
        decode_ms=decode,
        ttft_ms=ttft,
        tpot_ms=decode / (n - 1) if n > 1 else 0.0,
        e2e_ms=now - r.arrival_ms,
        max_itl_ms=largest,
        itl_sum_ms=decode,
        itl_count=n - 1,
        transfer_bytes=r.transfer_bytes,
        transfer_overlap_ms=r.transfer_overlap_ms,
        overhead_ms=overhead_ms,
        prefill_node=r.prefill_worker.name if r.prefill_worker else w.name,
        decode_node=w.name,
        mode=mode,
        itl_ms=tuple(gaps) if keep_gaps else (),
    )
