"""pdnotes against aiconfigurator's measured serving runs (docs/validation.md, "Measured serving
runs: bias per group"). Every read of the runs goes through silicon.read_runs, which drops the
project's held-back rows (holdout-ids.txt) first.

    python benchmarks/validation/run.py derive WHEEL_CSV   # write silicon_runs.csv (once)
    python benchmarks/validation/run.py score calibration  # simulate a part, results/<part>.csv
    python benchmarks/validation/run.py fit                # fit the engines' CPU costs (tuning)
    python benchmarks/validation/run.py score calibration --tuned
    python benchmarks/validation/run.py report calibration-tuned [--write]
    python benchmarks/validation/run.py twins validation validation-tuned  # one run, two ids

`score validation` refuses to run before a commit whose message starts with "FREEZE:" exists,
and while the engine model, its rows, this harness or the tuning differ from what frozen.toml
names (committed and unmodified): the model and the tuning are frozen before the validation
part is looked at, and the validation part is scored with exactly that model. A few minutes of
CPU per part (about 800 runs, each a short closed-loop simulation).
"""

from __future__ import annotations

import argparse
import csv
import math
import statistics
import subprocess
import sys
import tomllib
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(HERE))

import silicon  # noqa: E402

RUNS = HERE / "silicon_runs.csv"
RESULTS = HERE / "results"
TUNING = HERE / "tuning.toml"
DOC = ROOT / "docs" / "validation.md"

LICENSE_HEADER = """\
# SPDX-FileCopyrightText: Copyright (c) 2025-2026 NVIDIA CORPORATION & AFFILIATES. All rights reserved.
# SPDX-License-Identifier: Apache-2.0
#
# DERIVED from NVIDIA aiconfigurator-core 0.12.0 (PyPI, Apache-2.0; license text in
# LICENSES/aiconfigurator-Apache-2.0.txt; github.com/ai-dynamo/aiconfigurator), file
# aiconfigurator_core/systems/silicon_sample.csv: measured serving runs.
# Changes: the rows whose id is in benchmarks/validation/holdout-ids.txt are EXCLUDED (never
# read); only H100/H200 rows of models pdnotes describes are kept; only the columns pdnotes
# scores are kept; `concurrency` is read out of `silicon_data_source`. Values are unchanged.
# Written by benchmarks/validation/run.py derive.
"""


def derive(wheel_csv: Path) -> None:
    kept = [c for row in silicon.read_runs(wheel_csv) if (c := silicon.compact(row)) is not None]
    with RUNS.open("w", encoding="utf-8", newline="") as handle:
        handle.write(LICENSE_HEADER)
        writer = csv.DictWriter(handle, fieldnames=silicon.KEPT_COLUMNS, lineterminator="\n")
        writer.writeheader()
        writer.writerows(kept)
    print(f"{len(kept)} runs -> {RUNS.relative_to(ROOT)}")


def load_tuning() -> silicon.Tuning:
    if not TUNING.exists():
        return {}
    data = tomllib.loads(TUNING.read_text(encoding="utf-8"))
    return {engine: dict(values) for engine, values in data.get("engines", {}).items()}


def frozen() -> bool:
    out = subprocess.run(
        ["git", "-C", str(ROOT), "log", "--format=%s", "--grep=^FREEZE:"],
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    )
    return bool(out.stdout.strip())


# What a FREEZE: commit fixes (frozen.toml's keys): the engine model, its bundled rows, the
# harness that poses the runs and the fitted tuning. `score validation` runs only while each is,
# committed and unmodified, what frozen.toml names.
FROZEN = HERE / "frozen.toml"
FROZEN_PATHS = {
    "engine_tree": "notes_cli/engine",
    "templates_tree": "templates/engine",
    "harness_blob": "benchmarks/validation/silicon.py",
    "tuning_blob": "benchmarks/validation/tuning.toml",
    "closed_loop_blob": "notes_cli/bench/closed_loop.py",  # the harness's clients (round seven)
}


def unfrozen(root: Path, frozen_toml: dict[str, object]) -> list[str]:
    """What differs from the freeze: each frozen path whose committed object is not the one
    named, or which has uncommitted changes (empty: the model scored is the one frozen)."""
    changed = []
    for key, path in FROZEN_PATHS.items():
        named = str(frozen_toml.get(key, ""))
        now = _git(root, "rev-parse", f"HEAD:{path}")
        if not named or now != named:
            changed.append(f"{path} is {now[:10] or 'missing'}, frozen {named[:10] or 'unnamed'}")
        elif _git(root, "status", "--porcelain", "--", path):
            changed.append(f"{path} has uncommitted changes")
    return changed


def _git(root: Path, *args: str) -> str:
    out = subprocess.run(
        ["git", "-C", str(root), *args], capture_output=True, text=True, timeout=30, check=False
    )
    return out.stdout.strip() if out.returncode == 0 else ""


def rows_of(
    part: str, every: int = 1, mode: str | None = None, group: str = ""
) -> list[dict[str, str]]:
    """The runs of a part; with `every` > 1 only the configurations whose name hashes to 0
    modulo `every` (a deterministic subsample, whole configurations); with `mode` only its
    agg or disagg runs; with `group` (comma-separated, e.g. "MoE,agg" or "dense bf16,trtllm")
    only the runs whose group (class, engine, parallelism, mode) has every one of those values
    (the split itself is always made on all runs)."""
    rows = list(silicon.read_runs(RUNS))
    parts = silicon.split(rows)
    wanted = {w.strip() for w in group.split(",") if w.strip()}
    return [
        row
        for row in rows
        if parts[row["id"]] == part
        and silicon.unit_hash(row["id"]) % every == 0
        and (mode is None or row["mode"] == mode)
        and wanted <= set(silicon.group_of(row))
    ]


FIELDS = (
    "id",
    "part",
    "class",
    "engine",
    "parallelism",
    "mode",
    "isl",
    "osl",
    "concurrency",
    "measured_ttft_ms",
    "measured_tpot_ms",
    "ttft_ms",
    "tpot_ms",
    "ttft_ratio",
    "tpot_ratio",
    "skipped",
)


def score(
    part: str,
    tuning: silicon.Tuning,
    name: str,
    every: int = 1,
    mode: str | None = None,
    group: str = "",
) -> Path:
    from notes_cli.engine.core.profiles import load_catalog
    from notes_cli.errors import InputError, UsageError

    if part == "validation":
        if not frozen():
            sys.exit("no FREEZE: commit yet: freeze the model and tuning before scoring validation")
        changed = unfrozen(ROOT, tomllib.loads(FROZEN.read_text(encoding="utf-8")))
        if changed:
            sys.exit(
                "the model is not the one frozen in frozen.toml ("
                + "; ".join(changed)
                + "): commit the changes, freeze again (frozen.toml + a FREEZE: commit), then score"
            )
    catalog = load_catalog(user=False)
    out = RESULTS / f"{name}.csv"
    RESULTS.mkdir(exist_ok=True)
    rows = rows_of(part, every, mode, group)
    with out.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=FIELDS, lineterminator="\n")
        writer.writeheader()
        for row in rows:
            try:
                got = silicon.score(row, catalog, part, tuning)
            except (UsageError, InputError) as exc:  # pdnotes refuses the deployment as given
                writer.writerow({"id": row["id"], "part": part, "skipped": str(exc)})
                continue
            klass, engine, parallelism, mode = got.group
            writer.writerow(
                {
                    "id": got.id,
                    "part": part,
                    "class": klass,
                    "engine": engine,
                    "parallelism": parallelism,
                    "mode": mode,
                    "isl": got.isl,
                    "osl": got.osl,
                    "concurrency": row["concurrency"],
                    "measured_ttft_ms": f"{got.measured_ttft_ms:.3f}",
                    "measured_tpot_ms": f"{got.measured_tpot_ms:.3f}",
                    "ttft_ms": f"{got.ttft_ms:.3f}",
                    "tpot_ms": f"{got.tpot_ms:.3f}",
                    "ttft_ratio": f"{got.ttft_ratio:.4f}",
                    "tpot_ratio": f"{got.tpot_ratio:.4f}",
                }
            )
    print(f"{len(rows)} {part} runs -> {out.relative_to(ROOT)}")
    return out


def read_results(name: str) -> list[silicon.Scored]:
    with (RESULTS / f"{name}.csv").open(encoding="utf-8", newline="") as handle:
        return [
            silicon.Scored(
                id=r["id"],
                part=r["part"],
                group=(r["class"], r["engine"], r["parallelism"], r["mode"]),
                isl=int(r["isl"]),
                osl=int(r["osl"]),
                ttft_ms=float(r["ttft_ms"]),
                tpot_ms=float(r["tpot_ms"]),
                measured_ttft_ms=float(r["measured_ttft_ms"]),
                measured_tpot_ms=float(r["measured_tpot_ms"]),
            )
            for r in csv.DictReader(handle)
            if not r["skipped"]
        ]


# ---- the fit: each engine's CPU time per step and per sequence, on calibration agg runs ----------

STEP_MS = [x * 0.25 for x in range(0, 41)]  # 0-10 ms per step
SEQ_US = [x * 5.0 for x in range(0, 41)]  # 0-200 us per sequence in a step


def fit(reuse: bool = False, every: int = 1) -> None:
    """Simulate the calibration runs with no engine CPU cost, then pick per engine, on its agg
    runs, the (ms per step, us per sequence) that minimise the sum of squared log TPOT ratios,
    the CPU time per step (batch = min(concurrency, max batch)) added to the simulated TPOT, or
    taking its place when larger for an engine that overlaps CPU and GPU work (an
    approximation: the mean step, not each step)."""
    zero = {e: {"step_overhead_ms": 0.0, "seq_overhead_us": 0.0} for e in silicon.ENGINES}
    name = RESULTS / "calibration-no-cpu.csv"
    if not (reuse and name.exists()):
        name = score("calibration", zero, "calibration-no-cpu", every)
    with name.open(encoding="utf-8", newline="") as handle:
        results = [r for r in csv.DictReader(handle) if r["mode"] == "agg"]
    from notes_cli.engine.core import backends

    known = set(backends.BACKENDS) | set(getattr(backends, "BACKEND_ALIASES", {}))
    batch_of, overlaps = {}, {}
    for row in rows_of("calibration", mode="agg"):
        batch_of[row["id"]] = min(int(row["concurrency"]), silicon.max_batch_of(row))
        # engines that run a step's CPU work under the GPU's next step: max(GPU, CPU), not sum
        overlaps[row["id"]] = bool(
            getattr(silicon.deployment_for(row, known), "cpu_overlap", False)
        )

    def tpot(r: dict[str, str], step_ms: float, seq_us: float) -> float:
        gpu, cpu = float(r["tpot_ms"]), step_ms + seq_us / 1000 * batch_of[r["id"]]
        return max(gpu, cpu) if overlaps[r["id"]] else gpu + cpu

    lines = [
        "# SPDX-FileCopyrightText: Copyright (c) 2025-2026 NVIDIA CORPORATION & AFFILIATES. "
        "All rights reserved.",
        "# SPDX-License-Identifier: Apache-2.0",
        "#",
        "# DERIVED from NVIDIA aiconfigurator-core 0.12.0's measured serving runs",
        "# (systems/silicon_sample.csv, Apache-2.0; license text in",
        "# LICENSES/aiconfigurator-Apache-2.0.txt, notices in LICENSES/aiconfigurator-NOTICE.txt)",
        "# by fitting: the values below are least-squares fits to the runs of silicon_runs.csv.",
        "#",
        "# Engine CPU costs FITTED by benchmarks/validation/run.py fit on the CALIBRATION part",
        "# only (its agg runs): least squares on log(TPOT predicted / measured); CPU added to the",
        "# simulated TPOT, or max(GPU, CPU) for engines that overlap them. Applied to every",
        "# run of the engine by `score --tuned` (Deployment step_overhead_ms / seq_overhead_us).",
        "# disagg_request_overhead_ms / agg_request_overhead_ms: least squares on log(TTFT",
        "# predicted / measured) over its calibration disagg / agg runs, a time added to each",
        "# (silicon.fit_added_ms) plus the default request overhead; set as request_overhead_ms",
        "# on the engine's disagg / agg runs only.",
        "",
        "[engines]",
    ]
    # disagg runs: the stack's time per request (router, KV bootstrap handshake, the decode
    # worker taking the request in) beyond pdnotes' prefill and transfer, added to TTFT
    with name.open(encoding="utf-8", newline="") as handle:
        disagg = [r for r in csv.DictReader(handle) if r["mode"] == "disagg" and not r["skipped"]]
    default_ms = {
        row["id"]: silicon.deployment_for(row, known, zero).overhead_ms
        for row in rows_of("calibration")
    }
    for engine in silicon.ENGINES:
        mine = [r for r in results if r["engine"] == engine]
        if not mine:
            continue
        best = min(
            ((a, b) for a in STEP_MS for b in SEQ_US),
            key=lambda ab: sum(
                math.log(tpot(r, ab[0], ab[1]) / float(r["measured_tpot_ms"])) ** 2 for r in mine
            ),
        )
        # agg runs: the server's time per request (HTTP, tokenising, the first token's way
        # out) beyond pdnotes' queue and prefill, added to TTFT (round seven)
        added = silicon.fit_added_ms(
            (float(r["ttft_ms"]), float(r["measured_ttft_ms"])) for r in mine
        )
        overhead = added + statistics.median(default_ms[r["id"]] for r in mine)
        entry = (
            f"step_overhead_ms = {best[0]}, seq_overhead_us = {best[1]}, "
            f"agg_request_overhead_ms = {overhead:.1f}"
        )
        note = f"{len(mine)} calibration agg runs"
        theirs = [r for r in disagg if r["engine"] == engine]
        if theirs:
            added = silicon.fit_added_ms(
                (float(r["ttft_ms"]), float(r["measured_ttft_ms"])) for r in theirs
            )
            overhead = added + statistics.median(default_ms[r["id"]] for r in theirs)
            entry += f", disagg_request_overhead_ms = {overhead:.1f}"
            note += f", {len(theirs)} disagg"
        lines.append(f"{engine} = {{ {entry} }}  # {note}")
    TUNING.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(TUNING.read_text(encoding="utf-8"))


# ---- the tables ----------------------------------------------------------------------------------


def _cells(b: silicon.Bias) -> str:
    t10, t50, t90 = b.ttft
    p10, p50, p90 = b.tpot
    return (
        f"{b.runs} | {t50:.2f} ({t10:.2f}–{t90:.2f}) | {b.ttft_within:.0%} | "
        f"{p50:.2f} ({p10:.2f}–{p90:.2f}) | {b.tpot_within:.0%} | **{b.both_within:.0%}**"
    )


HEAD = (
    "| {what} | runs | TTFT ratio median (P10–P90) | TTFT ±50 % | TPOT ratio median (P10–P90) "
    "| TPOT ±30 % | both |\n|{dashes}---|---|---|---|---|---|---|"
)


def table(scored: list[silicon.Scored], what: str, key: object) -> str:
    groups = silicon.by_group(scored, key)  # type: ignore[arg-type]
    n_cols = len(next(iter(groups))) if groups else 1
    lines = [HEAD.format(what=what, dashes="---|" * (n_cols - 1))]
    lines += [f"| {' | '.join(k)} | {_cells(b)} |" for k, b in groups.items()]
    return "\n".join(lines)


def long_context(s: silicon.Scored) -> tuple[str, ...]:
    prompt = "prompt ≥ 8K" if s.isl >= 8000 else "prompt < 8K"
    output = "output ≥ 8K" if s.osl >= 8000 else "output < 8K"
    return (s.group[0], prompt, output)


def skipped(name: str) -> list[dict[str, str]]:
    with (RESULTS / f"{name}.csv").open(encoding="utf-8", newline="") as handle:
        return [r for r in csv.DictReader(handle) if r["skipped"]]


def report(name: str) -> str:
    scored = read_results(name)
    if not scored:
        return f"(no runs in {name})"
    refused = skipped(name)
    return "\n\n".join(
        [
            f"{len(scored)} runs scored; {len(refused)} refused by pdnotes as the row states "
            f"them{': ' + refused[0]['skipped'].split(': ', 1)[-1][:90] + '…' if refused else ''}",
            table(scored, "all runs", lambda s: ("all",)),
            table(scored, "class | mode", lambda s: (s.group[0], s.group[3])),
            table(scored, "class | engine | mode", lambda s: (s.group[0], s.group[1], s.group[3])),
            table(scored, "class | prompt | output", long_context),
            table(scored, "class | engine | parallelism | mode", lambda s: s.group),
        ]
    )


# ---- twins: one measurement under two ids, one in each part ----------------------------------


def twins(rows: list[dict[str, str]], parts: dict[str, str]) -> set[str]:
    """The ids of runs whose measurement (mean TTFT and mean TPOT, to every digit the source
    prints) is also a run of the other part under another id. The source file repeats some runs
    under a second naming scheme (a dated source file's id and a database dump's `cfg` id), which
    the split's unit (the id without its concurrency) cannot join: such a validation run is not
    unseen by a fit made on calibration."""
    by_measurement: dict[tuple[str, str], list[str]] = {}
    for row in rows:
        key = (row["silicon_ttft_ms"].strip(), row["silicon_tpot_ms"].strip())
        by_measurement.setdefault(key, []).append(row["id"])
    return {
        run_id
        for ids in by_measurement.values()
        if len({parts[i] for i in ids}) > 1
        for run_id in ids
    }


def twins_report(names: list[str]) -> str:
    rows = list(silicon.read_runs(RUNS))
    parts = silicon.split(rows)
    twin_ids = twins(rows, parts)
    counts = {part: sum(parts[i] == part for i in twin_ids) for part in silicon.PARTS}
    lines = [
        "runs whose measurement is also a run of the other part: "
        + ", ".join(f"{counts[p]} of {sum(v == p for v in parts.values())} {p}" for p in counts)
    ]
    for name in names:
        scored = read_results(name)
        subsets = {
            "all": scored,
            "twins": [s for s in scored if s.id in twin_ids],
            "without twins": [s for s in scored if s.id not in twin_ids],
        }
        lines += ["", HEAD.format(what=name, dashes="")]
        lines += [f"| {k} | {_cells(silicon.bias(v))} |" for k, v in subsets.items() if v]
    return "\n".join(lines)


def write_section(name: str, text: str) -> None:
    begin, end = f"<!-- BEGIN silicon {name} -->", f"<!-- END silicon {name} -->"
    doc = DOC.read_text(encoding="utf-8")
    if begin not in doc or end not in doc:
        sys.exit(f"{DOC.relative_to(ROOT)} has no {begin} ... {end} markers")
    head, rest = doc.split(begin, 1)
    _, tail = rest.split(end, 1)
    DOC.write_text(f"{head}{begin}\n{text}\n{end}{tail}", encoding="utf-8")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("derive").add_argument("wheel_csv", type=Path)
    one = sub.add_parser("score")
    one.add_argument("part", choices=silicon.PARTS)
    one.add_argument("--tuned", action="store_true", help="with tuning.toml (the fit)")
    one.add_argument("--every", type=int, default=1, help="score 1 configuration in N")
    one.add_argument("--mode", choices=("agg", "disagg"), help="only the agg or disagg runs")
    one.add_argument(
        "--group", default="", help='only this group\'s runs, e.g. "MoE,agg" (results/PART-GROUP)'
    )
    report_parser = sub.add_parser("report", help="tables of results/NAME.csv")
    report_parser.add_argument("name", help="e.g. calibration, validation-tuned")
    report_parser.add_argument("--write", action="store_true", help="into docs/validation.md")
    fit_parser = sub.add_parser("fit")
    fit_parser.add_argument("--reuse", action="store_true", help="reuse its no-CPU scores")
    fit_parser.add_argument("--every", type=int, default=1, help="score 1 configuration in N")
    twins_parser = sub.add_parser("twins", help="runs measured once, named twice, split apart")
    twins_parser.add_argument("names", nargs="*", help="results to score with and without them")
    args = parser.parse_args()
    if args.command == "derive":
        derive(args.wheel_csv)
    elif args.command == "twins":
        print(twins_report(args.names))
    elif args.command == "fit":
        fit(args.reuse, args.every)
    else:
        if args.command == "score":
            name = args.part + ("-tuned" if args.tuned else "")
            name += f"-{args.mode}" if args.mode else ""
            if args.group:
                name += "-" + "-".join(args.group.replace(" ", "-").split(",")).lower()
            tuning = load_tuning() if args.tuned else {}
            score(args.part, tuning, name, args.every, args.mode, args.group)
        else:
            name = args.name
        text = report(name)
        print(text)
        if getattr(args, "write", False):
            write_section(name, text)


if __name__ == "__main__":
    main()
