"""Bench client overhead: `python benchmarks/bench_client/run.py [--sweep | --regime R ...]`.

Starts `pdnotes engine serve --speed X` in its own process group, runs `pdnotes bench` against
it, and reports (client TTFT - server-reported TTFT / X) per request: what the client and the
HTTP round trip add on top of what the engine says it spent. The engine's clock for a request
starts when its HTTP app received it, so the difference is the client's own work, loopback TCP
both ways, the server's HTTP framing and the first token's way out. Prints Markdown.

Regimes (`--regime`), all with at most `--concurrency` (64) streams in flight:

- `streams64` (default): Poisson arrivals at `--rate`, so first tokens rarely coincide. With the
  default `--speed 1` and 100 req/s about 45 streams are in flight.
- `closed64`: a closed loop of 64 clients, each sending its next request when one ends: always
  ~64 in flight. Use `--dist lognormal`: with identical requests the loop runs in lockstep (all
  64 start, finish and restart together) and the difference then measures the server writing 64
  first tokens produced at the same simulated instant, not overhead.
- `saturated`: the closed loop against `--speed 1000`, as fast as both processes go: queueing in
  two saturated Python processes (Little's law), kept for comparison with earlier numbers.

`--sweep` runs the table recorded in docs/benchmarks/simulate-bench.md: each configuration
`--repeat` times (default 3), interleaved so that a slow spell of the machine hits them all, and
reports the median of the per-run medians with each run's median in brackets.

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
import statistics
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass

REGIMES = {
    "streams64": {"concurrency": 64, "requests": 1000, "speed": 1.0, "rate": 100.0},
    "closed64": {"concurrency": 64, "requests": 800, "speed": 1.0, "rate": 0.0},
    "saturated": {"concurrency": 64, "requests": 1024, "speed": 1000.0, "rate": 0.0},
}


@dataclass(frozen=True)
class Config:
    label: str
    regime: str
    concurrency: int
    requests: int
    speed: float
    rate: float  # 0: closed loop
    dist: str = "fixed"
    input_len: int = 128
    output_len: int = 64


# The recorded table: Poisson arrivals from slower than real time to 3x, then the closed loop.
SWEEP = [
    Config("Poisson, speed 0.1", "streams64", 64, 300, 0.1, 10.0),
    Config("Poisson, speed 0.3", "streams64", 64, 600, 0.3, 30.0),
    Config("Poisson, speed 1", "streams64", 64, 1000, 1.0, 100.0),
    Config("Poisson, speed 3", "streams64", 64, 2000, 3.0, 300.0),
    Config("closed loop of 64, lognormal, speed 1", "closed64", 64, 800, 1.0, 0.0, "lognormal"),
    Config("closed loop of 64, lognormal, speed 3", "closed64", 64, 1600, 3.0, 0.0, "lognormal"),
    Config("closed loop of 64, fixed (lockstep), speed 1", "closed64", 64, 800, 1.0, 0.0),
]


@dataclass(frozen=True)
class Result:
    config: Config
    doc: dict
    bench_cpu: float  # share of a core
    engine_cpu: float
    bench_cpu_s: float = 0.0  # the bench process's CPU seconds, start-up included

    @property
    def overhead(self) -> dict:
        return self.doc["server"]["client_overhead_ms"]

    @property
    def in_flight(self) -> float:
        return self.doc["request_throughput"] * self.doc["metrics"]["e2e_ms"]["mean"] / 1000


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


def process_cpu_s(pid: int) -> float:
    """User + system CPU seconds of a running process (Linux /proc; NaN elsewhere)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as handle:
            fields = handle.read().rsplit(")", 1)[1].split()
    except OSError:
        return float("nan")
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def pdnotes(*args: str) -> list[str]:
    return [sys.executable, "-m", "notes_cli", *args]


def bench_command(base_url: str, config: Config) -> list[str]:
    command = pdnotes(
        "bench", "--base-url", base_url, "-n", str(config.requests),
        "--concurrency", str(config.concurrency), "--input-len", str(config.input_len),
        "--output-len", str(config.output_len), "--dist", config.dist,
        "--server-speed", str(config.speed), "--timeout", "60", "--json",
    )  # fmt: skip
    if config.rate:
        command += ["--rate", str(config.rate)]
    return command


def measure(config: Config, pin: bool) -> Result:
    """One engine process and one bench process, pinned apart; the bench's JSON and CPU."""
    engine_cpu, bench_cpu = cpus_to_pin(pin)
    port = free_port()
    serve = pdnotes(
        "engine",
        "serve",
        "--port",
        str(port),
        "--preset",
        "h100-disagg",
        "--speed",
        str(config.speed),
    )
    engine = subprocess.Popen(
        serve,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
        preexec_fn=pinner(engine_cpu),
    )
    try:
        wait_healthy(f"http://127.0.0.1:{port}/health")
        engine_before = process_cpu_s(engine.pid)
        children_before = resource.getrusage(resource.RUSAGE_CHILDREN)
        started = time.perf_counter()
        done = subprocess.run(
            bench_command(f"http://127.0.0.1:{port}/api", config),
            capture_output=True,
            text=True,
            timeout=900,
            start_new_session=True,
            preexec_fn=pinner(bench_cpu),
        )
        wall_s = time.perf_counter() - started
        # Read before the engine is reaped: RUSAGE_CHILDREN would then count it too.
        children = resource.getrusage(resource.RUSAGE_CHILDREN)
        engine_cpu_s = process_cpu_s(engine.pid) - engine_before
    finally:
        os.killpg(engine.pid, signal.SIGTERM)
        engine.wait(10)
    bench_cpu_s = (children.ru_utime - children_before.ru_utime) + (
        children.ru_stime - children_before.ru_stime
    )
    if done.returncode not in (0, 1):
        raise SystemExit(f"bench failed ({done.returncode}): {done.stderr[-2000:]}")
    return Result(
        config, json.loads(done.stdout), bench_cpu_s / wall_s, engine_cpu_s / wall_s, bench_cpu_s
    )


def machine_line(pin: bool) -> str:
    placement = "pinned to two different CPUs" if cpus_to_pin(pin)[0] is not None else "unpinned"
    return (
        f"machine: {platform.machine()}, {os.cpu_count()} cores, Python "
        f"{platform.python_version()}; engine and bench in separate processes, {placement}"
    )


def report_one(result: Result) -> None:
    c, doc = result.config, result.doc
    arrivals = f"Poisson {c.rate:g} req/s" if c.rate else "closed loop"
    print(
        f"regime {c.regime}: {doc['completed']}/{c.requests} requests, {arrivals}, at most "
        f"{c.concurrency} in flight (mean {result.in_flight:.1f}), engine --speed {c.speed:g}, "
        f"{c.input_len} in / {c.output_len} out ({c.dist})\n"
    )
    print("| ms (wall) | mean | median | p90 | p99 |\n|---|---|---|---|---|")
    rows = (
        ("client TTFT", doc["metrics"]["ttft_ms"]),
        ("server TTFT / speed", doc["server"]["ttft_ms"]),
        ("client - server TTFT", result.overhead),
    )
    for label, s in rows:
        print(f"| {label} | {s['mean']} | {s['median']} | {s['p90']} | {s['p99']} |")
    print(
        f"\nthroughput {doc['request_throughput']} req/s; CPU: bench {result.bench_cpu:.0%} "
        f"(start-up included), engine {result.engine_cpu:.0%} of a core; bench CPU "
        f"{result.bench_cpu_s * 1000 / max(1, doc['completed']):.3f} ms per request"
    )


def sweep(configs: list[Config], repeat: int, pin: bool) -> None:
    runs: dict[str, list[Result]] = {c.label: [] for c in configs}
    for round_ in range(repeat):
        for config in configs:
            result = measure(config, pin)
            runs[config.label].append(result)
            print(
                f"round {round_ + 1}: {config.label}: {result.overhead['median']} ms",
                file=sys.stderr,
            )
    print(
        "| configuration | in flight (mean) | client − server TTFT, median | p90 | p99 | "
        "CPU bench / engine |\n|---|---|---|---|---|---|"
    )
    for config in configs:
        results = sorted(runs[config.label], key=lambda r: r.overhead["median"])
        middle = results[len(results) // 2]
        medians = ", ".join(f"{r.overhead['median']:.2f}" for r in runs[config.label])
        print(
            f"| {config.label} | {statistics.mean(r.in_flight for r in results):.0f} | "
            f"**{middle.overhead['median']:.2f} ms** ({medians}) | {middle.overhead['p90']:.2f} | "
            f"{middle.overhead['p99']:.2f} | "
            f"{statistics.mean(r.bench_cpu for r in results):.0%} / "
            f"{statistics.mean(r.engine_cpu for r in results):.0%} |"
        )


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sweep", action="store_true", help="the recorded table (~15 minutes)")
    parser.add_argument("--repeat", type=int, default=3, help="runs per configuration (--sweep)")
    parser.add_argument("--regime", choices=sorted(REGIMES), default="streams64")
    parser.add_argument("--concurrency", type=int)
    parser.add_argument("--requests", type=int)
    parser.add_argument("--speed", type=float)
    parser.add_argument("--rate", type=float, help="Poisson arrivals (req/s); 0: closed loop")
    parser.add_argument("--input-len", type=int, default=128)
    parser.add_argument("--output-len", type=int, default=64)
    parser.add_argument("--dist", choices=("fixed", "lognormal"), default="fixed")
    parser.add_argument("--no-pin", action="store_true", help="let the kernel place processes")
    return parser.parse_args()


def main() -> None:
    args = parse_args()
    pin = not args.no_pin
    print(machine_line(pin) + "\n")
    if args.sweep:
        sweep(SWEEP, args.repeat, pin)
        return
    defaults = REGIMES[args.regime]
    config = Config(
        label=args.regime,
        regime=args.regime,
        concurrency=args.concurrency or int(defaults["concurrency"]),
        requests=args.requests or int(defaults["requests"]),
        speed=args.speed or float(defaults["speed"]),
        rate=float(defaults["rate"]) if args.rate is None else args.rate,
        dist=args.dist,
        input_len=args.input_len,
        output_len=args.output_len,
    )
    report_one(measure(config, pin))


if __name__ == "__main__":
    main()
