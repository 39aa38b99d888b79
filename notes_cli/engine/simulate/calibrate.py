"""`pdnotes engine calibrate RECORDS…`: fit the cost model to measured runs of a real engine.

Each records file (`pdnotes bench --records`, one per load point; a sweep writes one per point)
is one load point: its concurrency (from the `.meta.json` bench writes beside it, else the most
requests it ever had in flight), its median prompt and output lengths and its median TTFT and
TPOT. The fit is two steps, both in the cost model's own terms, so what it predicts is what
`engine simulate` will predict with the file it writes:

1. Least squares on the points' medians gives a first guess. TTFT = r + b·n + q·(c-1) (request
   overhead r, prefill ms per prompt token b, what each other client adds q). The decode step
   is s0 + s1·c^p (a fixed part s0, the c sequences in it s1·c^p): the step is the median
   inter-token gap of a point's requests (bench records every gap), which a prompt prefilled
   beside the decodes stalls only now and then, so the median is the plain decode step where
   the TPOT is not; records without gaps fall back on the median TPOT. p is fitted (0.2 to 1)
   when the fitted points hold three concurrency levels or more, else it is 1 (two levels
   cannot tell a curve from a line). b becomes the chip's FLOP/s, s0 its memory bandwidth (the
   weights a step reads), s1 and p the cost per sequence (seq_overhead_us,
   seq_overhead_exponent), r the request overhead.
2. The simulator replays every fitted point with those numbers, and what it still misses moves
   them (a few rounds): the TTFT residual against prompt length corrects the prefill cost per
   token and the request overhead, the decode step's residual against c^p its fixed part and its
   cost per sequence. So the scheduler's own effects (queueing, prompts sharing steps with
   decodes) are in the fit, not counted twice.

Every measured number is a median over a point's requests, so a few requests slowed by another
job on the machine do not move the fit; where a single client's identical requests still spread
widely (NOISY_SPREAD), the machine was busy while measuring, and the result says so.

Pure Python: numpy is a test extra only, and a 3-column least squares needs no library.

What the records cannot tell apart is refused (CalibrationRefused, exit 2), never guessed: one
concurrency level (the per-sequence cost is then indistinguishable from the fixed one), one
prompt length (prefill speed from request overhead), too few requests at a point.
"""

from __future__ import annotations

import csv
import io
import json
import math
import statistics
import tempfile
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from notes_cli.engine.core.profiles import Catalog, Chip, Deployment, NodeGroup, load_catalog
from notes_cli.errors import InputError

MIN_REQUESTS = 3
"""Requests with a TTFT and a TPOT a load point needs to give a median worth fitting."""
MAX_RECORDS_BYTES = 200_000_000
DISTINCT_LENGTHS = 1.25
"""Two prompt lengths count as different when one is at least this many times the other."""
REFINE_ROUNDS = 8
EXPONENTS = tuple(round(0.2 + 0.05 * i, 2) for i in range(17))
"""The per-sequence exponents p the decode fit tries (0.2 to 1): below 1 a step's cost per
sequence falls with the batch (batched decode sharing one pass over the weights)."""
NOISY_SPREAD = 1.5
"""P90 / P10 of a single client's identical requests (TTFT or decode step) above which the
point is named as measured on a busy machine: one at a time, nothing but the machine's other
work can make them differ that much."""
HOLD_OUT = ("highest-load", "every-third", "none")
UNCALIBRATED_CHIP = "cpu-x86"
"""The shipped chip row calibrate is compared against on a CPU engine (llama.cpp)."""


class CalibrationRefused(InputError):
    """The records cannot identify a parameter the fit needs (exit 2, with the fix)."""


@dataclass(frozen=True)
class LoadPoint:
    """One records file: one load level, as measured."""

    path: Path
    concurrency: int
    prompt_tokens: float  # median input tokens the engine computed (prefix-cache hits taken off)
    output_tokens: float  # median output tokens
    cached_share: float | None  # prompt tokens served from the prefix cache, where reported
    ttfts: tuple[float, ...]
    tpots: tuple[float, ...]
    meta: dict[str, Any] = field(default_factory=dict)
    gaps: tuple[float, ...] = ()  # every inter-token gap of every request (bench's itl_ms)
    runs: tuple[int, ...] = ()  # requests sent by each bench run pooled in the file (runs_of)

    @property
    def ttft_ms(self) -> float:
        return statistics.median(self.ttfts)

    @property
    def tpot_ms(self) -> float:
        return statistics.median(self.tpots)

    @property
    def step_ms(self) -> float:
        """The decode step: the median inter-token gap, else (no gaps recorded) the median
        TPOT."""
        return statistics.median(self.gaps) if self.gaps else self.tpot_ms

    @property
    def label(self) -> str:
        return f"c={self.concurrency} in={self.prompt_tokens:.0f}"

    @property
    def running_peak(self) -> float | None:
        """The most requests the server's metrics saw running (bench's .meta.json), if any."""
        server = self.meta.get("server_metrics")
        running = server.get("running") if isinstance(server, dict) else None
        peak = running.get("max") if isinstance(running, dict) else None
        return float(peak) if isinstance(peak, int | float) and peak >= 1 else None


@dataclass(frozen=True)
class Fitted:
    """The parameters calibrate found, in the cost model's own units."""

    tflops: float  # the chip's FLOP/s at mfu 1 (prefill speed)
    hbm_tbps: float  # the chip's bandwidth at bw_eff 1 (a decode step's fixed part)
    seq_overhead_us: float  # each sequence in a decode step (c of them: x c ** seq_exponent)
    request_overhead_ms: float  # in every TTFT
    max_batch: int
    prefix_cache_hit: float
    seq_exponent: float = 1.0  # a step of c sequences costs seq_overhead_us x c ** this


@dataclass(frozen=True)
class Comparison:
    """One load point, measured against predicted (medians), and the per-request signed errors
    (predicted median / measured request - 1)."""

    point: LoadPoint
    ttft_ms: float
    tpot_ms: float
    step_ms: float = 0.0  # predicted median inter-token gap

    @property
    def ttft_errors(self) -> list[float]:
        return [self.ttft_ms / m - 1.0 for m in self.point.ttfts if m > 0]

    @property
    def tpot_errors(self) -> list[float]:
        return [self.tpot_ms / m - 1.0 for m in self.point.tpots if m > 0]


@dataclass(frozen=True)
class Calibration:
    deployment: Deployment
    catalog: Catalog
    fitted: Fitted
    provenance: str
    fit: tuple[Comparison, ...]
    held_out: tuple[Comparison, ...]
    document: str  # the deployment file's text
    warnings: tuple[str, ...] = ()  # points measured on a busy machine (noise_warnings)

    def to_json(self) -> dict[str, Any]:
        return {
            "schema": "pdnotes.calibrate/1",
            "deployment": self.deployment.name,
            "provenance": self.provenance,
            "fitted": self.fitted.__dict__,
            "fit": [_comparison_json(c) for c in self.fit],
            "held_out": [_comparison_json(c) for c in self.held_out],
            "fit_error": error_summary(self.fit),
            "held_out_error": error_summary(self.held_out),
            "warnings": list(self.warnings),
        }


def _comparison_json(c: Comparison) -> dict[str, Any]:
    p = c.point
    return {
        "records": str(p.path),
        "concurrency": p.concurrency,
        "prompt_tokens": p.prompt_tokens,
        "output_tokens": p.output_tokens,
        "requests": len(p.ttfts),
        "measured_ttft_ms": p.ttft_ms,
        "predicted_ttft_ms": c.ttft_ms,
        "measured_tpot_ms": p.tpot_ms,
        "predicted_tpot_ms": c.tpot_ms,
        "measured_step_ms": p.step_ms,
        "predicted_step_ms": c.step_ms,
    }


def error_summary(comparisons: tuple[Comparison, ...]) -> dict[str, dict[str, float] | None]:
    """Median and P10-P90 spread of the signed error (predicted / measured - 1) over every
    request of these points, for TTFT and TPOT; None without any."""
    out: dict[str, dict[str, float] | None] = {}
    for metric in ("ttft", "tpot"):
        errors = sorted(e for c in comparisons for e in getattr(c, f"{metric}_errors"))
        out[metric] = (
            {"median": _quantile(errors, 0.5), "p10": _quantile(errors, 0.1),
             "p90": _quantile(errors, 0.9), "requests": float(len(errors))}
            if errors
            else None
        )  # fmt: skip
    return out


def _quantile(ordered: list[float], q: float) -> float:
    """Linear interpolation between closest ranks (numpy's default)."""
    pos = q * (len(ordered) - 1)
    low = math.floor(pos)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (pos - low)


# ---- reading the records ------------------------------------------------------------------


def read_point(path: Path) -> LoadPoint:
    """One records file as a load point; InputError naming the file when it is not one."""
    from notes_cli.fileio import decode_text, read_document

    text = decode_text(path, read_document(path, max_bytes=MAX_RECORDS_BYTES, what="records"))
    rows = _csv_rows(path, text) if path.suffix.lower() == ".csv" else _jsonl_rows(path, text)
    ok = [r for r in rows if r.get("ok") is True or r.get("ok") == "True"]
    usable = [r for r in ok if _num(r.get("ttft_ms")) is not None]
    meta = _read_meta(path)
    concurrency = meta.get("concurrency")
    if not isinstance(concurrency, int) or isinstance(concurrency, bool) or concurrency < 1:
        concurrency = _in_flight(rows)
    # The tokens the engine computed: a prefix-cache hit's tokens are only attended to.
    prompts = [
        v - (_num(r.get("cached_tokens")) or 0.0)
        for r in usable
        if (v := _num(r.get("input_tokens"))) is not None
    ]
    outputs = [v for r in usable if (v := _num(r.get("output_tokens"))) is not None]
    cached = [
        (c, p)
        for r in usable
        if (c := _num(r.get("cached_tokens"))) is not None and (p := _num(r.get("input_tokens")))
    ]
    if usable and not prompts:
        prompt = meta.get("input_len")
        if not isinstance(prompt, int | float):
            raise CalibrationRefused(
                f"records {path}: no request says how many prompt tokens it had "
                "(input_tokens is empty) and there is no bench .meta.json beside it",
                fix="record against an endpoint that reports usage, or keep the "
                f"{path.name}.meta.json bench writes next to the records",
            )
        prompts = [float(prompt)]
    return LoadPoint(
        path=path,
        concurrency=concurrency,
        prompt_tokens=statistics.median(prompts) if prompts else 0.0,
        output_tokens=statistics.median(outputs) if outputs else 0.0,
        cached_share=(sum(c for c, _ in cached) / sum(p for _, p in cached)) if cached else None,
        ttfts=tuple(float(r["ttft_ms"]) for r in usable),
        tpots=tuple(v for r in usable if (v := _num(r.get("tpot_ms"))) is not None),
        meta=meta,
        gaps=tuple(g for r in usable for g in _gaps(r.get("itl_ms"))),
        runs=runs_of(rows),
    )


def runs_of(rows: list[dict[str, Any]]) -> tuple[int, ...]:
    """How many requests each bench run in the file sent. bench numbers a run's requests from
    0 in order, so where the numbers start again another run's records were appended (several
    runs of one point pooled, as benchmarks/calibrate's `--rounds` does): each was its own
    closed loop, its first requests sent together. Rows without numbers are one run."""
    sizes: list[int] = []
    previous: float | None = None
    for row in rows:
        number = _num(row.get("request"))
        if not sizes or (number is not None and previous is not None and number <= previous):
            sizes.append(0)
        sizes[-1] += 1
        previous = number
    return tuple(sizes)


def _gaps(value: Any) -> list[float]:
    """A record's inter-token gaps (a JSON list, or in CSV its text), finite and positive."""
    if isinstance(value, str) and value.startswith("["):
        try:
            value = json.loads(value)
        except json.JSONDecodeError:
            return []
    if not isinstance(value, list):
        return []
    return [g for v in value if (g := _num(v)) is not None and g > 0]


def _jsonl_rows(path: Path, text: str) -> list[dict[str, Any]]:
    rows = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InputError(f"records {path} line {number} is not JSON: {exc.msg}") from exc
        if not isinstance(row, dict) or row.get("schema") != "pdnotes.bench.record/1":
            raise InputError(
                f"records {path} line {number} is not a pdnotes.bench.record/1 row",
                fix="pass files written by `pdnotes bench --records FILE.jsonl`",
            )
        rows.append(row)
    return rows


def _csv_rows(path: Path, text: str) -> list[dict[str, Any]]:
    reader = csv.DictReader(io.StringIO(text))
    if not reader.fieldnames or "ttft_ms" not in reader.fieldnames:
        raise InputError(
            f"records {path} has no ttft_ms column",
            fix="pass files written by `pdnotes bench --records FILE.csv`",
        )
    return [dict(row) for row in reader]


def _num(value: Any) -> float | None:
    if value is None or value == "" or isinstance(value, bool):
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


def _in_flight(rows: list[dict[str, Any]]) -> int:
    """The most requests in flight at once (a closed loop of C clients reaches C)."""
    events = []
    for r in rows:
        sent, e2e = _num(r.get("sent_ms")), _num(r.get("e2e_ms"))
        if sent is not None and e2e is not None:
            events += [(sent, 1), (sent + e2e, -1)]
    level = most = 0
    for _, step in sorted(events, key=lambda e: (e[0], e[1])):
        level += step
        most = max(most, level)
    return max(1, most)


def _read_meta(path: Path) -> dict[str, Any]:
    from notes_cli.bench.records import meta_path
    from notes_cli.fileio import read_text

    side = meta_path(path)
    if not side.is_file():
        return {}
    text = read_text(side, max_bytes=100_000)
    try:
        data = json.loads(text or "")
    except json.JSONDecodeError:
        return {}
    return data if isinstance(data, dict) else {}


# ---- the fit ------------------------------------------------------------------------------


def split_points(points: list[LoadPoint], hold_out: str) -> tuple[list[LoadPoint], list[LoadPoint]]:
    """(fit, held out): the highest concurrency level's points, every third point (in the
    order given), or nothing held out."""
    if hold_out == "none":
        return points, []
    if hold_out == "every-third":
        return (
            [p for i, p in enumerate(points) if i % 3 != 2],
            [p for i, p in enumerate(points) if i % 3 == 2],
        )
    top = max(p.concurrency for p in points)
    return [p for p in points if p.concurrency < top], [p for p in points if p.concurrency == top]


def check_identifiable(fit: list[LoadPoint], held_out: list[LoadPoint]) -> None:
    """Refuse, naming what is missing, where the fit points cannot identify a parameter."""
    sweep = (
        "pdnotes bench --base-url URL --input-lens 128,512 --concurrency 1,2,3,4 "
        "--records run.jsonl"
    )
    kept = f" ({len(held_out)} point(s) held back to test the fit; --hold-out none keeps them)"
    for p in fit + held_out:
        if len(p.ttfts) < MIN_REQUESTS or len(p.tpots) < MIN_REQUESTS:
            raise CalibrationRefused(
                f"too few requests in {p.path}: {len(p.ttfts)} with a TTFT, {len(p.tpots)} "
                f"with a TPOT; calibrate needs at least {MIN_REQUESTS} of each per load point",
                fix="re-run that point with more requests (-n) and an --output-len above 1",
            )
    levels = sorted({p.concurrency for p in fit})
    recorded = sorted({p.concurrency for p in fit + held_out})
    if len(levels) < 2:
        where = "the records" if len(recorded) < 2 else "the records fitted"
        shown = ",".join(map(str, levels if len(recorded) > 1 else recorded))
        raise CalibrationRefused(
            f"{where} hold one concurrency level only (c={shown})"
            f"{kept if held_out and len(recorded) > 1 else ''}: the decode cost of each extra "
            "sequence in a step cannot be told from the step's fixed cost",
            fix=f"add load levels, e.g. `{sweep}` (at least two levels to fit, three to see "
            "how the decode step bends with the batch, and one more to hold back)",
        )
    lengths = sorted(p.prompt_tokens for p in fit)
    if not lengths or lengths[-1] < lengths[0] * DISTINCT_LENGTHS:
        raise CalibrationRefused(
            f"the records fitted hold one prompt length only (about {lengths[0]:.0f} tokens): "
            "prefill speed cannot be told from the per-request overhead",
            fix=f"add a prompt length at least {DISTINCT_LENGTHS}x apart, e.g. `{sweep}`",
        )


def least_squares(rows: list[list[float]], targets: list[float]) -> list[float]:
    """Solve the normal equations (X^T X) beta = X^T y by Gauss-Jordan: a few columns only."""
    n = len(rows[0])
    a = [[sum(r[i] * r[j] for r in rows) for j in range(n)] for i in range(n)]
    b = [sum(r[i] * t for r, t in zip(rows, targets, strict=True)) for i in range(n)]
    for col in range(n):
        pivot = max(range(col, n), key=lambda k: abs(a[k][col]))
        if abs(a[pivot][col]) < 1e-12:
            raise ValueError("singular")
        a[col], a[pivot] = a[pivot], a[col]
        b[col], b[pivot] = b[pivot], b[col]
        for k in range(n):
            if k != col:
                f = a[k][col] / a[col][col]
                a[k] = [x - f * y for x, y in zip(a[k], a[col], strict=True)]
                b[k] -= f * b[col]
    return [b[i] / a[i][i] for i in range(n)]


def first_guess(
    fit: list[LoadPoint],
    model_params: float,
    weight_bytes: float,
    exponents: tuple[float, ...] = EXPONENTS,
) -> Fitted:
    """Step 1: least squares on the medians, mapped to chip and deployment numbers."""
    try:
        r, b, _q = least_squares(
            [[1.0, p.prompt_tokens, p.concurrency - 1.0] for p in fit], [p.ttft_ms for p in fit]
        )
    except ValueError:
        r, b = 0.0, 0.0
    s0, s1, exponent = decode_law(fit, exponents)
    if b <= 0:  # noise swamped the slope: the mean speed, overhead left to the refinement
        b = statistics.median(p.ttft_ms / p.prompt_tokens for p in fit)
        r = 0.0
    s0 = max(s0, 0.5 * min(p.step_ms for p in fit))
    hits = [p.cached_share for p in fit if p.cached_share is not None]
    hit = statistics.median(hits) if hits else 0.0
    return Fitted(
        tflops=2.0 * model_params / b / 1e9,
        hbm_tbps=weight_bytes / s0 / 1e9,
        seq_overhead_us=max(0.0, s1) * 1000.0,
        request_overhead_ms=max(0.0, r),
        max_batch=max(p.concurrency for p in fit),
        prefix_cache_hit=hit if 0.01 <= hit < 0.95 else 0.0,
        seq_exponent=exponent,
    )


def decode_law(
    fit: list[LoadPoint], exponents: tuple[float, ...] = EXPONENTS
) -> tuple[float, float, float]:
    """(s0, s1, p): the decode step s0 + s1·c^p by least squares on the points' step medians;
    p the best of `exponents` with three concurrency levels or more, else 1. A curve needs both
    parts at least 0 (a bend that only a negative fixed cost explains is noise, not a law);
    none such: the line."""
    levels = {p.concurrency for p in fit}
    best: tuple[float, float, float, float] | None = None
    for exponent in exponents if len(levels) >= 3 else (1.0,):
        rows = [[1.0, float(p.concurrency) ** exponent] for p in fit]
        steps = [p.step_ms for p in fit]
        s0, s1 = least_squares(rows, steps)
        if (s0 < 0 or s1 < 0) and exponent != 1.0:
            continue  # a step with a negative part, or faster with more sequences: noise
        misses = sum((s0 + s1 * r[1] - t) ** 2 for r, t in zip(rows, steps, strict=True))
        if best is None or misses < best[0]:
            best = (misses, s0, s1, exponent)
    if best is None:  # every curve bent the wrong way: the line, whatever its sign
        s0, s1 = least_squares([[1.0, float(p.concurrency)] for p in fit], [p.step_ms for p in fit])
        return s0, s1, 1.0
    return best[1], best[2], best[3]


def noise_warnings(points: list[LoadPoint]) -> list[str]:
    """Single-client points whose identical requests spread more than NOISY_SPREAD (P90/P10):
    the machine was busy while they were measured."""
    out = []
    for p in points:
        if p.concurrency != 1:
            continue  # with company, queueing spreads the requests by design
        for what, values in (("TTFT", p.ttfts), ("decode step", p.gaps or p.tpots)):
            ordered = sorted(values)
            low, high = _quantile(ordered, 0.1), _quantile(ordered, 0.9)
            if low > 0 and high / low > NOISY_SPREAD:
                out.append(
                    f"{p.path.name} ({p.label}): one client's requests spread {high / low:.1f}x "
                    f"in {what} (P10 {low:,.0f} ms, P90 {high:,.0f} ms): the machine was busy "
                    "while measuring and the fit carries that noise; re-measure on an idle "
                    "machine, or with more requests (-n) so the medians settle"
                )
    return out


def _line(groups: dict[float, list[float]]) -> tuple[float, float]:
    """(intercept, slope) through the median residual of the lowest and the highest group."""
    low, high = min(groups), max(groups)
    r_low, r_high = statistics.median(groups[low]), statistics.median(groups[high])
    slope = (r_high - r_low) / (high - low)
    return r_low - slope * low, slope


def refine(
    fitted: Fitted, replayed: list[Comparison], model_params: float, weight_bytes: float
) -> tuple[Fitted, bool]:
    """Step 2: move the four numbers by what the simulator still misses. TTFT's residual
    (measured - predicted median) against prompt length at the lowest load fitted corrects the
    prefill ms per token (slope) and the request overhead (intercept): there a TTFT holds one
    prefill, where at higher loads it also waits for the others' (the simulator's queueing, a
    residual counted several times over, which would overshoot). The decode step's residual
    against c^p corrects its fixed part and its cost per sequence. True when every point is
    within 2 %."""
    lowest = min(c.point.concurrency for c in replayed)
    ttft: dict[float, list[float]] = {}
    tpot: dict[float, list[float]] = {}
    misses = []
    for c in replayed:
        p = c.point
        if p.concurrency == lowest:
            ttft.setdefault(p.prompt_tokens, []).append(p.ttft_ms - c.ttft_ms)
        x = float(p.concurrency) ** fitted.seq_exponent
        tpot.setdefault(x, []).append(p.step_ms - c.step_ms)
        misses += [abs(c.ttft_ms / p.ttft_ms - 1.0), abs(c.step_ms / p.step_ms - 1.0)]
    if max(misses) < 0.02:
        return fitted, True
    per_token = 2.0 * model_params / fitted.tflops / 1e9  # ms per prompt token
    fixed = weight_bytes / fitted.hbm_tbps / 1e9  # ms a decode step reads weights
    d_overhead, d_token = _line(ttft)
    d_fixed, d_seq = _line(tpot)
    per_token = max(per_token + d_token, per_token * 0.1)
    fixed = max(fixed + d_fixed, fixed * 0.1)
    return (
        replace(
            fitted,
            tflops=2.0 * model_params / per_token / 1e9,
            hbm_tbps=weight_bytes / fixed / 1e9,
            seq_overhead_us=max(0.0, fitted.seq_overhead_us + d_seq * 1000.0),
            request_overhead_ms=max(0.0, fitted.request_overhead_ms + d_overhead),
        ),
        False,
    )


def build(
    fitted: Fitted,
    model: str,
    name: str,
    provenance: str,
    catalog: Catalog,
    *,
    with_hit: bool = True,
) -> tuple[Deployment, Catalog]:
    """The calibrated chip row and colocated chunked deployment (llama.cpp, vLLM and LMDeploy
    all batch prompt tokens with the running decodes), added to `catalog`. `with_hit=False`
    leaves the prefix-cache hit rate out: the points replayed in the fit already count only
    the tokens the engine computed."""
    chip = Chip(
        name=f"{name}-chip",
        tflops=round(fitted.tflops, 6),
        hbm_gb=1024.0,  # KV room is the engine's own limit (max_batch), not this row's
        hbm_tbps=round(fitted.hbm_tbps, 6),
        mfu=1.0,
        bw_eff=1.0,
        decode_mfu=1.0,
        eager_us_per_layer=0.0,
        graph_step_ms=0.0,
        description=f"calibrated: {provenance}",
        source=(
            "CALIBRATED by `pdnotes engine calibrate` (docs/engine-model.md, 'Calibrating to "
            "your own engine'): tflops and hbm_tbps are what the measured prefill and decode "
            "speeds come to at mfu = bw_eff = 1, not the chip's datasheet. " + provenance
        ),
    )
    dep = Deployment(
        name=name,
        mode="chunked",
        model=model,
        link="tcp-25g",
        colocated=NodeGroup(1, chip.name),
        max_batch=fitted.max_batch,
        chunk_tokens=2048,
        decode_exec="eager",
        request_overhead_ms=round(fitted.request_overhead_ms, 3),
        step_overhead_ms=0.0,
        seq_overhead_us=round(fitted.seq_overhead_us, 3),
        seq_overhead_exponent=None if fitted.seq_exponent == 1.0 else fitted.seq_exponent,
        kv_alloc="incremental",
        prefix_cache_hit=round(fitted.prefix_cache_hit, 4) if with_hit else 0.0,
        description=f"calibrated: {provenance}",
        source="CALIBRATED by `pdnotes engine calibrate`: " + provenance,
    )
    chips = {**catalog.chips, chip.name: chip}
    deployments = {**catalog.deployments, dep.name: dep}
    return dep, replace(catalog, chips=chips, deployments=deployments)


def predict(document: str, points: list[LoadPoint], *, seed: int = 0) -> list[Comparison]:
    """Replay each point on the deployment file `document` in the simulator as it was measured:
    each bench run pooled in its records (LoadPoint.runs) a closed loop of its concurrency and
    request count, the point's median lengths; predicted median TTFT, TPOT and inter-token gap
    over all of them. A run's count matters: 12 requests from 6 clients as one run keep every
    client sending (a finished client's next prompt is prefilled while the others decode), as
    two runs of 6 they are two bursts whose last requests decode alone."""
    from notes_cli.engine.simulate.configs import SimConfig
    from notes_cli.engine.simulate.engine_simulator import EngineSimulator

    out = []
    with tempfile.TemporaryDirectory(prefix="pdnotes-calibrate-") as folder:
        path = Path(folder) / "deployment.toml"
        path.write_text(document, encoding="utf-8")
        config = SimConfig(str(path))
        simulator = EngineSimulator(exact_gaps=True)
        for p in points:
            ttfts: list[float] = []
            tpots: list[float] = []
            gaps: list[float] = []
            # The simulator draws no random numbers, so runs of one size replay alike: each
            # size once, its records counted as often as it was run (a file of a million
            # one-request runs is one short replay, not a million).
            for count, times in Counter(p.runs or (len(p.ttfts),)).items():
                for record in _closed_loop(simulator, config, p, count, seed):
                    ttfts += [record.ttft_ms] * times
                    tpots += [record.tpot_ms] * times
                    gaps += list(record.itl_ms) * times
            out.append(
                Comparison(
                    p, statistics.median(ttfts), statistics.median(tpots), statistics.median(gaps)
                )
            )
    return out


def _closed_loop(simulator: Any, config: Any, point: LoadPoint, count: int, seed: int) -> list[Any]:
    """One bench run of `point` in the simulator: `count` requests from its clients."""
    from notes_cli.bench.closed_loop import ClosedLoop
    from notes_cli.bench.workload import ArrivalSpec, LengthSpec, synthetic

    lengths = LengthSpec(round(point.prompt_tokens), max(2, round(point.output_tokens)))
    loop = ClosedLoop(synthetic(count, lengths, ArrivalSpec()), point.concurrency)
    requests: Iterable[Any] = loop.requests()  # WorkItem's fields, arrival when free
    records = []
    for record in simulator.run(config, requests, seed):
        loop.finished(record)
        records.append(record)
    return records


def provenance_of(points: list[LoadPoint], when: datetime | None = None) -> str:
    """Which records, when they were measured, against which endpoint and model."""
    endpoints = sorted({str(p.meta.get("base_url")) for p in points if p.meta.get("base_url")})
    models = sorted({str(p.meta.get("model")) for p in points if p.meta.get("model")})
    started = sorted(str(p.meta["started"]) for p in points if p.meta.get("started"))
    measured = f"{started[0]} to {started[-1]}" if started else "unknown (no bench .meta.json)"
    stamp = (when or datetime.now(UTC)).strftime("%Y-%m-%dT%H:%M:%SZ")
    names = ", ".join(p.path.name for p in points)
    return (
        f"fitted {stamp} from {len(points)} records file(s) ({names}); measured {measured}; "
        f"endpoint {', '.join(endpoints) or 'unknown'}; model {', '.join(models) or 'unknown'}"
    )


def calibrate(
    paths: list[Path],
    *,
    model_shape: str | None = None,
    hold_out: str = "highest-load",
    name: str = "calibrated",
    decode_exponents: tuple[float, ...] = EXPONENTS,
    max_batch: int | None = None,
    now: datetime | None = None,
) -> Calibration:
    """Fit, refine and test a deployment on these records files (see the module docstring)."""
    from notes_cli.engine.core.costmodel import NodeCost

    points = [read_point(p) for p in paths]
    fit, held = split_points(points, hold_out)
    check_identifiable(fit, held)
    catalog = load_catalog(user=False)
    model = _model_shape(points, model_shape, catalog)
    shape = catalog.models[model]
    weight_bytes = NodeCost(shape, catalog.chips[UNCALIBRATED_CHIP]).weight_bytes
    fitted = first_guess(fit, shape.active_params, weight_bytes, decode_exponents)
    # The batch: what the user says the engine runs (its slots), else the most requests the
    # server's own metrics saw running, else every client of the highest load recorded
    # (held-back points included: a load level is the experiment's design, not a latency).
    running = [r for p in points if (r := p.running_peak) is not None]
    batch = max_batch or (round(max(running)) if running else 0)
    fitted = replace(fitted, max_batch=max(1, batch or max(p.concurrency for p in points)))
    provenance = provenance_of(points, now)
    for _ in range(REFINE_ROUNDS):
        deployment, with_rows = build(fitted, model, name, provenance, catalog, with_hit=False)
        comparisons = predict(_document(deployment, with_rows, provenance), fit)
        fitted, done = refine(fitted, comparisons, shape.active_params, weight_bytes)
        if done:
            break
    replay, with_rows = build(fitted, model, name, provenance, catalog, with_hit=False)
    replayed = _document(replay, with_rows, provenance)
    deployment, with_rows = build(fitted, model, name, provenance, catalog)
    return Calibration(
        deployment=deployment,
        catalog=with_rows,
        fitted=fitted,
        provenance=provenance,
        fit=tuple(predict(replayed, fit)),
        held_out=tuple(predict(replayed, held)),
        document=_document(deployment, with_rows, provenance),
        warnings=tuple(noise_warnings(points)),
    )


def _document(deployment: Deployment, catalog: Catalog, provenance: str) -> str:
    from notes_cli.engine.core.deployment_file import dump_deployment

    text = dump_deployment(deployment, catalog, written_by="pdnotes engine calibrate")
    return f"# Calibrated: {provenance}\n{text}"


def _model_shape(points: list[LoadPoint], given: str | None, catalog: Catalog) -> str:
    """The catalog model the engine serves: --model-shape, else the records' model id when it
    names a catalog row (case and separators aside)."""
    if given is not None:
        if given not in catalog.models:
            raise CalibrationRefused(
                f"--model-shape {given!r} is not a model pdnotes knows",
                fix="pick one of: " + ", ".join(sorted(catalog.models)),
            )
        return given
    ids = {str(p.meta.get("model")) for p in points if p.meta.get("model")}

    def key(text: str) -> str:
        return "".join(ch for ch in text.lower() if ch.isalnum())

    rows = {key(n): n for n in catalog.models}
    for model_id in ids:
        if key(model_id) in rows:
            return rows[key(model_id)]
    served = ", ".join(sorted(ids)) or "not recorded"
    raise CalibrationRefused(
        f"which model's shape to fit is unknown (the records' model: {served})",
        fix="pass --model-shape NAME, one of: " + ", ".join(sorted(catalog.models)),
    )


def uncalibrated(calibration: Calibration, chip: str = UNCALIBRATED_CHIP) -> str:
    """The same deployment on a shipped chip row with the default overheads: the prediction
    pdnotes makes without calibration, as a deployment file's text."""
    from notes_cli.engine.core.deployment_file import dump_deployment

    dep = replace(
        calibration.deployment,
        name="uncalibrated",
        colocated=NodeGroup(1, chip),
        decode_exec="eager",
        request_overhead_ms=None,
        step_overhead_ms=None,
        seq_overhead_us=None,
        seq_overhead_exponent=None,
        prefix_cache_hit=0.0,
        description=f"the shipped {chip} row, uncalibrated",
        source="",
    )
    catalog = load_catalog(user=False)
    return dump_deployment(
        dep, replace(catalog, deployments={**catalog.deployments, dep.name: dep})
    )
