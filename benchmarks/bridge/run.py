"""What the bridge costs: TTFT and per-event latency it adds over calling the chat upstream
directly, and CPU per request beside LiteLLM's proxy doing the same Responses → chat bridging.

    python benchmarks/bridge/run.py [--streams 64] [--requests 256] [--events 64,512]
                                    [--gap-ms 1] [--no-litellm] [--write docs/benchmarks/bridge.md]
                                    [--steady-gap-ms 25] [--steady-events 64,256]
                                    [--steady-requests 256] [--steady-rounds 1]

Two scenarios, both with --streams requests in flight:
- burst (the rounds): every stream opens at the same instant and the upstream sends a chunk
  every --gap-ms (1 ms: 1000 tokens/s per stream, 64,000 events/s in all), a saturation test;
- steady (after the rounds; --steady-gap-ms 0 skips it): the streams start staggered, evenly
  over one answer's length, and each asks again as soon as its answer ends, so about
  --streams are always in flight and requests arrive evenly; the upstream sends a chunk every
  --steady-gap-ms (25 ms, a real engine's time per output token at a batch of 64: real
  engines take 10-15 ms per token at batch 1-8 and more as the batch grows, DistServe's SLO
  is a P90 TPOT of 40 ms). Its TTFT counts only requests sent once every stream had started.

Up to six processes, each in its own session (killed by group at the end): a fast fake chat
upstream (first chunk at once, then one chunk every --gap-ms), `pdnotes bridge serve` in front of
it (asked in Responses, and asked in chat, which it passes through untranslated: the cost of its
HTTP hop alone), a bare TCP relay in front of it (the floor: one more user-space hop, no HTTP, no
translation), socat in front of it when installed (the same hop in C, a process per connection),
LiteLLM's proxy in front of it (installed by this runner into benchmarks/.out/venv, never a pdnotes
dependency; configured offline, no database), and this client, which keeps --streams requests in
flight and notes when each event arrives. The targets are run interleaved, round by round, in one
run, so machine noise hits them alike.

Measured:
- TTFT: request sent → first content event (chat `delta.content` direct; Responses
  `response.output_text.delta` through a bridge), median over all requests.
- per event: each event's delay, from the upstream writing it to this client reading it (the
  upstream writes its send time into the event's text, `time.monotonic_ns()`, one clock for
  all the processes), the median over an answer's events after the first, the median over
  answers; bridge minus direct is the latency the bridge adds to each event. And the bridge's
  marginal CPU per event (CPU at the large --events minus CPU at the small one, divided by the
  extra events), and the part of it spent in the kernel (system time: the reads, writes and
  wake-ups a hop costs whatever it is written in).
- CPU per request: the bridge's (or LiteLLM's) process-group CPU time over a phase / requests.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import platform
import re
import shutil
import signal
import statistics
import subprocess
import sys
import textwrap
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "benchmarks" / ".out"
VENV = OUT / "venv"
LITELLM_VERSION = "1.106.12"  # newer releases need a `litellm-proxy` package PyPI lacks here
MODEL = "bench-model"
# LiteLLM is run in the burst only
STEADY_TARGETS = ("direct", "relay", "socat", "passthrough", "bridge")
TICK = os.sysconf("SC_CLK_TCK")
TEXT_DELTA = b'"response.output_text.delta"'
COMPLETED = b'"response.completed"'
# a content event's text is its send time (see `stamped`): chat `content`, Responses `delta`
# (the closing events repeat the whole text under `text`, which this does not match)
STAMP = re.compile(rb'"(?:content|delta)":" s(\d{6,})"')


# --------------------------------------------------------------------------- fake upstream


def upstream_main(port_file: str, gap: str) -> None:
    """A chat-completions upstream: GET /v1/models, POST /v1/chat/completions streaming
    `max_tokens` content chunks (first at once, then one per gap), finish, usage, [DONE]."""
    gap_ms = float(gap)
    base = {"id": "chatcmpl-b", "object": "chat.completion.chunk", "created": 0, "model": MODEL}

    def event(payload: dict) -> bytes:
        data = json.dumps(payload, separators=(",", ":")).encode()
        return b"%x\r\ndata: %s\n\n\r\n" % (len(data) + 8, data)

    def stamped(first: bool) -> tuple[bytes, bytes]:
        """A content chunk as the bytes before and after its text's send time: each event
        carries ` s<time.monotonic_ns()>` when it is written (one clock for every process
        here), so the client measures each event's delay, upstream write to client read."""
        delta = {"role": "assistant", "content": "@"} if first else {"content": "@"}
        data = json.dumps(
            {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]},
            separators=(",", ":"),
        ).encode()
        before, after = data.split(b"@")
        return b"data: " + before + b" s", after + b"\n\n"

    first_parts, next_parts = stamped(True), stamped(False)

    def content(i: int) -> bytes:
        before, after = next_parts if i else first_parts
        payload = before + b"%d" % time.monotonic_ns() + after
        return b"%x\r\n%s\r\n" % (len(payload), payload)

    models = json.dumps({"object": "list", "data": [{"id": MODEL, "object": "model"}]}).encode()

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = 0
                for line in head.split(b"\r\n"):
                    if line.lower().startswith(b"content-length:"):
                        length = int(line.split(b":", 1)[1])
                body = await reader.readexactly(length) if length else b""
                if head.startswith(b"GET"):
                    writer.write(
                        b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n"
                        b"content-length: %d\r\n\r\n%s" % (len(models), models)
                    )
                    continue
                request = json.loads(body)
                n = int(request.get("max_tokens") or request.get("max_completion_tokens") or 64)
                gap_s = gap_for(str(request.get("model", "")), gap_ms) / 1000
                writer.write(
                    b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
                    b"transfer-encoding: chunked\r\n\r\n" + content(0)
                )
                for i in range(1, n):
                    if gap_s:
                        await asyncio.sleep(gap_s)
                    writer.write(content(i))
                finish = {"index": 0, "delta": {}, "finish_reason": "stop"}
                usage = {"prompt_tokens": 8, "completion_tokens": n, "total_tokens": n + 8}
                writer.write(event({**base, "choices": [finish]}))
                writer.write(event({**base, "choices": [], "usage": usage}))
                writer.write(b"e\r\ndata: [DONE]\n\n\r\n0\r\n\r\n")
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    async def serve() -> None:
        server = await asyncio.start_server(handle, "127.0.0.1", 0, backlog=1024)
        Path(port_file).write_text(str(server.sockets[0].getsockname()[1]))
        async with server:
            await server.serve_forever()

    run_loop(serve())


def relay_main(port_file: str, upstream_port: str) -> None:
    """The floor: a TCP relay that forwards bytes both ways and parses nothing, on the
    bridge's event loop (uvloop) and socket options. What it adds is what one more
    user-space hop costs on this machine (its system calls and wake-ups), before any HTTP or
    translation work."""
    import socket

    import uvloop

    class Side(asyncio.Protocol):
        def __init__(self, peer: Side | None = None) -> None:
            self.peer = peer
            self.transport: asyncio.Transport | None = None
            self.early: list[bytes] = []

        def connection_made(self, transport: asyncio.BaseTransport) -> None:
            self.transport = cast(asyncio.Transport, transport)  # uvloop's is not a subclass
            transport.get_extra_info("socket").setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            if self.peer is None:  # a client: open its upstream leg
                asyncio.ensure_future(self.open())
            else:
                self.peer.peer = self
                for data in self.peer.early:
                    self.transport.write(data)

        async def open(self) -> None:
            loop = asyncio.get_running_loop()
            await loop.create_connection(lambda: Side(self), "127.0.0.1", int(upstream_port))

        def data_received(self, data: bytes) -> None:
            peer = self.peer
            if peer is not None and peer.transport is not None:
                peer.transport.write(data)
            else:
                self.early.append(data)

        def connection_lost(self, exc: Exception | None) -> None:
            if self.peer is not None and self.peer.transport is not None:
                self.peer.transport.close()

    async def serve() -> None:
        loop = asyncio.get_running_loop()
        server = await loop.create_server(Side, "127.0.0.1", 0, backlog=1024)
        Path(port_file).write_text(str(server.sockets[0].getsockname()[1]))
        await server.serve_forever()

    uvloop.run(serve())


def run_loop(main: Any) -> Any:
    """The fake upstream's and this client's loop: uvloop, as the bridge's. On a 2-core machine
    the three processes share the cores, and the harness's own CPU delays every target's
    events (an event waits for its reader to be scheduled); the cheaper loop leaves more of the
    cores to what is measured."""
    import uvloop

    return uvloop.run(main)


def gap_for(model: str, default_ms: float) -> float:
    """The upstream's gap between chunks: `bench-model@25ms` asks for 25 ms (the steady
    scenario's requests, which pass through the bridge and LiteLLM unchanged), else the default."""
    _, sep, gap = model.partition("@")
    return float(gap.removesuffix("ms")) if sep else default_ms


# --------------------------------------------------------------------------- processes


def spawn(args: list[str], log: Path, env: dict[str, str] | None = None) -> subprocess.Popen:
    return subprocess.Popen(
        args,
        stdout=log.open("w"),
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        start_new_session=True,
        env={**os.environ, **(env or {})},
    )


def stop(process: subprocess.Popen) -> None:
    try:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(10)
    except (ProcessLookupError, subprocess.TimeoutExpired):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)


def group_cpu_s(pgid: int) -> tuple[float, float]:
    """(User + system, system) CPU seconds of a process group's live and reaped processes."""
    total = kernel = 0
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == pgid:  # fields[2] is pgrp (state is fields[0])
            # utime, stime, and the reaped children's (socat's, a process per connection)
            total += sum(int(x) for x in fields[11:15])
            kernel += int(fields[12]) + int(fields[14])
    return total / TICK, kernel / TICK


def wait_port(port: int, deadline_s: float, process: subprocess.Popen) -> None:
    import socket

    deadline = time.monotonic() + deadline_s
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"process exited with {process.returncode}")
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.2)
    raise RuntimeError(f"nothing listens on {port} after {deadline_s:.0f} s")


def free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def ensure_litellm() -> tuple[Path | None, str]:
    """LiteLLM's proxy in the benchmark's own venv; (binary, note)."""
    binary = VENV / "bin" / "litellm"
    if not binary.exists():
        subprocess.run([sys.executable, "-m", "venv", str(VENV)], check=True)
        install = subprocess.run(
            [str(VENV / "bin" / "pip"), "install", "-q", f"litellm[proxy]=={LITELLM_VERSION}"],
            capture_output=True,
            text=True,
            timeout=1200,
        )
        if install.returncode != 0:
            return None, "pip install failed: " + install.stderr.strip().splitlines()[-1]
    return binary, f"litellm {LITELLM_VERSION}"


def litellm_config(upstream: str) -> Path:
    path = OUT / "litellm-bridge.yaml"
    path.write_text(
        textwrap.dedent(
            f"""\
            # custom_openai: an OpenAI-compatible provider LiteLLM has no native Responses
            # config for, so /v1/responses is bridged onto the upstream's chat completions.
            model_list:
              - model_name: {MODEL}
                litellm_params:
                  model: custom_openai/{MODEL}
                  api_base: {upstream}/v1
                  api_key: not-needed
            litellm_settings:
              drop_params: true
              telemetry: false
            """
        )
    )
    return path


# --------------------------------------------------------------------------- client


@dataclass
class Sample:
    ttft_ms: float
    per_event_us: float
    events: int
    ramp: bool = False  # sent before every stream of a steady phase had started


@dataclass
class Target:
    name: str
    port: int
    path: str
    marker: bytes  # what each content event contains
    end: bytes  # what the last event contains
    body: bytes
    pgid: int | None = None
    expect: int = 0  # content events each answer must carry (0: not checked)
    samples: list[Sample] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    cpu_s: float = 0.0
    kernel_s: float = 0.0  # the part of cpu_s spent in the kernel
    requests: int = 0


def request_body(kind: str, events: int, model: str = MODEL) -> bytes:
    if kind == "chat":
        body = {
            "model": model,
            "stream": True,
            "max_tokens": events,
            "messages": [{"role": "user", "content": "hi"}],
        }
    else:
        body = {"model": model, "stream": True, "max_output_tokens": events, "input": "hi"}
    return json.dumps(body).encode()


async def one(target: Target) -> Sample:
    reader, writer = await asyncio.open_connection("127.0.0.1", target.port)
    sent = time.perf_counter()
    writer.write(
        b"POST %s HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n"
        b"authorization: Bearer x\r\nconnection: close\r\ncontent-length: %d\r\n\r\n%s"
        % (target.path.encode(), len(target.body), target.body)
    )
    first = 0.0
    events = 0
    tail = b""
    delays: list[float] = []  # µs from the upstream's write of an event to its read here
    marker, end = target.marker, target.end
    keep = max(len(marker), len(end), 40)
    while True:
        data = await asyncio.wait_for(reader.read(65536), 120)
        if not data:
            break
        now_ns = time.monotonic_ns()
        window = tail + data
        found = window.count(marker) - tail.count(marker)
        if found and not first:
            first = time.perf_counter()
        events += found
        for match in STAMP.finditer(window):
            if match.end() > len(tail):  # not counted with the read before
                delays.append((now_ns - int(match.group(1))) / 1000)
        if end in window:
            break
        tail = window[-keep:]
    writer.close()
    if not events:
        raise RuntimeError(f"{target.name}: no content event in the answer")
    if target.expect and events != target.expect:
        raise RuntimeError(f"{target.name}: {events} content events, not {target.expect}")
    if len(delays) != events:
        raise RuntimeError(f"{target.name}: {len(delays)} stamped events of {events}")
    # the first event is TTFT's; the rest are the stream's
    delay = statistics.median(delays[1:]) if len(delays) > 1 else delays[0]
    return Sample((first - sent) * 1000, delay, events)


async def phase(target: Target, streams: int, requests: int, stagger_s: float = 0.0) -> None:
    """`requests` requests over `streams` workers; with `stagger_s`, worker i starts
    i × stagger_s late (a steady phase) and its requests sent before the last worker started
    are marked `ramp`."""
    queue = iter(range(requests))
    started = time.perf_counter()
    ramp_ends = started + stagger_s * (streams - 1)

    async def worker(index: int) -> None:
        if stagger_s:
            await asyncio.sleep(index * stagger_s)
        for _ in queue:
            ramp = bool(stagger_s) and time.perf_counter() < ramp_ends
            try:
                sample = await one(target)
            except (TimeoutError, OSError, RuntimeError) as exc:
                target.failures.append(f"{type(exc).__name__}: {exc}")
                continue
            sample.ramp = ramp
            target.samples.append(sample)

    before = group_cpu_s(target.pgid) if target.pgid else (0.0, 0.0)
    await asyncio.gather(*(worker(i) for i in range(streams)))
    if target.pgid:
        after = group_cpu_s(target.pgid)
        target.cpu_s += after[0] - before[0]
        target.kernel_s += after[1] - before[1]
    target.requests += requests
    print(
        f"{target.name}: {requests} requests, {len(target.failures)} failed so far",
        file=sys.stderr,
        flush=True,
    )


def median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


# --------------------------------------------------------------------------- main


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--streams", type=int, default=64)
    parser.add_argument("--requests", type=int, default=256, help="per target and round")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--litellm-requests", type=int, help="per round for LiteLLM (default: --requests)"
    )
    parser.add_argument("--events", default="64,512", help="small,large events per answer")
    parser.add_argument("--gap-ms", type=float, default=1.0)
    parser.add_argument("--no-litellm", action="store_true")
    parser.add_argument(
        "--steady-gap-ms", type=float, default=25.0, help="steady scenario (0: skip it)"
    )
    parser.add_argument("--steady-events", default="64,256", help="small,large (steady)")
    parser.add_argument("--steady-requests", type=int, default=256, help="per target (steady)")
    parser.add_argument(
        "--steady-rounds", type=int, default=1, help="interleaved rounds of the steady phases"
    )
    parser.add_argument("--write", type=Path)
    args = parser.parse_args()
    small, large = (int(x) for x in args.events.split(","))
    OUT.mkdir(parents=True, exist_ok=True)
    processes: list[subprocess.Popen] = []
    # a SIGTERM (an outer `timeout`) must still stop the servers this runner started
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    try:
        report = run(args, small, large, processes)
    finally:
        for process in processes:
            stop(process)
    print(report)
    if args.write:
        write(args.write, report)


GENERATED = "<!-- generated by benchmarks/bridge/run.py: from here -->"
GENERATED_END = "<!-- generated: to here -->"


def write(path: Path, report: str) -> None:
    """The page with this run's figures: between the page's markers when it has them (the
    commentary around them stays), else the whole page."""
    command = "python benchmarks/bridge/run.py " + " ".join(sys.argv[1:])
    when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    block = f"{GENERATED}\n\nRun of {when}:\n\n    {command}\n\n{report}\n{GENERATED_END}"
    text = path.read_text() if path.exists() else ""
    if GENERATED in text and GENERATED_END in text:
        before, rest = text.split(GENERATED, 1)
        after = rest.split(GENERATED_END, 1)[1]
        path.write_text(before + block + after)
        return
    intro = (
        "# Bridge benchmark\n\nWhat `pdnotes bridge serve` costs over calling a "
        "chat-completions upstream directly, and beside LiteLLM's proxy doing the same "
        "Responses → chat bridging (`benchmarks/bridge/run.py`; its docstring says what each "
        "number measures).\n\n"
    )
    path.write_text(intro + block + "\n")


def run(args: argparse.Namespace, small: int, large: int, processes: list) -> str:
    port_file = OUT / "bridge-upstream.port"
    port_file.unlink(missing_ok=True)
    code = (
        "import sys; sys.path.insert(0, sys.argv[1]); import run; run.upstream_main(*sys.argv[2:])"
    )
    upstream = spawn(
        [sys.executable, "-c", code, str(Path(__file__).parent), str(port_file), str(args.gap_ms)],
        OUT / "bridge-upstream.log",
    )
    processes.append(upstream)
    for _ in range(100):
        if port_file.exists() and port_file.read_text():
            break
        time.sleep(0.05)
    upstream_port = int(port_file.read_text())
    upstream_url = f"http://127.0.0.1:{upstream_port}"

    relay_file = OUT / "bridge-relay.port"
    relay_file.unlink(missing_ok=True)
    relay_code = code.replace("run.upstream_main", "run.relay_main")
    relay = spawn(
        [sys.executable, "-c", relay_code, str(Path(__file__).parent), str(relay_file),
         str(upstream_port)],
        OUT / "bridge-relay.log",
    )  # fmt: skip
    processes.append(relay)
    for _ in range(100):
        if relay_file.exists() and relay_file.read_text():
            break
        time.sleep(0.05)
    relay_port = int(relay_file.read_text())

    socat = shutil.which("socat")
    if socat:  # the relay in C; `fork`: a process per connection, so streams run in parallel
        socat_port = free_port()
        socat_process = spawn(
            [socat, f"TCP-LISTEN:{socat_port},bind=127.0.0.1,reuseaddr,fork,nodelay,backlog=1024",
             f"TCP:127.0.0.1:{upstream_port},nodelay"],
            OUT / "bridge-socat.log",
        )  # fmt: skip
        processes.append(socat_process)
        wait_port(socat_port, 10, socat_process)

    bridge_port = free_port()
    bridge = spawn(
        [sys.executable, "-m", "notes_cli", "bridge", "serve", "--upstream", f"{upstream_url}/v1",
         "--port", str(bridge_port), "--upstream-key-env", "BENCH_UPSTREAM_KEY"],
        OUT / "bridge-serve.log",
        {"PYTHONPATH": str(ROOT), "NO_COLOR": "1", "PDNOTES_HOME": str(OUT / "pdnotes-home"),
         # a key, as a real upstream takes: the bridge masks it out of every answer it relays
         "BENCH_UPSTREAM_KEY": "sk-bench-9f3Kq2LmX7vR4tYp8WzN1cHdQe6"},
    )  # fmt: skip
    processes.append(bridge)
    wait_port(bridge_port, 30, bridge)

    targets = {
        "direct": Target(
            "direct", upstream_port, "/v1/chat/completions", b'"content"', b"[DONE]", b""
        ),
        "relay": Target(
            "relay", relay_port, "/v1/chat/completions", b'"content"', b"[DONE]", b"",
            pgid=relay.pid,
        ),
        # the same bridge passing chat through untranslated: its HTTP both ways, no wire work
        "passthrough": Target(
            "passthrough", bridge_port, "/v1/chat/completions", b'"content"', b"[DONE]", b"",
            pgid=bridge.pid,
        ),
        "bridge": Target(
            "bridge", bridge_port, "/v1/responses", TEXT_DELTA, COMPLETED, b"", pgid=bridge.pid
        ),
    }  # fmt: skip
    if socat:
        targets["socat"] = Target(
            "socat", socat_port, "/v1/chat/completions", b'"content"', b"[DONE]", b"",
            pgid=socat_process.pid,
        )  # fmt: skip
    litellm_note = "not run (--no-litellm)"
    if not args.no_litellm:
        binary, litellm_note = ensure_litellm()
        if binary is not None:
            litellm_port = free_port()
            litellm = spawn(
                [str(binary), "--config", str(litellm_config(upstream_url)), "--host",
                 "127.0.0.1", "--port", str(litellm_port), "--num_workers", "1"],
                OUT / "litellm.log",
                # no database, no master key (like the bridge without --api-key-env), no
                # network: the cost map from the package, not from GitHub
                {"LITELLM_LOCAL_MODEL_COST_MAP": "True", "LITELLM_LOG": "ERROR",
                 "LITELLM_DANGEROUSLY_PERMIT_WEAK_OR_UNSET_MASTER_KEY": "true",
                 "DISABLE_SCHEMA_UPDATE": "true", "NO_DOCS": "True"},
            )  # fmt: skip
            processes.append(litellm)
            try:
                wait_port(litellm_port, 180, litellm)
                targets["litellm"] = Target(
                    "litellm", litellm_port, "/v1/responses", TEXT_DELTA, COMPLETED, b"",
                    pgid=litellm.pid,
                )  # fmt: skip
            except RuntimeError as exc:
                log_tail = (OUT / "litellm.log").read_text()[-400:]
                litellm_note = f"{litellm_note}: the proxy did not start ({exc}): {log_tail}"
    return run_loop(measure(args, small, large, targets, litellm_note))


async def measure(
    args: argparse.Namespace, small: int, large: int, targets: dict[str, Target], note: str
) -> str:
    # warm up every target (imports, connection pools) before anything is measured
    for target in targets.values():
        chat = target.path.endswith("/chat/completions")
        target.body = request_body("chat" if chat else "responses", small)
        await phase(target, 4, 8)
        target.samples.clear()
        target.cpu_s = target.kernel_s = 0.0
        target.requests = 0
    load_before = os.getloadavg()
    started = time.monotonic()
    results = derive(targets, (small, large), MODEL)
    for _ in range(args.rounds):
        for events in (small, large):
            for name in targets:
                count = args.requests
                if name == "litellm" and args.litellm_requests:
                    count = args.litellm_requests
                await phase(results[(name, events)], args.streams, count)
    wall = time.monotonic() - started
    names = [name for name in (*STEADY_TARGETS, "litellm") if name in targets]
    page = render(args, small, large, results, names, note, wall, load_before)
    if args.steady_gap_ms:
        steady_small, steady_large = (int(x) for x in args.steady_events.split(","))
        model = f"{MODEL}@{args.steady_gap_ms:g}ms"
        pair = {name: targets[name] for name in STEADY_TARGETS if name in targets}
        steady = derive(pair, (steady_small, steady_large), model)
        load_before = os.getloadavg()
        started = time.monotonic()
        for _ in range(args.steady_rounds):  # interleaved, so the machine's moods hit all alike
            for events in (steady_small, steady_large):
                stagger = events * args.steady_gap_ms / 1000 / args.streams
                for name in pair:
                    target = steady[(name, events)]
                    await phase(target, args.streams, args.steady_requests, stagger)
        wall = time.monotonic() - started
        page += "\n" + render_steady(args, steady_small, steady_large, steady, wall, load_before)
    return page


def derive(
    targets: dict[str, Target], sizes: tuple[int, int], model: str
) -> dict[tuple[str, int], Target]:
    """A fresh target per (name, answer size), asking for `model`."""
    results: dict[tuple[str, int], Target] = {}
    for events in sizes:
        for name, base in targets.items():
            kind = "chat" if base.path.endswith("/chat/completions") else "responses"
            results[(name, events)] = Target(
                name,
                base.port,
                base.path,
                base.marker,
                base.end,
                request_body(kind, events, model),
                base.pgid,
                expect=events,
            )
    return results


def load_note(before: tuple[float, float, float]) -> str:
    after = os.getloadavg()
    return f"load average {before[0]:.1f} before, {after[0]:.1f} after"


class Figures:
    """The medians and CPU figures of one scenario."""

    def __init__(
        self, results: dict[tuple[str, int], Target], small: int, large: int, steady: bool
    ) -> None:
        self.results, self.small, self.large, self.steady = results, small, large, steady

    def samples(self, name: str, events: int) -> list[Sample]:
        samples = self.results[(name, events)].samples
        return [s for s in samples if not s.ramp] if self.steady else samples

    def ttft(self, name: str, events: int) -> float:
        return median([s.ttft_ms for s in self.samples(name, events)])

    def per_event(self, name: str, events: int) -> float:
        return median([s.per_event_us for s in self.samples(name, events)])

    def cpu_ms(self, name: str, events: int, kernel: bool = False) -> float:
        target = self.results[(name, events)]
        return (target.kernel_s if kernel else target.cpu_s) / max(target.requests, 1) * 1000

    def marginal_us(self, name: str = "bridge", kernel: bool = False) -> float:
        """A target's CPU (or its kernel share) per extra streamed event (large minus small)."""
        extra = self.large - self.small
        large, small = (self.cpu_ms(name, n, kernel) for n in (self.large, self.small))
        return (large - small) / extra * 1e3

    def setup_ms(self) -> float:
        """The bridge's CPU per request less its per-event share: set-up and closing."""
        return self.cpu_ms("bridge", self.small) - self.small * self.marginal_us() / 1e3

    def table(self, names: list[str]) -> list[str]:
        lines = [
            "| target | events/answer | requests | failed | median TTFT ms | "
            "median event delay µs | CPU ms/request |",
            "|---|---|---|---|---|---|---|",
        ]
        for events in (self.small, self.large):
            for name in names:
                target = self.results[(name, events)]
                cpu = f"{self.cpu_ms(name, events):.2f}" if target.pgid else "(upstream only)"
                lines.append(
                    f"| {name} | {events} | {target.requests} | {len(target.failures)} | "
                    f"{self.ttft(name, events):.2f} | "
                    f"{self.per_event(name, events):.1f} | {cpu} |"
                )
        return lines

    def summary(self) -> list[str]:
        small, large = self.small, self.large
        added_ttft = self.ttft("bridge", small) - self.ttft("direct", small)
        added_event = self.per_event("bridge", large) - self.per_event("direct", large)
        marginal = self.marginal_us()
        lines = [
            f"- TTFT added by the bridge (median, {small} events): **{added_ttft:+.3f} ms** "
            f"(goal < 1 ms: {'met' if added_ttft < 1 else 'NOT met'})",
            f"- latency added per streamed event (median, {large} events): "
            f"**{added_event:+.1f} µs**; the bridge's marginal CPU per event: "
            f"**{marginal:.1f} µs**, {self.marginal_us(kernel=True):.1f} µs of it in the "
            f"kernel (goal < 20 µs: {'met' if max(added_event, marginal) < 20 else 'NOT met'})",
            f"- the bridge's CPU per request at {small} events: "
            f"{self.cpu_ms('bridge', small):.2f} ms, of which about "
            f"**{self.setup_ms():.2f} ms** is per request (set-up and closing) rather than "
            "per event",
        ]
        floors = {
            "relay": "the floor, a bare TCP relay on the same loop (no HTTP, no translation)",
            "passthrough": "the bridge passing chat through (its HTTP both ways, no translation)",
            "socat": "the same hop in C, socat (a process per connection, forked as it connects)",
        }
        for name, label in floors.items():
            if (name, small) in self.results:
                ttft = self.ttft(name, small) - self.ttft("direct", small)
                event = self.per_event(name, large) - self.per_event("direct", large)
                lines.append(
                    f"- {label}: **{ttft:+.3f} ms** TTFT, {event:+.1f} µs per event, "
                    f"{self.marginal_us(name):.1f} µs of CPU per event "
                    f"({self.marginal_us(name, kernel=True):.1f} µs in the kernel), "
                    f"{self.cpu_ms(name, small):.2f} ms of CPU per request at {small} events"
                )
        if ("relay", small) in self.results:
            relay = self.marginal_us("relay")
            ratio = marginal / relay if relay > 0 else float("nan")
            lines.append(
                f"- CPU per streamed event, bridge over the bare relay in this run: "
                f"**{ratio:.2f}x** ({marginal:.1f} / {relay:.1f} µs; user time "
                f"{marginal - self.marginal_us(kernel=True):.1f} / "
                f"{relay - self.marginal_us('relay', kernel=True):.1f} µs) "
                f"(goal ≤ 1.5x: {'met' if ratio <= 1.5 else 'NOT met'})"
            )
            if ("passthrough", small) in self.results and relay > 0:
                # what the hop's HTTP costs, and what the translation adds on top of it
                through = self.marginal_us("passthrough")
                lines.append(
                    f"- CPU per streamed event, the bridge's pass-through over the bare relay: "
                    f"**{through / relay:.2f}x** ({through:.1f} µs); the translation's own "
                    f"share of the bridge's: {marginal - through:+.1f} µs"
                )
        for (name, events), target in self.results.items():
            if target.failures:
                reasons = sorted(set(target.failures))
                lines.append(
                    f"- {name}, {events} events: {len(target.failures)} of {target.requests} "
                    f"requests failed ({'; '.join(reasons[:2])[:200]})"
                )
        return lines


def render(
    args: argparse.Namespace,
    small: int,
    large: int,
    results: dict[tuple[str, int], Target],
    names: list[str],
    note: str,
    wall: float,
    load_before: tuple[float, float, float],
) -> str:
    figures = Figures(results, small, large, steady=False)
    summary = figures.summary()
    if "litellm" in names:
        bridge_ms, litellm_ms = figures.cpu_ms("bridge", small), figures.cpu_ms("litellm", small)
        ratio = litellm_ms / max(bridge_ms, 1e-9)
        summary.append(
            f"- CPU per request, {small} events: bridge {bridge_ms:.2f} ms, "
            f"LiteLLM {litellm_ms:.2f} ms: LiteLLM uses **{ratio:.1f}x** the "
            f"bridge's (goal ≥ 5x: {'met' if ratio >= 5 else 'NOT met'})"
        )
    else:
        summary.append(f"- LiteLLM: {note}")
    header = [
        "### Burst: every stream opens at once",
        "",
        f"{args.streams} concurrent streams, {args.rounds} interleaved rounds of "
        f"{args.requests} requests per target ({args.litellm_requests or args.requests} for "
        f"LiteLLM), upstream gap {args.gap_ms:g} ms between chunks; "
        f"{platform.python_implementation()} {platform.python_version()}, "
        f"{os.cpu_count()} CPUs, {note}; {wall:.0f} s, {load_note(load_before)}.",
        "",
    ]
    return "\n".join(header + summary + [""] + figures.table(names)) + "\n"


def render_steady(
    args: argparse.Namespace,
    small: int,
    large: int,
    results: dict[tuple[str, int], Target],
    wall: float,
    load_before: tuple[float, float, float],
) -> str:
    figures = Figures(results, small, large, steady=True)
    kept = len(figures.samples("bridge", small))
    header = [
        "### Steady: streams kept in flight, staggered starts",
        "",
        f"{args.streams} streams in flight, started evenly over one answer's length, each "
        f"asking again as its answer ends; {args.steady_rounds} interleaved rounds of "
        f"{args.steady_requests} requests per target and size, upstream gap "
        f"{args.steady_gap_ms:g} ms between chunks; TTFT over the "
        f"requests sent once all streams had started ({kept} of the bridge's at {small} "
        f"events); {wall:.0f} s, {load_note(load_before)}.",
        "",
    ]
    names = [name for name in STEADY_TARGETS if (name, small) in results]
    lines = header + figures.summary() + [""] + figures.table(names)
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
