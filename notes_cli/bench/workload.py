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
import os
import random
from collections.abc import Iterator
from dataclasses import dataclass
from itertools import islice
from pathlib import Path
from typing import Literal, NamedTuple, TextIO

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
    """How prompt and output lengths are drawn. For `lognormal`, the lengths are the medians;
    a `workload` (a built-in distribution of notes_cli.bench.length_tables, e.g. "sharegpt")
    replaces all three."""

    input_tokens: int = 512
    output_tokens: int = 64
    dist: LengthDist = "fixed"
    sigma: float = DEFAULT_SIGMA
    workload: str | None = None

    def __post_init__(self) -> None:
        if self.input_tokens < 1 or self.output_tokens < 1:
            raise UsageError("--input-len and --output-len must be at least 1")
        if self.dist not in ("fixed", "lognormal"):
            raise UsageError(f"unknown length distribution {self.dist!r}; use fixed or lognormal")
        if self.workload is not None:
            from notes_cli.bench.length_tables import named_workload

            named_workload(self.workload)  # an unknown name is a usage error now, not mid-run


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
    if spec.workload is not None:
        from notes_cli.bench.length_tables import named_workload

        yield from named_workload(spec.workload).pairs(rng)
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


# Field names accepted per request row, first match wins: pdnotes' own, the OpenAI usage names,
# the Mooncake trace's (which SGLang's `bench_serving --dataset-name mooncake` and vLLM's timed
# traces replay; `timestamp` is in ms there) and vLLM / SGLang's dataset rows (`prompt_len`).
INPUT_FIELDS = ("input_tokens", "prompt_tokens", "input_length", "prompt_len")
OUTPUT_FIELDS = ("output_tokens", "completion_tokens", "output_length", "output_len")
TIME_FIELDS = ("arrival_ms", "timestamp_ms", "timestamp")
# A benchmark run's result holds every request's lengths on one line (vLLM `bench serve
# --save-result --save-detailed`, SGLang `bench_serving --output-file --output-details`), so a
# line may be long; these bound what one line, or a whole pretty-printed document, may cost.
MAX_TRACE_LINE_BYTES = 64 * 1024 * 1024
MAX_TRACE_DOCUMENT_BYTES = 256 * 1024 * 1024


def read_trace(
    path: Path,
    *,
    arrivals: ArrivalSpec | None = None,
    seed: int = 0,
    limit: int | None = None,
    keep_times: bool = True,
) -> Iterator[WorkItem]:
    """Stream the requests of a trace file. Accepted, one JSON value per line (JSONL) or one
    JSON document (an object, or an array of objects):

    - a request per object: `input_tokens` / `output_tokens` (or `prompt_tokens` /
      `completion_tokens`, the Mooncake trace's `input_length` / `output_length`, or
      `prompt_len` / `output_len`) and optionally `arrival_ms` (or `timestamp_ms`, or
      Mooncake's `timestamp`, in ms);
    - a benchmark run's result with `input_lens` and `output_lens` lists (vLLM `bench serve
      --save-result --save-detailed`, SGLang `bench_serving --output-details`): one request
      per entry, skipping the run's failed requests (an error, or no output).

    Requests without a time, or every request when `keep_times` is False (replaying the
    lengths at another rate), take one from `arrivals` (default: all at t=0). Raises
    InputError naming the line for anything unparseable; JSONL is read lazily, a line at a
    time, each at most MAX_TRACE_LINE_BYTES."""
    rng = random.Random(seed + 0x9E3779B9)
    times = arrival_times_ms(arrivals or ArrivalSpec(), rng)
    try:
        handle = path.open(encoding="utf-8")
    except OSError as exc:
        raise InputError(f"cannot read trace {path}: {exc.strerror}") from exc
    count, last_ms = 0, 0.0
    with handle:
        for where, row in _trace_rows(path, handle):
            for item in _trace_items(where, row, times, keep_times):
                if limit is not None and count >= limit:
                    return
                if item.arrival_ms < last_ms:
                    raise InputError(f"{where}: arrival_ms goes backwards; sort the trace")
                last_ms = item.arrival_ms
                yield item
                count += 1


def _trace_rows(path: Path, handle: TextIO) -> Iterator[tuple[str, object]]:
    """(where, parsed value) per JSONL line, or per element of a whole-file JSON document."""
    from notes_cli.fileio import text_lines

    first = True
    for number, line in text_lines(path, handle, MAX_TRACE_LINE_BYTES):
        try:
            value = json.loads(line)
        except json.JSONDecodeError as exc:
            if first and line.lstrip()[:1] in ("{", "["):
                yield from _document_rows(path, handle)  # pretty-printed: one JSON document
                return
            raise InputError(f"{path}:{number}: not JSON ({exc.msg})") from exc
        first = False
        yield f"{path}:{number}", value


def _document_rows(path: Path, handle: TextIO) -> Iterator[tuple[str, object]]:
    size = os.fstat(handle.fileno()).st_size
    if size > MAX_TRACE_DOCUMENT_BYTES:
        raise InputError(
            f"{path}: a {size >> 20} MiB JSON document is too large to load "
            f"(limit {MAX_TRACE_DOCUMENT_BYTES >> 20} MiB)",
            fix="write it as JSON Lines, one request per line",
        )
    handle.seek(0)
    try:
        document = json.loads(handle.read())
    except json.JSONDecodeError as exc:
        raise InputError(f"{path}:{exc.lineno}: not JSON ({exc.msg})") from exc
    if isinstance(document, list):
        for index, value in enumerate(document):
            yield f"{path}: item {index}", value
    else:
        yield str(path), document


def _trace_items(
    where: str, row: object, times: Iterator[float], keep_times: bool
) -> Iterator[WorkItem]:
    if not isinstance(row, dict):
        raise InputError(f"{where}: expected a JSON object per line")
    if "input_lens" in row or "output_lens" in row:
        yield from _run_result_items(where, row, times)
        return
    if "total_input_tokens" in row and "completed" in row:
        raise InputError(
            f"{where}: a benchmark result without per-request lengths",
            fix="save it with vLLM `bench serve --save-result --save-detailed` or SGLang "
            "`bench_serving --output-file FILE --output-details`",
        )
    n_in = _int_field(row, where, *INPUT_FIELDS)
    n_out = _int_field(row, where, *OUTPUT_FIELDS)
    arrival = next((row[k] for k in TIME_FIELDS if row.get(k) is not None), None)
    if arrival is None or not keep_times:
        arrival = next(times)
    elif isinstance(arrival, bool) or not isinstance(arrival, int | float) or arrival < 0:
        raise InputError(f"{where}: arrival_ms must be a non-negative number")
    yield WorkItem(float(arrival), n_in, n_out)


def _run_result_items(
    where: str, row: dict[str, object], times: Iterator[float]
) -> Iterator[WorkItem]:
    """A vLLM / SGLang run result: `input_lens[i]`, `output_lens[i]` per request, `errors[i]`
    non-empty for a failed one. Its arrival times are not per request, so `times` gives them."""
    ins, outs, errors = row.get("input_lens"), row.get("output_lens"), row.get("errors")
    if not isinstance(ins, list) or not isinstance(outs, list) or len(ins) != len(outs):
        raise InputError(f"{where}: input_lens and output_lens must be lists of the same length")
    if errors is not None and (not isinstance(errors, list) or len(errors) != len(ins)):
        raise InputError(f"{where}: errors must be a list as long as input_lens")
    usable = 0
    for index, (n_in, n_out) in enumerate(zip(ins, outs, strict=True)):
        for name, value in (("input_lens", n_in), ("output_lens", n_out)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise InputError(f"{where}: {name}[{index}] must be a token count, got {value!r}")
        if n_out < 1 or n_in < 1 or (errors is not None and errors[index]):
            continue  # the request failed in that run: there is no length to replay
        usable += 1
        yield WorkItem(next(times), n_in, n_out)
    if not usable:
        raise InputError(f"{where}: every request of this run failed; no lengths to replay")


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
        fix='each request needs e.g. {"arrival_ms": 0, "input_tokens": 512, "output_tokens": 64}',
    )
