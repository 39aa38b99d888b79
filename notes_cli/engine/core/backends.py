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

Each backend is named with the engine and version its figures describe (`trtllm-1.0`,
`vllm-0.12`, `sglang-0.5`; the 2024 NIM fit as `trtllm-nim-2024`); the names from before, `trtllm`,
`vllm` and `sglang`, are aliases of today's versions (BACKEND_ALIASES). Today's engines overlap a
step's CPU work with the GPU's next step (`cpu_overlap`): a step then costs max(GPU, CPU).

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
    # The CPU work of step N runs while the GPU runs step N+1 (TensorRT-LLM's overlap
    # scheduler, vLLM's async scheduling, SGLang's overlap scheduler): a step then takes
    # max(GPU, CPU) instead of GPU + CPU.
    cpu_overlap: bool = False


# The CPU costs per request, step and sequence were measured once, on NVIDIA NIM's 2024
# TensorRT-LLM runs (tests/fixtures/serving_load.toml, calibration rows: the only published
# figures fitted here). Today's engines run that CPU work under the GPU's next step; each
# versioned row below says where its engine documents that, and which numbers are assumed.
NIM_2024 = (
    "FITTED to NVIDIA NIM (TensorRT-LLM backend, 2024 containers) closed-loop runs of "
    "Llama-3-8B fp16 on one H100 (tests/fixtures/serving_load.toml, calibration rows): beyond "
    "the GPU time TPOT grows by about 30 us per sequence in a step, 0.6 ms per step besides; "
    "TTFT at one client leaves about 3 ms outside the GPU. KV: TensorRT-LLM's default capacity "
    "scheduler policy GUARANTEED_NO_EVICT reserves prompt + max output at admission"
)

BACKENDS: dict[str, Backend] = {
    "trtllm-nim-2024": Backend(
        "trtllm-nim-2024",
        request_overhead_ms=3.0,
        step_overhead_ms=0.6,
        seq_overhead_us=30.0,
        kv_alloc="reserve",
        split_prompts=False,
        source=NIM_2024 + " (the C++ runtime of 2024: the CPU work adds to every step)",
    ),
    "trtllm-1.0": Backend(
        "trtllm-1.0",
        request_overhead_ms=3.0,
        step_overhead_ms=0.6,
        seq_overhead_us=30.0,
        kv_alloc="reserve",
        split_prompts=False,
        cpu_overlap=True,
        source=(
            "TensorRT-LLM 1.0 (PyTorch backend, the default since 1.0): its overlap scheduler "
            "is on by default (TensorRT-LLM docs, 'Overlap Scheduler': the CPU prepares step "
            "N+1 while the GPU runs step N; disable_overlap_scheduler=False), so the CPU work "
            "hides under the GPU's step. CPU amounts ASSUMED as measured for the 2024 NIM "
            "engine (" + NIM_2024 + "); KV: GUARANTEED_NO_EVICT is still the default capacity "
            "scheduler policy; chunked prefill off by default (enable_chunked_prefill=False)"
        ),
    ),
    "vllm-0.12": Backend(
        "vllm-0.12",
        request_overhead_ms=5.0,
        step_overhead_ms=1.0,
        seq_overhead_us=30.0,
        kv_alloc="incremental",
        split_prompts=True,
        cpu_overlap=True,
        source=(
            "vLLM 0.12 (V1 engine): async scheduling on by default (vllm-project/vllm PR "
            "#27614; SchedulerConfig.async_scheduling 'If set to False, disable async "
            "scheduling'), the scheduler one step ahead of the GPU (PR #19970, NanoFlow-style). "
            "CPU amounts ASSUMED: per sequence as the 2024 NIM fit (the same streaming and "
            "detokenising work per token), a larger fixed step cost for a Python scheduler; "
            "paged KV allocated block by block with recompute preemption"
        ),
    ),
    "sglang-0.5": Backend(
        "sglang-0.5",
        request_overhead_ms=5.0,
        step_overhead_ms=1.0,
        seq_overhead_us=30.0,
        kv_alloc="incremental",
        split_prompts=True,
        cpu_overlap=True,
        source=(
            "SGLang 0.5: the overlap ('zero-overhead') batch scheduler is on by default since "
            "0.4 (LMSYS blog 2024-12-04, 'SGLang v0.4'; --disable-overlap-schedule turns it "
            "off). CPU amounts ASSUMED as vllm-0.12's; radix/paged KV allocated as tokens are "
            "produced, decode requests retracted when memory runs out"
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
            "ASSUMED as vllm's CPU amounts, added to every step (LMDeploy's PyTorch engine, no "
            "version measured); paged KV blocks allocated as sequences grow"
        ),
    ),
}

BACKEND_ALIASES = {"trtllm": "trtllm-1.0", "vllm": "vllm-0.12", "sglang": "sglang-0.5"}
"""Names from before issue 37, kept working. `trtllm` meant the 2024 NIM fit; it now names
today's TensorRT-LLM (name `trtllm-nim-2024` for the old fit), as `vllm` and `sglang` name the
versions their rows describe."""
for _alias, _target in BACKEND_ALIASES.items():
    BACKENDS[_alias] = BACKENDS[_target]
