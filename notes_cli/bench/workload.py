"""Workloads: what arrives when, and how long each request is.

A workload is a lazy iterator of `WorkItem(arrival_ms, input_tokens, output_tokens)`, so a
million-request trace costs no more memory than ten. Every random choice comes from one
`random.Random(seed)`: the same seed gives the same workload, byte for byte.

Lengths are fixed, log-normal (heavy-tailed, like real chat traffic), or read from a JSONL trace.
Arrivals follow vLLM's `bench serve`: Poisson at a rate, or gamma-distributed gaps with a
burstiness factor (1 = Poisson, < 1 burstier, > 1 smoother), or all at once (rate = inf, which is
what a fixed-concurrency run uses: the concurrency cap, not the clock, paces it).
"""

from __future__ import annotations

import json
import math
import random
from collections.abc import Iterator
from dataclasses import dataclass
from itertools import islice
from pathlib import Path
from typing import Literal, NamedTuple

from notes_cli.errors import InputError, UsageError

LengthDist = Literal["fixed", "lognormal"]

# Log-normal spread (sigma of the underlying normal); 0.5 gives a p99/median ratio of about 3.2,
# close to the prompt-length spread of public chat traces.
DEFAULT_SIGMA = 0.5


class WorkItem(NamedTuple):
    """One request of a workload. A NamedTuple: millions are made per second by the simulator."""

    arrival_ms: float
    input_tokens: int
    output_tokens: int


@dataclass(frozen=True)
class LengthSpec:
    """How prompt and output lengths are drawn. For `lognormal`, the lengths are the medians."""

    input_tokens: int = 512
    output_tokens: int = 64
    dist: LengthDist = "fixed"
    sigma: float = DEFAULT_SIGMA

    def __post_init__(self) -> None:
        if self.input_tokens < 1 or self.output_tokens < 1:
            raise UsageError("--input-len and --output-len must be at least 1")
        if self.dist not in ("fixed", "lognormal"):
            raise UsageError(f"unknown length distribution {self.dist!r}; use fixed or lognormal")


@dataclass(frozen=True)
class ArrivalSpec:
    """When requests arrive. `rate` is requests per second; None or inf means all at t=0."""

    rate: float | None = None
    burstiness: float = 1.0

    def __post_init__(self) -> None:
        if self.rate is not None and not self.rate > 0:
            raise UsageError("--rate must be positive")
        if not self.burstiness > 0:
            raise UsageError("--burstiness must be positive (1 = Poisson)")


def lengths(spec: LengthSpec, rng: random.Random) -> Iterator[tuple[int, int]]:
    """Endless (input_tokens, output_tokens) pairs drawn from `spec`."""
    if spec.dist == "fixed":
        pair = (spec.input_tokens, spec.output_tokens)
        while True:
            yield pair
    mu_in, mu_out = math.log(spec.input_tokens), math.log(spec.output_tokens)
    sigma = spec.sigma
    while True:
        yield (
            max(1, round(rng.lognormvariate(mu_in, sigma))),
            max(1, round(rng.lognormvariate(mu_out, sigma))),
        )


def arrival_times_ms(spec: ArrivalSpec, rng: random.Random) -> Iterator[float]:
    """Endless arrival times in ms, starting with the first gap after t=0 (vLLM's convention).

    Gamma gaps with shape = burstiness and mean 1/rate: burstiness 1 is exactly Poisson."""
    if spec.rate is None or math.isinf(spec.rate):
        while True:
            yield 0.0
    mean_gap_ms = 1000.0 / spec.rate
    shape = spec.burstiness
    scale = mean_gap_ms / shape
    now = 0.0
    if shape == 1.0:
        lambd = 1.0 / mean_gap_ms
        while True:
            now += rng.expovariate(lambd)
            yield now
    while True:
        now += rng.gammavariate(shape, scale)
        yield now


def synthetic(
    n: int, lengths_spec: LengthSpec, arrivals: ArrivalSpec, *, seed: int = 0
) -> Iterator[WorkItem]:
    """`n` requests with drawn lengths and arrival times; deterministic for `seed`.

    Lengths and arrivals use separate generators so changing the rate does not change which
    lengths are drawn: sweeping rates compares like with like."""
    length_rng = random.Random(seed)
    arrival_rng = random.Random(seed + 0x9E3779B9)
    pairs = lengths(lengths_spec, length_rng)
    times = arrival_times_ms(arrivals, arrival_rng)
    for (n_in, n_out), t in zip(islice(pairs, n), times, strict=False):
        yield WorkItem(t, n_in, n_out)


def read_trace(
    path: Path,
    *,
    arrivals: ArrivalSpec | None = None,
    seed: int = 0,
    limit: int | None = None,
    keep_times: bool = True,
) -> Iterator[WorkItem]:
    """Stream a JSONL trace: one object per line with `input_tokens` and `output_tokens`
    (aliases `prompt_tokens` / `completion_tokens`) and optionally `arrival_ms` (or
    `timestamp_ms`). Lines without a time, or every line when `keep_times` is False (replaying
    the trace's lengths at another rate), take one from `arrivals` (default: all at t=0).
    Raises InputError naming the line for anything unparseable; the file is read lazily."""
    rng = random.Random(seed + 0x9E3779B9)
    times = arrival_times_ms(arrivals or ArrivalSpec(), rng)
    try:
        handle = path.open(encoding="utf-8")
    except OSError as exc:
        raise InputError(f"cannot read trace {path}: {exc.strerror}") from exc
    count, last_ms = 0, 0.0
    with handle:
        for number, line in enumerate(handle, 1):
            if limit is not None and count >= limit:
                return
            if not line.strip():
                continue
            item = _trace_item(path, number, line, times, keep_times)
            if item.arrival_ms < last_ms:
                raise InputError(f"{path}:{number}: arrival_ms goes backwards; sort the trace")
            last_ms = item.arrival_ms
            yield item
            count += 1


def _trace_item(
    path: Path, number: int, line: str, times: Iterator[float], keep_times: bool
) -> WorkItem:
    where = f"{path}:{number}"
    try:
        row = json.loads(line)
    except json.JSONDecodeError as exc:
        raise InputError(f"{where}: not JSON ({exc.msg})") from exc
    if not isinstance(row, dict):
        raise InputError(f"{where}: expected a JSON object per line")
    n_in = _int_field(row, where, "input_tokens", "prompt_tokens")
    n_out = _int_field(row, where, "output_tokens", "completion_tokens")
    arrival = row.get("arrival_ms", row.get("timestamp_ms")) if keep_times else None
    if arrival is None:
        arrival = next(times)
    elif not isinstance(arrival, int | float) or arrival < 0:
        raise InputError(f"{where}: arrival_ms must be a non-negative number")
    return WorkItem(float(arrival), n_in, n_out)


def _int_field(row: dict[str, object], where: str, *names: str) -> int:
    for name in names:
        value = row.get(name)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise InputError(f"{where}: {name} must be a positive integer, got {value!r}")
        return value
    raise InputError(
        f"{where}: missing {names[0]}",
        fix='each line needs e.g. {"arrival_ms": 0, "input_tokens": 512, "output_tokens": 64}',
    )
