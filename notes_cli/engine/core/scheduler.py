"""The engine's scheduler: one discrete-event implementation shared by the live server and the
simulator. It never reads a clock: the driver feeds it events in time order (`run_until`) and
submits arrivals at the current time, so the same code runs against a scaled wall clock
(service.py) or a virtual one (simcore.py).

Modes (docs/engine-model.md):
- disagg: prefill nodes batch prompts FCFS up to a token budget; each prefilled request reserves KV
  memory on a decode node (waiting while it is full), its KV moves over the node's shared link,
  then it joins continuous (iteration-level) batching up to max_batch.
- colocated: each node prefills (prefill first, as vLLM's default scheduler does) and decodes; a
  prefill step delays every decoding request's next token.
- chunked: Sarathi-style; each step carries every decoding sequence plus prompt chunks up to
  `chunk_tokens`, so a long prompt costs decoders a little on many steps instead of a lot on one.

A deployment's backend (backends.py) adds the engine's CPU time to every step and may page KV on
colocated and chunked nodes: entries are taken as tokens are produced and, when memory runs out,
the most recently admitted request is evicted and prefilled again later (`_make_room`).
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable, Iterable
from typing import Any

from notes_cli.engine.core.api import RequestRecord, StepStats
from notes_cli.engine.core.costmodel import NodeCost, kv_bytes, kv_streams
from notes_cli.engine.core.links import LinkChannel
from notes_cli.engine.core.profiles import Catalog, Deployment
from notes_cli.engine.core.records import build_record
from notes_cli.engine.core.routing import pick_decode_node, pick_prefill_node
from notes_cli.engine.core.workers import GAP_BLOCK, SchedRequest, Worker

Event = tuple[float, int, Callable[[Any, float], None], Any]
_GAP_TRIM = 4096  # keep per-node gap history bounded (only running requests need it)


class Scheduler:
    """Discrete-event scheduler for one deployment. Hooks (all optional):

    on_finish(request, record)    a request produced its last token
    on_tokens(requests, t)        each of `requests` produced one more token at time t (live only)
    on_step(stats)                a node started a step
    """

    def __init__(
        self,
        deployment: Deployment,
        catalog: Catalog,
        *,
        keep_gaps: bool = False,
        link_fallback: bool = False,
    ) -> None:
        self.deployment = deployment
        self.mode = deployment.mode
        self.model = catalog.models[deployment.model]
        self.keep_gaps = keep_gaps
        self.overhead_ms = deployment.overhead_ms
        self._first_released = False  # a first token was released by the last event
        self._links = (catalog.links[deployment.link], catalog.links[deployment.fallback_link])
        self.link_fallback = link_fallback
        self._heap: list[Event] = []
        self._seq = itertools.count()
        self.now = 0.0
        self.on_finish: Callable[[SchedRequest, RequestRecord], None] | None = None
        self.on_tokens: Callable[[Iterable[SchedRequest], float], None] | None = None
        self.on_step: Callable[[StepStats], None] | None = None
        self.waiting = 0  # submitted, not yet producing tokens
        self.completed = 0
        self.prefill_workers: list[Worker] = []
        self.decode_workers: list[Worker] = []
        self.workers: list[Worker] = []
        self._build_workers(catalog)

    # ---- construction -------------------------------------------------------------------
    def _build_workers(self, catalog: Catalog) -> None:
        dep = self.deployment
        for role, group in dep.worker_groups():
            chip = catalog.chips[group.chip]
            if dep.prefill_mfu is not None:
                chip = chip.with_constant_mfu(dep.prefill_mfu)
            cost = NodeCost.for_group(self.model, chip, group, dep)
            capacity = dep.kv_capacity_tokens or cost.kv_capacity_tokens(
                dep.gpu_memory_utilization, dep.max_batch
            )
            kind = role if role != "colocated" else ("chunked" if self.mode == "chunked" else role)
            # Paged KV grows with each token on nodes that both prefill and decode; a decode node
            # of a PD pair keeps reserving in full (an eviction there would need the KV again).
            incremental = dep.kv_allocation == "incremental" and role == "colocated"
            prefix = {"prefill": "prefill", "decode": "decode"}.get(role, "node")
            # Each attention-DP replica has its own scheduler process and samples, detokenises
            # and streams only its own sequences, all replicas at once: per-sequence CPU time
            # is charged per replica (batch / dp), the fixed step cost once.
            fixed_cpu, seq_cpu = dep.step_cpu_ms
            step_cpu = (fixed_cpu, seq_cpu / group.dp**dep.seq_exponent)
            for _ in range(group.count):
                index = sum(1 for w in self.workers if w.name.startswith(prefix + "-"))
                worker = Worker(
                    f"{prefix}-{index}",
                    kind,
                    group.chip,
                    group.tp,
                    cost,
                    max_batch=dep.max_batch,
                    kv_capacity=capacity,
                    prefill_budget=dep.prefill_token_budget,
                    chunk_tokens=dep.chunk_tokens,
                    kv_incremental=incremental,
                    step_cpu_ms=step_cpu,
                    seq_exponent=dep.seq_exponent,
                    split_prompts=dep.split_prompts,
                    cpu_overlap=dep.cpu_overlap,
                )
                if role == "decode":
                    assert dep.prefill is not None
                    worker.link = LinkChannel(
                        f"link->{worker.name}",
                        self.link_profile,
                        self._push,
                        self._transfer_done,
                        # the GPUs' limit on rails; the link's `nics` caps it further
                        max_streams=kv_streams(dep.prefill, group, self.model),
                    )
                    self.decode_workers.append(worker)
                else:
                    self.prefill_workers.append(worker)
                self.workers.append(worker)

    @property
    def link_profile(self) -> Any:
        return self._links[1] if self.link_fallback else self._links[0]

    def set_link_fallback(self, enabled: bool) -> None:
        """Silently move every KV link to the TCP fallback profile (or back to the preset's)."""
        self.link_fallback = enabled
        for worker in self.decode_workers:
            assert worker.link is not None
            worker.link.use(self.link_profile, self.now)

    # ---- driving ------------------------------------------------------------------------
    def _push(self, at_ms: float, fn: Callable[[Any, float], None], arg: Any) -> None:
        heapq.heappush(self._heap, (at_ms, next(self._seq), fn, arg))

    def submit(self, request: SchedRequest, at_ms: float) -> None:
        """Queue an arrival at `at_ms` (processed in time order by run_until); an arrival in
        the past arrives now."""
        self.waiting += 1
        request.arrival_ms = max(at_ms, self.now)
        self._push(request.arrival_ms + self.overhead_ms, self._arrive, request)

    def arrive_now(self, request: SchedRequest, at_ms: float) -> None:
        """Process an arrival at `at_ms` straight away, as the GPUs see it `overhead_ms` later;
        the caller guarantees no event earlier than at_ms + overhead_ms is pending. (No heap
        event for the overhead: the simulator's hot path stays one call per arrival.)"""
        self.waiting += 1
        self.now = max(self.now, at_ms + self.overhead_ms)
        request.arrival_ms = self.now - self.overhead_ms
        self._arrive(request, self.now)

    def next_event_time(self) -> float | None:
        return self._heap[0][0] if self._heap else None

    def step(self) -> None:
        """Process the next event."""
        at, _, fn, arg = heapq.heappop(self._heap)
        if at > self.now:
            self.now = at
        fn(arg, self.now)

    def run_until(self, t_ms: float) -> None:
        """Process every event due at or before `t_ms`."""
        heap = self._heap
        while heap and heap[0][0] <= t_ms:
            self.step()
        if t_ms > self.now:
            self.now = t_ms

    def next_release_time(self) -> float | None:
        """When the earliest step in flight that gives running requests a token ends."""
        ends = [w.busy_until for w in self.workers if w.busy and w.running and not w.current]
        return min(ends, default=None)

    def catch_up(self, t_ms: float, max_lag_ms: float) -> float:
        """As run_until(t_ms), but stop at a token step that ended more than `max_lag_ms`
        before `t_ms`: its tokens are released then, and the time returned is that step's end
        (the live driver holds its clock there). Returns `t_ms` when nothing was that late.
        A prefill or transfer that releases a first token is held the same way. Other late
        events (an arrival, a transfer start) are simply processed at their own time: they
        release nothing, so being late changes nothing a client sees."""
        heap = self._heap
        while heap and heap[0][0] <= t_ms:
            release = self.next_release_time()
            if release is not None and t_ms - release > max_lag_ms:
                self.run_until(release)
                return release
            self._first_released = False
            self.step()
            if self._first_released and t_ms - self.now > max_lag_ms:
                self.run_until(self.now)
                return self.now
        if t_ms > self.now:
            self.now = t_ms
        return t_ms

    def cancel(self, request: SchedRequest) -> None:
        """Drop a request (its client went away); its memory is released at the next step."""
        if request.cancelled:
            return
        request.cancelled = True
        if not request.started:
            self.waiting -= 1
        worker = request.decode_worker
        if worker is not None and request in worker.running:
            worker.to_remove.append(request)

    # ---- arrival and prefill ------------------------------------------------------------
    def _arrive(self, request: SchedRequest, now: float) -> None:
        if request.cancelled:
            return
        worker = pick_prefill_node(self.prefill_workers, request, now)
        request.prefill_worker = worker
        worker.queue.append(request)
        worker.queued_tokens += request.input_tokens
        worker.queued_sq += float(request.input_tokens) ** 2
        self._wake(worker, now)

    def _wake(self, w: Worker, now: float) -> None:
        """Start an idle node's next step once every event due now has been seen, so that
        requests arriving at the same instant share a batch."""
        if not w.busy:
            w.busy = True
            w.busy_until = now
            self._push(now, self._start_iteration, w)

    def _take_prefill_batch(self, w: Worker, reserve_kv: bool) -> list[SchedRequest]:
        """FCFS prompts up to the token budget (at least one); colocated nodes reserve KV."""
        batch: list[SchedRequest] = []
        tokens = 0
        while w.queue:
            head = w.queue[0]
            if head.cancelled:
                self._dequeue(w)
                continue
            if batch and tokens + head.input_tokens > w.prefill_budget:
                break
            if reserve_kv:
                room = len(w.running) + len(w.ready) + len(batch) < w.max_batch
                need = w.admit_kv(head)
                if not room or not w.kv_admits(need):
                    break
                w.kv_used += need
                head.kv_admitted = need
            self._dequeue(w)
            batch.append(head)
            tokens += head.input_tokens
        return batch

    def _dequeue(self, w: Worker) -> SchedRequest:
        request = w.queue.popleft()
        w.queued_tokens -= request.input_tokens
        w.queued_sq -= float(request.input_tokens) ** 2
        return request

    def _start_iteration(self, w: Worker, now: float) -> None:
        if w.role == "prefill":
            self._start_prefill(w, now, reserve_kv=False)
        elif w.role == "decode":
            self._start_decode(w, now)
        elif w.role == "colocated":
            if not self._start_prefill(w, now, reserve_kv=True):
                self._start_decode(w, now)
        else:
            self._start_chunked(w, now)

    def _start_prefill(self, w: Worker, now: float, *, reserve_kv: bool) -> bool:
        batch = self._take_prefill_batch(w, reserve_kv)
        if not batch:
            w.busy = False
            return False
        total = sum(r.input_tokens for r in batch)
        squares = sum(float(r.input_tokens) ** 2 for r in batch)
        if w.cost.dp == 1:
            gpu_ms = w.cost.prefill_ms(total, squares)
        else:  # attention DP: each prompt on one replica, the busiest one sets the pace
            gpu_ms = w.cost.prefill_batch_ms(r.input_tokens for r in batch)
        duration = w.step_duration(gpu_ms, len(batch))
        for request in batch:
            if not request.carried:  # an evicted request keeps its first prefill's times
                request.prefill_start_ms = now
        w.current = batch
        self._begin_step(w, now, duration, "prefill", len(batch), total)
        self._push(now + duration, self._prefill_done, w)
        return True

    def _prefill_done(self, w: Worker, now: float) -> None:
        batch, w.current = w.current, []
        touched: list[Worker] = []
        for request in batch:
            if not request.carried:
                request.prefill_end_ms = now
            if w.role == "colocated":
                if not request.carried:
                    request.transfer_start_ms = request.transfer_end_ms = now
                request.decode_worker = w
                if request.cancelled:
                    w.kv_used -= request.kv_admitted
                elif self._first_token(request, w, now):
                    w.ready.append(request)
                continue
            if request.cancelled:
                continue
            size = kv_bytes(self.model, request.input_tokens, self.deployment.kv_dtype)
            decode = pick_decode_node(self.decode_workers, request, size)
            request.decode_worker = decode
            decode.pending.append(request)
            decode.pending_kv += request.kv_need
            if decode not in touched:
                touched.append(decode)
        for decode in touched:
            self._start_transfers(decode, now)
        self._start_iteration(w, now)

    # ---- KV transfer --------------------------------------------------------------------
    def _start_transfers(self, d: Worker, now: float) -> None:
        """Reserve KV memory FCFS; each request whose memory is reserved starts moving its KV."""
        assert d.link is not None
        while d.pending:
            head = d.pending[0]
            if head.cancelled:
                d.pending.popleft()
                d.pending_kv -= head.kv_need
                continue
            if not d.kv_fits(head.kv_need):
                break
            d.pending.popleft()
            d.pending_kv -= head.kv_need
            d.kv_used += head.kv_need
            head.kv_admitted = head.kv_need
            head.transfer_start_ms = now
            head.transfer_bytes = kv_bytes(self.model, head.input_tokens, self.deployment.kv_dtype)
            d.incoming += 1
            visible = None
            if self.deployment.layerwise_transfer and now == head.prefill_end_ms:
                # Layer-wise only when decode memory was free as the prefill ended; a request
                # that waited for memory moves its KV whole (the prefill kept it meanwhile).
                prefill = head.prefill_end_ms - head.prefill_start_ms
                visible, head.transfer_overlap_ms = d.link.layerwise_split_ms(
                    head.transfer_bytes, self.model.layers, prefill
                )
            d.link.start(head, head.transfer_bytes, now, visible)

    def _transfer_done(self, request: SchedRequest, now: float) -> None:
        d = request.decode_worker
        assert d is not None
        d.incoming -= 1
        request.transfer_end_ms = now
        if request.cancelled:
            d.kv_used -= request.kv_admitted
            self._start_transfers(d, now)
            return
        if self._first_token(request, d, now):
            d.ready.append(request)
            self._wake(d, now)
        else:
            self._start_transfers(d, now)

    def _first_token(self, request: SchedRequest, w: Worker, now: float) -> bool:
        """The prefill pass produced the request's first token, as real engines emit it; in
        disagg mode the client gets it from the decode node once the KV is there. Returns
        whether the request needs decode steps (a one-token answer is finished now)."""
        self._first_released = True
        if request.carried:  # prefilled again after an eviction: its next token, not its first
            request.stall_ms = max(request.stall_ms, now - request.stalled_at_ms)
        else:
            request.first_token_ms = now
            request.started = True
            if not request.cancelled:  # cancel() already took a waiting request off the count
                self.waiting -= 1
        if self.on_tokens is not None:
            self.on_tokens((request,), now)
        if request.output_tokens > 1:
            return True
        w.kv_used -= request.kv_admitted
        self._finish(request, w, now)
        return False

    def _finish(self, request: SchedRequest, w: Worker, now: float) -> None:
        self.completed += 1
        if self.on_finish is not None:
            record = build_record(
                request, w, now, self.mode, self.overhead_ms, keep_gaps=self.keep_gaps
            )
            self.on_finish(request, record)

    # ---- decode ---------------------------------------------------------------------------
    def _join_ready(self, w: Worker) -> None:
        while w.ready and len(w.running) < w.max_batch:
            request = w.ready.popleft()
            if request.cancelled:
                w.kv_used -= request.kv_admitted
                continue
            w.running[request] = None
            w.context += request.input_tokens + 1  # the prompt and the prefill's token
            request.join_emit = w.emit + 1
            request.finish_emit = w.emit + request.output_tokens - 1
            w.finish_at.setdefault(request.finish_emit, []).append(request)
            w.joiners.append(request)

    def _start_decode(self, w: Worker, now: float) -> None:
        self._join_ready(w)
        if w.kv_incremental:
            self._make_room(w)
        if not w.running:
            w.busy = False
            return
        batch = len(w.running)
        # the engine's CPU time (inlined: this runs for every simulated step)
        gpu_ms = w.cost.decode_step_ms(batch, w.context)
        # inlined Worker.step_duration: hot path
        seqs = batch if w.seq_exponent == 1.0 else batch**w.seq_exponent
        cpu_ms = w.step_fixed_ms + w.seq_step_ms * seqs
        duration = (gpu_ms if gpu_ms > cpu_ms else cpu_ms) if w.cpu_overlap else gpu_ms + cpu_ms
        self._begin_step(w, now, duration, "decode", batch, batch)
        self._push(now + duration, self._decode_done, w)

    def _decode_done(self, w: Worker, now: float) -> None:
        self._emit(w, now)
        if w.role == "decode":
            self._start_transfers(w, now)
        self._start_iteration(w, now)

    def _begin_step(
        self, w: Worker, now: float, duration: float, phase: str, batch: int, tokens: int
    ) -> None:
        w.busy = True
        w.busy_until = now + duration
        w.step_start = now
        w.steps += 1
        if self.on_step is not None:
            stats = StepStats(w.name, phase, now, duration, batch, tokens, w.kv_used, w.kv_capacity)
            self.on_step(stats)

    def _emit(self, w: Worker, now: float) -> None:
        """The decode step in flight on `w` ends: every running sequence gains one token."""
        w.emit += 1
        gap = now - w.last_emit_ms
        w.gaps.append(gap)
        block = w.emit // GAP_BLOCK - w.gap_blocks_base  # the gap's block maximum (gap_max)
        if block == len(w.gap_blocks):
            w.gap_blocks.append(gap)
        elif gap > w.gap_blocks[block]:
            w.gap_blocks[block] = gap
        w.last_emit_ms = now
        if w.joiners:
            for request in w.joiners:
                if not request.carried:
                    request.first_step_ms = now - request.first_token_ms  # gap to the 2nd token
            w.joiners.clear()
        w.context += len(w.running)
        if w.kv_incremental:
            w.kv_used += len(w.running)  # each sequence's new token takes a KV entry
        if self.on_tokens is not None:
            self.on_tokens(w.running, now)
        done = w.finish_at.pop(w.emit, None)
        if done:
            for request in done:
                w.kv_used -= w.kv_held(request)
                del w.running[request]
                w.context -= request.input_tokens + request.output_tokens
                self._finish(request, w, now)
        if w.to_remove:
            self._remove_cancelled(w)
        if len(w.gaps) > _GAP_TRIM:
            self._trim_gaps(w)

    def _remove_cancelled(self, w: Worker) -> None:
        for request in w.to_remove:
            if request not in w.running:
                continue
            w.kv_used -= w.kv_held(request)
            del w.running[request]
            produced = w.emit - request.join_emit + 1  # decode steps it took part in
            w.context -= request.input_tokens + 1 + max(0, produced)
            w.finish_at[request.finish_emit].remove(request)
        w.to_remove.clear()

    def _make_room(self, w: Worker) -> bool:
        """Incremental KV: before a step, every running sequence needs one more entry. While
        they do not fit, evict the most recently admitted one (vLLM's recompute preemption):
        its KV is freed and it waits at the head of the queue to be prefilled again over its
        prompt and the tokens it had produced. Returns whether it evicted any."""
        evicted = False
        while len(w.running) > 1 and w.kv_used + len(w.running) > w.kv_capacity:
            evicted = True
            victim = next(reversed(w.running))
            produced = w.emit - victim.join_emit + 1  # decode steps it took part in
            w.kv_used -= w.kv_held(victim)
            del w.running[victim]
            w.context -= victim.input_tokens + 1 + max(0, produced)
            w.finish_at[victim.finish_emit].remove(victim)
            if victim in w.joiners:
                w.joiners.remove(victim)
            made = 1 + max(0, produced)  # the prefill's token and one per decode step
            victim.carried += made
            victim.input_tokens += made
            victim.output_tokens -= made
            victim.prefilled = 0
            victim.stalled_at_ms = w.last_emit_ms if produced > 0 else victim.first_token_ms
            w.queue.appendleft(victim)
            w.queued_tokens += victim.input_tokens
            w.queued_sq += float(victim.input_tokens) ** 2
            w.preemptions += 1
        return evicted

    def _trim_gaps(self, w: Worker) -> None:
        oldest = min((r.join_emit for r in w.running), default=w.emit)
        drop = oldest + 1 - w.gaps_base
        if drop > 0:
            del w.gaps[:drop]
            w.gaps_base += drop
            dead = w.gaps_base // GAP_BLOCK - w.gap_blocks_base  # blocks wholly trimmed
            if dead > 0:
                del w.gap_blocks[:dead]
                w.gap_blocks_base += dead

    # ---- chunked prefill ------------------------------------------------------------------
    def _start_chunked(self, w: Worker, now: float) -> None:
        if w.ready:  # (the guards here and below skip calls that would do nothing: hot path)
            self._join_ready(w)
        evicted = (
            w.kv_incremental and w.kv_used + len(w.running) > w.kv_capacity and self._make_room(w)
        )
        budget = max(0, w.chunk_tokens - len(w.running))
        chunks: list[tuple[SchedRequest, int]] = []
        for request in w.prefilling:
            if budget <= 0:
                break
            if request.cancelled:
                continue
            take = min(budget, request.input_tokens - request.prefilled)
            chunks.append((request, take))
            budget -= take
        # as vLLM's scheduler: no new admissions in a step that had to evict
        while budget > 0 and w.queue and not evicted:
            admitted = len(w.running) + len(w.ready) + len(w.prefilling)
            head = w.queue[0]
            need = w.admit_kv(head)
            if not head.cancelled and (admitted >= w.max_batch or not w.kv_admits(need)):
                break
            whole = not w.split_prompts
            if whole and chunks and head.input_tokens > budget and not head.cancelled:
                break  # a whole prompt waits for a step with room (the first one always fits)
            self._dequeue(w)
            if head.cancelled:
                continue
            w.kv_used += need
            head.kv_admitted = need
            if not head.carried:
                head.prefill_start_ms = now
            w.prefilling.append(head)
            take = head.input_tokens if whole else min(budget, head.input_tokens)
            chunks.append((head, take))
            budget -= take
        if not chunks and not w.running:
            w.busy = False
            return
        batch = len(w.running)
        chunk_total = 0
        if not chunks:  # a decode-only step
            context = float(w.context)
            gpu_ms = w.cost.step_ms(batch, context, context, eager=False)
        elif w.cost.dp > 1:  # attention DP: each prompt's chunk on one replica (costmodel)
            chunk_total = sum(c for _, c in chunks)
            placed = [(float(c), float(r.prefilled)) for r, c in chunks]
            gpu_ms = w.cost.dp_chunked_step_ms(batch, w.context, placed)
        else:  # one pass for the three sums (hot path), added in the order sum() would
            pairs, prior = 0.0, 0
            for r, c in chunks:
                chunk_total += c
                pairs += c * (r.prefilled + c / 2.0)
                prior += r.prefilled
            pairs += float(w.context)
            kv_read = float(w.context) + prior
            gpu_ms = w.cost.step_ms(batch + chunk_total, pairs, kv_read, eager=chunk_total > 0)
        duration = w.step_duration(gpu_ms, batch + len(chunks))
        w.chunks = chunks
        phase = "mixed" if chunks and batch else ("prefill" if chunks else "decode")
        self._begin_step(w, now, duration, phase, batch + len(chunks), batch + chunk_total)
        self._push(now + duration, self._chunked_done, w)

    def _chunked_done(self, w: Worker, now: float) -> None:
        if w.running:
            self._emit(w, now)
        for request, take in w.chunks:
            request.prefilled += take
            if request.prefilled >= request.input_tokens:
                if not request.carried:
                    request.prefill_end_ms = now
                    request.transfer_start_ms = request.transfer_end_ms = now
                request.decode_worker = w
                w.prefilling.remove(request)
                if self._first_token(request, w, now):
                    w.ready.append(request)
        w.chunks = []
        for request in [r for r in w.prefilling if r.cancelled]:
            w.prefilling.remove(request)
            w.kv_used -= request.kv_admitted
        self._start_chunked(w, now)

    # ---- inspection -------------------------------------------------------------------------
    def state(self) -> dict[str, Any]:
        """Nodes, links and request counts for GET /engine/state."""
        links = [w.link.state() for w in self.decode_workers if w.link is not None]
        running = sum(len(w.running) for w in self.workers)
        return {
            "mode": self.mode,
            "model": self.model.name,
            "now_ms": round(self.now, 3),
            "nodes": [w.state() for w in self.workers],
            "links": links,
            "link_fallback_tcp": self.link_fallback,
            "requests": {"waiting": self.waiting, "running": running, "completed": self.completed},
        }
