"""Bench client overhead: `python benchmarks/bench_client/run.py [--regime streams64]`.

Starts `pdnotes engine serve --speed X` in its own process group, runs `pdnotes bench` against
it, and reports (client TTFT - server-reported TTFT / X) per request: what the client and the
HTTP round trip add on top of what the engine says it spent. The difference is the whole round
trip (client request encoding, loopback TCP, server parsing and routing, the first chunk back,
SSE parsing), so it is an upper bound on the client's own overhead. Prints a Markdown section.

Two regimes (`--regime`), because they answer different questions:

- `streams64` (default): 64 streams in flight on an engine that is NOT saturated. Requests
  arrive as a Poisson process at `--rate` and the engine runs slower than real time
  (`--speed 0.1`), so each stream lasts seconds and the engine and the bench each use a small
  share of a core. The difference is then the client + HTTP overhead under 64 concurrent
  streams, not queueing.
- `saturated`: a closed loop of `--concurrency` clients against `--speed 1000`, as fast as the
  two processes go. At 64 streams this measures queueing in two saturated Python processes.

On Linux with two or more CPUs the engine and the bench are pinned to different CPUs (`--no-pin`
turns this off). Unpinned, the kernel's wake-affine placement often runs the bench on the CPU
the engine is writing from, so the bench reads a token only after the engine's whole batch of
writes: milliseconds that belong to neither program.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable

REGIMES = {
    "streams64": {"concurrency": 64, "requests": 600, "speed": 0.1, "rate": 10.0},
    "saturated": {"concurrency": 64, "requests": 1024, "speed": 1000.0, "rate": None},
}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_healthy(url: str, deadline_s: float = 30.0) -> None:
    deadline = time.monotonic() + deadline_s
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(url, timeout=1):
                return
        except OSError:
            time.sleep(0.1)
    raise SystemExit(f"engine did not become healthy at {url}")


def pinner(cpu: int | None) -> Callable[[], None] | None:
    """A preexec function that pins the child to `cpu` (None: no pinning)."""
    if cpu is None:
        return None
    return lambda: os.sched_setaffinity(0, {cpu})


def cpus_to_pin(enabled: bool) -> tuple[int | None, int | None]:
    """(engine CPU, bench CPU): two different CPUs this process may use, or (None, None)."""
    if not enabled or not hasattr(os, "sched_getaffinity"):
        return None, None
    allowed = sorted(os.sched_getaffinity(0))
    return (allowed[0], allowed[1]) if len(allowed) >= 2 else (None, None)


def run_bench(base_url: str, args: argparse.Namespace, cpu: int | None) -> tuple[dict, float]:
    """The bench JSON and the CPU seconds the bench process used (user + system)."""
    command = [
        sys.executable,
        "-m",
        "notes_cli",
        "bench",
        "--base-url",
        base_url,
        "-n",
        str(args.requests),
        "--concurrency",
        str(args.concurrency),
        "--input-len",
        str(args.input_len),
        "--output-len",
        str(args.output_len),
        "--server-speed",
        str(args.speed),
        "--timeout",
        "60",
        "--json",
    ]
    if args.rate:
        command += ["--rate", str(args.rate)]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run(
        command,
        capture_output=True,
        text=True,
        timeout=900,
        start_new_session=True,
        preexec_fn=pinner(cpu),
    )
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu_s = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if done.returncode not in (0, 1):
        raise SystemExit(f"bench failed ({done.returncode}): {done.stderr[-2000:]}")
    return json.loads(done.stdout), cpu_s


def process_cpu_s(pid: int) -> float:
    """User + system CPU seconds of a running process (Linux /proc; NaN elsewhere)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as handle:
            fields = handle.read().rsplit(")", 1)[1].split()
    except OSError:
        return float("nan")
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    parser.add_argument("--regime", choices=sorted(REGIMES), default="streams64")
    parser.add_argument("--concurrency", type=int)
    parser.add_argument("--requests", type=int)
    parser.add_argument("--speed", type=float)
    parser.add_argument("--rate", type=float, help="Poisson arrivals (req/s); 0: closed loop")
    parser.add_argument("--input-len", type=int, default=128)
    parser.add_argument("--output-len", type=int, default=64)
    parser.add_argument("--no-pin", action="store_true", help="let the kernel place processes")
    args = parser.parse_args()
    for key, value in REGIMES[args.regime].items():
        if getattr(args, key) is None:
            setattr(args, key, value)
    return args


def main() -> None:
    args = parse_args()
    engine_cpu, bench_cpu = cpus_to_pin(not args.no_pin)
    port = free_port()
    engine = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "notes_cli",
            "engine",
            "serve",
            "--port",
            str(port),
            "--preset",
            "h100-disagg",
            "--speed",
            str(args.speed),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
        preexec_fn=pinner(engine_cpu),
    )
    try:
        wait_healthy(f"http://127.0.0.1:{port}/health")
        engine_before = process_cpu_s(engine.pid)
        started = time.perf_counter()
        doc, cpu_s = run_bench(f"http://127.0.0.1:{port}/api", args, bench_cpu)
        wall_s = time.perf_counter() - started
        engine_cpu_s = process_cpu_s(engine.pid) - engine_before
    finally:
        os.killpg(engine.pid, signal.SIGTERM)
        engine.wait(10)
    report(args, doc, cpu_s, engine_cpu_s, wall_s, pinned=engine_cpu is not None)


def report(
    args: argparse.Namespace,
    doc: dict,
    cpu_s: float,
    engine_cpu_s: float,
    wall_s: float,
    *,
    pinned: bool,
) -> None:
    server = doc["server"]
    placement = "pinned to two different CPUs" if pinned else "placed by the kernel"
    print(
        f"machine: {platform.machine()}, {os.cpu_count()} cores, Python "
        f"{platform.python_version()}; engine and bench in separate processes, {placement}\n"
    )
    arrivals = f"Poisson {args.rate:g} req/s" if args.rate else "closed loop"
    in_flight = doc["request_throughput"] * doc["metrics"]["e2e_ms"]["mean"] / 1000
    print(
        f"regime {args.regime}: {doc['completed']}/{args.requests} requests, {arrivals}, at "
        f"most {args.concurrency} in flight (mean {in_flight:.1f}), engine --speed "
        f"{args.speed:g}, {args.input_len} in / {args.output_len} out\n"
    )
    print("| ms (wall) | mean | median | p90 | p99 |\n|---|---|---|---|---|")
    rows = (
        ("client TTFT", doc["metrics"]["ttft_ms"]),
        ("server TTFT / speed", server["ttft_ms"]),
        ("client - server TTFT", server["client_overhead_ms"]),
    )
    for label, s in rows:
        print(f"| {label} | {s['mean']} | {s['median']} | {s['p90']} | {s['p99']} |")
    print(
        f"\nrequest throughput {doc['request_throughput']} req/s, output "
        f"{doc['output_throughput']} tok/s over {wall_s:.1f} s; bench process CPU {cpu_s:.2f} s "
        f"(start-up included, {cpu_s / wall_s:.0%} of a core), engine process CPU "
        f"{engine_cpu_s:.2f} s ({engine_cpu_s / wall_s:.0%} of a core)"
    )


if __name__ == "__main__":
    main()
