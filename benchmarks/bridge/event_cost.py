"""The bridge's own Python per streamed event, with the sockets stubbed out.

    python benchmarks/bridge/event_cost.py [--events 30000] [--profile] [--no-key]

One upstream text chunk as the lean client reads it (a whole HTTP chunk), through the status
sink (`gateway._transport.StatusSink`), the pump (chat decode, Responses encode) and the client
`Response`, to a transport that only counts writes: what the bridge's code costs per event
before any system call. `run.py` measures the same path in situ, where the reads, writes and
wake-ups of this machine come on top. `--profile` adds a cProfile table of the same loop.
The bridge holds an upstream key, as it does in front of a real upstream, so the masking of an
echoed key (`secrets.SentMasker`) is part of the path; `--no-key` leaves it out.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from typing import cast

from notes_cli.bridge import http1
from notes_cli.bridge.pump import Pump
from notes_cli.gateway import _h1
from notes_cli.gateway._transport import StatusSink
from notes_cli.secrets import SentMasker
from notes_cli.wire import chat, responses

KEY = "sk-bench-9f3Kq2LmX7vR4tYp8WzN1cHdQe6"  # what the bridge sends upstream (and masks)
BASE = {"id": "chatcmpl-b", "object": "chat.completion.chunk", "created": 0, "model": "m"}


def framed(delta: dict) -> bytes:
    data = json.dumps({**BASE, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]})
    event = b"data: %s\n\n" % data.encode()
    return b"%x\r\n%s\r\n" % (len(event), event)


class CountingTransport:
    """A transport that takes writes and does nothing (no system call)."""

    def __init__(self) -> None:
        self.writes = 0

    def write(self, data: bytes) -> None:
        self.writes += 1

    def is_closing(self) -> bool:
        return False

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass


async def measure(events: int, profile: bool, key: bool = True) -> None:
    loop = asyncio.get_running_loop()
    client = http1._Connection.__new__(http1._Connection)  # just what `Response` touches
    sent = CountingTransport()
    client.transport, client.lost, client.write_paused = cast(asyncio.Transport, sent), False, False
    response = http1.Response(client, True, False)
    mask = SentMasker([KEY]) if key else None
    pump = Pump(chat.StreamDecoder(), responses.StreamEncoder("resp_x", "m"), response, mask=mask)
    upstream = _h1._Connection(loop)
    upstream.transport = cast(asyncio.Transport, CountingTransport())
    upstream.send(b"request", StatusSink(pump), 300, 300)
    head = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n"
    upstream.data_received(head + b"\r\n" + framed({"role": "assistant", "content": "t"}))
    chunks = [framed({"content": f" t{i}"}) for i in range(100)]
    for i in range(2000):  # warm
        upstream.data_received(chunks[i % 100])
    best = float("inf")
    for _ in range(7):
        started = time.perf_counter()
        for i in range(events):
            upstream.data_received(chunks[i % 100])
        best = min(best, (time.perf_counter() - started) / events)
    writes = sent.writes
    print(f"a lone streamed event, warm: {best * 1e6:.2f} µs (best of 7 × {events}; ", end="")
    print(f"{writes} writes)")
    if profile:
        import cProfile
        import pstats

        profiler = cProfile.Profile()
        profiler.enable()
        for i in range(events):
            upstream.data_received(chunks[i % 100])
        profiler.disable()
        pstats.Stats(profiler).sort_stats("tottime").print_stats(20)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=30000)
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--no-key", action="store_true", help="no upstream key: no masking")
    args = parser.parse_args()
    asyncio.run(measure(args.events, args.profile, key=not args.no_key))


if __name__ == "__main__":
    main()
