"""The suite's asyncio test servers close every connection they still hold when they stop.

A handler still running when its server's loop closed (a dripping answer whose client had hung
up a moment before) left its socket open; garbage-collected later, inside whichever test the
same worker ran next, its ResourceWarning failed that unrelated test (one quiet full run,
2026-12-07). A stopped server must leave nothing behind."""

from __future__ import annotations

import asyncio
import socket
import threading
import time

from bridge_support import asyncio_upstream
from hostile_gateway import HostileGateway


def _held_connection(port: int, path: str) -> socket.socket:
    held = socket.create_connection(("127.0.0.1", port), timeout=10)
    held.sendall(f"GET {path} HTTP/1.1\r\nhost: x\r\nauthorization: Bearer k\r\n\r\n".encode())
    return held


def _server_hung_up(held: socket.socket) -> bool:
    """True when the server closed its side: the client reads end-of-stream (a socket the
    server left open would block until the 10 s timeout instead)."""
    try:
        return held.recv(1) == b""
    except ConnectionResetError:
        return True
    except TimeoutError:
        return False
    finally:
        held.close()


def test_asyncio_upstream_closes_a_connection_its_handler_still_holds() -> None:
    holding = threading.Event()

    async def holds_forever(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        holding.set()
        await asyncio.Event().wait()  # never answers, never hangs up

    with asyncio_upstream(holds_forever) as url:
        held = _held_connection(int(url.rsplit(":", 1)[1]), "/v1/models")
        assert holding.wait(10)

    assert _server_hung_up(held)


def test_the_hostile_gateway_closes_a_connection_it_never_answered() -> None:
    with HostileGateway() as gateway:
        held = _held_connection(gateway.port, "/no-answer/v1/models")
        deadline = time.monotonic() + 10  # a bound on the wait, not a speed check
        while not gateway.seen_keys and time.monotonic() < deadline:
            time.sleep(0.02)
        assert gateway.seen_keys == ["k"]  # its handler holds the connection now

    assert _server_hung_up(held)


def test_a_server_stops_even_when_its_client_never_reads_what_was_sent() -> None:
    """Closing a connection whose send buffer a client never drains waits on the client: it
    must end within a bound (the connection is aborted), or the server's loop never stops."""
    filled = threading.Event()

    async def floods(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        writer.write(b"x" * (32 * 1024 * 1024))  # far more than both socket buffers hold
        filled.set()
        await asyncio.Event().wait()

    with asyncio_upstream(floods) as url:
        held = _held_connection(int(url.rsplit(":", 1)[1]), "/v1/models")
        assert filled.wait(10)
    held.close()  # reached only if the server's loop stopped and closed (else close() raised)
