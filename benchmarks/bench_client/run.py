"""Bench client overhead: `python benchmarks/bench_client/run.py [--concurrency 64]`.

Starts `pdnotes engine serve --speed X` in its own process group (X high, so simulated times
shrink to microseconds and the run is client-bound), runs `pdnotes bench` against it, and reports
the median of (client TTFT - server-reported TTFT / X) per request: what the client adds on top
of what the engine says it spent. The difference is the whole HTTP round trip (client request
encoding, loopback TCP, server parsing and routing, first chunk back, SSE parsing), so it is an
upper bound on the client's own overhead. Prints a Markdown section.
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


def run_bench(base_url: str, args: argparse.Namespace) -> tuple[dict, float]:
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
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run(
        command, capture_output=True, text=True, timeout=600, start_new_session=True
    )
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu_s = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return json.loads(done.stdout), cpu_s


def process_cpu_s(pid: int) -> float:
    """User + system CPU seconds of a running process (Linux /proc; NaN elsewhere)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as handle:
            fields = handle.read().rsplit(")", 1)[1].split()
    except OSError:
        return float("nan")
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--requests", type=int, default=1024)
    parser.add_argument("--speed", type=float, default=1000.0)
    parser.add_argument("--input-len", type=int, default=128)
    parser.add_argument("--output-len", type=int, default=32)
    args = parser.parse_args()
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
    )
    try:
        wait_healthy(f"http://127.0.0.1:{port}/health")
        engine_before = process_cpu_s(engine.pid)
        started = time.perf_counter()
        doc, cpu_s = run_bench(f"http://127.0.0.1:{port}/api", args)
        wall_s = time.perf_counter() - started
        engine_cpu_s = process_cpu_s(engine.pid) - engine_before
    finally:
        os.killpg(engine.pid, signal.SIGTERM)
        engine.wait(10)
    server = doc["server"]
    print(
        f"machine: {platform.machine()}, {os.cpu_count()} cores, Python "
        f"{platform.python_version()}; engine and bench in separate processes\n"
    )
    print(
        f"{doc['completed']}/{args.requests} requests, {args.concurrency} concurrent streams, "
        f"engine --speed {args.speed:g}, {args.input_len} in / {args.output_len} out\n"
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
        f"\nrequest throughput {doc['request_throughput']} req/s, "
        f"output {doc['output_throughput']} tok/s; bench process CPU {cpu_s:.2f} s in all "
        f"(start-up included) = {cpu_s / max(doc['completed'], 1) * 1000:.2f} ms per request; "
        f"engine process CPU {engine_cpu_s:.2f} s over the {wall_s:.2f} s run"
    )


if __name__ == "__main__":
    main()
