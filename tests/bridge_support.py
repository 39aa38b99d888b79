"""Bridges for tests: a real bridge server on a free loopback port in front of an upstream
(the engine, a scripted loopback server, or an asyncio server that records what it saw)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Awaitable, Callable, Iterator
from typing import Any

import httpx
from loopback import close_connections, close_writer, sse_event

from notes_cli.bridge.app import BridgeApp
from notes_cli.bridge.config import BridgeConfig, Fallback
from notes_cli.bridge.fallback import Upstreams
from notes_cli.bridge.server import RunningBridge, start_bridge
from notes_cli.gateway.relay import Upstream

UPSTREAM_KEY = "sk-upstream-SENTINEL-0123456789abcdef"


@contextlib.contextmanager
def bridge_to(
    upstream_url: str,
    *,
    key: str | None = UPSTREAM_KEY,
    local_key: str | None = None,
    idle_timeout: float = 10.0,
    model_map: dict[str, str] | None = None,
    store_capacity: int = 256,
    httpx_path: bool = False,
    max_connections: int = 512,
    slot_timeout: float = 30.0,
    **bounds: float,
) -> Iterator[RunningBridge]:
    """`httpx_path`: relay through httpx, as for an upstream behind a proxy, instead of the
    lean HTTP/1.1 client. `max_connections` / `slot_timeout`: the upstream's connection
    slots and how long a request waits for one."""
    config = BridgeConfig(upstream=upstream_url, port=0, model_map=model_map or {})
    # (an injected transport keeps its own limits: the relay's apply to the clients it makes)
    limits = httpx.Limits(max_connections=max_connections)
    transport = httpx.AsyncHTTPTransport(limits=limits) if httpx_path else None
    upstream = Upstream(
        upstream_url,
        key,
        idle_timeout=idle_timeout,
        headers_timeout=10.0,
        transport=transport,
        max_connections=max_connections,
        slot_timeout=slot_timeout,
    )
    app = BridgeApp(
        config,
        upstream_key=key,
        local_key=local_key,
        upstream=upstream,
        store_capacity=store_capacity,
    )
    running = start_bridge(config, app=app, **bounds)
    try:
        yield running
    finally:
        running.stop()


class Clock:
    """A clock a test moves by hand (the fallbacks' cool-down reads it)."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@contextlib.contextmanager
def bridge_over(
    upstreams: list[tuple[str, str | None]],
    *,
    clock: Callable[[], float] | None = None,
    local_key: str | None = None,
    model_map: dict[str, str] | None = None,
    idle_timeout: float = 10.0,
    max_connections: int = 512,
    slot_timeout: float = 30.0,
) -> Iterator[RunningBridge]:
    """A real bridge over several upstreams in order, (URL, key) each: the first, then its
    fallbacks; each with `max_connections` slots, waited for `slot_timeout` at most."""
    (first, first_key), *rest = upstreams
    fallbacks = tuple(Fallback(url) for url, _ in rest)
    config = BridgeConfig(upstream=first, port=0, model_map=model_map or {}, fallbacks=fallbacks)
    each = [
        Upstream(
            url,
            key,
            idle_timeout=idle_timeout,
            headers_timeout=10.0,
            connect_timeout=5.0,
            max_connections=max_connections,
            slot_timeout=slot_timeout,
        )
        for url, key in upstreams
    ]
    app = BridgeApp(
        config,
        upstream_key=first_key,
        local_key=local_key,
        fallback_keys=[key for _, key in rest],
        upstreams=Upstreams(
            each, clock=clock or Clock(), keys=[key for _, key in upstreams if key]
        ),
    )
    running = start_bridge(config, app=app)
    try:
        yield running
    finally:
        running.stop()


def free_port() -> int:
    """A loopback port nothing listens on now (for `--bridge-port`, which takes no 0, and for
    an upstream that is down)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextlib.contextmanager
def bridge_serve(*args: str, startup_s: float = 30.0) -> Iterator[list[str]]:
    """`pdnotes bridge serve ARGS` as a user runs it: a subprocess in its own session, reading
    the record `pdnotes config … --bridge` wrote ($PDNOTES_HOME of the test), until its banner's
    last line; yields the lines it printed so far (and keeps collecting them). Stopped with
    SIGTERM, then SIGKILL to the group if it lingers."""
    env = {k: v for k, v in os.environ.items() if not k.lower().endswith("_proxy")}
    process = subprocess.Popen(
        [sys.executable, "-m", "notes_cli", "bridge", "serve", *args],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
        env={**env, "NO_COLOR": "1"},
    )
    lines: list[str] = []
    ready = threading.Event()

    def read() -> None:
        assert process.stdout is not None
        for line in process.stdout:
            lines.append(line)
            if "Ctrl-C" in line:
                ready.set()
        ready.set()  # EOF: it died

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        ready.wait(startup_s)
        if process.poll() is not None or not any("Ctrl-C" in line for line in lines):
            raise RuntimeError("bridge serve did not start:\n" + "".join(lines))
        yield lines
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(15)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait(15)
        deadline = time.monotonic() + 5
        while reader.is_alive() and time.monotonic() < deadline:
            reader.join(0.1)
        if process.stdout is not None:
            process.stdout.close()


Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


@contextlib.contextmanager
def asyncio_upstream(handle: Handler, lifetime_s: float = 30.0) -> Iterator[str]:
    """An asyncio server on a free loopback port running `handle` for each connection, on a
    thread, for at most `lifetime_s`; yields its base URL. Asyncio rather than the threaded
    LoopbackServer when a test must see exactly what the socket does (a full buffer that
    blocks the writer, the bridge hanging up)."""
    loop = asyncio.new_event_loop()
    ready, stop = threading.Event(), asyncio.Event()
    port: list[int] = []

    async def serve() -> None:
        server = await asyncio.start_server(each_connection, "127.0.0.1", 0)
        port.append(server.sockets[0].getsockname()[1])
        ready.set()
        async with server:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), lifetime_s)
        await close_connections(connections)

    connections: set[asyncio.Task[Any]] = set()

    async def each_connection(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        connections.add(task)
        try:
            await handle(reader, writer)
        finally:
            await close_writer(writer)

    thread = threading.Thread(target=loop.run_until_complete, args=(serve(),), daemon=True)
    thread.start()
    ready.wait(5)
    try:
        yield f"http://127.0.0.1:{port[0]}"
    finally:
        loop.call_soon_threadsafe(stop.set)
        thread.join(5)
        loop.close()


async def read_request(reader: asyncio.StreamReader) -> bytes:
    """One request's head and body (by its Content-Length), as an asyncio upstream reads it."""
    head = await reader.readuntil(b"\r\n\r\n")
    length = int(head.lower().split(b"content-length:")[1].split(b"\r\n")[0])
    return head + await reader.readexactly(length)


def chunk(delta: dict[str, Any], finish: str | None = None, **extra: Any) -> bytes:
    base = {"id": "c1", "object": "chat.completion.chunk", "model": "up-model"}
    choice = {"index": 0, "delta": delta, "finish_reason": finish}
    return sse_event({**base, "choices": [choice], **extra})


def usage_chunk(prompt: int = 7, completion: int = 3) -> bytes:
    usage = {"prompt_tokens": prompt, "completion_tokens": completion}
    usage["total_tokens"] = prompt + completion
    base = {"id": "c1", "object": "chat.completion.chunk", "model": "up-model"}
    return sse_event({**base, "choices": [], "usage": usage})


def tool_call_stream(calls: list[tuple[str, str, str]], *, pieces: int = 3) -> list[bytes]:
    """Parallel tool calls (call_id, name, arguments JSON), arguments split into `pieces`
    deltas each and interleaved between the calls, as real upstreams stream them."""
    events = [chunk({"role": "assistant", "content": None})]
    for index, (call_id, name, _) in enumerate(calls):
        first = {"index": index, "id": call_id, "type": "function"}
        first["function"] = {"name": name, "arguments": ""}
        events.append(chunk({"tool_calls": [first]}))
    size = max(len(a) for _, _, a in calls) // pieces + 1
    for start in range(0, size * pieces, size):
        for index, (_, _, arguments) in enumerate(calls):
            piece = arguments[start : start + size]
            if piece:
                delta = {"index": index, "function": {"arguments": piece}}
                events.append(chunk({"tool_calls": [delta]}))
    events.append(chunk({}, "tool_calls"))
    events.append(usage_chunk())
    events.append(b"data: [DONE]\n\n")
    return events


def sse_payloads(body: bytes) -> list[dict[str, Any]]:
    """The JSON payloads of an SSE body (skipping `[DONE]`)."""
    out = []
    for block in body.decode().split("\n\n"):
        for line in block.splitlines():
            if line.startswith("data:") and line[5:].strip() != "[DONE]":
                out.append(json.loads(line[5:].strip()))
    return out
