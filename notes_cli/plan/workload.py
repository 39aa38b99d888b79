"""The planner's workload: a fixed list of (input, output) lengths replayed at any rate.

The lengths are drawn (or read from the trace) once, in the driver, so every worker on every
machine replays exactly the same requests without reading files; arrivals are drawn per probe
from the seed. Seeds follow bench.workload (lengths from Random(seed), arrivals from
Random(seed + 0x9E3779B9)), so the judged part of a probe arrives as `pdnotes engine simulate`
on the same lengths would send them (after a warm-up with arrivals of its own, steady.py).
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from dataclasses import dataclass
from itertools import islice
from pathlib import Path
from typing import Any

from notes_cli.bench.workload import (
    ArrivalSpec,
    LengthSpec,
    WorkItem,
    arrival_times_ms,
    lengths,
    read_trace,
)
from notes_cli.errors import InputError

_ARRIVAL_SEED_OFFSET = 0x9E3779B9  # as bench.workload.synthetic
_WARMUP_SEED_OFFSET = 0x7F4A7C15  # a stream of its own for a probe's warm-up arrivals


@dataclass(frozen=True)
class PlanWorkload:
    """`pairs` of (input_tokens, output_tokens), in order; arrivals drawn per rate."""

    pairs: tuple[tuple[int, int], ...]
    burstiness: float = 1.0
    source: str = ""
    prefix_cache_hit: float = 0.0  # share of prompt tokens a trace's hash_ids show reused

    @property
    def requests(self) -> int:
        return len(self.pairs)

    def items(self, rate: float, seed: int, repeat: int = 1) -> Iterator[WorkItem]:
        """The lengths `repeat` times over, arriving at `rate` (req/s)."""
        rng = random.Random(seed + _ARRIVAL_SEED_OFFSET)
        times = arrival_times_ms(ArrivalSpec(rate=rate, burstiness=self.burstiness), rng)
        pairs = self.pairs
        for _ in range(repeat):
            for (n_in, n_out), t in zip(pairs, times, strict=False):
                yield WorkItem(t, n_in, n_out)

    def steady_items(
        self, rate: float, seed: int, warmup: int, repeat: int, tail: int
    ) -> Iterator[WorkItem]:
        """A steady-state simulation at `rate` (plan/steady.py): `warmup` arrivals, then the
        lengths `repeat` times over (the measured part), then at most `tail` more.

        The measured part and the tail arrive at the seed's arrival times (as `items`), shifted
        by the end of the warm-up, whose gaps come from a stream of their own: so the measured
        part is exactly `items(rate, seed, repeat)` after a warm-up, which is what
        prune.capacity_bound reasons about."""
        warm_rng = random.Random(seed + _WARMUP_SEED_OFFSET)
        warm_times = arrival_times_ms(ArrivalSpec(rate=rate, burstiness=self.burstiness), warm_rng)
        pairs = self.pairs
        start = 0.0
        for i, t in zip(range(warmup), warm_times, strict=False):
            n_in, n_out = pairs[i % len(pairs)]
            start = t
            yield WorkItem(t, n_in, n_out)
        rng = random.Random(seed + _ARRIVAL_SEED_OFFSET)
        times = arrival_times_ms(ArrivalSpec(rate=rate, burstiness=self.burstiness), rng)
        total = repeat * len(pairs) + tail
        for i, t in zip(range(total), times, strict=False):
            n_in, n_out = pairs[i % len(pairs)]
            yield WorkItem(start + t, n_in, n_out)

    def mean_lengths(self) -> tuple[float, float]:
        n = len(self.pairs) or 1
        return sum(p[0] for p in self.pairs) / n, sum(p[1] for p in self.pairs) / n

    def to_json(self) -> dict[str, Any]:
        mean_in, mean_out = self.mean_lengths()
        return {
            "source": self.source,
            "requests": self.requests,
            "burstiness": self.burstiness,
            "mean_input_tokens": round(mean_in, 1),
            "mean_output_tokens": round(mean_out, 1),
            "max_input_tokens": max((p[0] for p in self.pairs), default=0),
            "prefix_cache_hit": round(self.prefix_cache_hit, 4),
        }


def drawn(spec: LengthSpec, requests: int, *, seed: int, burstiness: float = 1.0) -> PlanWorkload:
    """`requests` lengths drawn from `spec` (the same ones `engine simulate` draws)."""
    pairs = tuple(islice(lengths(spec, random.Random(seed)), requests))
    source = (
        f"workload {spec.workload}"
        if spec.workload is not None
        else f"{spec.dist} input {spec.input_tokens} output {spec.output_tokens}"
    )
    return PlanWorkload(pairs, burstiness, source)


def from_trace(path: Path, requests: int, *, burstiness: float = 1.0) -> PlanWorkload:
    """The first `requests` lengths of a JSONL trace (its arrival times are not used: the
    planner imposes its own rates). A trace with `hash_ids` also brings its prefix reuse: the
    share of prompt tokens an unbounded prefix cache would serve (notes_cli.trace), which every
    candidate is planned with; `engine simulate --trace` then checks the pick with each node's
    finite cache."""
    pairs = tuple(
        (item.input_tokens, item.output_tokens)
        for item in read_trace(path, limit=requests, keep_times=False)
    )
    if not pairs:
        raise InputError(f"trace {path} has no requests")
    return PlanWorkload(pairs, burstiness, f"trace {path.name}", _reuse(path, requests))


def _reuse(path: Path, requests: int) -> float:
    from notes_cli.trace.format import read_rows
    from notes_cli.trace.prefix_cache import UNBOUNDED, has_hash_ids, replay

    if not has_hash_ids(path):
        return 0.0
    found = replay(islice(read_rows(path), requests), UNBOUNDED)
    return min(found.hit_rate, 0.999)  # a prompt computes at least one token
