"""Cold-start timing of `pdnotes --help` and `pdnotes doctor --offline` against a bare Typer app
with the same command names (bare_app.py). Goal: pdnotes within 1.2x of the bare app.

    python benchmarks/cold_start/run.py [-n 15]

Each command runs N times in a fresh interpreter (its own process group, 60 s bound), pdnotes
and the bare app alternating, in a throwaway HOME holding a mock-preset Codex and Claude config;
median wall times (and the ratio of the best runs, less sensitive to a busy machine) are
printed and written to docs/benchmarks-cold-start.md.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
DOC = ROOT / "docs" / "benchmarks-cold-start.md"
GOAL = 1.2


def timed_run(argv: list[str], env: dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run(
        argv,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        stdin=subprocess.DEVNULL,
        timeout=60,
        start_new_session=True,
        check=False,
    )
    return time.perf_counter() - start


def paired_ms(
    ours: list[str], bare: list[str], env: dict[str, str], runs: int
) -> tuple[list[float], list[float]]:
    """Alternate the two commands run by run, so load from other processes hits both alike."""
    timed_run(ours, env)  # warm-up: writes bytecode, fills the file-system cache
    timed_run(bare, env)
    a, b = [], []
    for _ in range(runs):
        a.append(timed_run(ours, env) * 1000)
        b.append(timed_run(bare, env) * 1000)
    return a, b


def sandbox_env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "ANTHROPIC_"))}
    # Users run with cached bytecode; PYTHONDONTWRITEBYTECODE (set in some sandboxes) would
    # make every run recompile pdnotes from source and measure the compiler instead.
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env.update(
        HOME=str(home),
        CODEX_HOME=str(home / ".codex"),
        CLAUDE_CONFIG_DIR=str(home / ".claude"),
        PDNOTES_HOME=str(home / ".pdnotes"),
        PDNOTES_CODEX_BIN=str(home / "no-codex"),  # time pdnotes, not `codex --version`
        NO_COLOR="1",
    )
    return env


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", "--runs", type=int, default=15)
    args = parser.parse_args()
    py = sys.executable
    with tempfile.TemporaryDirectory() as tmp:
        env = sandbox_env(Path(tmp))
        for client in ("codex", "claude"):
            subprocess.run(
                [py, "-m", "notes_cli", "config", client, "--preset", "mock"],
                env=env,
                capture_output=True,
                timeout=60,
                start_new_session=True,
                check=True,
            )
        cases = [
            ("--help", ["--help"]),
            ("doctor --offline", ["doctor", "--offline"]),
            ("doctor --offline --json", ["doctor", "--offline", "--json"]),
        ]
        rows = []
        for label, cli_args in cases:
            a, b = paired_ms(
                [py, "-m", "notes_cli", *cli_args],
                [py, str(HERE / "bare_app.py"), *cli_args],
                env,
                args.runs,
            )
            ours, bare = statistics.median(a), statistics.median(b)
            rows.append((label, ours, bare, ours / bare, min(a) / min(b)))
            print(
                f"{label:<24} pdnotes {ours:6.1f} ms   bare typer {bare:6.1f} ms   "
                f"ratio {ours / bare:4.2f}   best-run ratio {min(a) / min(b):4.2f}"
            )
    write_doc(rows, args.runs)


def write_doc(rows: list[tuple[str, float, float, float, float]], runs: int) -> None:
    lines = [
        "# Benchmarks: cold start",
        "",
        "`python benchmarks/cold_start/run.py` — median of "
        f"{runs} runs in a fresh interpreter each, alternating with a bare Typer app with the same "
        f"command names (`benchmarks/cold_start/bare_app.py`). Goal: ratio <= {GOAL}.",
        "",
        f"Measured {time.strftime('%Y-%m-%d')} on {platform.platform()}, Python "
        f"{platform.python_version()}, {os.cpu_count()} CPUs.",
        "",
        "| command | pdnotes median (ms) | bare Typer median (ms) | ratio of medians "
        "| ratio of best runs | goal met |",
        "|---|---|---|---|---|---|",
    ]
    for label, ours, bare, ratio, best in rows:
        met = "yes" if ratio <= GOAL else "no"
        lines.append(
            f"| `pdnotes {label}` | {ours:.1f} | {bare:.1f} | {ratio:.2f} | {best:.2f} | {met} |"
        )
    lines += [
        "",
        "Runs use cached bytecode (the warm-up run writes it; `PYTHONDONTWRITEBYTECODE` is "
        "removed from the environment), as in a normal install.",
        "",
        "What keeps it fast: command modules import their core inside the command function; "
        "`doctor --offline` imports no HTTP client or server (a test checks `sys.modules`); "
        "doctor and show parse config.toml with the standard library's tomllib; tomlkit (for "
        "round-trip edits) and rich load only when a command needs them.",
        "",
    ]
    DOC.write_text("\n".join(lines), encoding="utf-8")
    print(f"wrote {DOC.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
