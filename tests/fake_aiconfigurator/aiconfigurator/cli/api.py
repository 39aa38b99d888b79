"""A stand-in for aiconfigurator's public `cli_estimate`, computed from its input (never one
canned answer), so tests can tell whether pdnotes posed the right configuration:

- TTFT = isl / (10 x prefill TP) ms; TPOT = 5 + decode batch ms;
- tokens/s per GPU = decode sequences x 1000 / TPOT over all GPUs (disagg: workers x TP x DP of
  each phase; agg: TP x DP);
- a decode batch above 64 is out of memory ("OOM", as aiconfigurator says it); a model outside
  MODELS is refused as aiconfigurator refuses one it has no data for.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

MODELS = ("Qwen/Qwen3-32B", "Qwen/Qwen3-8B", "deepseek-ai/DeepSeek-R1")
MAX_BATCH = 64


@dataclass
class EstimateResult:
    ttft: float
    tpot: float
    backend_name: str
    backend_version: str
    raw: dict[str, Any] = field(default_factory=dict)


def cli_estimate(model_path: str, system_name: str, **kw: Any) -> EstimateResult:
    if model_path not in MODELS:
        raise ValueError(f"model {model_path} is not supported on {system_name}")
    mode = kw.get("mode", "agg")
    if mode == "disagg":
        p_tp = kw["prefill_tp_size"]
        batch = kw["decode_batch_size"]
        p_gpus = kw["prefill_num_workers"] * p_tp * kw.get("prefill_attention_dp_size", 1)
        d_dp = kw.get("decode_attention_dp_size", 1)
        d_gpus = kw["decode_num_workers"] * kw["decode_tp_size"] * d_dp
        sequences = kw["decode_num_workers"] * batch * d_dp
        gpus = p_gpus + d_gpus
    else:
        p_tp = kw["tp_size"]
        batch = kw["batch_size"]
        dp = kw.get("attention_dp_size", 1)
        gpus, sequences = p_tp * dp, batch * dp
    if batch > MAX_BATCH:
        raise RuntimeError(f"OOM: batch {batch} does not fit the KV cache")
    tpot = 5.0 + batch
    raw = {"tokens/s/gpu": sequences * 1000.0 / tpot / gpus, "gpus": gpus}
    return EstimateResult(kw["isl"] / (10.0 * p_tp), tpot, "fake", "1.0", raw)
