"""aiconfigurator's per-step times for the CI validation table (tests/test_kernel_validation.py).

    ~/.venvs/aic/bin/python benchmarks/aiconfigurator/steps.py [--write]

Asks aiconfigurator 0.12.0 (its Python API, `cli_estimate` in the static modes: one prefill of
`isl` tokens at batch 1, or one decode step of `batch` sequences at `isl` tokens of context; no
scheduling, no queueing) for each point below and each backend, from its measured per-operation
databases. With --write it stores them in tests/fixtures/aiconfigurator_steps.toml, the table
the CI test recomputes pdnotes against, and single all-reduces of TRT-LLM's measured table in
tests/fixtures/aiconfigurator_allreduce.toml. Prints a Markdown table for docs/validation.md.

Fit set and held-out: the kernel curves (fit_kernels.py) were fitted to single operations only,
with attention fitted on 32 query / 8 KV heads (Llama-3.1-8B's); every step below is a check the
fit never saw, and the Llama-3.1-70B and Qwen3 rows also have attention shapes held out.
"""

from __future__ import annotations

import argparse
import logging
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BACKENDS = ("trtllm", "vllm", "sglang")

# (pdnotes model, aiconfigurator model, pdnotes chip, aiconfigurator system, tp, kind, isl, batch,
#  weights) -- weights None: the model's own precision; MoE rows split experts over the tp GPUs
#  (aiconfigurator moe_tp = tp, moe_ep = 1; pdnotes ep = 1).
L8, L70 = "meta-llama/Meta-Llama-3.1-8B", "meta-llama/Meta-Llama-3.1-70B"
Q235 = "Qwen/Qwen3-235B-A22B-FP8"  # its own fp8 (block-scaled) checkpoint
POINTS = [
    ("llama-3.1-8b", L8, "h100-sxm", "h100_sxm", 1, "prefill", 1000, 1, None),
    ("llama-3.1-8b", L8, "h100-sxm", "h100_sxm", 1, "prefill", 4000, 1, None),
    ("llama-3.1-8b", L8, "h100-sxm", "h100_sxm", 1, "decode", 1000, 1, None),
    ("llama-3.1-8b", L8, "h100-sxm", "h100_sxm", 1, "decode", 1000, 64, None),
    ("llama-3.1-8b", L8, "h100-sxm", "h100_sxm", 1, "decode", 1000, 256, None),
    ("llama-3.1-8b", L8, "h200", "h200_sxm", 1, "prefill", 4000, 1, None),
    ("llama-3.1-8b", L8, "h200", "h200_sxm", 1, "decode", 1024, 128, None),
    ("llama-3.1-8b", L8, "a100-80g", "a100_sxm", 1, "prefill", 4000, 1, None),
    ("llama-3.1-8b", L8, "a100-80g", "a100_sxm", 1, "decode", 1000, 64, None),
    ("llama-3.1-8b", L8, "b200", "b200_sxm", 1, "prefill", 4000, 1, None),
    ("llama-3.1-8b", L8, "b200", "b200_sxm", 1, "decode", 1000, 128, None),
    ("llama-3.1-8b", L8, "gb200", "gb200", 1, "prefill", 4000, 1, None),
    ("qwen3-8b", "Qwen/Qwen3-8B", "h100-sxm", "h100_sxm", 1, "prefill", 2000, 1, None),
    ("qwen3-8b", "Qwen/Qwen3-8B", "h200", "h200_sxm", 1, "decode", 2000, 32, None),
    ("qwen3-32b", "Qwen/Qwen3-32B", "h200", "h200_sxm", 2, "prefill", 4000, 1, None),
    ("qwen3-32b", "Qwen/Qwen3-32B", "h200", "h200_sxm", 2, "decode", 4000, 32, None),
    ("llama-3.1-70b", L70, "h100-sxm", "h100_sxm", 4, "prefill", 4000, 1, None),
    ("llama-3.1-70b", L70, "h100-sxm", "h100_sxm", 8, "prefill", 4000, 1, None),
    ("llama-3.1-70b", L70, "h100-sxm", "h100_sxm", 4, "decode", 2000, 64, None),
    ("llama-3.1-70b", L70, "h200", "h200_sxm", 8, "decode", 2000, 128, None),
    ("llama-3.1-70b", L70, "a100-80g", "a100_sxm", 8, "prefill", 2000, 1, None),
    ("llama-3.1-70b", L70, "b200", "b200_sxm", 4, "prefill", 4000, 1, None),
    ("llama-3.1-70b", L70, "h100-sxm", "h100_sxm", 4, "prefill", 4000, 1, "fp8"),
    ("llama-3.1-70b", L70, "h100-sxm", "h100_sxm", 4, "decode", 2000, 64, "fp8"),
    ("qwen3-30b-a3b", "Qwen/Qwen3-30B-A3B", "h200", "h200_sxm", 1, "prefill", 4000, 1, None),
    ("qwen3-30b-a3b", "Qwen/Qwen3-30B-A3B", "h200", "h200_sxm", 1, "decode", 2000, 64, None),
    ("deepseek-r1", "deepseek-ai/DeepSeek-R1", "h200", "h200_sxm", 8, "prefill", 4000, 1, None),
    ("deepseek-r1", "deepseek-ai/DeepSeek-R1", "h200", "h200_sxm", 8, "decode", 2000, 64, None),
    # issue 37: MoE decode at the few sequences measured serving runs use, where each MoE layer's
    # and MLA block's fixed cost outweighs its reads
    ("deepseek-r1", "deepseek-ai/DeepSeek-R1", "h200", "h200_sxm", 8, "decode", 1000, 4, None),
    ("gpt-oss-120b", "openai/gpt-oss-120b", "h200", "h200_sxm", 1, "decode", 2000, 8, None),
    ("qwen3-235b-a22b", Q235, "h200", "h200_sxm", 4, "decode", 2000, 8, "fp8"),
    # issue 37, round four: dense decode at a few sequences as TP grows, where each layer's
    # attention kernel costs its floor and runs apart from the GEMMs (TP8 GEMMs are bound by
    # their small shards, not by the weights they read)
    ("llama-3.1-8b", L8, "h100-sxm", "h100_sxm", 1, "decode", 2000, 8, None),
    ("llama-3.1-8b", L8, "h100-sxm", "h100_sxm", 2, "decode", 2000, 8, None),
    ("llama-3.1-8b", L8, "h100-sxm", "h100_sxm", 4, "decode", 2000, 8, None),
    ("llama-3.1-8b", L8, "h100-sxm", "h100_sxm", 8, "decode", 2000, 8, None),
    ("qwen3-32b", "Qwen/Qwen3-32B", "h100-sxm", "h100_sxm", 2, "decode", 2000, 16, None),
    ("qwen3-32b", "Qwen/Qwen3-32B", "h100-sxm", "h100_sxm", 4, "decode", 2000, 16, None),
    ("qwen3-32b", "Qwen/Qwen3-32B", "h100-sxm", "h100_sxm", 8, "decode", 2000, 16, None),
]

HEADER = """\
# SPDX-FileCopyrightText: Copyright (c) 2025-2026 NVIDIA CORPORATION & AFFILIATES. All rights reserved.
# SPDX-License-Identifier: Apache-2.0
#
# Per-step times DERIVED from NVIDIA aiconfigurator 0.12.0 (Apache-2.0, license text in
# LICENSES/aiconfigurator-Apache-2.0.txt): its static estimates (`cli_estimate`, modes static_ctx
# / static_gen: one prefill at batch 1, or one decode step) computed from its measured
# per-operation databases, by benchmarks/aiconfigurator/steps.py --write. Changes: only the
# estimated step time (ms) per backend is kept, rounded to 0.01 ms; points named by pdnotes'
# model and chip rows. tests/test_kernel_validation.py checks pdnotes' step times against them.
"""


def estimate(point: tuple, backend: str) -> float | None:
    from aiconfigurator.cli.api import cli_estimate

    model, aic_model, _, system, tp, kind, isl, batch, weights = point
    moe = model.startswith(("qwen3-30b", "qwen3-235b", "deepseek", "gpt-oss"))
    extra = {"moe_tp_size": tp, "moe_ep_size": 1} if moe else {}
    if weights == "fp8" and not aic_model.endswith("-FP8"):  # an fp8 checkpoint is already fp8
        extra["gemm_quant_mode"] = "fp8"
    try:
        result = cli_estimate(
            model_path=aic_model,
            system_name=system,
            mode="static_ctx" if kind == "prefill" else "static_gen",
            backend_name=backend,
            isl=isl,
            osl=2,
            batch_size=batch,
            tp_size=tp,
            **extra,
        )
    except Exception as exc:  # a backend without a database for this system
        print(f"  {backend} {point}: {exc}")
        return None
    return float(result.ttft if kind == "prefill" else result.tpot)


# issue 37, round four: single all-reduces of TRT-LLM's measured table (the one fit_kernels.py
# fits), at the message sizes of decode steps (a token to 256 tokens of 4096-8192 wide) and of
# prefills, so CI can hold pdnotes' all-reduce against them without aiconfigurator installed
ALLREDUCE = [
    ("h100-sxm", "h100_sxm", gpus, elements)
    for gpus in (2, 4, 8)
    for elements in (4096, 32768, 262144, 1048576, 8388608, 67108864)
]
ALLREDUCE_HEADER = """\
# SPDX-FileCopyrightText: Copyright (c) 2025-2026 NVIDIA CORPORATION & AFFILIATES. All rights reserved.
# SPDX-License-Identifier: Apache-2.0
#
# All-reduce latencies DERIVED from NVIDIA aiconfigurator 0.12.0 (Apache-2.0, license text in
# LICENSES/aiconfigurator-Apache-2.0.txt): its measured table
# systems/data/<system>/comm/trtllm/<newest>/custom_allreduce_perf (bf16), by
# benchmarks/aiconfigurator/steps.py --write. Changes: only the rows below are kept, the latency
# in microseconds rounded to 0.1; the message size is in bf16 elements, as the table counts it.
# tests/test_kernel_validation.py checks pdnotes' all-reduce against them.
"""


def allreduce_rows() -> list[str]:
    import aiconfigurator_core
    import pandas as pd

    data = Path(aiconfigurator_core.__file__).parent / "systems" / "data"
    out = [ALLREDUCE_HEADER]
    for chip, system, gpus, elements in ALLREDUCE:
        folder = data / system / "comm" / "trtllm"
        newest = max(
            (v for v in folder.iterdir() if (v / "custom_allreduce_perf.parquet").exists()),
            key=lambda v: [
                int(x) if x.isdigit() else x for x in v.name.replace("rc", ".").split(".")
            ],
        )
        df = pd.read_parquet(newest / "custom_allreduce_perf.parquet")
        row = df[
            (df.allreduce_dtype == "bfloat16")
            & (df.num_gpus == gpus)
            & (df.message_size == elements)
        ]
        us = float(row.latency.min()) * 1000
        out.append(
            f'[[allreduce]]\nchip = "{chip}"\nsystem = "{system}"\ndb = "trtllm/{newest.name}"\n'
            f"gpus = {gpus}\nelements = {elements}\nlatency_us = {us:.1f}\n"
        )
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true")
    args = parser.parse_args()
    logging.disable(logging.WARNING)
    warnings.simplefilter("ignore")
    rows = []
    for point in POINTS:
        times = {b: estimate(point, b) for b in BACKENDS}
        rows.append((point, times))
        model, _, chip, _, tp, kind, isl, batch, weights = point
        shown = " | ".join(f"{t:.2f}" if t else "-" for t in times.values())
        w = weights or "as released"
        print(f"| {model} | {chip} | TP{tp} | {w} | {kind} | {isl} | {batch} | {shown} |")
    if args.write:
        out = [HEADER]
        for i, (point, times) in enumerate(rows):
            model, aic_model, chip, system, tp, kind, isl, batch, weights = point
            out.append(f"[[steps]]\nid = {i}")
            if weights:
                out.append(f'weights = "{weights}"')
            out.append(f'model = "{model}"\naic_model = "{aic_model}"')
            out.append(f'chip = "{chip}"\nsystem = "{system}"\ntp = {tp}')
            out.append(f'kind = "{kind}"\ntokens = {isl}\nbatch = {batch}')
            for backend, t in times.items():
                if t:
                    out.append(f"{backend}_ms = {t:.2f}")
            out.append("")
        path = ROOT / "tests" / "fixtures" / "aiconfigurator_steps.toml"
        path.write_text("\n".join(out))
        print(f"wrote {path}")
        path = ROOT / "tests" / "fixtures" / "aiconfigurator_allreduce.toml"
        path.write_text("\n".join(allreduce_rows()))
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
