"""Stress the client-file write path harder than the test suite does (issue 11.8 figures for
docs/reliability.md): ROUNDS rounds of WRITERS concurrent `config codex` processes on one
CODEX_HOME, and KILLS writers SIGKILLed at random points. Each in a fresh temp home.

    PYTHONPATH=. python3 benchmarks/client_files/stress.py [rounds] [writers] [kills]
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import tempfile
import time
import tomllib
from pathlib import Path


def _env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CODEX_", "PDNOTES_"))}
    env.update(HOME=str(home), CODEX_HOME=str(home / ".codex"), PDNOTES_HOME=str(home / "pd"))
    return env


def _args(model: str) -> list[str]:
    return [sys.executable, "-m", "notes_cli", "config", "codex", "--provider", "gw",
            "--base-url", "https://gw.example/api", "--model", model]  # fmt: skip


def concurrency(rounds: int, writers: int) -> tuple[int, int, int]:
    """(exit-0 writes, writes found current or in a backup, rounds with a valid file)."""
    ok = kept = valid = 0
    for r in range(rounds):
        with tempfile.TemporaryDirectory() as tmp:
            home = Path(tmp)
            env = _env(home)
            quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
            procs = {
                f"m{r}-{i}": subprocess.Popen(_args(f"m{r}-{i}"), env=env, **quiet)  # type: ignore[call-overload]
                for i in range(writers)
            }
            codes = {m: p.wait(timeout=120) for m, p in procs.items()}
            text = (home / ".codex" / "config.toml").read_text()
            current = tomllib.loads(text)["model"]
            valid += 1
            saved = {tomllib.loads(p.read_text()).get("model")
                     for p in (home / "pd" / "backups" / "codex").glob("*.bak")}  # fmt: skip
            for model, code in codes.items():
                if code == 0:
                    ok += 1
                    kept += model == current or model in saved
    return ok, kept, valid


def kills(count: int) -> tuple[int, int, int, int]:
    """(kills, file valid and old-or-new after each, new states seen, temps left after rerun)."""
    rng = random.Random(7)
    held = new_seen = 0
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp)
        env = _env(home)
        subprocess.run(_args("first"), env=env, check=True, stdout=subprocess.DEVNULL)
        start = time.monotonic()
        subprocess.run(_args("timing"), env=env, check=True, stdout=subprocess.DEVNULL)
        runtime = time.monotonic() - start
        path = home / ".codex" / "config.toml"
        for n in range(count):
            before = path.read_text()
            proc = subprocess.Popen(_args(f"k{n}"), env=env, stdout=subprocess.DEVNULL,
                                    stderr=subprocess.DEVNULL)  # fmt: skip
            time.sleep(rng.uniform(0.5, 1.1) * runtime)
            proc.send_signal(signal.SIGKILL)
            proc.wait(timeout=60)
            after = path.read_text()
            model = tomllib.loads(after)["model"]
            if after == before or model == f"k{n}":
                held += 1
            new_seen += model == f"k{n}"
        subprocess.run(_args("last"), env=env, check=True, stdout=subprocess.DEVNULL)
        temps = len(list(path.parent.glob(".config.toml.*")))
    return count, held, new_seen, temps


if __name__ == "__main__":
    rounds, writers, count = (
        int(a) for a in (sys.argv[1:] + ["4", "10", "60"][len(sys.argv[1:]) :])
    )
    ok, kept, valid = concurrency(rounds, writers)
    print(f"concurrency: {rounds} rounds x {writers} writers: {ok} exit-0 writes, {kept} current "
          f"or in a backup, {valid}/{rounds} files valid")  # fmt: skip
    k, held, new_seen, temps = kills(count)
    print(f"kills: {k} SIGKILLs, {held} left the file old or new ({new_seen} new), "
          f"{temps} temp files after the next run")  # fmt: skip
