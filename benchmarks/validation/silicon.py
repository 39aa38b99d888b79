"""Measured serving runs of aiconfigurator-core 0.12.0's `systems/silicon_sample.csv`, read with
the project's held-back rows removed (issue 37, docs/validation.md "Measured serving runs").

THE RULE: the rows whose `id` is listed in holdout-ids.txt (beside this file) are pdnotes'
independent check. `read_runs` drops them row by row on the `id` column as the FIRST thing it
does with each row, before any other processing; every reader of the CSV in pdnotes goes
through it. Never read the CSV any other way.
"""

from __future__ import annotations

import csv
import hashlib
import math
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
HOLDOUT_IDS = HERE / "holdout-ids.txt"


def holdout_ids(path: Path = HOLDOUT_IDS) -> frozenset[str]:
    """The held-back ids: one a line, '#' comments and blank lines skipped."""
    lines = path.read_text(encoding="utf-8").splitlines()
    ids = frozenset(s for line in lines if (s := line.strip()) and not s.startswith("#"))
    if not ids:
        raise ValueError(f"{path} lists no ids: refusing to read the runs unfiltered")
    return ids


def filtered(rows: Iterable[dict[str, str]], excluded: frozenset[str]) -> Iterator[dict[str, str]]:
    """The rows whose `id` is not excluded, one by one; a row with no `id` is an error (it could
    not be checked against the list)."""
    for row in rows:
        run_id = row.get("id")
        if run_id is None:
            raise ValueError("a row has no `id` column: it cannot be checked against the holdout")
        if run_id.strip() in excluded:
            continue
        yield row


def read_runs(path: Path, excluded: frozenset[str] | None = None) -> Iterator[dict[str, str]]:
    """The rows of a silicon_sample-style CSV at `path` (the wheel's file, or the derived
    silicon_runs.csv whose '#' lines carry its license), held-back ids removed first."""
    excluded = holdout_ids() if excluded is None else excluded
    with path.open(encoding="utf-8", newline="") as handle:
        lines = (line for line in handle if not line.startswith("#"))
        yield from filtered(csv.DictReader(lines), excluded)


# ---- the split ---------------------------------------------------------------------------------


def unit_of(run_id: str) -> str:
    """The configuration a run belongs to: its id without the concurrency (`_c<N>`), so the runs
    of one configuration at every concurrency fall in the same part."""
    return re.sub(r"_c\d+(?=_|$)", "", run_id)


def _hash(text: str) -> int:
    return int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest()[:8], "big")


def unit_hash(run_id: str) -> int:
    """A stable number for a run's configuration (subsamples take whole configurations)."""
    return _hash("subsample:" + unit_of(run_id))


def measured_pair(row: dict[str, str]) -> tuple[str, str] | None:
    """A run's measurement as the source prints it (mean TTFT, mean TPOT), None when either is
    missing or zero: two runs with the same pair are one measurement named twice."""
    pair = (row["silicon_ttft_ms"].strip(), row["silicon_tpot_ms"].strip())
    try:
        return pair if all(float(v) > 0 for v in pair) else None
    except ValueError:
        return None


def split(rows: Iterable[dict[str, str]]) -> dict[str, str]:
    """id -> 'calibration' or 'validation'. Stratified by group: within each group the
    configurations (unit_of) are ordered by a hash of their name and dealt alternately, the
    first to calibration. Configurations that share a measured run (the source names some runs
    twice: a dated file's id and a database dump's `cfg` id with the same TTFT and TPOT to
    every digit) are dealt together, as one, under the first of their names. Depends on ids,
    groups and equality of measured pairs only, never on a measured number's size."""
    rows = list(rows)
    joined: dict[str, str] = {}  # unit -> a unit it is dealt with (union-find)

    def root(unit: str) -> str:
        while joined.setdefault(unit, unit) != unit:
            unit = joined[unit]
        return unit

    by_pair: dict[tuple[str, str], str] = {}
    for row in rows:
        unit = root(unit_of(row["id"]))
        pair = measured_pair(row)
        if pair is None:
            continue
        other = root(by_pair.setdefault(pair, unit))
        if other != unit:
            first, second = sorted((unit, other))
            joined[second] = first
    members: dict[str, list[dict[str, str]]] = {}
    for row in rows:
        members.setdefault(root(unit_of(row["id"])), []).append(row)
    deals: dict[tuple[str, ...], list[str]] = {}
    for name, runs in members.items():
        # a joined set's group is its first name's (twins of the two id schemes share it)
        named = [r for r in runs if unit_of(r["id"]) == name] or runs
        deals.setdefault(group_of(named[0]), []).append(name)
    parts: dict[str, str] = {}
    for names in deals.values():
        for rank, name in enumerate(sorted(names, key=lambda u: (_hash(u), u))):
            for row in members[name]:
                parts[row["id"]] = PARTS[rank % 2]
    return parts


PARTS = ("calibration", "validation")


# ---- a row as pdnotes poses it ------------------------------------------------------------------

CHIPS = {"h100_sxm": "h100-sxm", "h200_sxm": "h200"}
"""aiconfigurator system -> pdnotes chip; other systems (Blackwell, fp4) are not scored."""

MODELS = {
    "meta-llama/Llama-3.1-8B-Instruct": "llama-3.1-8b",
    "nvidia/Llama-3.1-8B-Instruct-FP8": "llama-3.1-8b",
    "meta-llama/Llama-3.1-70B": "llama-3.1-70b",
    "Qwen/Qwen3-32B": "qwen3-32b",
    "Qwen/Qwen3-235B-A22B-FP8": "qwen3-235b-a22b",
    "deepseek-ai/DeepSeek-R1": "deepseek-r1",
    "deepseek-ai/DeepSeek-V3": "deepseek-v3",
    "openai/gpt-oss-120b": "gpt-oss-120b",
}
"""model_path -> pdnotes model; models pdnotes has no row for (MiniMax-M2.5, Qwen3.5, GLM-5,
Kimi-K2.5) are not scored."""

ENGINES = ("trtllm", "vllm", "sglang")

MOE_MODELS = {"qwen3-235b-a22b", "deepseek-r1", "deepseek-v3", "gpt-oss-120b"}

KEPT_COLUMNS = (
    "id",
    "backend",
    "backend_version",
    "model_path",
    "system",
    "precision",
    "mode",
    "isl",
    "osl",
    "concurrency",
    "batch_size",
    "tp_size",
    "attention_dp_size",
    "moe_ep_size",
    "prefill_batch_size",
    "prefill_num_workers",
    "prefill_tp_size",
    "prefill_attention_dp_size",
    "prefill_moe_ep_size",
    "decode_batch_size",
    "decode_num_workers",
    "decode_tp_size",
    "decode_attention_dp_size",
    "decode_moe_ep_size",
    "silicon_ttft_ms",
    "silicon_tpot_ms",
)
"""The columns the derived file keeps (`concurrency` is read out of `silicon_data_source`)."""

# Documented defaults for what a row does not say (docs/validation.md, "Measured serving runs"):
# the same for every row, never chosen per row.
CHUNK_TOKENS = 8192  # TRT-LLM max_num_tokens, vLLM max_num_batched_tokens, SGLang chunked prefill
DEFAULT_WORKERS = 1  # "one-pair" rule: a disagg row without counts runs 1 prefill + 1 decode
DEFAULT_MAX_BATCH = 256  # a row without a batch size
NODE_GPUS = 8  # HGX H100/H200: KV moves over NVLink inside 8 GPUs, over RDMA beyond


def _int(value: str, default: int) -> int:
    value = (value or "").strip()
    return int(float(value)) if value and float(value) > 0 else default


def concurrency_of(row: dict[str, str]) -> int | None:
    """The run's client count: `silicon_concurrency=` in its source, else `_c<N>_` in its id."""
    found = re.search(r"silicon_concurrency=(\d+)", row.get("silicon_data_source", ""))
    if found is None:
        found = re.search(r"_c(\d+)(?:_|$)", row["id"])
    return int(found.group(1)) if found else None


def compact(row: dict[str, str]) -> dict[str, str] | None:
    """A row of the wheel's CSV reduced to KEPT_COLUMNS, or None when pdnotes cannot pose it
    (another chip, a model pdnotes has no row for, no concurrency, no measurement)."""
    if row["system"] not in CHIPS or row["model_path"] not in MODELS:
        return None
    conc = concurrency_of(row)
    if conc is None or not row["silicon_ttft_ms"] or not row["silicon_tpot_ms"]:
        return None
    out = {key: row.get(key, "") for key in KEPT_COLUMNS}
    out["concurrency"] = str(conc)
    return out


def max_batch_of(row: dict[str, str]) -> int:
    """The engine's batch limit. The row's batch size is per attention-DP rank (each rank runs
    its own scheduler; in the source an attention-DP run's concurrency is DP x batch, agg and
    disagg alike), so a worker holds it times its DP ranks: the decode workers' for a disagg
    row, the replica's for an agg row."""
    if row["mode"] == "disagg":
        return _int(row["decode_batch_size"], DEFAULT_MAX_BATCH) * _int(
            row["decode_attention_dp_size"], 1
        )
    return _int(row["batch_size"], DEFAULT_MAX_BATCH) * _int(row["attention_dp_size"], 1)


def model_class(row: dict[str, str]) -> str:
    """dense bf16 / dense fp8 / MoE (any precision)."""
    if MODELS[row["model_path"]] in MOE_MODELS:
        return "MoE"
    return "dense fp8" if row["precision"] in ("fp8", "fp8_block") else "dense bf16"


def weight_dtype(row: dict[str, str]) -> str | None:
    """The precision served: fp8 rows fp8, fp4 rows the model's own 4-bit format, else the
    model's own (None)."""
    if row["precision"] == "fp8":
        return "fp8"
    return None


def parallel_label(row: dict[str, str]) -> str:
    """TP/DP/EP of the run; a disagg run's prefill and decode workers each."""

    def one(prefix: str) -> str:
        tp = _int(row[f"{prefix}tp_size"], 1)
        dp = _int(row[f"{prefix}attention_dp_size"], 1)
        ep = _int(row[f"{prefix}moe_ep_size"], 1)
        return f"TP{tp}" + (f"·DP{dp}" if dp > 1 else "") + (f"·EP{ep}" if ep > 1 else "")

    if row["mode"] == "disagg":
        return f"P {one('prefill_')} / D {one('decode_')}"
    return one("")


def group_of(row: dict[str, str]) -> tuple[str, str, str, str]:
    """(model class, engine, parallelism, agg/disagg): the rows a table line summarises."""
    return (model_class(row), row["backend"], parallel_label(row), row["mode"])


def backend_for(engine: str, version: str, known: Iterable[str]) -> str | None:
    """The pdnotes backend for a row's engine: `engine-major.minor` when pdnotes has a
    description of that version, else the plain engine name if it has one, else None. A rule of
    the harness, the same for every row."""
    known = set(known)
    parts = version.split(".")
    if len(parts) >= 2 and f"{engine}-{parts[0]}.{parts[1]}" in known:
        return f"{engine}-{parts[0]}.{parts[1]}"
    return engine if engine in known else None


def _group(row: dict[str, str], prefix: str, chip: str, count: int) -> Any:
    from notes_cli.engine.core.profiles import NodeGroup

    return NodeGroup(
        count,
        chip,
        tp=_int(row[f"{prefix}tp_size"], 1),
        dp=_int(row[f"{prefix}attention_dp_size"], 1),
        ep=_int(row[f"{prefix}moe_ep_size"], 1),
    )


@dataclass(frozen=True)
class DisaggSizes:
    """How many prefill and decode workers a disagg row runs, the sequences one decode worker
    holds and the prompts one prefill step takes (all attention-DP ranks of a worker)."""

    prefill_workers: int
    decode_workers: int
    decode_batch: int
    prefill_batch: int


def disagg_sizes(
    row: dict[str, str], catalog: Any = None, harness: Harness | None = None
) -> DisaggSizes:
    """The row's worker counts and decode batch where it gives them, else the harness's rule
    (docs/validation.md, "How a run is posed"). The row's decode batch size is per
    attention-DP rank (aiconfigurator's runs: concurrency = decode workers x DP x batch).

    "rate-matched" (the default): decode workers enough that every one of the row's clients
    holds a decode slot, at most DEFAULT_MAX_BATCH per attention-DP rank and no more than a
    worker's KV memory holds at the full prompt + answer; prefill workers enough to feed them
    (rate_matched_prefill). "one-pair": one prefill and one decode worker (the earlier rule)."""
    conc = max(1, int(row["concurrency"]))
    prompts = prefill_prompts(row)
    d_dp = _int(row["decode_attention_dp_size"], 1)
    given_p = _int(row["prefill_num_workers"], 0)
    given_d = _int(row["decode_num_workers"], 0)
    given_batch = _int(row["decode_batch_size"], 0) * d_dp
    if (harness or HARNESS).disagg_rule == "one-pair":
        return DisaggSizes(
            given_p or DEFAULT_WORKERS,
            given_d or DEFAULT_WORKERS,
            given_batch or DEFAULT_MAX_BATCH,
            prompts,
        )
    costs = _phase_costs(row, catalog)
    per_worker = min(d_dp * DEFAULT_MAX_BATCH, costs.decode_fits)
    decode = given_d or -(-conc // max(1, per_worker))
    batch = given_batch or -(-conc // decode)  # every client holds a decode slot
    prefill = given_p or rate_matched_prefill(row, decode, batch, prompts, costs)
    return DisaggSizes(prefill, decode, batch, prompts)


def prefill_prompts(row: dict[str, str]) -> int:
    """Prompts one disagg prefill step takes: each attention-DP rank schedules its own batch
    (TRT-LLM's max_num_tokens and vLLM's max_num_batched_tokens are per rank), the row's
    prefill batch size of prompts where it gives one, else what CHUNK_TOKENS holds (at least
    one)."""
    per_rank = _int(row["prefill_batch_size"], 0) or max(1, CHUNK_TOKENS // int(row["isl"]))
    return per_rank * _int(row["prefill_attention_dp_size"], 1)


@dataclass(frozen=True)
class _PhaseCosts:
    prefill: Any  # NodeCost of one prefill worker
    decode: Any  # NodeCost of one decode worker
    decode_fits: int  # sequences of prompt + answer one decode worker's KV memory holds


def _phase_costs(row: dict[str, str], catalog: Any = None) -> _PhaseCosts:
    from notes_cli.engine.core.costmodel import NodeCost
    from notes_cli.engine.core.profiles import Deployment, load_catalog

    catalog = catalog or load_catalog(user=False)
    model = catalog.models[MODELS[row["model_path"]]]
    chip_name = CHIPS[row["system"]]
    chip = catalog.chips[chip_name]
    probe = Deployment(
        name="probe",
        mode="disagg",
        model=model.name,
        link="nvlink4",
        weight_dtype=weight_dtype(row),
    )
    prefill = NodeCost.for_group(model, chip, _group(row, "prefill_", chip_name, 1), probe)
    decode = NodeCost.for_group(model, chip, _group(row, "decode_", chip_name, 1), probe)
    tokens = int(row["isl"]) + int(row["osl"])
    fits = decode.kv_capacity_tokens(probe.gpu_memory_utilization) // tokens
    return _PhaseCosts(prefill, decode, max(1, fits))


def rate_matched_prefill(
    row: dict[str, str], decode_workers: int, decode_batch: int, prompts: int, costs: _PhaseCosts
) -> int:
    """Prefill workers enough to feed the decode workers, aiconfigurator's rate matching
    (prefill requests/s x workers >= decode requests/s x workers) on pdnotes' own step costs:
    a prefill step of `prompts` prompts, a decode step of the decode batch at half the
    answer's length."""
    isl, osl = int(row["isl"]), int(row["osl"])
    p_cost, d_cost = costs.prefill, costs.decode
    prefill_rate = prompts / p_cost.prefill_batch_ms([isl] * prompts)
    step = d_cost.decode_step_ms(decode_batch, decode_batch * (isl + osl / 2))
    decode_rate = decode_batch / (step * max(1, osl - 1))
    return max(1, math.ceil(decode_workers * decode_rate / prefill_rate - 1e-9))


def deployment_for(
    row: dict[str, str],
    backends: Iterable[str],
    tuning: Tuning | None = None,
    harness: Harness | None = None,
    catalog: Any = None,
) -> Any:
    """The deployment pdnotes simulates for a row: its chip, model, precision and parallelism;
    agg = one replica in chunked mode (in-flight batching, CHUNK_TOKENS a step, max batch the
    row's batch size); disagg = its prefill and decode workers and decode batch (disagg_sizes:
    the row's, else the harness's rule), KV over NVLink within NODE_GPUS GPUs, RDMA beyond."""
    from notes_cli.engine.core.profiles import Deployment

    chip = CHIPS[row["system"]]
    common = {
        "name": f"silicon-{row['id']}",
        "model": MODELS[row["model_path"]],
        "prefill_token_budget": CHUNK_TOKENS,
        "chunk_tokens": CHUNK_TOKENS,
        "weight_dtype": weight_dtype(row),
        "backend": backend_for(row["backend"], row["backend_version"], backends),
    }
    tuned = dict((tuning or {}).get(row["backend"], {}))
    # the fitted per-request time of the engine's disaggregated stack applies to its disagg
    # rows, that of its aggregated server (round seven) to its agg rows
    disagg_overhead = tuned.pop("disagg_request_overhead_ms", None)
    agg_overhead = tuned.pop("agg_request_overhead_ms", None)
    common.update(tuned)
    if row["mode"] != "disagg" and agg_overhead is not None:
        common["request_overhead_ms"] = agg_overhead
    if row["mode"] == "disagg":
        if disagg_overhead is not None:
            common["request_overhead_ms"] = disagg_overhead
        sizes = disagg_sizes(row, catalog, harness)
        prefill = _group(row, "prefill_", chip, sizes.prefill_workers)
        decode = _group(row, "decode_", chip, sizes.decode_workers)
        gpus = prefill.gpus + decode.gpus
        # a prefill step takes sizes.prefill_batch prompts of the row's length
        common["prefill_token_budget"] = sizes.prefill_batch * int(row["isl"])
        return Deployment(
            mode="disagg",
            link="nvlink4" if gpus <= NODE_GPUS else "rdma-8x400g",
            prefill=prefill,
            decode=decode,
            max_batch=sizes.decode_batch,
            **common,
        )
    # each attention-DP rank schedules its own CHUNK_TOKENS a step (max_num_tokens is per rank)
    dp = _int(row["attention_dp_size"], 1)
    common["prefill_token_budget"] = common["chunk_tokens"] = CHUNK_TOKENS * dp
    return Deployment(
        mode=(harness or HARNESS).agg_mode,
        link="nvlink4",
        colocated=_group(row, "", chip, 1),
        max_batch=max_batch_of(row),
        **common,
    )


Tuning = dict[str, dict[str, float]]
"""engine -> Deployment fields set on every row of that engine (the calibration fit writes it:
`step_overhead_ms`, `seq_overhead_us`), and `disagg_request_overhead_ms` and
`agg_request_overhead_ms`, each set as `request_overhead_ms` on the engine's disagg or agg
rows only."""

OVERHEAD_MS = [x * 10.0 for x in range(0, 301)]  # 0-3 s per request


def fit_added_ms(runs: Iterable[tuple[float, float]], grid: Iterable[float] = OVERHEAD_MS) -> float:
    """The time x (ms) that, added to each run's predicted TTFT, minimises the sum of squared
    log(predicted + x) / measured over `runs` of (predicted, measured) TTFT: the calibration
    fit of a stack's per-request time pdnotes does not model (an approximation: the added
    time's effect on the closed loop's queueing is not simulated)."""
    runs = list(runs)
    return min(grid, key=lambda x: sum(math.log((p + x) / m) ** 2 for p, m in runs))


@dataclass(frozen=True)
class Harness:
    """How every row is simulated (the same for all rows; docs/validation.md names the values).
    `rounds`: requests per client; `skip_first_round`: leave out of the means the requests of
    the closed loop's first round (all clients at once at t=0, a burst the measuring tool's
    warm-up does not see); `later_rounds`: "spread" (round seven), the rounds after the first
    burst are those of clients spread evenly over one request's cycle (`engine simulate
    --clients spread`'s loop; bench.closed_loop.spread_starts), or
    "lockstep" (rounds one to six), the same simulation's later rounds, where clients that
    started together stay together; `agg_mode`: the pdnotes mode an aggregated run is simulated
    in; `disagg_rule`: what a disagg row without worker counts runs (disagg_sizes)."""

    rounds: int = 10
    skip_first_round: bool = False
    later_rounds: str = "spread"
    agg_mode: str = "chunked"
    disagg_rule: str = "rate-matched"


HARNESS = Harness()
MIN_REQUESTS = 16


def requests_for(concurrency: int, harness: Harness = HARNESS) -> int:
    return max(MIN_REQUESTS, harness.rounds * concurrency)


@dataclass(frozen=True)
class Scored:
    """One row: pdnotes' mean TTFT and TPOT against the measured means."""

    id: str
    part: str
    group: tuple[str, str, str, str]
    isl: int
    osl: int
    ttft_ms: float
    tpot_ms: float
    measured_ttft_ms: float
    measured_tpot_ms: float

    @property
    def ttft_ratio(self) -> float:
        """predicted / measured: above 1 pdnotes is slower than measured."""
        return self.ttft_ms / self.measured_ttft_ms

    @property
    def tpot_ratio(self) -> float:
        return self.tpot_ms / self.measured_tpot_ms


def score(
    row: dict[str, str],
    catalog: Any,
    part: str,
    tuning: Tuning | None = None,
    harness: Harness = HARNESS,
) -> Scored:
    """pdnotes' closed loop (`engine simulate -c C`) on one row's deployment and lengths: the
    mean TTFT and mean TPOT (vLLM's definition, requests with more than one output token)."""
    from notes_cli.bench.closed_loop import ClosedLoop, spread_starts
    from notes_cli.bench.workload import ArrivalSpec, LengthSpec, synthetic
    from notes_cli.engine.core import backends
    from notes_cli.engine.simulate.configs import SimConfig
    from notes_cli.engine.simulate.engine_simulator import EngineSimulator

    # the backend names pdnotes accepts: its descriptions and any aliases of them
    known = set(backends.BACKENDS) | set(getattr(backends, "BACKEND_ALIASES", {}))
    deployment = deployment_for(row, known, tuning, harness, catalog)
    catalog = replace(catalog, deployments={**catalog.deployments, deployment.name: deployment})
    conc = int(row["concurrency"])
    lengths = LengthSpec(int(row["isl"]), int(row["osl"]))
    count = requests_for(conc, harness)

    def closed_loop(starts: list[float] | None = None) -> list[Any]:
        items = synthetic(count, lengths, ArrivalSpec(rate=None), seed=0)
        loop = ClosedLoop(items, conc, starts)
        records = []
        for record in EngineSimulator(catalog).run(SimConfig(deployment.name), loop.requests(), 0):
            loop.finished(record)
            records.append(record)
        return records

    burst = closed_loop()
    records = burst
    if harness.later_rounds == "spread" and count > conc:
        cycle = sum(r.e2e_ms for r in burst) / len(burst)  # arrival to last token, on average
        spread = sorted(closed_loop(spread_starts(cycle, conc)), key=lambda r: r.arrival_ms)
        records = [r for r in burst if r.arrival_ms == 0.0] + spread[conc:]
    ttfts: list[float] = []
    tpots: list[float] = []
    for record in records:
        if harness.skip_first_round and record.arrival_ms == 0.0:
            continue
        ttfts.append(record.ttft_ms)
        if int(record.output_tokens) > 1:
            tpots.append(record.tpot_ms)
    return Scored(
        id=row["id"],
        part=part,
        group=group_of(row),
        isl=int(row["isl"]),
        osl=int(row["osl"]),
        ttft_ms=sum(ttfts) / len(ttfts),
        tpot_ms=sum(tpots) / len(tpots),
        measured_ttft_ms=float(row["silicon_ttft_ms"]),
        measured_tpot_ms=float(row["silicon_tpot_ms"]),
    )


# ---- bias per group ---------------------------------------------------------------------------

WITHIN = {"ttft": 0.5, "tpot": 0.3}
"""The issue's bar: TTFT within +-50 %, TPOT within +-30 % of the measured mean."""


def quantile(values: list[float], q: float) -> float:
    """Linear-interpolated quantile (numpy's default) of a non-empty list."""
    ordered = sorted(values)
    pos = q * (len(ordered) - 1)
    low = int(pos)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (pos - low)


@dataclass(frozen=True)
class Bias:
    """A group's signed ratios predicted/measured: median, P10-P90, share within the bar."""

    runs: int
    ttft: tuple[float, float, float]  # P10, median, P90
    tpot: tuple[float, float, float]
    ttft_within: float
    tpot_within: float
    both_within: float


def bias(scored: list[Scored]) -> Bias:
    ttft = [s.ttft_ratio for s in scored]
    tpot = [s.tpot_ratio for s in scored]
    ok_ttft = [abs(r - 1) <= WITHIN["ttft"] for r in ttft]
    ok_tpot = [abs(r - 1) <= WITHIN["tpot"] for r in tpot]
    n = len(scored)
    return Bias(
        runs=n,
        ttft=(quantile(ttft, 0.1), quantile(ttft, 0.5), quantile(ttft, 0.9)),
        tpot=(quantile(tpot, 0.1), quantile(tpot, 0.5), quantile(tpot, 0.9)),
        ttft_within=sum(ok_ttft) / n,
        tpot_within=sum(ok_tpot) / n,
        both_within=sum(a and b for a, b in zip(ok_ttft, ok_tpot, strict=True)) / n,
    )


def by_group(
    scored: Iterable[Scored], key: Callable[[Scored], tuple[str, ...]]
) -> dict[tuple[str, ...], Bias]:
    """Bias per key(scored), one part at a time: mixing parts is refused."""
    groups: dict[tuple[str, ...], list[Scored]] = {}
    parts = set()
    for item in scored:
        parts.add(item.part)
        groups.setdefault(key(item), []).append(item)
    if len(parts) > 1:
        raise ValueError(f"calibration and validation are never pooled (got {sorted(parts)})")
    return {k: bias(v) for k, v in sorted(groups.items())}
