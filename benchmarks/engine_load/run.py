"""Load benchmark of the engine's HTTP layer: N concurrent streaming chat requests (closed loop),
timed by a lean raw-socket client, compared with the engine's own modelled timing.

    python benchmarks/engine_load/run.py                      # 256 streams, h800-h20-rdma
    python benchmarks/engine_load/run.py --concurrency 64 --rounds 1 --output docs/x.json

What it reports (simulated milliseconds: client wall time x --speed):
  - client median TPOT vs the modelled median TPOT (RequestRecord.tpot_ms), target within 10%;
  - client p99 inter-token gap vs the modelled p99 gap (RequestRecord.itl_ms, pooled), 25%;
  - the p99 of each gap's excess over the same gap in the model (client minus modelled);
  - the server's CPU use (process time / wall time over the load window), target under 1 core;
  - how often the engine's driver ran more than 5 ms late and held simulated time (and by how
    much in total, simulated ms): each hold adds that delay to one gap of every running stream;
  - streamed tokens per second sustained.
The server runs in its own process (server.py); the client uses asyncio streams and parses the
chunked SSE itself, because a full HTTP client would need more CPU than the server does.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
_CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


@dataclass
class Stream:
    request_id: str = ""
    arrivals: list[float] = field(default_factory=list)
    started: float = 0.0

    @property
    def gaps(self) -> list[float]:
        return [b - a for a, b in zip(self.arrivals, self.arrivals[1:], strict=False)]

    @property
    def tpot(self) -> float:
        return (self.arrivals[-1] - self.arrivals[0]) / (len(self.arrivals) - 1)


def request_bytes(port: int, prompt_words: int, output_tokens: int, index: int) -> bytes:
    words = " ".join(f"ctx{index}x{i}" for i in range(prompt_words))
    repeat = " ".join(f"t{i}" for i in range(output_tokens))
    body = json.dumps(
        {
            "model": "pd-mock-1",
            "stream": True,
            "max_tokens": output_tokens,
            "messages": [{"role": "user", "content": f"{words}\nrepeat: {repeat}"}],
        }
    ).encode()
    head = (
        f"POST /api/chat/completions HTTP/1.1\r\nhost: 127.0.0.1:{port}\r\n"
        f"content-type: application/json\r\ncontent-length: {len(body)}\r\n\r\n"
    )
    return head.encode() + body


_ID = re.compile(rb'"id":"([^"]+)"')


async def one_stream(port: int, payload: bytes) -> Stream:
    """POST one streaming request and timestamp every chunk that carries generated text."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.get_extra_info("socket").setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    stream = Stream(started=time.perf_counter())
    writer.write(payload)
    head = await reader.readuntil(b"\r\n\r\n")
    if not head.startswith(b"HTTP/1.1 200"):
        raise RuntimeError(head.decode(errors="replace"))
    while True:  # chunked transfer encoding: uvicorn writes one chunk per SSE event
        size = int((await reader.readline()).strip(), 16)
        if size == 0:
            break
        data = await reader.readexactly(size + 2)
        now = time.perf_counter()
        for event in data.split(b"\n\n"):
            if b'"content":"' in event and b'"content":""' not in event:
                stream.arrivals.append(now)
                if not stream.request_id and (match := _ID.search(event)):
                    stream.request_id = match.group(1).decode()
    writer.close()
    return stream


async def load(port: int, args: argparse.Namespace) -> tuple[list[Stream], float, float]:
    """`concurrency` workers, each sending `rounds` requests back to back."""

    async def worker(index: int) -> list[Stream]:
        out = []
        for round_ in range(args.rounds):
            payload = request_bytes(port, args.prompt_words, args.output_tokens, index + round_)
            out.append(await one_stream(port, payload))
        return out

    began = time.perf_counter()
    results = await asyncio.gather(*(worker(i) for i in range(args.concurrency)))
    return [s for batch in results for s in batch], began, time.perf_counter()


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / _CLOCK_TICKS  # utime + stime


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q / 100 * (len(ordered) - 1))))]


def start_server(args: argparse.Namespace, records: Path) -> tuple[subprocess.Popen[str], int]:
    command = [sys.executable, str(HERE / "server.py"), "--preset", args.preset,
               "--speed", str(args.speed), "--records", str(records)]  # fmt: skip
    process = subprocess.Popen(command, stdout=subprocess.PIPE, text=True, start_new_session=True)
    assert process.stdout is not None
    line = process.stdout.readline()
    if not line.startswith("READY "):
        process.kill()
        raise RuntimeError(f"server did not start: {line!r}")
    return process, int(line.split(":")[2].split("/")[0])


def summarise(args: argparse.Namespace, streams: list[Stream], engine: dict[str, Any],
              window: float, cpu: float) -> dict[str, Any]:  # fmt: skip
    speed = args.speed
    records = engine["records"]
    by_id = {r["request_id"]: r for r in records}
    paired = [(s, by_id[s.request_id]) for s in streams if s.request_id in by_id]
    client_tpot = statistics.median(s.tpot * 1000 * speed for s, _ in paired)
    model_tpot = statistics.median(r["tpot_ms"] for _, r in paired)
    client_p99 = percentile([g * 1000 * speed for s, _ in paired for g in s.gaps], 99)
    model_p99 = percentile([g for _, r in paired for g in r["itl_ms"]], 99)
    # the same gap, client minus model: what pacing adds, whatever the model's own spread
    excess = [
        g * 1000 * speed - m for s, r in paired for g, m in zip(s.gaps, r["itl_ms"], strict=False)
    ]
    tokens = sum(len(s.arrivals) for s in streams)
    return {
        "preset": args.preset,
        "speed": speed,
        "concurrency": args.concurrency,
        "requests": len(streams),
        "paired_with_model": len(paired),
        "prompt_tokens_approx": args.prompt_words + args.output_tokens + 1,
        "output_tokens": args.output_tokens,
        "client_median_tpot_ms": round(client_tpot, 3),
        "model_median_tpot_ms": round(model_tpot, 3),
        "tpot_error": round(client_tpot / model_tpot - 1, 4),
        "client_p99_itl_ms": round(client_p99, 3),
        "model_p99_itl_ms": round(model_p99, 3),
        "p99_itl_error": round(client_p99 / model_p99 - 1, 4),
        "p99_gap_excess_ms": round(percentile(excess, 99), 3),
        "driver_holds": engine["driver"]["holds"],
        "driver_held_ms": engine["driver"]["held_ms"],
        "server_cpu_cores": round(cpu / window, 3),
        "wall_s": round(window, 2),
        "streamed_tokens": tokens,
        "tokens_per_s": round(tokens / window, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--preset", default="h800-h20-rdma")
    parser.add_argument("--speed", type=float, default=1.0)
    parser.add_argument("--concurrency", type=int, default=256)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--prompt-words", type=int, default=200)
    parser.add_argument("--output-tokens", type=int, default=128)
    parser.add_argument("--output", type=Path, help="also write the summary JSON here")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        records_path = Path(tmp) / "records.json"
        process, port = start_server(args, records_path)
        try:
            cpu_before = cpu_seconds(process.pid)
            streams, began, ended = asyncio.run(load(port, args))
            cpu = cpu_seconds(process.pid) - cpu_before
        finally:
            os.killpg(process.pid, signal.SIGTERM)
            process.wait(60)
        engine = json.loads(records_path.read_text())
    summary = summarise(args, streams, engine, ended - began, cpu)
    print(json.dumps(summary, indent=2))
    if args.output:
        args.output.write_text(json.dumps(summary, indent=2) + "\n")


if __name__ == "__main__":
    main()
