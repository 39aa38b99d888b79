"""CPU cost of the gateway client's read path per streamed chunk, in-process, per protocol.

    python benchmarks/gateway_client/read_path.py [--chunks 4000] [--repeat 15]
    python benchmarks/gateway_client/read_path.py --protocol chat --chunks 1000 --once
    python benchmarks/gateway_client/read_path.py --lean ...   # through the lean transport

The stream (text deltas, the protocol's closing events) is built with the wire layer's own
`StreamEncoder` and fed in 64 KiB reads to `_Call.feed` / `finish`, the path every read of a
streamed answer takes after the transport: SSE framing, the protocol's `StreamDecoder`, and the
reader's timing and counting. No sockets, so the figure is the parser's, not the network's.
`--once` reads one stream and exits, for an instruction count that a loaded machine cannot
disturb: run it under `valgrind --tool=callgrind` at two `--chunks` sizes and divide the
difference of the totals by the difference of the sizes (docs/benchmarks/gateway.md).
`--lean` feeds the reads to the lean transport instead (`_h1`'s `data_received` on a connection
with a stubbed socket, a close-delimited answer as `run.py`'s server sends), so the count takes
in its HTTP parsing and the status sink too: the whole lean path but the system calls.
"""

from __future__ import annotations

import argparse
import asyncio
import time
from typing import Any, cast


def build(protocol: str, chunks: int) -> bytes:
    from notes_cli.wire import anthropic, chat, responses

    module = {"chat": chat, "responses": responses, "anthropic": anthropic}[protocol]
    encoder = module.StreamEncoder("id-bench", "bench-model", created=0, input_tokens=8)
    parts = [encoder.head()]
    parts += [encoder.text(f" tok{i % 100}") for i in range(chunks)]
    parts.append(encoder.close())
    return b"".join(parts)


class _Quiet:
    """A socket that takes the request and does nothing."""

    def write(self, data: bytes) -> None:
        pass

    def is_closing(self) -> bool:
        return False

    def close(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass


def read_lean(call: Any, pieces: list[bytes]) -> Any:
    """`pieces` as the lean transport's reads of a close-delimited event stream."""
    from notes_cli.gateway import _h1

    async def main() -> Any:
        connection = _h1._Connection(asyncio.get_running_loop())
        connection.transport = cast(asyncio.Transport, _Quiet())
        done = connection.send(b"request", call.sink(events=True), 60.0, 60.0)
        head = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n"
        connection.data_received(head)
        for piece in pieces:
            connection.data_received(piece)
        connection.connection_lost(None)
        await done
        return call.stream_result()

    return asyncio.run(main())


def read_once(protocol: str, body: bytes, chunks: int, lean: bool = False) -> float:
    """Seconds of CPU to read `body` as one streamed answer."""
    from notes_cli.clients.endpoint import Endpoint
    from notes_cli.gateway.client import GatewayClient, _Call

    client_name = {"chat": "openai", "responses": "codex", "anthropic": "claude"}[protocol]
    endpoint = Endpoint(client_name, "http://127.0.0.1:9/v1", protocol, model="m", key="sk-x")  # type: ignore[arg-type]
    client = GatewayClient(endpoint)
    pieces = [body[i : i + 65536] for i in range(0, len(body), 65536)]
    call = _Call(client, "http://127.0.0.1:9/v1/x")
    start = time.process_time()
    if lean:
        result = read_lean(call, pieces)
    else:
        call.headers_arrived(200)
        for piece in pieces:
            if call.feed(piece):
                break
        result = call.finish()
    spent = time.process_time() - start
    assert result.completed and len(result.timings.chunk_ms) == chunks, result
    return spent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chunks", type=int, default=4000)
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--protocol", choices=("chat", "responses", "anthropic"))
    parser.add_argument("--once", action="store_true", help="read one stream (for valgrind)")
    parser.add_argument("--lean", action="store_true", help="read through the lean transport")
    args = parser.parse_args()
    protocols = [args.protocol] if args.protocol else ["chat", "responses", "anthropic"]
    for protocol in protocols:
        body = build(protocol, args.chunks)
        if args.once:
            read_once(protocol, body, args.chunks, args.lean)
            continue
        runs = (read_once(protocol, body, args.chunks, args.lean) for _ in range(args.repeat))
        best = min(runs)
        print(f"{protocol:10s} {best / args.chunks * 1e6:6.3f} µs CPU per chunk")


if __name__ == "__main__":
    main()
