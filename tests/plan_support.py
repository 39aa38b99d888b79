"""The planner tests' hand-checkable case: two made-up chips, one compute-bound request shape."""

from __future__ import annotations

from dataclasses import replace

from notes_cli.bench.workload import LengthSpec
from notes_cli.engine.core.costmodel import NodeCost
from notes_cli.engine.core.profiles import Catalog, load_catalog
from notes_cli.plan.planner import PlanRequest
from notes_cli.plan.slo import PlanSlo
from notes_cli.plan.space import ChipOption, SearchSpace
from notes_cli.plan.workload import drawn

MODEL = "llama-3-8b"


def lab_catalog() -> Catalog:
    """Two made-up chips: `lab-slow` is `lab-fast` at half the FLOP/s. A slow all-reduce makes
    TP2 clearly worse per chip than TP1 for these compute-bound prompts. Both run at one
    constant MFU (no measured kernel curves), so prefill time is FLOPs over FLOP/s by hand."""
    catalog = load_catalog()
    h100 = catalog.chips["h100-sxm"].with_constant_mfu(0.45)
    # a slow ring all-reduce (no one-shot kernel: the ring's bytes at 50 GB/s whatever the size)
    fast = replace(h100, name="lab-fast", intra_gbps=50.0, allreduce_oneshot_gbps=0.0)
    slow = replace(fast, name="lab-slow", tflops=fast.tflops / 2)
    chips = {**catalog.chips, "lab-fast": fast, "lab-slow": slow}
    return replace(catalog, chips=chips)


def hand_request(prices: tuple[float | None, float | None] = (None, None)) -> PlanRequest:
    # 4096-token prompts and one output token: a request is one compute-bound prefill, so a
    # node's capacity is about 1 / (its prefill time); near-regular arrivals (gamma shape 50)
    # keep queueing noise out of it.
    return PlanRequest(
        model=MODEL,
        link="nvlink4",
        space=SearchSpace(
            chips=(ChipOption("lab-fast", prices[0]), ChipOption("lab-slow", prices[1])),
            modes=("disagg", "colocated"),
            max_tp=2,
            max_chips=2,
            max_instances=1,
        ),
        slo=PlanSlo(ttft_ms=2000.0),
        workload=drawn(LengthSpec(4096, 1), 40, seed=0, burstiness=50.0),
        window_s=20.0,
        seed=0,
    )


def prefill_ms(catalog: Catalog, chip: str, tokens: int, model: str = MODEL) -> float:
    return NodeCost(catalog.models[model], catalog.chips[chip]).prefill_time_ms(tokens)
