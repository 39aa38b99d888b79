"""Replay a measured closed-loop serving run (C clients, fixed prompt and answer lengths) through
`engine simulate -c` and compare pdnotes' mean TTFT and TPOT with the measured ones.

docs/validation.md, "Serving under load", and tests/test_validation_load.py use it; the runs
themselves are data (tests/fixtures/serving_load.toml), each with its source.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from notes_cli.bench.stats import Slo
from notes_cli.bench.workload import LengthSpec
from notes_cli.engine.core.profiles import Catalog, Deployment, NodeGroup
from notes_cli.engine.simulate.configs import SimConfig
from notes_cli.engine.simulate.runner import WorkloadSpec, measure

WITHIN = {"ttft": 0.5, "tpot": 0.3}
"""The issue's accuracy bar: TTFT within +-50 % and TPOT within +-30 % of the measured mean."""


@dataclass(frozen=True)
class Setup:
    """How a measured engine is described to pdnotes: mode, backend and step token budget."""

    mode: str = "colocated"
    backend: str | None = "trtllm-nim-2024"  # the runs are NIM's 2024 TensorRT-LLM
    chunk_tokens: int = 8192  # TensorRT-LLM's max_num_tokens, vLLM's max_num_batched_tokens
    max_batch: int = 256

    def deployment(self, run: dict[str, Any], chip: str) -> Deployment:
        return Deployment(
            name=f"measured-{run['model']}-tp{run['tp']}",
            mode=self.mode,
            model=str(run["model"]),
            link="nvlink4",
            colocated=NodeGroup(1, chip, int(run["tp"])),
            max_batch=self.max_batch,
            prefill_token_budget=self.chunk_tokens,
            chunk_tokens=self.chunk_tokens,
            backend=self.backend,
        )


BEFORE = Setup(mode="colocated", backend=None)
"""pdnotes before issue 25: a colocated node, prefill first, no engine CPU costs."""
NIM_TRTLLM = Setup(mode="colocated")
"""NVIDIA NIM's TensorRT-LLM engine as its measured runs behave: the prompts waiting are
prefilled together (whole, up to 8,192 tokens a step) before decoding resumes, so the clients
of a closed loop stay in step (TTFT grows with C times one prompt's prefill at low C), with the
trtllm backend's CPU costs and KV reserved in full."""
IN_FLIGHT = Setup(mode="chunked")
"""In-flight batching as TensorRT-LLM documents it: prompts join decode steps, up to 8,192
tokens a step (compared in docs/validation.md)."""


@dataclass(frozen=True)
class Compared:
    run: dict[str, Any]
    ttft_ms: float  # pdnotes' mean
    tpot_ms: float

    @property
    def ttft_ratio(self) -> float:
        return self.ttft_ms / float(self.run["ttft_ms"])

    @property
    def tpot_ratio(self) -> float:
        return self.tpot_ms / float(self.run["tpot_ms"])

    @property
    def within(self) -> bool:
        """Both means inside the accuracy bar (WITHIN)."""
        return (
            abs(self.ttft_ratio - 1.0) <= WITHIN["ttft"]
            and abs(self.tpot_ratio - 1.0) <= WITHIN["tpot"]
        )


def requests_for(concurrency: int) -> int:
    """Requests replayed per run: enough for the closed loop to pass its first round (every
    client starts at once) and settle; measured tools ran a few rounds per client as well."""
    return max(200, 5 * concurrency)


def compare(run: dict[str, Any], catalog: Catalog, setup: Setup, chip: str) -> Compared:
    """pdnotes' mean TTFT and TPOT for one measured run, through the closed-loop simulator."""
    from notes_cli.engine.simulate.engine_simulator import EngineSimulator

    deployment = setup.deployment(run, chip)
    catalog = replace(catalog, deployments={**catalog.deployments, deployment.name: deployment})
    workload = WorkloadSpec(
        requests=requests_for(int(run["concurrency"])),
        lengths=LengthSpec(int(run["isl"]), int(run["osl"])),
        concurrency=int(run["concurrency"]),
    )
    point = measure(EngineSimulator(catalog), SimConfig(deployment.name), workload, Slo(), None)
    return Compared(run, point.summaries["ttft_ms"].mean, point.summaries["tpot_ms"].mean)
