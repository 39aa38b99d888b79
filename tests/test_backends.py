"""Serving engines as they run today (issue 37): each backend is named with the engine and
version its figures describe, the old names keep working, and today's engines run a step's CPU
work under the GPU's next step instead of after it."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from notes_cli.engine.core.backends import BACKEND_ALIASES, BACKENDS
from notes_cli.engine.core.profiles import Catalog, Deployment, NodeGroup
from notes_cli.engine.core.scheduler import Scheduler
from notes_cli.engine.core.workers import SchedRequest


def test_each_backend_names_its_engine_and_version_and_cites_a_source() -> None:
    for name in ("trtllm-1.0", "vllm-0.12", "sglang-0.5", "trtllm-nim-2024"):
        backend = BACKENDS[name]
        assert backend.name == name
        engine, version = name.split("-", 1)[0], name.rsplit("-", 1)[1]
        source = backend.source.lower()
        assert engine.replace("trtllm", "tensorrt-llm") in source and version in source
    assert "FITTED" in BACKENDS["trtllm-nim-2024"].source  # the one fit, to measured runs


def test_the_old_names_are_aliases_of_todays_versions() -> None:
    assert BACKEND_ALIASES == {"trtllm": "trtllm-1.0", "vllm": "vllm-0.12", "sglang": "sglang-0.5"}
    for alias, target in BACKEND_ALIASES.items():
        assert BACKENDS[alias] is BACKENDS[target]
    # the 2024 NIM fit keeps its own figures under its own name
    nim, today = BACKENDS["trtllm-nim-2024"], BACKENDS["trtllm"]
    assert not nim.cpu_overlap and today.cpu_overlap


def _decode_steps(catalog: Catalog, backend: str | None) -> list[Any]:
    dep = Deployment(
        name="cpu-probe",
        mode="colocated",
        model="llama-3.1-8b",
        link="nvlink4",
        colocated=NodeGroup(1, "h100-sxm"),
        backend=backend,
    )
    scheduler = Scheduler(dep, catalog)
    steps: list[Any] = []
    scheduler.on_step = steps.append
    for index in range(200):
        scheduler.submit(SchedRequest(str(index), 0.0, 100, 20), 0.0)
    for _ in range(100_000):  # bounded
        if scheduler.next_event_time() is None:
            break
        scheduler.step()
    return [s for s in steps if s.phase == "decode" and s.batch_size == 200]


@pytest.mark.parametrize("backend", ["trtllm-1.0", "vllm-0.12", "sglang-0.5"])
def test_todays_engines_hide_their_cpu_work_under_the_gpu(catalog: Catalog, backend: str) -> None:
    # 200 sequences of an 8B model on an H100: the CPU's 0.6-1 ms + 200 x 30 us is less than
    # the GPU's step, so an overlapping engine's step is the GPU's alone.
    bare = _decode_steps(catalog, None)[-1].duration_ms
    today = _decode_steps(catalog, backend)[-1].duration_ms
    nim = _decode_steps(catalog, "trtllm-nim-2024")[-1].duration_ms
    b = BACKENDS[backend]
    cpu = b.step_overhead_ms + 200 * b.seq_overhead_us / 1000
    assert bare > cpu  # the GPU's step covers the CPU's
    assert today == pytest.approx(bare)
    assert nim == pytest.approx(bare + 0.6 + 200 * 0.030)


def test_an_overlapping_engines_step_is_the_cpus_when_the_cpu_is_slower(catalog: Catalog) -> None:
    dep = Deployment(
        name="slow-cpu",
        mode="colocated",
        model="llama-3.1-8b",
        link="nvlink4",
        colocated=NodeGroup(1, "h100-sxm"),
        backend="sglang",
        seq_overhead_us=400.0,  # 200 x 0.4 ms = 80 ms of CPU, more than the GPU's step
    )
    scheduler = Scheduler(dep, catalog)
    worker = scheduler.workers[0]
    assert worker.step_duration(20.0, 200) == pytest.approx(1.0 + 80.0)
    assert replace(dep, backend="trtllm-nim-2024").cpu_overlap is False


def test_a_sub_linear_per_sequence_cost_charges_n_to_the_exponent(catalog: Catalog) -> None:
    # seq_overhead_exponent 0.5 (engine calibrate's law for a CPU engine): 100 sequences cost
    # 10 x 0.4 ms, not 100 x; the step's fixed CPU and an idle exponent stay as they were.
    dep = Deployment(
        name="cpu-engine",
        mode="colocated",
        model="llama-3.1-8b",
        link="nvlink4",
        colocated=NodeGroup(1, "h100-sxm"),
        step_overhead_ms=1.0,
        seq_overhead_us=400.0,
        seq_overhead_exponent=0.5,
    )
    assert Scheduler(dep, catalog).workers[0].step_duration(20.0, 100) == pytest.approx(
        20.0 + 1.0 + 10 * 0.4
    )
    linear = replace(dep, seq_overhead_exponent=None)
    assert Scheduler(linear, catalog).workers[0].step_duration(20.0, 100) == pytest.approx(
        20.0 + 1.0 + 100 * 0.4
    )
