"""`pdnotes engine plan` as a real process: whatever ends it ends what it started (issue 36),
and its progress is drawn on a terminal only (issue 35).

A stopped planner used to leave its two worker processes and multiprocessing's resource tracker
running, re-parented to init: SIGTERM (a supervisor's stop or timeout) ended the parent on the
spot, and nothing told the workers. Each test starts `pdnotes engine plan --jobs 2` in a session
of its own, waits until its workers run, ends the parent, and checks by the session id in /proc
(which re-parenting does not change) that no process of the session survives. Every wait is
bounded; the session is killed whatever happens.
"""

from __future__ import annotations

import contextlib
import os
import pty
import select
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# Big enough to still be searching when the signal comes (tens of CPU seconds).
LONG_PLAN = (
    "engine", "plan", "--model", "qwen3-8b", "--chip", "h800", "--chip", "h20",
    "--slo-ttft-ms", "1000", "--slo-tpot-ms", "50", "--max-chips", "8", "--jobs", "2",
)  # fmt: skip
SMALL_PLAN = (
    "engine", "plan", "--model", "qwen3-8b", "--chip", "h800", "--max-chips", "2",
    "--max-instances", "1", "--max-tp", "1", "--modes", "colocated", "--input-len", "1024",
    "--output-len", "32", "-n", "40", "--window-s", "2", "--tolerance", "0.1", "--jobs", "1",
    "--slo-ttft-ms", "600",
)  # fmt: skip
START_S = 120.0  # a loaded 2-core machine takes a while to spawn and import the workers
GONE_S = 30.0

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")


def _session_of(pid: int) -> tuple[int, int] | None:
    """(parent pid, session id) of a live, non-zombie process, or None."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat[stat.rindex(")") + 2 :].split()  # state ppid pgrp session ...
    if fields[0] in ("Z", "X"):
        return None
    return int(fields[1]), int(fields[3])


def session_members(session: int) -> list[int]:
    members = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            found = _session_of(int(entry))
            if found is not None and found[1] == session:
                members.append(int(entry))
    return members


def children_of(parent: int) -> list[int]:
    return [
        int(e)
        for e in os.listdir("/proc")
        if e.isdigit() and (found := _session_of(int(e))) is not None and found[0] == parent
    ]


def wait_for(condition: object, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():  # type: ignore[operator]
            return
        time.sleep(0.2)
    raise AssertionError(f"not within {timeout:.0f} s: {what}")


@contextlib.contextmanager
def planner(*args: str, **popen: object) -> Iterator[subprocess.Popen[bytes]]:
    """`pdnotes ARGS` in a session of its own; the whole session is killed at the end."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(  # type: ignore[call-overload]
        [sys.executable, "-m", "notes_cli", *args],
        cwd=ROOT,
        env=env,
        start_new_session=True,
        **{"stdin": subprocess.DEVNULL, "stdout": subprocess.DEVNULL, **popen},
    )
    try:
        yield proc
    finally:
        for pid in session_members(proc.pid):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=10)


@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGKILL], ids=["SIGTERM", "SIGKILL"])
def test_no_process_of_a_stopped_plan_survives(stop: signal.Signals) -> None:
    with planner(*LONG_PLAN, "--json", stderr=subprocess.DEVNULL) as proc:
        wait_for(lambda: len(children_of(proc.pid)) >= 2, START_S, "two workers started")
        started = session_members(proc.pid)
        assert len(started) >= 3, started  # the parent, two workers (and the resource tracker)
        os.kill(proc.pid, stop)  # the parent only, as a supervisor or the OOM killer does
        code = proc.wait(timeout=GONE_S)
        # SIGTERM ends pdnotes as an exception does (its cleanup runs): exit 128 + 15.
        assert code == (143 if stop == signal.SIGTERM else -signal.SIGKILL)
        wait_for(
            lambda: not session_members(proc.pid),
            GONE_S,
            f"the plan's processes gone (left: {session_members(proc.pid)})",
        )


def _read_terminal(fd: int, proc: subprocess.Popen[bytes], timeout: float) -> bytes:
    """Everything written to the pty until the process ends (bounded)."""
    seen = b""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], 0.2)
        if ready:
            try:
                chunk = os.read(fd, 65536)
            except OSError:  # the other side closed
                break
            seen += chunk
        elif proc.poll() is not None:
            break
    return seen


def test_progress_is_drawn_on_a_terminal_and_only_there(tmp_path: Path) -> None:
    leader, follower = pty.openpty()
    out = tmp_path / "plan.json"
    try:
        with (
            out.open("wb") as stdout,
            planner(*SMALL_PLAN, "--json", stdout=stdout, stderr=follower) as proc,
        ):
            os.close(follower)
            follower = -1
            terminal = _read_terminal(leader, proc, 300.0)
            assert proc.wait(timeout=30) == 0, terminal[-2000:]
    finally:
        os.close(leader)
        if follower >= 0:
            os.close(follower)
    assert b"candidates searched" in terminal  # the bar's label, drawn on stderr
    import json

    assert json.loads(out.read_text())["schema"] == "pdnotes.plan/1"  # stdout: only the JSON
    # The same run with stderr a pipe: no progress at all.
    with planner(*SMALL_PLAN, stderr=subprocess.PIPE) as proc:
        _, err = proc.communicate(timeout=300)
    assert proc.returncode == 0 and b"candidates searched" not in err


def test_an_interrupted_version_probe_leaves_no_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Found by the same search (issue 36): doctor's `<client> --version` runs in a session of
    # its own and was killed on a timeout only; a pdnotes interrupted meanwhile left it running.
    from notes_cli.doctor.version import installed_version

    slow = tmp_path / "slow-cli"
    slow.write_text("#!/bin/sh\nsleep 60\n", encoding="utf-8")
    slow.chmod(0o755)
    monkeypatch.setenv("PDNOTES_TEST_SLOW_CLI", str(slow))
    started: list[int] = []

    def interrupted(self: subprocess.Popen[bytes], *args: object, **kwargs: object) -> None:
        started.append(self.pid)
        wait_for(lambda: len(session_members(self.pid)) >= 2, 30, "sh and sleep running")
        raise KeyboardInterrupt

    monkeypatch.setattr(subprocess.Popen, "communicate", interrupted)
    try:
        with pytest.raises(KeyboardInterrupt):
            installed_version("slow-cli", "PDNOTES_TEST_SLOW_CLI")
        wait_for(lambda: not session_members(started[0]), GONE_S, "the probe's session gone")
    finally:
        for pid in session_members(started[0]) if started else []:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
