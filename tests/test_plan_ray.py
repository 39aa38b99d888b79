"""`engine plan --ray`: the same plan on a Ray instance this test starts (and stops) as on the
local cores. Skipped only when Ray is not installed (it is in the test extra)."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import pytest

ray = pytest.importorskip("ray")

from notes_cli.plan.planner import plan  # noqa: E402
from notes_cli.plan.run_local import LocalExecutor  # noqa: E402
from notes_cli.plan.run_ray import RayExecutor  # noqa: E402
from tests.plan_support import hand_request, lab_catalog  # noqa: E402


@pytest.fixture(scope="module")
def ray_instance() -> Iterator[None]:
    """A local Ray instance with 2 CPUs, no dashboard, its files (and the auth token Ray writes
    to ~/.ray) in a temp folder of its own; shut down after the module."""
    folder = tempfile.mkdtemp(prefix="pdray")  # short: Ray's socket paths must fit 107 bytes
    saved = os.environ.get("HOME")
    os.environ["HOME"] = folder
    try:
        ray.init(
            num_cpus=2,
            include_dashboard=False,
            log_to_driver=False,
            _temp_dir=os.path.join(folder, "ray"),
        )
        yield
    finally:
        ray.shutdown()
        if saved is None:
            os.environ.pop("HOME", None)
        else:
            os.environ["HOME"] = saved
        shutil.rmtree(folder, ignore_errors=True)


def _stable(document: dict[str, Any]) -> dict[str, Any]:
    document.pop("wall_s")
    document.pop("executor")
    return document


@pytest.mark.timeout(300)
def test_ray_and_local_give_the_same_plan(ray_instance: None) -> None:
    catalog = lab_catalog()
    request = replace(hand_request(), curves=2, wave=3)  # several waves, several batches
    local = plan(request, catalog, LocalExecutor(1))
    on_ray = plan(request, catalog, RayExecutor(address=None))
    assert "Ray cluster" in on_ray.executor
    assert _stable(on_ray.to_json()) == _stable(local.to_json())
    assert ray.is_initialized()  # an instance the executor did not start is left running
