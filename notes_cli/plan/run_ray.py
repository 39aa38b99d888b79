"""Evaluate plan tasks on a Ray cluster (`--ray ADDRESS` or `--ray auto`).

Ray is an optional extra (`pip install 'pdnotes[ray]'`), imported only here and only when asked
for. The plan context is put in the object store once; each remote call evaluates a small batch
of candidates (so scheduling costs little next to simulating) in a worker process that keeps
its roofline caches between calls. Results are gathered in task order, so a Ray run prints
exactly what a local run prints for the same seed. Every node needs the same pdnotes version
installed (a worker imports notes_cli.plan.evaluate).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from typing import Any

from notes_cli.errors import PdnotesError, UsageError
from notes_cli.plan.evaluate import PlanContext, install, run_task

BATCH = 4  # candidates per remote call
_WAIT_S = 600.0  # the longest wait for one batch before giving up


def evaluate_batch(context: PlanContext, tasks: Sequence[tuple[Any, ...]]) -> list[Any]:
    """What a Ray worker runs."""
    install(context)
    return [run_task(task) for task in tasks]


def _ray() -> Any:
    try:
        import ray
    except ImportError as exc:
        raise UsageError(
            "--ray needs Ray, which is not installed",
            fix="pip install 'pdnotes[ray]' (or drop --ray to use the local cores)",
        ) from exc
    return ray


class RayExecutor:
    def __init__(self, address: str | None = "auto") -> None:
        self.address = address
        self._ray: Any = None
        self._context_ref: Any = None
        self._remote: Any = None
        self._started_here = False
        self._pending: list[Any] = []  # the batches of the current `map` not yet returned

    @property
    def description(self) -> str:
        cpus = int(self._ray.cluster_resources().get("CPU", 0)) if self._ray else 0
        return f"Ray cluster {self.address or 'in this process'} ({cpus} CPUs)"

    def start(self, context: PlanContext) -> None:
        ray = self._ray = _ray()
        if not ray.is_initialized():
            try:
                ray.init(address=self.address, include_dashboard=False, log_to_driver=False)
            except (ConnectionError, RuntimeError, ValueError) as exc:
                raise PdnotesError(
                    f"cannot connect to the Ray cluster at {self.address}: {exc}",
                    fix="start one with `ray start --head`, or pass its address to --ray",
                ) from exc
            self._started_here = True
        install(context)
        self._context_ref = ray.put(context)
        self._remote = ray.remote(evaluate_batch)

    def map(
        self, tasks: Sequence[tuple[Any, ...]], on_done: Callable[[int], None] | None = None
    ) -> list[Any]:
        ray = self._ray
        batches = [list(tasks[i : i + BATCH]) for i in range(0, len(tasks), BATCH)]
        refs = [self._remote.remote(self._context_ref, batch) for batch in batches]
        sizes = {ref: len(batch) for ref, batch in zip(refs, batches, strict=True)}
        self._pending, done = list(refs), 0
        while self._pending:
            ready, self._pending = ray.wait(self._pending, num_returns=1, timeout=_WAIT_S)
            if not ready:
                raise PdnotesError(f"no Ray result within {_WAIT_S:.0f} s; is the cluster busy?")
            done += sizes[ready[0]]
            if on_done:
                on_done(done)
        return [result for batch in ray.get(refs) for result in batch]

    def close(self, abort: bool = False) -> None:
        """Disconnect, shutting down a runtime started here (its worker processes with it).
        On `abort` (the plan was interrupted) the batches still running are cancelled first,
        so a shared cluster does not keep computing for a plan nobody waits for."""
        if self._ray is not None and abort:
            for ref in self._pending:
                with contextlib.suppress(Exception):  # finished meanwhile, or the cluster gone
                    self._ray.cancel(ref, force=True)
        self._pending = []
        if self._started_here and self._ray is not None:
            self._ray.shutdown()
        self._started_here = False
