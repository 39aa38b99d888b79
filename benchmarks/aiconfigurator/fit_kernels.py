"""Fit pdnotes' kernel-efficiency curves to aiconfigurator's measured per-operation databases.

Runs in its own environment, not as a pdnotes dependency:

    python3 -m venv ~/.venvs/aic && ~/.venvs/aic/bin/pip install aiconfigurator==0.12.0
    ~/.venvs/aic/bin/python benchmarks/aiconfigurator/fit_kernels.py [--write]

aiconfigurator (NVIDIA, Apache-2.0) ships per-GPU tables of measured kernel latencies
(aiconfigurator_core/systems/data/<system>/<op>/<backend>/<version>/*.parquet). This script reads
the TRT-LLM tables of each system and fits the few parameters pdnotes' roofline uses
(docs/validation.md, "Kernels: measured per-operation data"):

- GEMM (gemm_perf, bf16 and fp8 per-tensor): latency = max(compute, weight read), where
  compute = 2MNK / (peak * mfu * M / (M + M_half)), M_half = mfu_half_tokens * (4096^2 / (N K))
  ** mfu_width_exp (smaller per-GPU matrices, i.e. more TP, need more tokens to fill the GPU)
  and weight read = (N K + M K + M N) * dtype / (HBM * bw_eff).
  Fitted on rows with N, K in [1024, 16384] and the even-indexed M values of the grid; the
  odd-indexed M values are held out.
- Context attention (context_attention_perf, bf16, causal): latency = 2 s^2 h d b /
  (peak * attn_mfu * c / (c + attn_half_context)), c = s / 2 the mean context a prompt token
  attends (as the step cost computes it: attended pairs / new tokens). Fitted on 32 query /
  8 KV heads x 128 (Llama-3.1-8B-like); held out: 64 / 8 x 128 (Llama-3.1-70B, Qwen3-32B) and
  16 / 4 x 128.
- Generation attention (generation_attention_perf, bf16 KV): latency = launch + KV bytes /
  (HBM * kv_bw_eff), on rows reading at least 4 MiB per layer (batch x context >= 1,024
  tokens of 8 KV heads). Fitted on 32 / 8 x 128, held out on 64 / 8 x 128.
- MoE layers (moe_perf, bf16 and fp8 block-scaled, balanced routing, >= 16 tokens): compute at
  moe_mfu * S / (S + moe_width_half) * R / (R + moe_half_rows), S = h x ffn / moe_tp, R = T k /
  ep, against the touched experts' reads. Fitted on every shape but DeepSeek-V3's (7168 / 2048,
  top 8 of 256), which is held out.
- MoE layers at decode sizes (moe_perf, bf16, fp8 block-scaled and 4-bit weight-only mxfp4,
  aiconfigurator's default power-law routing, <= 256 tokens): latency = moe_floor_us + the
  touched experts' bytes per GPU (E (1 - (1 - k/E)^T) x 3 h ffn / (moe_tp x moe_ep)) read at the
  GEMMs' bw_eff, as the step cost reads them. The floor is what a MoE layer costs before it reads
  a byte (routing, top-k, permute, two grouped GEMMs' launch and tail, finalize): 30-100 us, where
  reading one token's experts takes 2-15 us. Unlike the curves above it is an engine's own
  overhead, and the runs pdnotes is validated on are of all three engines, so it is fitted on
  each engine's table (TRT-LLM's version above, vLLM's and SGLang's newest) and the median of
  the three is kept. Same held-out shape.
- MLA attention blocks at decode (DeepSeek-V3's shape; TRT-LLM's and vLLM's
  mla_generation_module_perf, SGLang's wideep_generation_mla_perf; batch <= 256): latency =
  mla_floor_us + the block's projection weights per GPU (heads / 128 of 187.1 M parameters) at
  bw_eff + the latent KV (576 values a token) at kv_bw_eff + kv_seq_us per sequence, as the step
  cost reads them. The floor (norms, rope, five small GEMMs, the attention kernel, quantisation)
  is 30-90 us a layer, where at 16 heads per GPU the reads take 15-40 us. Median of the engines.
- Decode attention's floor (generation_attention_perf of TRT-LLM, vLLM and SGLang, bf16 KV,
  serving sizes: batch <= 256, context >= 256): latency = attn_floor_us + kv_seq_us per
  sequence + KV bytes at kv_bw_eff (the two fitted above, on TRT-LLM's table). The floor is what
  a GQA layer's attention kernel costs whatever it reads: 9-16 us, where 8 sequences' 2K-token
  KV of one KV head per GPU (TP8) takes 3 us. Fitted on 32/8, 8/2 and 8/1 query/KV heads (the
  shapes of TP1, TP4 and TP8 of Llama-3.1-8B / Qwen3-32B), held out on 64/8, 16/4 and 4/1;
  the median of the three engines is kept, as the MoE floors'.
- All-reduce (TRT-LLM custom_allreduce_perf, bf16, messages >= 8 KiB): latency = allreduce_us +
  min((n-1) bytes / allreduce_oneshot_gbps, allreduce_twoshot_us + 2 (n-1)/n bytes /
  intra_gbps): the engine's one-shot kernel (every GPU reads its n-1 peers' whole message) for
  small messages, two-shot (reduce-scatter, all-gather) for large ones. With the ring term alone
  a decode step's all-reduce at 8 GPUs came out 0.79x of the table (0.5-1 MiB messages about
  half), the prefill-sized ones 1.34x. Fitted on 2 and 8 GPUs, held out on 4.

Without --write it prints the fits and their errors (Markdown for docs/validation.md); with
--write it also writes templates/engine/kernels.toml (rows for the chips pdnotes has).
"""

from __future__ import annotations

import argparse
import math
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path

import aiconfigurator_core
import numpy as np
import pandas as pd
import yaml
from scipy.optimize import least_squares

ROOT = Path(__file__).resolve().parents[2]
SYSTEMS = Path(aiconfigurator_core.__file__).parent / "systems"
AIC_VERSION = "0.12.0"
REF_SIZE = 4096.0 * 4096.0

# pdnotes chip -> (aiconfigurator system, TRT-LLM database version)
CHIPS = {
    "h100-sxm": ("h100_sxm", "1.3.0rc20"),
    "h200": ("h200_sxm", "1.3.0rc20"),
    "a100-80g": ("a100_sxm", "1.0.0"),
    "b200": ("b200_sxm", "1.3.0rc20"),
    "gb200": ("gb200", "1.3.0rc20"),
}
# Chips without their own tables that share a measured chip's die (labelled as assumed).
SAME_DIE = {"h800": "h100-sxm"}


@dataclass
class Peaks:
    bf16: float  # FLOP/s
    fp8: float
    hbm: float  # bytes/s
    source: str


def peaks(chip: str, system: str) -> Peaks:
    """pdnotes' own peaks when it has the chip (efficiencies are fractions of them), else
    aiconfigurator's system file."""
    rows: dict = {}
    for path in sorted((ROOT / "templates" / "engine").glob("*.toml")):
        for name, row in tomllib.loads(path.read_text()).get("chips", {}).items():
            rows.setdefault(name, {}).update(row)
    spec = yaml.safe_load((SYSTEMS / f"{system}.yaml").read_text())["gpu"]
    fp8 = float(spec.get("fp8_tc_flops", 0.0))
    row = rows.get(chip, {})
    if "tflops" in row:
        bf16 = row["tflops"] * 1e12
        return Peaks(bf16, 2 * bf16 if fp8 else 0.0, row["hbm_tbps"] * 1e12, "pdnotes")
    return Peaks(float(spec["bfloat16_tc_flops"]), fp8, float(spec["mem_bw"]), "aiconfigurator")


def table(system: str, op: str, version: str, name: str, backend: str = "trtllm") -> pd.DataFrame:
    return pd.read_parquet(SYSTEMS / "data" / system / op / backend / version / f"{name}.parquet")


def mape(pred: np.ndarray, measured: np.ndarray) -> float:
    return float(np.mean(np.abs(pred / measured - 1.0)))


def fit_gemm(df: pd.DataFrame, peak: float, hbm: float, dtype_bytes: float) -> dict:
    rows = df[df.n.between(1024, 16384) & df.k.between(1024, 16384)]
    m, n, k, lat = (rows[c].to_numpy(float) for c in ("m", "n", "k", "latency"))
    grid = sorted(set(m))
    train = np.isin(m, grid[::2])

    def predict(p: np.ndarray) -> np.ndarray:
        mfu, half, exp, bw = p
        eff = mfu * m / (m + half * (REF_SIZE / (n * k)) ** exp)
        compute = 2 * m * n * k / (peak * eff)
        read = (dtype_bytes * n * k + 2 * (m * k + m * n)) / (hbm * bw)
        return np.maximum(compute, read) * 1e3

    fit = least_squares(
        lambda p: np.log(predict(p)[train] / lat[train]),
        [0.8, 300.0, 0.5, 0.7],
        bounds=([0.1, 1.0, 0.0, 0.1], [1.0, 1e5, 2.0, 1.0]),
    )
    pred = predict(fit.x)
    big = 2 * m * n * k >= 2 * 4096.0**2 * 1024  # the prefill-sized GEMMs
    return {
        "mfu": fit.x[0],
        "mfu_half_tokens": fit.x[1],
        "mfu_width_exp": fit.x[2],
        "bw_eff": fit.x[3],
        "rows": int(len(lat)),
        "train_err": mape(pred[train], lat[train]),
        "held_err": mape(pred[~train], lat[~train]),
        "held_big_err": mape(pred[~train & big], lat[~train & big]),
    }


DEEPSEEK_MOE = (7168, 2048, 8, 256)  # hidden, expert FFN, top-k, experts: held out


def fit_moe(df: pd.DataFrame, peak: float, hbm: float, dtype_bytes: float) -> dict | None:
    """A layer's routed experts (grouped GEMM): compute at moe_mfu * S / (S + moe_width_half)
    * R / (R + moe_half_rows), S = one expert matrix's size per GPU (h x ffn / moe_tp), R =
    (token, expert) rows per GPU (T k / ep); weight reads of the experts the tokens touch."""
    df = df[(df.distribution == "balanced") & (df.num_tokens >= 16)]
    if "kernel_source" in df and df.kernel_source.nunique() > 1:
        df = df[df.kernel_source == df.kernel_source.mode()[0]]
    shape = ["hidden_size", "inter_size", "topk", "num_experts"]
    held_mask = (df[shape] == DEEPSEEK_MOE).all(axis=1)
    train, held = df[~held_mask], df[held_mask]

    def predict(p: np.ndarray, d: pd.DataFrame) -> np.ndarray:
        mfu, width_half, half_rows, bw = p
        t, h, i = (d[c].to_numpy(float) for c in ("num_tokens", "hidden_size", "inter_size"))
        k, e = d.topk.to_numpy(float), d.num_experts.to_numpy(float)
        tp, ep = d.moe_tp_size.to_numpy(float), d.moe_ep_size.to_numpy(float)
        matrix = h * i / tp
        rows = t * k / ep
        eff = mfu * matrix / (matrix + width_half) * rows / (rows + half_rows)
        compute = 2 * 3 * matrix * rows / (peak * eff)
        touched = e / ep * (1 - (1 - k / e) ** t)
        read = touched * 3 * matrix * dtype_bytes / (hbm * bw)
        return np.maximum(compute, read) * 1e3

    if train.empty:
        return None
    fit = least_squares(
        lambda p: np.log(predict(p, train) / train.latency.to_numpy()),
        [0.5, 1e6, 500.0, 0.6],
        bounds=([0.01, 0.0, 1.0, 0.05], [1.0, 1e9, 1e6, 1.0]),
    )
    out = {
        "moe_mfu": fit.x[0],
        "moe_width_half": fit.x[1],
        "moe_half_rows": fit.x[2],
        "moe_bw_eff": fit.x[3],
        "train_err": mape(predict(fit.x, train), train.latency.to_numpy()),
        "held_err": float("nan"),
    }
    if len(held):
        out["held_err"] = mape(predict(fit.x, held), held.latency.to_numpy())
    return out


def _heads(df: pd.DataFrame, heads: int, kv: int, dim: int = 128) -> pd.DataFrame:
    return df[
        (df.num_heads == heads)
        & (df.num_key_value_heads == kv)
        & (df.head_dim == dim)
        & (df.kv_cache_dtype == "bfloat16")
        & (df.window_size == 0)
    ]


def fit_context_attention(df: pd.DataFrame, peak: float) -> dict:
    df = df[df.get("attn_dtype", "bfloat16") == "bfloat16"] if "attn_dtype" in df else df
    df = df[df.isl >= 256]

    def flops(d: pd.DataFrame) -> np.ndarray:
        return (2.0 * d.isl**2 * d.num_heads * d.head_dim * d.batch_size).to_numpy(float)

    def predict(p: np.ndarray, d: pd.DataFrame) -> np.ndarray:
        mfu, half = p
        c = d.isl.to_numpy(float) / 2  # the mean context a causal prompt's token attends
        return flops(d) / (peak * mfu * c / (c + half)) * 1e3

    train = _heads(df, 32, 8)
    fit = least_squares(
        lambda p: np.log(predict(p, train) / train.latency.to_numpy()),
        [0.5, 1000.0],
        bounds=([0.05, 0.0], [1.0, 1e5]),
    )
    held = pd.concat([_heads(df, 64, 8), _heads(df, 16, 4)])
    long = held[held.isl >= 2048]
    return {
        "attn_mfu": fit.x[0],
        "attn_half_context": fit.x[1],
        "train_err": mape(predict(fit.x, train), train.latency.to_numpy()),
        "held_err": mape(predict(fit.x, held), held.latency.to_numpy()),
        "held_long_err": mape(predict(fit.x, long), long.latency.to_numpy()),
    }


def fit_generation_attention(df: pd.DataFrame, hbm: float) -> dict:
    def kv_bytes(d: pd.DataFrame) -> np.ndarray:
        ctx = d.step.to_numpy(float) + 1
        return d.batch_size.to_numpy(float) * ctx * 2 * d.num_key_value_heads * d.head_dim * 2

    def predict(p: np.ndarray, d: pd.DataFrame) -> np.ndarray:
        launch_us, seq_us, eff = p
        seqs = d.batch_size.to_numpy(float)
        return (launch_us + seq_us * seqs) / 1e3 + kv_bytes(d) / (hbm * eff) * 1e3

    df = df[kv_bytes(df) >= 4 * 2**20]  # what a decode step reads per layer beyond a few sequences
    train, held = _heads(df, 32, 8), _heads(df, 64, 8)
    fit = least_squares(
        lambda p: np.log(predict(p, train) / train.latency.to_numpy()),
        [5.0, 0.01, 0.8],
        bounds=([0.0, 0.0, 0.05], [200.0, 10.0, 1.0]),
    )
    return {
        "attn_launch_us": fit.x[0],
        "attn_seq_us": fit.x[1],
        "kv_bw_eff": fit.x[2],
        "train_err": mape(predict(fit.x, train), train.latency.to_numpy()),
        "held_err": mape(predict(fit.x, held), held.latency.to_numpy()),
    }


ATTN_FLOOR_TRAIN = ((32, 8), (8, 2), (8, 1))  # query / KV heads per GPU
ATTN_FLOOR_HELD = ((64, 8), (16, 4), (4, 1))


def fit_attention_floor(df: pd.DataFrame, hbm: float, gen: dict) -> dict | None:
    """A decode attention kernel's fixed cost per layer on one engine's generation-attention
    table: latency = floor + kv_seq_us per sequence + KV bytes at kv_bw_eff (`gen`, the KV-read
    fit), on serving sizes (batch <= 256, context >= 256)."""
    df = df[(df.batch_size <= 256) & (df.step >= 255)]
    if "window_size" not in df:  # older tables (a100's vLLM and SGLang): no sliding window
        df = df.assign(window_size=0)
    train = pd.concat([_heads(df, h, kv) for h, kv in ATTN_FLOOR_TRAIN])
    held = pd.concat([_heads(df, h, kv) for h, kv in ATTN_FLOOR_HELD])
    if train.empty:
        return None

    def predict(floor_us: float, d: pd.DataFrame) -> np.ndarray:
        seqs = d.batch_size.to_numpy(float)
        ctx = d.step.to_numpy(float) + 1
        kv = seqs * ctx * 2 * d.num_key_value_heads.to_numpy(float) * d.head_dim * 2
        read_ms = kv / (hbm * gen["kv_bw_eff"]) * 1e3
        return (floor_us + gen["attn_seq_us"] * seqs) / 1e3 + read_ms

    fit = least_squares(
        lambda p: np.log(predict(p[0], train) / train.latency.to_numpy()), [10.0], bounds=(0, 200)
    )
    lat = train.latency.to_numpy()
    return {
        "floor_us": float(fit.x[0]),
        "rows": len(train),
        "train_err": mape(predict(fit.x[0], train), lat),
        "no_floor_err": mape(predict(0.0, train), lat),
        "held_err": mape(predict(fit.x[0], held), held.latency.to_numpy()) if len(held) else 0.0,
    }


def fit_attention_floors(system: str, hbm: float, gen: dict) -> dict | None:
    """The decode attention floor: the median over the engines' tables of their fits."""
    fits = {}
    for backend in ("trtllm", "vllm", "sglang"):
        version = latest(system, "attention", "generation_attention_perf", backend)
        if version is None:
            continue
        df = table(system, "attention", version, "generation_attention_perf", backend)
        got = fit_attention_floor(df, hbm, gen)
        if got is not None:
            fits[f"{backend}/{version}"] = got
    if not fits:
        return None
    middle = sorted(fits.items(), key=lambda kv: kv[1]["floor_us"])[(len(fits) - 1) // 2]
    return {**middle[1], "from": middle[0], "engines": fits}


def fit_allreduce(df: pd.DataFrame) -> dict:
    """Two forms, fitted on 2 and 8 GPUs: one-shot below two-shot (the engines' kernels), and the
    ring's bytes alone. The one-shot form is kept when it reaches the held-out 4 GPUs at least as
    well (on GB200's table it does not: its fit degenerates to one-shot at every size)."""
    df = df[df.allreduce_dtype == "bfloat16"] if "allreduce_dtype" in df else df
    if "kernel_source" in df and df.kernel_source.nunique() > 1:
        df = df[df.kernel_source == df.kernel_source.mode()[0]]

    def predict(p: np.ndarray, d: pd.DataFrame) -> np.ndarray:
        lat_us, gbps, oneshot_gbps, twoshot_us = p
        n = d.num_gpus.to_numpy(float)
        nbytes = 2.0 * d.message_size.to_numpy(float)  # message_size counts bf16 elements
        two = twoshot_us / 1e6 + 2 * (n - 1) / n * nbytes / (gbps * 1e9)  # reduce-scatter + gather
        if oneshot_gbps <= 0:  # the ring's bytes alone
            return lat_us / 1e3 + two * 1e3
        one = (n - 1) * nbytes / (oneshot_gbps * 1e9)  # every GPU reads its peers' whole message
        return lat_us / 1e3 + np.minimum(one, two) * 1e3

    df = df[df.message_size >= 4096]  # >= 8 KiB: one token of a 4096-wide model (batch-1 decode)
    train, held = df[df.num_gpus.isin([2, 8])], df[df.num_gpus == 4]
    decode = held[held.message_size <= 2**21]  # a decode step's: <= 256 tokens of 8192 wide

    def loss(p: np.ndarray) -> np.ndarray:
        return np.log(predict(p, train) / train.latency.to_numpy())

    both = least_squares(
        loss, [3.0, 300.0, 300.0, 10.0], bounds=([0.0, 1.0, 1.0, 0.0], [1e3, 5e3, 5e3, 1e3])
    ).x
    ring = least_squares(
        lambda p: loss(np.array([p[0], p[1], 0.0, 0.0])), [3.0, 300.0], bounds=([0, 1], [1e3, 5e3])
    ).x
    ring = np.array([ring[0], ring[1], 0.0, 0.0])
    held_lat = held.latency.to_numpy()
    one_shot_holds = mape(predict(both, held), held_lat) <= mape(predict(ring, held), held_lat)
    best = both if one_shot_holds else ring
    return {
        "allreduce_us": best[0],
        "intra_gbps": best[1],
        "oneshot_gbps": best[2],
        "twoshot_us": best[3],
        "kernel": str(df.kernel_source.iloc[0]) if "kernel_source" in df else "",
        "train_err": mape(predict(best, train), train.latency.to_numpy()),
        "held_err": mape(predict(best, held), held_lat),
        "held_decode_err": mape(predict(best, decode), decode.latency.to_numpy()),
        "ring_held_decode_err": mape(predict(ring, decode), decode.latency.to_numpy()),
    }


MOE_FLOOR_DTYPES = {
    "bfloat16": ("", 2.0),
    "fp8_block": ("fp8_", 1.0),
    "w4a16_mxfp4": ("w4_", 0.53125),
}
"""moe_perf dtype -> (pdnotes field prefix, bytes per weight as pdnotes counts them)."""


def fit_moe_floor(df: pd.DataFrame, hbm: float, bw_eff: float, dtype_bytes: float) -> dict | None:
    """A MoE layer at decode sizes (<= 256 tokens, power-law routing as aiconfigurator's
    estimates use): a fixed floor plus the touched experts' bytes per GPU at `bw_eff`."""
    df = df[(df.distribution == "power_law_1.01") & (df.num_tokens <= 256)]
    if df.empty:
        return None
    shape = ["hidden_size", "inter_size", "topk", "num_experts"]
    keys = [*shape, "num_tokens", "moe_tp_size", "moe_ep_size"]
    df = df.groupby(keys, as_index=False).latency.min()  # the engine's fastest kernel
    held_mask = (df[shape] == DEEPSEEK_MOE).all(axis=1)
    train, held = df[~held_mask], df[held_mask]

    def predict(floor_us: float, d: pd.DataFrame) -> np.ndarray:
        t, h, i = (d[c].to_numpy(float) for c in ("num_tokens", "hidden_size", "inter_size"))
        k, e = d.topk.to_numpy(float), d.num_experts.to_numpy(float)
        gpus = (d.moe_tp_size * d.moe_ep_size).to_numpy(float)
        touched = e * (1 - (1 - k / e) ** t)
        read = touched * 3 * h * i * dtype_bytes / gpus / (hbm * bw_eff)
        return floor_us / 1e3 + read * 1e3  # ms, as the table

    if train.empty:
        return None
    fit = least_squares(
        lambda p: np.log(predict(p[0], train) / train.latency.to_numpy()), [30.0], bounds=(0, 1e3)
    )
    lat = train.latency.to_numpy()
    out = {
        "floor_us": float(fit.x[0]),
        "rows": len(train),
        "train_err": mape(predict(fit.x[0], train), lat),
        "no_floor_err": mape(predict(0.0, train), lat),
        "held_err": float("nan"),
    }
    if len(held):
        out["held_err"] = mape(predict(fit.x[0], held), held.latency.to_numpy())
    return out


def fit_moe_floors(system: str, trtllm_version: str | None, hbm: float, bw_eff: float) -> dict:
    """Each precision's MoE floor: the median over the engines' tables of their fitted floors
    (an engine without rows for a precision is left out)."""
    versions = {
        "trtllm": trtllm_version,
        "vllm": latest(system, "moe", "moe_perf", "vllm"),
        "sglang": latest(system, "moe", "moe_perf", "sglang"),
    }
    tables = {b: table(system, "moe", v, "moe_perf", b) for b, v in versions.items() if v}
    out: dict = {}
    for dtype, (prefix, nbytes) in MOE_FLOOR_DTYPES.items():
        fits = {
            f"{b}/{versions[b]}": f
            for b, t in tables.items()
            if (f := fit_moe_floor(t[t.moe_dtype == dtype], hbm, bw_eff, nbytes)) is not None
        }
        if not fits:
            out[f"{prefix}moe_floor"] = None
            continue
        middle = sorted(fits.items(), key=lambda kv: kv[1]["floor_us"])[(len(fits) - 1) // 2]
        out[f"{prefix}moe_floor"] = {**middle[1], "from": middle[0], "engines": fits}
    return out


MLA_PROJECTION_PARAMS = 187.1e6
"""DeepSeek-V3's MLA projections per layer (q_a 7168x1536, q_b 1536x128x192, kv_a 7168x576,
kv_b 512x128x256, o 128x128x7168): what the tables' module reads, split by heads."""
MLA_KV_VALUES = 576  # latent 512 + rope key 64 per token per layer


def fit_mla_floor(
    df: pd.DataFrame, context: str, hbm: float, bw_eff: float, kv_bw_eff: float, seq_us: float
) -> dict | None:
    """An MLA block at decode (batch <= 256): a fixed floor plus its reads as pdnotes counts
    them (projections split by heads, latent KV, the per-sequence cost)."""
    df = df[df.batch_size <= 256]
    if df.empty:
        return None
    weight_bytes = np.where(df.mla_dtype == "bfloat16", 2.0, 1.0)
    kv_bytes = np.where(df.kv_cache_dtype == "bfloat16", 2.0, 1.0)
    batch, ctx = df.batch_size.to_numpy(float), df[context].to_numpy(float)
    weights = MLA_PROJECTION_PARAMS * df.num_heads.to_numpy(float) / 128 * weight_bytes
    kv = batch * ctx * MLA_KV_VALUES * kv_bytes
    read_ms = (weights / (hbm * bw_eff) + kv / (hbm * kv_bw_eff)) * 1e3 + batch * seq_us / 1e3
    lat = df.latency.to_numpy()
    fit = least_squares(lambda p: np.log((p[0] / 1e3 + read_ms) / lat), [30.0], bounds=(0, 1e3))
    return {
        "floor_us": float(fit.x[0]),
        "rows": len(df),
        "train_err": mape(fit.x[0] / 1e3 + read_ms, lat),
        "no_floor_err": mape(read_ms, lat),
        "held_err": float("nan"),
    }


def fit_mla_floors(system: str, fit: dict, hbm: float) -> dict | None:
    """The MLA decode floor: the median over the engines' module tables of their fits."""
    gen, bw = fit["generation"], fit["bf16"]["bw_eff"]
    sources = (
        ("trtllm", "mla_generation_module_perf", "step"),
        ("vllm", "mla_generation_module_perf", "step"),
        ("sglang", "wideep_generation_mla_perf", "isl"),
    )
    fits = {}
    for backend, name, context in sources:
        version = latest(system, "mla", name, backend)
        if version is None:
            continue
        df = table(system, "mla", version, name, backend)
        got = fit_mla_floor(df, context, hbm, bw, gen["kv_bw_eff"], gen["attn_seq_us"])
        if got is not None:
            fits[f"{backend}/{version}"] = got
    if not fits:
        return None
    middle = sorted(fits.items(), key=lambda kv: kv[1]["floor_us"])[(len(fits) - 1) // 2]
    return {**middle[1], "from": middle[0], "engines": fits}


def latest(system: str, op: str, name: str, backend: str = "trtllm") -> str | None:
    folder = SYSTEMS / "data" / system / op / backend
    versions = sorted(
        (v.name for v in folder.glob("*") if (v / f"{name}.parquet").exists()),
        key=lambda v: [int(x) if x.isdigit() else x for x in v.replace("rc", ".").split(".")],
    )
    return versions[-1] if versions else None


def fit_chip(chip: str) -> dict:
    system, version = CHIPS[chip]
    pk = peaks(chip, system)
    gemm = table(system, "gemm", version, "gemm_perf")
    out: dict = {"system": system, "version": version, "peaks": pk.source}
    out["bf16"] = fit_gemm(gemm[gemm.gemm_dtype == "bfloat16"], pk.bf16, pk.hbm, 2.0)
    fp8 = gemm[gemm.gemm_dtype == "fp8"]
    out["fp8"] = fit_gemm(fp8, pk.fp8, pk.hbm, 1.0) if len(fp8) and pk.fp8 else None
    moe_version = (
        version if (SYSTEMS / "data" / system / "moe" / "trtllm" / version).is_dir() else None
    )
    out["moe_version"] = moe_version
    moe = table(system, "moe", moe_version, "moe_perf") if moe_version else None
    out["moe"] = out["fp8_moe"] = None
    if moe is not None:
        out["moe"] = fit_moe(moe[moe.moe_dtype == "bfloat16"], pk.bf16, pk.hbm, 2.0)
        block = moe[moe.moe_dtype == "fp8_block"]
        if len(block) and pk.fp8:
            out["fp8_moe"] = fit_moe(block, pk.fp8, pk.hbm, 1.0)
    out.update(fit_moe_floors(system, moe_version, pk.hbm, out["bf16"]["bw_eff"]))
    attn = table(system, "attention", version, "context_attention_perf")
    out["context"] = fit_context_attention(attn, pk.bf16)
    gen = table(system, "attention", version, "generation_attention_perf")
    out["generation"] = fit_generation_attention(gen, pk.hbm)
    out["attn_floor"] = fit_attention_floors(system, pk.hbm, out["generation"])
    out["mla_floor"] = fit_mla_floors(system, out, pk.hbm)
    ar_version = latest(system, "comm", "custom_allreduce_perf")
    out["allreduce_version"] = ar_version
    ar = table(system, "comm", ar_version, "custom_allreduce_perf") if ar_version else None
    out["allreduce"] = fit_allreduce(ar) if ar is not None else None
    return out


def chip_names() -> set[str]:
    names: set[str] = set()
    for path in (ROOT / "templates" / "engine").glob("*.toml"):
        if path.name != "kernels.toml":
            names |= set(tomllib.loads(path.read_text()).get("chips", {}))
    return names


HEADER = """\
# SPDX-FileCopyrightText: Copyright (c) 2025-2026 NVIDIA CORPORATION & AFFILIATES. All rights reserved.
# SPDX-License-Identifier: Apache-2.0
#
# Kernel efficiencies per chip, DERIVED from NVIDIA aiconfigurator {aic}'s measured per-operation
# databases (PyPI aiconfigurator / aiconfigurator-core {aic}, Apache-2.0; license text in
# LICENSES/aiconfigurator-Apache-2.0.txt; github.com/ai-dynamo/aiconfigurator) by fitting.
# Changes: no measured row is carried; each value below is a least-squares fit (log latency) of
# pdnotes' roofline formulas to the TRT-LLM tables named in the row's `kernel_source`, written by
# benchmarks/aiconfigurator/fit_kernels.py --write (docs/validation.md, "Kernels: measured
# per-operation data"). These rows overlay the same-named rows of chips.toml: `mfu` becomes the
# GEMMs' best efficiency, reached as tokens in a step grow (mfu_half_tokens, mfu_width_exp), one
# curve for both phases; `attn_mfu` / `attn_half_context` the causal attention's; `bw_eff` the
# weights' read efficiency, `kv_bw_eff` the KV cache's and `kv_seq_us` a decode attention's cost
# per sequence per layer; `allreduce_us` / `intra_gbps` / `allreduce_oneshot_gbps` /
# `allreduce_twoshot_us` the all-reduce's (one-shot for small messages, two-shot for large ones);
# `attn_floor_us` a decode attention kernel's fixed cost per layer; `fp8_*` the fp8
# (per-tensor) GEMMs' curve against the fp8 peak; `moe_*` / `fp8_moe_*` a MoE layer's grouped
# expert GEMMs (best efficiency shrinking with the per-GPU expert matrix, moe_width_half, and
# growing with the (token, expert) rows per GPU, moe_half_rows). Deployments carrying a fitted
# `prefill_mfu` (engines measured before these kernels) keep the old constant-MFU model.
"""


def _f(x: float, digits: int = 3) -> str:
    return f"{x:.{digits}g}" if abs(x) < 1 else f"{x:.{max(digits, 4)}g}"


def toml_row(chip: str, fit: dict, assumed_from: str | None = None) -> str:
    g, c, gen, ar = fit["bf16"], fit["context"], fit["generation"], fit["allreduce"]
    db = f"aiconfigurator {AIC_VERSION} systems/data/{fit['system']}"
    tr = f"trtllm/{fit['version']}"
    parts = [
        f"gemm/{tr}/gemm_perf (bf16)",
        f"attention/{tr}/context_attention_perf and generation_attention_perf (bf16)",
    ]
    if ar is not None:
        parts.append(f"comm/trtllm/{fit['allreduce_version']}/custom_allreduce_perf")
    source = (
        f"FITTED to {db}: " + ", ".join(parts) + f". GEMM {g['rows']} rows (N, K 1024-16384), "
        f"held-out M values within {g['held_err']:.0%} (prefill-sized GEMMs "
        f"{g['held_big_err']:.0%}); context attention held-out heads within "
        f"{c['held_err']:.0%}; KV read held-out within {gen['held_err']:.0%}"
    )
    if ar is not None:
        source += (
            f"; all-reduce ({'one-shot / two-shot' if ar['oneshot_gbps'] > 0 else 'ring'}) "
            f"held-out 4 GPUs within {ar['held_err']:.0%} (decode-sized messages "
            f"{ar['held_decode_err']:.0%}, the ring alone {ar['ring_held_decode_err']:.0%})"
        )
    if fit["fp8"] is not None:
        f8 = fit["fp8"]
        source += (
            f". fp8 GEMMs (per-tensor, same table): mfu {f8['mfu']:.3f} of the fp8 peak, "
            f"half at {f8['mfu_half_tokens']:.0f} tokens, width exponent "
            f"{f8['mfu_width_exp']:.2f}, held-out within {f8['held_err']:.0%}"
        )
    for label, m in (("bf16", fit["moe"]), ("fp8 block-scaled", fit["fp8_moe"])):
        if m is not None:
            held = (
                ""
                if math.isnan(m["held_err"])
                else f", DeepSeek-V3's shape held out within {m['held_err']:.0%}"
            )
            source += (
                f". MoE ({label}, moe/trtllm/{fit['moe_version']}/moe_perf, balanced routing): "
                f"train within {m['train_err']:.0%}{held}"
            )
    floors = [
        (label, fit.get(f"{prefix}moe_floor"))
        for label, prefix in (("bf16", ""), ("fp8 block", "fp8_"), ("mxfp4 weight-only", "w4_"))
    ]
    if any(f for _, f in floors):
        source += (
            ". MoE layer floor at decode sizes (moe_perf, <= 256 tokens, power-law routing, "
            "the median engine's fit): "
            + ", ".join(
                f"{label} {f['floor_us']:.0f} us ({f['from']}, within {f['train_err']:.0%}, no "
                f"floor {f['no_floor_err']:.0%})"
                for label, f in floors
                if f
            )
        )
    if (mla := fit.get("mla_floor")) is not None:
        source += (
            f". MLA block floor at decode (DeepSeek-V3's shape, batch <= 256, the median engine's "
            f"fit): {mla['floor_us']:.0f} us ({mla['from']}, within {mla['train_err']:.0%}, no "
            f"floor {mla['no_floor_err']:.0%})"
        )
    if (attn := fit.get("attn_floor")) is not None:
        source += (
            f". Decode attention floor (generation_attention_perf, batch <= 256, context >= 256, "
            f"the median engine's fit): {attn['floor_us']:.1f} us a layer ({attn['from']}, "
            f"within {attn['train_err']:.0%}, no floor {attn['no_floor_err']:.0%}; held-out "
            f"heads within {attn['held_err']:.0%})"
        )
    if assumed_from:
        source = (
            f"ASSUMED as {assumed_from} (same die, no aiconfigurator table for this chip): "
            + source
        )
    lines = [
        f"[chips.{chip}]",
        f"mfu = {g['mfu']:.3f}",
        f"mfu_half_tokens = {g['mfu_half_tokens']:.0f}.0",
        f"mfu_width_exp = {g['mfu_width_exp']:.3f}",
        f"attn_mfu = {c['attn_mfu']:.3f}",
        f"attn_half_context = {c['attn_half_context']:.0f}.0",
        f"bw_eff = {g['bw_eff']:.3f}",
        f"kv_bw_eff = {gen['kv_bw_eff']:.3f}",
        f"kv_seq_us = {gen['attn_seq_us']:.3f}",
    ]
    if fit["fp8"] is not None:
        f8 = fit["fp8"]
        lines += [
            f"fp8_mfu = {f8['mfu']:.3f}",
            f"fp8_mfu_half_tokens = {f8['mfu_half_tokens']:.0f}.0",
            f"fp8_mfu_width_exp = {f8['mfu_width_exp']:.3f}",
        ]
    for prefix, m in (("", fit["moe"]), ("fp8_", fit["fp8_moe"])):
        if m is not None:
            lines += [
                f"{prefix}moe_mfu = {m['moe_mfu']:.3f}",
                f"{prefix}moe_width_half = {m['moe_width_half']:.4g}",
                f"{prefix}moe_half_rows = {m['moe_half_rows']:.0f}.0",
            ]
    for prefix in ("", "fp8_", "w4_"):
        if (floor := fit.get(f"{prefix}moe_floor")) is not None:
            lines.append(f"{prefix}moe_floor_us = {floor['floor_us']:.1f}")
    if (floor := fit.get("mla_floor")) is not None:
        lines.append(f"mla_floor_us = {floor['floor_us']:.1f}")
    if (floor := fit.get("attn_floor")) is not None:
        lines.append(f"attn_floor_us = {floor['floor_us']:.1f}")
    if ar is not None and not assumed_from:
        lines += [
            f"allreduce_us = {ar['allreduce_us']:.1f}",
            f"intra_gbps = {ar['intra_gbps']:.0f}.0",
        ]
        if ar["oneshot_gbps"] > 0:
            lines += [
                f"allreduce_oneshot_gbps = {ar['oneshot_gbps']:.0f}.0",
                f"allreduce_twoshot_us = {ar['twoshot_us']:.1f}",
            ]
    lines.append(f'kernel_source = "{source}"')
    return "\n".join(lines)


def _floors_per_engine(fit: dict) -> str:
    """A floor fit's per-engine values as 'TRT-LLM / vLLM / SGLang' ('-' where not fitted)."""
    per = {k.split("/")[0]: v["floor_us"] for k, v in fit["engines"].items()}
    return " / ".join(f"{per[b]:.1f}" if b in per else "-" for b in ("trtllm", "vllm", "sglang"))


def markdown(fits: dict[str, dict]) -> str:
    out = [
        "| chip (aiconfigurator system, TRT-LLM db) | GEMM bf16: mfu, half tokens, width exp, "
        "bw_eff | train / held-out M (prefill-sized) | fp8: mfu, half tokens | held-out | "
        "context attention: attn_mfu, half context | held-out heads (s >= 2048) | KV read: "
        "kv_bw_eff, us per sequence, launch us | held-out | all-reduce: us, one-shot GB/s; "
        "two-shot us, GB/s | held-out (4 GPUs; decode-sized) |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for chip, f in fits.items():
        g, c, gen, ar, f8 = f["bf16"], f["context"], f["generation"], f["allreduce"], f["fp8"]
        out.append(
            "| "
            + " | ".join(
                [
                    f"{chip} ({f['system']}, {f['version']})",
                    f"{g['mfu']:.3f}, {g['mfu_half_tokens']:.0f}, {g['mfu_width_exp']:.2f}, "
                    f"{g['bw_eff']:.3f}",
                    f"{g['train_err']:.1%} / {g['held_err']:.1%} ({g['held_big_err']:.1%})",
                    f"{f8['mfu']:.3f}, {f8['mfu_half_tokens']:.0f}" if f8 else "no fp8",
                    f"{f8['held_err']:.1%}" if f8 else "",
                    f"{c['attn_mfu']:.3f}, {c['attn_half_context']:.0f}",
                    f"{c['held_err']:.1%} ({c['held_long_err']:.1%})",
                    f"{gen['kv_bw_eff']:.3f}, {gen['attn_seq_us']:.2f}, "
                    f"{gen['attn_launch_us']:.1f}",
                    f"{gen['held_err']:.1%}",
                    (
                        f"{ar['allreduce_us']:.1f}, {ar['oneshot_gbps']:.0f}; "
                        f"{ar['twoshot_us']:.1f}, {ar['intra_gbps']:.0f}"
                        if ar["oneshot_gbps"] > 0
                        else f"{ar['allreduce_us']:.1f}, ring only; {ar['intra_gbps']:.0f}"
                    )
                    if ar
                    else "",
                    f"{ar['held_err']:.1%}; {ar['held_decode_err']:.1%}" if ar else "",
                ]
            )
            + " |"
        )
    out += [
        "",
        "| chip | MoE layer (moe_perf) | moe_mfu, width half, half rows, expert read eff | train "
        "error | DeepSeek-V3 shape held out |",
        "|---|---|---|---|---|",
    ]
    for chip, f in fits.items():
        for label, m in (("bf16", f["moe"]), ("fp8 block", f["fp8_moe"])):
            if m is None:
                continue
            held = "-" if math.isnan(m["held_err"]) else f"{m['held_err']:.1%}"
            out.append(
                f"| {chip} | {label}, trtllm/{f['moe_version']} | {m['moe_mfu']:.3f}, "
                f"{m['moe_width_half']:.3g}, {m['moe_half_rows']:.0f}, {m['moe_bw_eff']:.3f} | "
                f"{m['train_err']:.1%} | {held} |"
            )
    out += [
        "",
        "| chip | MoE experts at decode sizes (moe_perf, <= 256 tokens, power-law routing) | "
        "floor us per engine: TRT-LLM / vLLM / SGLang | kept (median) | its error (no floor) | "
        "DeepSeek-V3 shape held out |",
        "|---|---|---|---|---|---|",
    ]
    for chip, f in fits.items():
        for label, prefix in (("bf16", ""), ("fp8 block", "fp8_"), ("mxfp4 weight-only", "w4_")):
            m = f.get(f"{prefix}moe_floor")
            if m is None:
                continue
            held = "-" if math.isnan(m["held_err"]) else f"{m['held_err']:.1%}"
            shown = _floors_per_engine(m)
            out.append(
                f"| {chip} | {label} | {shown} | {m['floor_us']:.1f} ({m['from']}) | "
                f"{m['train_err']:.1%} ({m['no_floor_err']:.1%}) | {held} |"
            )
    out += [
        "",
        "| chip | MLA block at decode (DeepSeek-V3's shape, batch <= 256) | floor us per engine: "
        "TRT-LLM / vLLM / SGLang | kept (median) | its error (no floor) |",
        "|---|---|---|---|---|",
    ]
    for chip, f in fits.items():
        m = f.get("mla_floor")
        if m is None:
            continue
        shown = _floors_per_engine(m)
        out.append(
            f"| {chip} | {', '.join(m['engines'])} | {shown} | {m['floor_us']:.1f} ({m['from']}) "
            f"| {m['train_err']:.1%} ({m['no_floor_err']:.1%}) |"
        )
    out += [
        "",
        "| chip | decode attention floor (generation_attention_perf, batch <= 256, context >= "
        "256) | floor us a layer per engine: TRT-LLM / vLLM / SGLang | kept (median) | its error "
        "(no floor) | held-out heads (64/8, 16/4, 4/1) |",
        "|---|---|---|---|---|---|",
    ]
    for chip, f in fits.items():
        m = f.get("attn_floor")
        if m is None:
            continue
        shown = _floors_per_engine(m)
        out.append(
            f"| {chip} | {', '.join(m['engines'])} | {shown} | {m['floor_us']:.1f} ({m['from']}) "
            f"| {m['train_err']:.1%} ({m['no_floor_err']:.1%}) | {m['held_err']:.1%} |"
        )
    return "\n".join(out)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help="write templates/engine/kernels.toml")
    args = parser.parse_args()
    fits = {chip: fit_chip(chip) for chip in CHIPS}
    print(markdown(fits))
    if args.write:
        known = chip_names()
        rows = [toml_row(chip, fits[chip]) for chip in CHIPS if chip in known]
        rows += [
            toml_row(chip, fits[base], assumed_from=base)
            for chip, base in SAME_DIE.items()
            if chip in known
        ]
        missing = [chip for chip in CHIPS if chip not in known]
        text = HEADER.format(aic=AIC_VERSION)
        if missing:
            text += f"# Fitted but not written (no chip row yet): {', '.join(missing)}.\n"
        path = ROOT / "templates" / "engine" / "kernels.toml"
        path.write_text(text + "\n" + "\n\n".join(rows) + "\n")
        print(f"wrote {path}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    assert math.isfinite(REF_SIZE)
    raise SystemExit(main())
