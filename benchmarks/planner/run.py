"""Planner speed: `python benchmarks/planner/run.py [--jobs N]`, and side by side with
aiconfigurator: `python benchmarks/planner/run.py --against-aiconfigurator [--only NAME]`.

The side-by-side mode (issue 37) runs, one after the other in this one run, `pdnotes engine plan`
(the default search, as a user types it) and aiconfigurator 0.12's `cli default` on the same
questions, each in a subprocess of its own, and records each one's CPU time (user + system of the
whole process tree, from the kernel's accounting of waited-for children) and wall time. The
machine may be shared, so the ratio of the two CPU times is what counts. aiconfigurator is an
optional extra (`pip install aiconfigurator==0.12.0`, in this environment or in the one named
by $AIC_PYTHON, default ~/.venvs/aic/bin/python); without it the mode says so and stops.

One planning run of the article's case, the whole default search space: Qwen3-8B on H800 and
H20 chips (either for either phase) over RoCE 200G, modes disagg / colocated / chunked, TP 1-8
per phase, 1-4 nodes per group, up to 16 chips per instance; ShareGPT-like log-normal lengths
(median 1024 in, 128 out), P90 TTFT <= 1 s and P90 TPOT <= 50 ms. Target: >= 500 candidates in
< 60 s on this 2-core machine. Records wall time, CPU time and the load average before and
after (the machine may be shared), and prints a Markdown section for
docs/benchmarks/planner.md. The same run from the command line:

    pdnotes engine plan --model qwen3-8b --chip h800 --chip h20 --link roce-200g \\
        --input-len 1024 --output-len 128 --dist lognormal \\
        --slo-ttft-ms 1000 --slo-tpot-ms 50 --rate 200
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from notes_cli.bench.workload import LengthSpec
from notes_cli.engine.core.profiles import load_catalog
from notes_cli.plan.planner import PlanRequest, plan
from notes_cli.plan.run_local import LocalExecutor, available_cores
from notes_cli.plan.slo import PlanSlo
from notes_cli.plan.space import ChipOption, SearchSpace
from notes_cli.plan.workload import drawn

TTFT_MS = 1000.0


def request() -> PlanRequest:
    return PlanRequest(
        model="qwen3-8b",
        link="roce-200g",
        space=SearchSpace(chips=(ChipOption("h800"), ChipOption("h20"))),
        slo=PlanSlo(ttft_ms=TTFT_MS, tpot_ms=50.0),
        workload=drawn(LengthSpec(1024, 128, "lognormal"), 300, seed=0),
        target_rate=200.0,
        window_s=max(10.0, TTFT_MS / 100),  # the CLI's default: 10 x the TTFT objective
        seed=0,
    )


def cpu_seconds() -> float:
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


ROOT = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class Question:
    name: str
    model: str  # pdnotes' model row
    aic_model: str  # aiconfigurator's model path
    chip: str
    system: str  # aiconfigurator's system
    gpus: int
    isl: int
    osl: int
    ttft_ms: float
    tpot_ms: float
    fp8: bool = False


# The planner's Llama-3.1-8B case and its four questions of issue 37.
QUESTIONS = (
    Question("llama-3.1-8b-8xh200", "llama-3.1-8b", "meta-llama/Meta-Llama-3.1-8B", "h200",
             "h200_sxm", 8, 1024, 1024, 500, 20),
    Question("deepseek-r1-16xh200-fp8", "deepseek-r1", "deepseek-ai/DeepSeek-R1", "h200",
             "h200_sxm", 16, 4000, 500, 1000, 50, fp8=True),
    Question("llama-3.1-70b-16xh100", "llama-3.1-70b", "meta-llama/Meta-Llama-3.1-70B",
             "h100-sxm", "h100_sxm", 16, 4000, 500, 1000, 50),
    Question("qwen3-235b-a22b-16xh200-fp8", "qwen3-235b-a22b", "Qwen/Qwen3-235B-A22B", "h200",
             "h200_sxm", 16, 4000, 500, 1000, 50, fp8=True),
    Question("qwen3-32b-8xh200", "qwen3-32b", "Qwen/Qwen3-32B", "h200", "h200_sxm", 8,
             4000, 500, 1000, 50),
)  # fmt: skip

AIC_SCRIPT = """
import json, logging, sys, warnings
logging.disable(logging.WARNING)
warnings.filterwarnings("ignore")
from aiconfigurator.cli.api import cli_default
result = cli_default(**json.loads(sys.argv[1]), top_n=1)
picks = {}
for mode, frame in (result.best_configs or {}).items():
    if frame is not None and len(frame):
        row = frame.iloc[0].to_dict()
        keys = ("tokens/s/gpu", "num_total_gpus", "ttft", "tpot", "parallel", "(p)parallel",
                "(d)parallel", "bs", "(d)bs", "(p)workers", "(d)workers")
        picks[mode] = {k: row[k] for k in keys if k in row}
print(json.dumps({"chosen": str(result.chosen_exp), "picks": picks}, default=str))
"""


def plan_args(q: Question) -> list[str]:
    """`pdnotes engine plan` for a question: its default search, KV over NVLink in the node."""
    args = [
        "engine", "plan", "--model", q.model, "--chip", q.chip, "--link", "nvlink4",
        "--input-len", str(q.isl), "--output-len", str(q.osl), "--slo-ttft-ms",
        f"{q.ttft_ms:g}", "--slo-tpot-ms", f"{q.tpot_ms:g}", "--max-chips", str(q.gpus),
    ]  # fmt: skip
    if q.fp8:
        args += ["--weight-dtype", "fp8", "--kv-dtype", "fp8"]
    return [*args, "--json"]


def aic_python() -> str | None:
    """A Python that imports aiconfigurator: this one, or $AIC_PYTHON (~/.venvs/aic)."""
    for python in (sys.executable, os.environ.get("AIC_PYTHON", "~/.venvs/aic/bin/python")):
        path = os.path.expanduser(python)
        check = [path, "-c", "import aiconfigurator"]
        if Path(path).exists() and subprocess.run(check, capture_output=True).returncode == 0:
            return path
    return None


def timed(command: list[str], env: dict[str, str] | None = None) -> tuple[str, float, float]:
    """Run `command` to its end (at most an hour): its stdout, CPU seconds of its whole process
    tree, wall seconds."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(
        command, capture_output=True, text=True, timeout=3600, env=env, cwd=ROOT, check=False
    )
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if done.returncode not in (0, 1):  # 1: the plan found no candidate, still an answer
        raise RuntimeError(f"{command[:4]}: exit {done.returncode}: {done.stderr[-800:]}")
    return done.stdout, cpu, wall


def side_by_side(only: list[str] | None) -> None:
    python = aic_python()
    if python is None:
        raise SystemExit(
            "aiconfigurator is not installed: pip install aiconfigurator==0.12.0 (here or in "
            "the environment $AIC_PYTHON names)"
        )
    # pdnotes checks its claims with this aiconfigurator (its CPU is counted apart, below)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PDNOTES_AICONFIGURATOR_PYTHON": python}
    answers = []
    load_before = os.getloadavg()
    print(f"### {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}\n")
    print(f"- machine: {platform.processor() or platform.machine()}, {available_cores()} cores")
    print(f"- load average before: {load_before[0]:.2f} / {load_before[1]:.2f}\n")
    print("| question | pdnotes CPU s | aiconfigurator CPU s | ratio | pdnotes wall s | "
          "aiconfigurator wall s | pdnotes best | aiconfigurator's pick |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|")
    for q in QUESTIONS:
        if only and q.name not in only:
            continue
        out, cpu, wall = timed([sys.executable, "-m", "notes_cli", *plan_args(q)], env)
        doc = json.loads(out)
        best = doc.get("best") or {}
        second = (best.get("checks") or {}).get("aiconfigurator") or {}
        cpu -= second.get("cpu_s") or 0.0  # the planner's own CPU: its cross-check apart
        verified = "verified" if best.get("verified") else "NOT verified"
        pick = f"{best.get('label', 'none')}, {best.get('capacity_rps', 0):.3g} req/s, {verified}"
        question = {
            "model_path": q.aic_model, "total_gpus": q.gpus, "system": q.system,
            "isl": q.isl, "osl": q.osl, "ttft": q.ttft_ms, "tpot": q.tpot_ms,
        }  # fmt: skip
        aic_out, aic_cpu, aic_wall = timed([python, "-c", AIC_SCRIPT, json.dumps(question)])
        aic = json.loads(aic_out.strip().splitlines()[-1])
        answers.append((q, best, second, aic))
        print(
            f"| {q.name} | {cpu:.1f} | {aic_cpu:.1f} | **{cpu / aic_cpu:.2f}** | {wall:.0f} | "
            f"{aic_wall:.0f} | {pick} | {aic['chosen']} |",
            flush=True,
        )
    load_after = os.getloadavg()
    print(f"\n- load average after: {load_after[0]:.2f} / {load_after[1]:.2f}")
    print("\n(pdnotes' CPU leaves out its cross-check, the aiconfigurator run below.)\n")
    throughput_table(answers)


def throughput_table(answers: list[tuple[Question, dict, dict, dict]]) -> None:
    """pdnotes' claimed output tokens/s per GPU beside aiconfigurator's best answer, and
    aiconfigurator's estimate of pdnotes' own pick (`engine plan`'s cross-check)."""
    print("| question | pdnotes' pick | tokens/s/GPU claimed | aiconfigurator's best | its "
          "tokens/s/GPU (TTFT / TPOT ms) | ratio | pdnotes' pick in aiconfigurator: "
          "pdnotes / it |")  # fmt: skip
    print("|---|---|---|---|---|---|---|")
    for q, best, second, aic in answers:
        mine = best.get("score", 0.0) * q.osl  # req/s per chip x output tokens
        picks = aic["picks"]
        chosen = aic["chosen"] if aic["chosen"] in picks else None
        if chosen is None and picks:  # its best of the modes it answered
            chosen = max(picks, key=lambda m: float(picks[m].get("tokens/s/gpu", 0.0)))
        pick = picks.get(chosen, {})
        theirs = float(pick.get("tokens/s/gpu", "nan"))
        shape = pick.get("parallel") or f"P {pick.get('(p)parallel')} + D {pick.get('(d)parallel')}"
        aic_cell = (
            f"{theirs:.0f} ({float(pick.get('ttft', 'nan')):.0f} / "
            f"{float(pick.get('tpot', 'nan')):.1f})"
        )
        if second.get("checked"):
            ratios = ", ".join(f"{k} {v:.2f}x" for k, v in second["ratios"].items())
            verdict = "; uncertain: " + "; ".join(second["why_uncertain"]) if second[
                "uncertain"] else ""  # fmt: skip
            check = f"batch {second['batch']}: {ratios}{verdict}"
        else:
            check = f"not checked: {second.get('reason')}"
        print(
            f"| {q.name} | {best.get('label', 'none')} | {mine:.0f} | {chosen} {shape} | "
            f"{aic_cell} | **{mine / theirs if theirs > 0 else float('nan'):.2f}** | {check} |",
            flush=True,
        )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--jobs", type=int, default=None, help="default: all cores")
    parser.add_argument(
        "--against-aiconfigurator", action="store_true", help="the side-by-side CPU questions"
    )
    parser.add_argument("--only", action="append", help="question name(s), with the above")
    args = parser.parse_args()
    if args.against_aiconfigurator:
        side_by_side(args.only)
        return
    catalog = load_catalog()
    load_before = os.getloadavg()
    cpu_before = cpu_seconds()
    started = time.perf_counter()
    report = plan(request(), catalog, LocalExecutor(args.jobs))
    wall = time.perf_counter() - started
    cpu = cpu_seconds() - cpu_before
    load_after = os.getloadavg()
    best = report.best
    pruned = report.pruned
    print(f"### {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}\n")
    print(f"- machine: {platform.processor() or platform.machine()}, {available_cores()} cores")
    print(f"- executor: {report.executor}")
    print(
        f"- load average before: {load_before[0]:.2f} / {load_before[1]:.2f} / "
        f"{load_before[2]:.2f}; after: {load_after[0]:.2f} / {load_after[1]:.2f} / "
        f"{load_after[2]:.2f}"
    )
    print(f"- candidates: **{len(report.results)}**")
    print(
        f"- pruned by the roofline: {pruned['memory']} memory, {pruned['slo']} SLO; skipped by "
        f"the capacity bound: {pruned['bound']}; simulated: {report.simulated_candidates}"
    )
    print(f"- simulated requests: {report.simulated_requests:,}")
    print(
        f"- verified: {len([r for r in report.results if r.verification is not None])} "
        f"claims; lowered by their verification: {len(report.lowered)}; front rows missing "
        f"the SLOs: {len(report.front_missed)}"
    )
    print(f"- wall time: **{wall:.1f} s**; CPU time (all processes): {cpu:.1f} s")
    if best is not None:
        c = best.result.candidate
        print(
            f"- best: {c.label}, {best.result.capacity:.3g} req/s on {c.chips} chips "
            f"({best.score:.3g} req/s per chip); {report.replicas_needed()} replicas for "
            f"{report.request.target_rate:g} req/s"
        )


if __name__ == "__main__":
    main()
