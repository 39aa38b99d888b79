"""Evaluate plan tasks on this machine's cores: a process pool, one worker per core by default.

Each worker receives the plan context once (the pool initializer), so a task carries only its
candidate; results come back in task order whatever order the workers finish in, which keeps
the plan deterministic. One job runs everything in this process (no pool), which tests and
profilers prefer.
"""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from typing import Any

from notes_cli.plan.evaluate import PlanContext, install, run_task


def available_cores() -> int:
    """Cores this process may run on (the affinity mask, as taskset/cgroups set it)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # not Linux
        return max(1, os.cpu_count() or 1)


class LocalExecutor:
    def __init__(self, jobs: int | None = None) -> None:
        self.jobs = jobs or available_cores()
        self._pool: ProcessPoolExecutor | None = None

    @property
    def description(self) -> str:
        return f"{self.jobs} local process{'es' if self.jobs != 1 else ''}"

    def start(self, context: PlanContext) -> None:
        install(context)  # the driver also evaluates (jobs = 1) and prunes with it
        if self.jobs > 1:
            # spawn, not fork: forking a process that runs threads (a server, a test runner)
            # can deadlock, and Python 3.12+ warns about it; workers import what they need.
            self._pool = ProcessPoolExecutor(
                max_workers=self.jobs,
                mp_context=multiprocessing.get_context("spawn"),
                initializer=install,
                initargs=(context,),
            )

    def map(
        self, tasks: Sequence[tuple[Any, ...]], on_done: Callable[[int], None] | None = None
    ) -> list[Any]:
        results = []
        if self._pool is None:
            for task in tasks:
                results.append(run_task(task))
                if on_done:
                    on_done(len(results))
            return results
        for result in self._pool.map(run_task, tasks, chunksize=1):
            results.append(result)
            if on_done:
                on_done(len(results))
        return results

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None
