"""How well `pdnotes engine calibrate` predicts llama.cpp's server on this machine:
`python benchmarks/calibrate/run.py [--runs 3] [--json results.json]`.

Each run starts llama-server (tests/real_engine.py: xllamacpp, Gemma 3 270M Q4_K_M, one thread,
4 slots), records the grid `pdnotes bench --input-lens 64,256 --concurrency 1,2,4,6 -n 6
--output-len 16 --ignore-eos --records` twice (two interleaved rounds, each point's 12 records
pooled), fits on c=1,2,4 (2 x 3 points, up to the engine's 4 slots: three levels let the fit see
how the decode step bends with the batch) and predicts the held-back c=6 points, where two
clients queue for a slot (`--levels`, `--requests`, `--rounds`: another grid, the highest level
held back); the same prediction from the shipped, uncalibrated `cpu-x86` chip row is shown
beside it, and the machine's load average while measuring. Signed error = predicted median /
measured median - 1, per held-back point.
Prints a Markdown section for docs/benchmarks/calibrate-llama-server.md; `--plot FILE.svg`
draws predicted against measured (the project's own SVG panels, notes_cli/bench/sweep.py);
`--from-json FILE` redraws both from a previous run's rows. Wall-clock numbers of a shared
machine: the spread over runs is part of the result.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))

from real_engine import LlamaServer, missing  # noqa: E402

from notes_cli.engine.simulate.calibrate import calibrate, predict, uncalibrated  # noqa: E402

LENGTHS, OUTPUT = "64,256", 16
SLOTS = 4
# The grid: the highest level held back, the others fitted (three levels let the fit see how the
# decode step bends with the batch). The fitted levels reach the 4 slots and the held-back one is
# above them: llama.cpp's one-thread decode step is not monotone in the batch here (batch 3 slower
# than batch 4), so a level inside the slots held back asks a smooth law for a step it cannot
# have seen (docs/benchmarks/calibrate-llama-server.md records both grids). --levels 1,2,3,4
# --requests 8 is the earlier grid.
LEVELS, REQUESTS, ROUNDS = "1,2,4,6", 12, 2


def measure(folder: Path, rounds: int = ROUNDS) -> None:
    """One grid of records from a fresh llama-server into `folder`, with the machine's load
    average before and after (load.json: the other jobs sharing the cores). With `rounds` > 1
    the grid runs that many times with REQUESTS / rounds requests a point, every other round in
    the reverse order (longest prompts and highest load first), and each point's records are
    pooled: a machine whose other jobs come and go then slows every point alike, where one
    pass would give the points measured during a busy minute all of it."""
    before = os.getloadavg()
    with LlamaServer(parallel=SLOTS) as server:
        for index in range(rounds):
            lengths, levels = LENGTHS.split(","), LEVELS.split(",")
            if index % 2:
                lengths, levels = lengths[::-1], levels[::-1]
            part = folder / f"round-{index + 1}" if rounds > 1 else folder
            part.mkdir(exist_ok=True)
            subprocess.run(
                [sys.executable, "-m", "notes_cli", "bench", "--base-url", server.base_url,
                 "--input-lens", ",".join(lengths), "--concurrency", ",".join(levels),
                 "-n", str(REQUESTS // rounds), "--output-len", str(OUTPUT), "--ignore-eos",
                 "--timeout", "600", "--records", str(part / "llama.jsonl")],
                check=True, capture_output=True, text=True, timeout=3600,
                env={**os.environ, "PYTHONPATH": str(ROOT)},
            )  # fmt: skip
    after = os.getloadavg()
    if rounds > 1:
        for first in sorted((folder / "round-1").glob("llama.i*.c*.jsonl")):
            parts = [folder / f"round-{i + 1}" / first.name for i in range(rounds)]
            (folder / first.name).write_text("".join(p.read_text() for p in parts))
            meta = json.loads(Path(f"{first}.meta.json").read_text())
            meta["requests"] = REQUESTS // rounds * rounds
            (folder / f"{first.name}.meta.json").write_text(json.dumps(meta, indent=1) + "\n")
    (folder / "load.json").write_text(json.dumps({"before": before, "after": after}) + "\n")


def evaluate(folder: Path) -> list[dict[str, Any]]:
    """Fit one grid's records and predict its held-back points, calibrated and not."""
    files = sorted(folder.glob("llama.i*.c*.jsonl"))
    result = calibrate(files, max_batch=SLOTS)
    # The same fit with the decode step held to a line (p = 1), as calibrate fitted before the
    # bend: shown beside, never used to choose the law.
    line = calibrate(files, max_batch=SLOTS, decode_exponents=(1.0,))
    plain = predict(uncalibrated(result), [c.point for c in result.held_out])
    load = folder / "load.json"
    loads = json.loads(load.read_text()) if load.is_file() else {}
    rows = []
    for cal, straight, raw in zip(result.held_out, line.held_out, plain, strict=True):
        p = cal.point
        rows.append(
            {
                "point": p.label,
                "exponent": result.fitted.seq_exponent,
                "load_1min": [loads.get("before", [None])[0], loads.get("after", [None])[0]],
                "busy_points": len(result.warnings),
                "measured_ttft_ms": p.ttft_ms,
                "measured_tpot_ms": p.tpot_ms,
                "calibrated_ttft_ms": cal.ttft_ms,
                "calibrated_tpot_ms": cal.tpot_ms,
                "line_ttft_ms": straight.ttft_ms,
                "line_tpot_ms": straight.tpot_ms,
                "uncalibrated_ttft_ms": raw.ttft_ms,
                "uncalibrated_tpot_ms": raw.tpot_ms,
            }
        )
    return rows


def _err(pred: float, meas: float) -> float:
    return pred / meas - 1.0


KINDS = ("calibrated", "line", "uncalibrated")
"""calibrate's fit, the same fit with a straight decode step (p = 1), the shipped cpu-x86 row."""


def _load(r: dict[str, Any]) -> str:
    before, after = r.get("load_1min", [None, None])
    return f"{before:.0f} → {after:.0f}" if before is not None and after is not None else "?"


def markdown(runs: list[list[dict[str, Any]]]) -> str:
    lines = [
        f"Machine: {platform.machine()}, {os.cpu_count()} cores (shared), Python "
        f"{platform.python_version()}; llama-server via xllamacpp, Gemma 3 270M Q4_K_M, 1 thread, "
        f"{SLOTS} slots. Grid: prompt lengths {LENGTHS} x concurrency {LEVELS}, {REQUESTS} "
        f"requests of {OUTPUT} output tokens each in {ROUNDS} round(s); fitted on "
        f"c={LEVELS.rsplit(',', 1)[0]}, predicted c={LEVELS.rsplit(',', 1)[1]}. Columns: "
        "calibrate's fit (decode step s0 + s1·c^p, p fitted), the same fit with p = 1 (a "
        "line), the uncalibrated cpu-x86 row; load = the machine's 1-minute load average "
        "before → after the run's measurements (2 cores).",
        "",
        "| run | load | p | held-back point | TTFT measured | calibrated | line | "
        "uncalibrated cpu-x86 | TPOT measured | calibrated | line | uncalibrated cpu-x86 |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for i, rows in enumerate(runs, 1):
        for r in rows:
            exponent = r.get("exponent")
            cells = [str(i), _load(r), f"{exponent:g}" if exponent else "?", r["point"]]
            for metric in ("ttft", "tpot"):
                meas = r[f"measured_{metric}_ms"]
                cells.append(f"{meas:,.0f} ms")
                for kind in KINDS:
                    pred = r.get(f"{kind}_{metric}_ms")
                    cells.append(
                        "–" if pred is None else f"{pred:,.0f} ms ({_err(pred, meas) * 100:+.0f} %)"
                    )
            lines.append("| " + " | ".join(cells) + " |")
    lines += [
        "",
        "| signed error over all held-back points | median | min | max | within ±25 % |",
        "|---|---|---|---|---|",
    ]
    for metric in ("ttft", "tpot"):
        for kind in KINDS:
            errs = [
                _err(r[f"{kind}_{metric}_ms"], r[f"measured_{metric}_ms"])
                for rows in runs
                for r in rows
                if f"{kind}_{metric}_ms" in r
            ]
            if not errs:
                continue
            near = sum(1 for e in errs if abs(e) <= 0.25)
            lines.append(
                f"| {metric.upper()} {kind} | {statistics.median(errs) * 100:+.0f} % | "
                f"{min(errs) * 100:+.0f} % | {max(errs) * 100:+.0f} % | {near} of {len(errs)} |"
            )
    return "\n".join(lines)


def plot(runs: list[list[dict[str, Any]]], path: Path) -> None:
    """Predicted against measured medians of the held-back points, calibrated and not, one
    panel per metric, with the line where they agree."""
    from notes_cli.bench.sweep import _panel  # the project's own SVG panel

    panels = []
    for metric, name in (("ttft", "TTFT"), ("tpot", "TPOT")):
        rows = [r for rows in runs for r in rows]
        top = max(r[f"measured_{metric}_ms"] for r in rows) * 1.5
        series = [
            (
                kind,
                [
                    (r[f"measured_{metric}_ms"], r[f"{kind}_{metric}_ms"])
                    for r in rows
                    if r.get(f"{kind}_{metric}_ms", top + 1) <= top
                ],
            )  # fmt: skip
            for kind in KINDS
        ]
        series.append(("predicted = measured", [(0.0, 0.0), (top, top)]))
        panels.append(
            _panel(
                f"{name}: predicted vs measured (held back)",
                f"measured median {name} (ms)",
                f"predicted median {name} (ms)",
                series,
                [],
                lines=(False, False, False, True),
            )
        )
    width = 400
    body = "\n".join(
        f'<g transform="translate({i * width} 0)">{panel}</g>' for i, panel in enumerate(panels)
    )
    path.write_text(
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width * len(panels)}" height="320" '
        f'font-family="sans-serif" font-size="12">\n{body}\n</svg>\n'
    )


def main() -> None:
    global LEVELS, REQUESTS, ROUNDS  # --levels / --requests / --rounds: the grid measured
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument(
        "--rounds", type=int, default=ROUNDS, help="measure the grid in N interleaved rounds"
    )
    parser.add_argument(
        "--levels", default=LEVELS, help="concurrency levels, the highest held back"
    )
    parser.add_argument("--requests", type=int, default=REQUESTS, help="requests a point")
    parser.add_argument("--json", type=Path, help="also write the raw rows here")
    parser.add_argument("--plot", type=Path, help="draw predicted vs measured to FILE.svg")
    parser.add_argument("--from-json", type=Path, help="redraw from a previous run's rows")
    parser.add_argument("--keep", type=Path, help="keep each run's records in DIR/run-N")
    parser.add_argument(
        "--from-records", type=Path, help="fit the records kept in DIR/run-* (no measuring)"
    )
    args = parser.parse_args()
    LEVELS, REQUESTS, ROUNDS = args.levels, args.requests, args.rounds
    if args.from_json:
        runs = json.loads(args.from_json.read_text())
    elif args.from_records:
        runs = [evaluate(d) for d in sorted(args.from_records.glob("run-*"))]
        if args.json:
            args.json.write_text(json.dumps(runs, indent=1) + "\n")
    else:
        reason = missing()
        if reason:
            raise SystemExit(reason)
        runs = []
        for index in range(1, args.runs + 1):
            with tempfile.TemporaryDirectory(prefix="pdnotes-calibrate-bench-") as temp:
                folder = args.keep / f"run-{index}" if args.keep else Path(temp)
                folder.mkdir(parents=True, exist_ok=True)
                measure(folder, ROUNDS)
                runs.append(evaluate(folder))
            if args.json:
                args.json.write_text(json.dumps(runs, indent=1) + "\n")
    if args.plot:
        plot(runs, args.plot)
    sys.stdout.write(markdown(runs) + "\n")


if __name__ == "__main__":
    main()
