"""What a serving engine costs beyond its kernels, per backend (vLLM, SGLang, TRT-LLM, LMDeploy).

The roofline cost model times the GPU work of a step. A real engine also pays CPU time on every
step (scheduling, sampling, detokenising and streaming each sequence's token) and on every
request (HTTP, tokenisation), and it decides how KV memory is handed out. A deployment's
`backend` key picks these defaults; its own `request_overhead_ms`, `step_overhead_ms`,
`seq_overhead_us` and `kv_alloc` keys override them one by one. Without a backend a deployment
behaves as before (the mode's request overhead, no per-step CPU cost, KV reserved in full), so
presets fitted to older engines keep their fits.

In chunked mode (decodes and prompt tokens share each step up to `chunk_tokens`, vLLM v1's
`max_num_batched_tokens`, TensorRT-LLM's in-flight batching under `max_num_tokens`) TensorRT-LLM
takes a prompt whole (`enable_chunked_context` is off by default): one that does not fit what
is left of the step's budget waits for the next step. vLLM cuts it into chunks.

KV allocation:
- "reserve": a request reserves its prompt plus every output token when it is admitted
  (TensorRT-LLM's default GUARANTEED_NO_EVICT capacity scheduler); it is never evicted.
- "incremental": a request holds its prompt and the tokens produced so far (paged KV, vLLM and
  SGLang); when a decode step finds memory full, the most recently admitted running request is
  preempted, its KV freed, and it is later prefilled again over its prompt and the tokens it had
  produced (vLLM's recompute preemption, SGLang's retraction).

The figures and their sources are in docs/engine-model.md, "Backends"; the validation against
measured serving runs is in docs/validation.md, "Serving under load".
"""

from __future__ import annotations

from dataclasses import dataclass

KV_ALLOC = ("reserve", "incremental")


@dataclass(frozen=True)
class Backend:
    name: str
    request_overhead_ms: float  # HTTP, tokenisation, scheduling of a new request (in TTFT)
    step_overhead_ms: float  # CPU per engine step, whatever its size
    seq_overhead_us: float  # CPU per sequence in a step (sampling, detokenising, streaming)
    kv_alloc: str
    split_prompts: bool  # chunked mode: a prompt may be cut across steps (else it goes whole)
    source: str


BACKENDS: dict[str, Backend] = {
    "trtllm": Backend(
        "trtllm",
        request_overhead_ms=3.0,
        step_overhead_ms=0.6,
        seq_overhead_us=30.0,
        kv_alloc="reserve",
        split_prompts=False,
        source=(
            "FITTED to NVIDIA NIM (TensorRT-LLM backend) closed-loop runs of Llama-3-8B fp16 on "
            "one H100 (tests/fixtures/serving_load.toml, calibration rows): beyond the GPU "
            "time TPOT grows by about 30 us per sequence in a step, 0.6 ms per step besides; "
            "TTFT at one client leaves about 3 ms outside the GPU. KV: TensorRT-LLM's default "
            "capacity scheduler policy GUARANTEED_NO_EVICT reserves prompt + max output at "
            "admission"
        ),
    ),
    "vllm": Backend(
        "vllm",
        request_overhead_ms=5.0,
        step_overhead_ms=1.0,
        seq_overhead_us=30.0,
        kv_alloc="incremental",
        split_prompts=True,
        source=(
            "ASSUMED: per-sequence cost as TensorRT-LLM's fit (the same streaming and "
            "detokenising work per token), a larger fixed step cost for a Python scheduler; "
            "paged KV allocated block by block with recompute preemption (vLLM v1 scheduler)"
        ),
    ),
    "sglang": Backend(
        "sglang",
        request_overhead_ms=5.0,
        step_overhead_ms=1.0,
        seq_overhead_us=30.0,
        kv_alloc="incremental",
        split_prompts=True,
        source=(
            "ASSUMED as vllm (Python scheduler, detokeniser process); radix/paged KV allocated "
            "as tokens are produced, decode requests retracted when memory runs out"
        ),
    ),
    "lmdeploy": Backend(
        "lmdeploy",
        request_overhead_ms=5.0,
        step_overhead_ms=1.0,
        seq_overhead_us=30.0,
        kv_alloc="incremental",
        split_prompts=True,
        source=(
            "ASSUMED as vllm (PyTorch engine with paged KV blocks allocated as sequences grow)"
        ),
    ),
}
