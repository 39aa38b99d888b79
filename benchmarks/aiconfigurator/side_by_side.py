"""aiconfigurator and pdnotes on the same questions (issue 25, point 5; docs/validation.md,
"Side by side with aiconfigurator").

    ~/.venvs/aic/bin/python benchmarks/aiconfigurator/side_by_side.py [--only NAME] [--out F]

For each question (model, GPUs, ISL/OSL, TTFT/TPOT SLOs) it runs, in this environment,
aiconfigurator 0.12.0's `cli_default` (its agg-vs-disagg search over its measured databases,
TRT-LLM backend) and, in a subprocess with the repository's own Python (pdnotes is not installed
here), `pdnotes engine plan`. Then it crosses the picks:

- aiconfigurator's picks in pdnotes: the same deployment (agg = one chunked-prefill replica with
  its batch and context-token budget; disagg = its prefill and decode workers, KV over NVLink in
  the node) simulated closed-loop at aiconfigurator's concurrency (`engine simulate -c`, the
  steady state aiconfigurator models), and its per-chip goodput under Poisson arrivals at the
  SLO percentile (`engine simulate --goodput`), which aiconfigurator does not model;
- pdnotes' pick in aiconfigurator: `cli_estimate` with the same parallelism and batch;
- per-step times of each pick: one prefill of ISL tokens and one decode step of the pick's batch
  at ISL + OSL/2 of context, aiconfigurator's static estimates against pdnotes' cost model.

Prints Markdown (and writes it to --out).
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import os
import shutil
import subprocess
import sys
import tempfile
import warnings
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PYTHON = os.environ.get(
    "PDNOTES_PYTHON", shutil.which("python3", path=os.environ.get("PDNOTES_PATH")) or "python3"
)


@dataclass(frozen=True)
class Question:
    name: str
    aic_model: str
    model: str  # pdnotes model row
    system: str
    chip: str
    gpus: int
    isl: int
    osl: int
    ttft: float
    tpot: float
    moe: bool = False


QUESTIONS = [
    Question("qwen3-32b-8xh200", "Qwen/Qwen3-32B", "qwen3-32b", "h200_sxm", "h200", 8,
             4000, 500, 1000, 50),
    Question("llama-3.1-70b-16xh100", "meta-llama/Meta-Llama-3.1-70B", "llama-3.1-70b",
             "h100_sxm", "h100-sxm", 16, 4000, 500, 1000, 50),
    Question("llama-3.1-8b-8xh200", "meta-llama/Meta-Llama-3.1-8B", "llama-3.1-8b", "h200_sxm",
             "h200", 8, 1024, 1024, 500, 20),
    Question("deepseek-r1-16xh200", "deepseek-ai/DeepSeek-R1", "deepseek-r1", "h200_sxm", "h200",
             16, 4000, 500, 1000, 50, moe=True),
]  # fmt: skip


def pdnotes(*args: str, timeout: float = 900) -> str:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [PYTHON, "-m", "notes_cli", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=timeout,
        cwd=ROOT,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"pdnotes {' '.join(args)}: {done.stderr.strip()[-800:]}")
    return done.stdout


def aic_default(q: Question) -> dict:
    from aiconfigurator.cli.api import cli_default

    result = cli_default(
        model_path=q.aic_model,
        total_gpus=q.gpus,
        system=q.system,
        isl=q.isl,
        osl=q.osl,
        ttft=q.ttft,
        tpot=q.tpot,
        top_n=1,
    )
    picks = {}
    for mode, frame in result.best_configs.items():
        if frame is not None and len(frame):
            picks[mode] = frame.iloc[0].to_dict()
    return {"chosen": result.chosen_exp, "picks": picks}


def _v(row: dict, key: str, default: float = 0.0) -> float:
    value = row.get(key, default)
    try:
        return float(value)
    except (TypeError, ValueError):
        return default


def deployment_toml(q: Question, mode: str, row: dict) -> str:
    """aiconfigurator's pick as a pdnotes deployment file."""
    name = f"aic-{mode}"
    lines = [f"[deployments.{name}]", f'model = "{q.model}"', 'link = "nvlink4"']
    lines.append('decode_exec = "graph"')
    if mode == "agg":
        tp, bs = int(_v(row, "tp", 1)), int(_v(row, "bs", 1))
        ctx = int(_v(row, "ctx_tokens", q.isl)) or q.isl
        lines += [
            'mode = "chunked"',
            f"max_batch = {bs}",
            f"chunk_tokens = {ctx}",
            f"prefill_token_budget = {max(ctx, q.isl)}",
            f'colocated = {{ count = 1, chip = "{q.chip}", tp = {tp} }}',
        ]
    else:
        ptp, dtp = int(_v(row, "(p)tp", 1)), int(_v(row, "(d)tp", 1))
        pdp, ddp = int(_v(row, "(p)dp", 1)), int(_v(row, "(d)dp", 1))
        pep, dep_ = int(_v(row, "(p)moe_ep", 1)), int(_v(row, "(d)moe_ep", 1))
        pw, dw = int(_v(row, "(p)workers", 1)), int(_v(row, "(d)workers", 1))
        dbs = int(_v(row, "(d)bs", 1)) * ddp
        extra_p = f", dp = {pdp}, ep = {pep}" if q.moe else ""
        extra_d = f", dp = {ddp}, ep = {dep_}" if q.moe else ""
        lines += [
            'mode = "disagg"',
            f"max_batch = {dbs}",
            f"prefill_token_budget = {max(q.isl, int(_v(row, '(p)bs', 1)) * q.isl)}",
            f'prefill = {{ count = {pw}, chip = "{q.chip}", tp = {ptp}{extra_p} }}',
            f'decode = {{ count = {dw}, chip = "{q.chip}", tp = {dtp}{extra_d} }}',
        ]
    return "\n".join(lines) + "\n"


def simulate(path: Path, q: Question, *extra: str) -> dict:
    out = pdnotes(
        "engine", "simulate", "-p", str(path), "--input-len", str(q.isl), "--output-len",
        str(q.osl), "--slo-ttft-ms", str(q.ttft), "--slo-tpot-ms", str(q.tpot), "--json", *extra,
    )  # fmt: skip
    return json.loads(out)


def _point(doc: dict) -> dict:
    config = doc["configurations"][0]
    return config


def pdnotes_figures(q: Question, mode: str, row: dict, folder: Path) -> dict:
    path = folder / f"aic-{q.name}-{mode}.toml"
    path.write_text(deployment_toml(q, mode, row))
    gpus = int(_v(row, "num_total_gpus", 1))
    concurrency = int(_v(row, "concurrency", 1))
    figures: dict = {"file": path.read_text(), "gpus": gpus, "concurrency": concurrency}
    try:
        n = str(max(600, 3 * concurrency))
        closed = _point(simulate(path, q, "-c", str(concurrency), "-n", n))
        figures["closed"] = closed
    except (RuntimeError, subprocess.TimeoutExpired) as exc:
        figures["closed_error"] = str(exc)
    try:
        figures["goodput"] = _point(simulate(path, q, "--goodput", "-n", "600"))
    except (RuntimeError, subprocess.TimeoutExpired) as exc:
        figures["goodput_error"] = str(exc)
    return figures


def pdnotes_plan(q: Question, folder: Path) -> dict:
    out = folder / f"plan-{q.name}.toml"
    args = [
        "engine", "plan", "--model", q.model, "--chip", q.chip, "--input-len", str(q.isl),
        "--output-len", str(q.osl), "--slo-ttft-ms", str(q.ttft), "--slo-tpot-ms", str(q.tpot),
        "--max-chips", str(q.gpus), "--link", "nvlink4", "--json", "--out", str(out),
    ]  # fmt: skip
    doc = json.loads(pdnotes(*args, timeout=1800))
    return {"best": doc.get("best"), "file": out.read_text() if out.exists() else "", "doc": doc}


def aic_estimate_of(q: Question, plan_file: str) -> dict | None:
    """pdnotes' pick estimated by aiconfigurator (same parallelism and batch)."""
    import tomllib

    from aiconfigurator.cli.api import cli_estimate

    rows = tomllib.loads(plan_file).get("deployments", {})
    if not rows:
        return None
    (dep,) = rows.values()
    kw: dict = dict(model_path=q.aic_model, system_name=q.system, isl=q.isl, osl=q.osl)
    if dep["mode"] == "disagg":
        p, d = dep["prefill"], dep["decode"]
        kw.update(
            mode="disagg",
            prefill_tp_size=p.get("tp", 1),
            prefill_batch_size=1,
            prefill_num_workers=p["count"],
            decode_tp_size=d.get("tp", 1),
            decode_batch_size=max(1, dep.get("max_batch", 256) // d.get("dp", 1)),
            decode_num_workers=d["count"],
            tp_size=p.get("tp", 1),
        )
        if q.moe:
            kw.update(
                prefill_attention_dp_size=p.get("dp", 1), prefill_moe_ep_size=p.get("ep", 1),
                prefill_moe_tp_size=p.get("tp", 1) * p.get("dp", 1) // p.get("ep", 1),
                decode_attention_dp_size=d.get("dp", 1), decode_moe_ep_size=d.get("ep", 1),
                decode_moe_tp_size=d.get("tp", 1) * d.get("dp", 1) // d.get("ep", 1),
            )  # fmt: skip
    else:
        g = dep["colocated"]
        kw.update(mode="agg", tp_size=g.get("tp", 1), batch_size=dep.get("max_batch", 256))
        if q.moe:
            kw.update(moe_tp_size=g.get("tp", 1), moe_ep_size=1)
    batch_key = "decode_batch_size" if dep["mode"] == "disagg" else "batch_size"
    while True:  # pdnotes caps a batch by KV capacity as it runs; aiconfigurator refuses it
        try:
            r = cli_estimate(**kw)
            break
        except Exception as exc:  # a configuration aiconfigurator cannot estimate
            if "OOM" not in str(exc) or kw[batch_key] <= 1:
                return {"error": str(exc)[:300]}
            kw[batch_key] //= 2
    return {
        "batch": kw[batch_key],
        "ttft": float(r.ttft),
        "tpot": float(r.tpot),
        "seq_per_gpu": float(r.seq_per_second) / max(1, int(r.num_total_gpus or 1)),
        "gpus": int(r.num_total_gpus or 0),
    }


def steps(q: Question, tp: int, batch: int, moe_kw: dict) -> dict:
    """Prefill of ISL and a decode step of `batch` at ISL + OSL/2: both tools."""
    from aiconfigurator.cli.api import cli_estimate

    ctx = q.isl + q.osl // 2
    out: dict = {"tp": tp, "batch": batch, "ctx": ctx}
    try:
        pre = cli_estimate(
            model_path=q.aic_model, system_name=q.system, mode="static_ctx", isl=q.isl, osl=2,
            batch_size=1, tp_size=tp, **moe_kw,
        )  # fmt: skip
        dec = cli_estimate(
            model_path=q.aic_model, system_name=q.system, mode="static_gen", isl=ctx, osl=2,
            batch_size=batch, tp_size=tp, **moe_kw,
        )  # fmt: skip
        out["aic_prefill"], out["aic_decode"] = float(pre.ttft), float(dec.tpot)
    except Exception as exc:
        out["aic_error"] = str(exc)[:200]
    code = (
        "import json,sys\n"
        "from notes_cli.engine.core.costmodel import NodeCost\n"
        "from notes_cli.engine.core.profiles import load_catalog\n"
        "c=load_catalog(user=False)\n"
        f"n=NodeCost(c.models[{q.model!r}], c.chips[{q.chip!r}], {tp})\n"
        f"print(json.dumps([n.prefill_time_ms({q.isl}), n.decode_step_ms({batch}, {batch * ctx})]))"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [PYTHON, "-c", code], capture_output=True, text=True, env=env, timeout=120, check=True
    )
    out["pd_prefill"], out["pd_decode"] = json.loads(done.stdout)
    return out


def closed_rate(point: dict, concurrency: int) -> float:
    """Requests per second of a closed loop (Little's law): clients over the mean request time."""
    return concurrency / max(1e-9, point["metrics"]["e2e_ms"]["mean"] / 1e3)


def _fmt(x: float | None, digits: int = 1) -> str:
    return "-" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:,.{digits}f}"


def report(q: Question, aic: dict, crossed: dict, plan: dict, plan_in_aic: dict | None,
           step_rows: list[dict]) -> str:  # fmt: skip
    lines = [
        f"### {q.name}: {q.aic_model} on {q.gpus}x {q.chip}, ISL {q.isl} / OSL {q.osl}, "
        f"SLO TTFT {q.ttft:g} ms / TPOT {q.tpot:g} ms",
        "",
        f"aiconfigurator's choice: **{aic['chosen']}**.",
        "",
        "| pick | aiconfigurator: TTFT / TPOT ms, req/s per GPU | pdnotes closed loop at the "
        "same concurrency: mean TTFT / TPOT ms, req/s per GPU | pdnotes goodput (Poisson, "
        "P90 SLO), req/s per GPU |",
        "|---|---|---|---|",
    ]
    for mode, row in aic["picks"].items():
        fig = crossed.get(mode, {})
        gpus = fig.get("gpus", 1) or 1
        closed = fig.get("closed")
        if closed:
            point = closed["points"][0]
            ttft = point["metrics"]["ttft_ms"]["mean"]
            tpot = point["metrics"]["tpot_ms"]["mean"]
            thr = closed_rate(point, fig["concurrency"])
            closed_txt = f"{_fmt(ttft)} / {_fmt(tpot)}, {_fmt(thr / gpus, 2)}"
        else:
            closed_txt = fig.get("closed_error", "-")[:120]
        good = fig.get("goodput")
        good_txt = _fmt((good or {}).get("goodput", {}).get("per_chip"), 2) if good else "-"
        moe_p = f"/DP{int(_v(row, '(p)dp', 1))}" if q.moe else ""
        moe_d = f"/DP{int(_v(row, '(d)dp', 1))}/EP{int(_v(row, '(d)moe_ep', 1))}" if q.moe else ""
        label = (
            f"agg TP{int(_v(row, 'tp', 1))} bs {int(_v(row, 'bs'))} x "
            f"{q.gpus // max(1, int(_v(row, 'num_total_gpus', 1)))}"
            if mode == "agg"
            else f"disagg {int(_v(row, '(p)workers'))}P(TP{int(_v(row, '(p)tp', 1))}"
            f"{moe_p}) + "
            f"{int(_v(row, '(d)workers'))}D(TP{int(_v(row, '(d)tp', 1))}"
            f"{moe_d}"
            f", bs {int(_v(row, '(d)bs'))})"
        )
        lines.append(
            f"| aiconfigurator {label} | {_fmt(_v(row, 'ttft'))} / {_fmt(_v(row, 'tpot'))}, "
            f"{_fmt(_v(row, 'seq/s/gpu'), 2)} | {closed_txt} | {good_txt} |"
        )
    best = plan.get("best") or {}
    aic_txt = "-"
    if plan_in_aic and "error" not in plan_in_aic:
        aic_txt = (
            f"{_fmt(plan_in_aic['ttft'])} / {_fmt(plan_in_aic['tpot'])}, "
            f"{_fmt(plan_in_aic['seq_per_gpu'], 2)} (batch {plan_in_aic['batch']})"
        )
    elif plan_in_aic:
        aic_txt = "cannot estimate: " + plan_in_aic["error"][:100]
    lines.append(
        f"| pdnotes plan: {best.get('label', '-')} (claims {_fmt(best.get('score'), 2)} req/s "
        f"per chip) | {aic_txt} | - | - |"
    )
    lines += [
        "",
        "| per-step (TP, batch) | prefill ISL: aiconfigurator / pdnotes ms | ratio | decode step "
        "at ISL+OSL/2: aiconfigurator / pdnotes ms | ratio |",
        "|---|---|---|---|---|",
    ]
    for s in step_rows:
        if "aic_prefill" not in s:
            lines.append(f"| TP{s['tp']}, b{s['batch']} | {s.get('aic_error', '-')} | | | |")
            continue
        lines.append(
            f"| TP{s['tp']}, b{s['batch']} | {_fmt(s['aic_prefill'])} / {_fmt(s['pd_prefill'])} | "
            f"{s['pd_prefill'] / s['aic_prefill']:.2f} | {_fmt(s['aic_decode'], 2)} / "
            f"{_fmt(s['pd_decode'], 2)} | {s['pd_decode'] / s['aic_decode']:.2f} |"
        )
    return "\n".join(lines) + "\n"


def run(q: Question, folder: Path) -> str:
    print(f"[{q.name}] aiconfigurator default ...", file=sys.stderr, flush=True)
    aic = aic_default(q)
    crossed = {mode: pdnotes_figures(q, mode, row, folder) for mode, row in aic["picks"].items()}
    print(f"[{q.name}] pdnotes plan ...", file=sys.stderr, flush=True)
    try:
        plan = pdnotes_plan(q, folder)
    except (RuntimeError, subprocess.TimeoutExpired) as exc:
        plan = {"best": {"label": f"failed: {str(exc)[:200]}"}, "file": ""}
    plan_in_aic = aic_estimate_of(q, plan["file"]) if plan["file"] else None
    step_rows = []
    for mode, row in aic["picks"].items():
        if mode == "agg":
            tp, bs = int(_v(row, "tp", 1)), int(_v(row, "bs", 1))
            moe_kw = {"moe_tp_size": tp, "moe_ep_size": 1} if q.moe else {}
        else:
            tp, bs = int(_v(row, "(d)tp", 1)), int(_v(row, "(d)bs", 1))
            moe_kw = {"moe_tp_size": tp, "moe_ep_size": 1} if q.moe else {}
        step_rows.append(steps(q, tp, bs, moe_kw))
    (folder / f"{q.name}.json").write_text(
        json.dumps({"aic": aic, "crossed": crossed, "plan_best": plan.get("best"),
                    "plan_file": plan.get("file"), "plan_in_aic": plan_in_aic,
                    "steps": step_rows}, default=str, indent=1)
    )  # fmt: skip
    return report(q, aic, crossed, plan, plan_in_aic, step_rows)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", action="append", help="question name(s) to run")
    parser.add_argument("--out", type=Path, help="write the Markdown here too")
    parser.add_argument("--keep", type=Path, help="folder for deployment files and raw JSON")
    args = parser.parse_args()
    logging.disable(logging.WARNING)
    warnings.simplefilter("ignore")
    commit = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True, text=True
    ).stdout.strip()
    folder = args.keep or Path(tempfile.mkdtemp(prefix="side-by-side-"))
    folder.mkdir(parents=True, exist_ok=True)
    parts = [f"pdnotes at commit {commit}; aiconfigurator 0.12.0 (TRT-LLM databases).\n"]
    for q in QUESTIONS:
        if args.only and q.name not in args.only:
            continue
        parts.append(run(q, folder))
        print(parts[-1], flush=True)
    if args.out:
        args.out.write_text("\n".join(parts))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
