"""Evaluate plan tasks on this machine's cores: a process pool, one worker per core by default.

Each worker receives the plan context once (the pool initializer), so a task carries only its
candidate; results come back in task order whatever order the workers finish in, which keeps
the plan deterministic. One job runs everything in this process (no pool), which tests and
profilers prefer.

Workers never outlive the plan: an interrupted plan (Ctrl-C, SIGTERM, an error) terminates
them (`close(abort=True)`), and each worker asks the kernel to kill it when its parent dies
(PR_SET_PDEATHSIG on Linux; elsewhere a thread watching the parent's pid), which covers a
SIGKILL of pdnotes too. Once the workers are gone, multiprocessing's resource tracker reads
the end of its pipe and exits by itself.
"""

from __future__ import annotations

import ctypes
import multiprocessing
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from multiprocessing.process import BaseProcess
from typing import Any

from notes_cli.plan.evaluate import PlanContext, install, run_task

_PR_SET_PDEATHSIG = 1  # linux/prctl.h
_WATCH_S = 1.0  # how often a worker without PR_SET_PDEATHSIG checks its parent


def available_cores() -> int:
    """Cores this process may run on (the affinity mask, as taskset/cgroups set it)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # not Linux
        return max(1, os.cpu_count() or 1)


def die_with_parent(parent: int) -> None:
    """Make this process end when `parent` does, however it ends (SIGKILL included)."""
    armed = False
    if sys.platform.startswith("linux"):
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            armed = libc.prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0) == 0
        except (OSError, AttributeError):
            armed = False
    if not armed:
        threading.Thread(target=_watch_parent, args=(parent,), daemon=True).start()
    if os.getppid() != parent:  # it died before the kernel was asked to tell us
        os._exit(1)


def _watch_parent(parent: int) -> None:
    while os.getppid() == parent:
        time.sleep(_WATCH_S)
    os._exit(1)


def _start_worker(parent: int, context: PlanContext) -> None:
    """A pool worker's initializer."""
    die_with_parent(parent)
    install(context)


class LocalExecutor:
    def __init__(self, jobs: int | None = None) -> None:
        self.jobs = jobs or available_cores()
        self._pool: ProcessPoolExecutor | None = None
        self._before: set[int] = set()  # this process's children before the pool started

    @property
    def description(self) -> str:
        return f"{self.jobs} local process{'es' if self.jobs != 1 else ''}"

    def start(self, context: PlanContext) -> None:
        install(context)  # the driver also evaluates (jobs = 1) and prunes with it
        if self.jobs > 1:
            # spawn, not fork: forking a process that runs threads (a server, a test runner)
            # can deadlock, and Python 3.12+ warns about it; workers import what they need.
            self._before = {p.pid for p in multiprocessing.active_children() if p.pid}
            self._pool = ProcessPoolExecutor(
                max_workers=self.jobs,
                mp_context=multiprocessing.get_context("spawn"),
                initializer=_start_worker,
                initargs=(os.getpid(), context),
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

    def close(self, abort: bool = False) -> None:
        """Stop the pool: after its work (the plan ended), or at once (`abort`: interrupted),
        terminating workers in the middle of a task instead of waiting for it."""
        if self._pool is None:
            return
        if abort:
            for worker in self._workers():
                worker.terminate()
        self._pool.shutdown(wait=True, cancel_futures=True)
        self._pool = None

    def _workers(self) -> list[BaseProcess]:
        """The pool's processes: this process's children started since the pool was."""
        return [p for p in multiprocessing.active_children() if p.pid not in self._before]
