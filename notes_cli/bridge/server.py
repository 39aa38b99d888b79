"""Running the bridge's server (`bridge.http1`): on a background thread (`start_bridge`: tests,
the demo, the benchmarks) or in the foreground until SIGINT / SIGTERM (`serve_forever`: the
CLI, the service).

The socket is bound here before the server starts, so `port=0` gives a free port known at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import threading
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from notes_cli.bridge.app import LOG_CHARS, MAX_BODY_BYTES, BridgeApp
from notes_cli.bridge.config import BridgeConfig
from notes_cli.bridge.http1 import HttpServer

# One way of binding for the engine and the bridge (port 0 known at once, TCP_NODELAY).
from notes_cli.engine.http.server import BackgroundServer, bind_socket
from notes_cli.render.log import stderr_handler

REQUEST_TIMEOUT_S = 30.0  # a client that sends no complete request (head, body) in this long is cut
KEEPALIVE_S = 30.0  # an idle keep-alive connection is closed after this long
_STARTUP_TIMEOUT_S = 20.0


def build_app(config: BridgeConfig) -> BridgeApp:
    """The app with its keys read from the environment now (names checked by `resolve`)."""
    names = [u.upstream_key_env for u in config.upstreams]
    keys = [os.environ.get(name) if name else None for name in names]
    local_key = os.environ.get(config.api_key_env) if config.api_key_env else None
    if config.api_key_env and not local_key:
        raise ValueError(f"--api-key-env names {config.api_key_env}, which is unset or empty")
    return BridgeApp(config, upstream_key=keys[0], local_key=local_key, fallback_keys=keys[1:])


def _server(app: BridgeApp, graceful_s: float, **bounds: Any) -> HttpServer:
    settings = {"request_timeout_s": REQUEST_TIMEOUT_S, "keepalive_s": KEEPALIVE_S}
    settings["max_body"] = MAX_BODY_BYTES
    return HttpServer(app.handle, graceful_s=graceful_s, **{**settings, **bounds})


def _new_loop() -> asyncio.AbstractEventLoop:
    # uvloop where installed (a dependency off Windows): its C transports and loop cut the
    # bridge's CPU per streamed request by 15-25% and, with 64 streams opening at once, the
    # median added first-token time by a half to two thirds (benchmarks/bridge). The engine
    # keeps its precise loop for its timers; the bridge's timers (deadlines) need no precision.
    try:
        import uvloop
    except ImportError:
        return asyncio.new_event_loop()
    return uvloop.new_event_loop()


async def _run(app: BridgeApp, server: HttpServer, sock: Any, on_ready: Callable[[], None]) -> None:
    try:
        await server.serve(sock, on_ready)
    finally:
        await app.aclose()


class RunningBridge(BackgroundServer):
    """A bridge serving on a background thread; `.stop()` or a `with` block ends it."""

    def __init__(
        self, config: BridgeConfig, app: BridgeApp, graceful_s: float = 1.0, **bounds: Any
    ) -> None:
        self.config = config
        self.app = app
        self._server = _server(app, graceful_s, **bounds)
        self._loop = _new_loop()
        self._thread: threading.Thread | None = None

    def start(self, sock: Any) -> None:
        """Serve on `sock` (already bound) from a background thread; returns once it accepts
        connections, or raises RuntimeError with why it could not start."""
        ready = threading.Event()
        failed: list[BaseException] = []

        def main() -> None:
            asyncio.set_event_loop(self._loop)
            try:
                self._loop.run_until_complete(_run(self.app, self._server, sock, ready.set))
            except BaseException as exc:  # shown by start_bridge's caller
                failed.append(exc)
                ready.set()
            finally:
                self._loop.close()

        self._thread = threading.Thread(target=main, name="pdnotes-bridge", daemon=True)
        self._thread.start()
        if not ready.wait(_STARTUP_TIMEOUT_S) or failed:
            sock.close()
            raise RuntimeError(f"the bridge did not start: {failed[0] if failed else 'timeout'}")

    @property
    def v1_base_url(self) -> str:
        return self.config.v1_base_url

    @property
    def anthropic_base_url(self) -> str:
        return self.config.anthropic_base_url

    def stop(self, timeout: float = 10.0) -> None:
        """Stop accepting, give open streams a short grace, and join the thread."""
        if self._thread is None or not self._thread.is_alive():
            return
        with contextlib.suppress(RuntimeError):  # the loop has just closed
            self._loop.call_soon_threadsafe(self._server.stop)
        self._thread.join(timeout)


def start_bridge(
    config: BridgeConfig, *, app: BridgeApp | None = None, **bounds: Any
) -> RunningBridge:
    """Serve `config` on a thread; returns once it accepts connections (`config.port` 0 picks
    a free port: the returned bridge's `.config` has the real one). `bounds` override the
    server's `request_timeout_s`, `keepalive_s` and `max_body` (tests)."""
    sock = bind_socket(config.host, config.port)
    config = replace(config, port=sock.getsockname()[1])
    app = app or build_app(config)
    app.config = config
    running = RunningBridge(config, app, **bounds)
    running.start(sock)
    return running


def serve_forever(
    config: BridgeConfig,
    *,
    on_ready: Callable[[BridgeConfig], None] | None = None,
    record: Path | None = None,
) -> None:
    """Serve in the foreground until SIGINT / SIGTERM (in-flight answers get 5 s; a second
    signal cuts them). Raises OSError when the port is taken. With `record`, each turn's
    trace row goes to that new file (notes_cli.trace.record)."""
    app = build_app(config)
    if record is not None:
        from notes_cli.trace.record import TraceRecorder

        app.recorder = TraceRecorder.create(record)
    sock = bind_socket(config.host, config.port)
    config = replace(config, port=sock.getsockname()[1])
    app.config = config
    _log_to_stderr(app)
    server = _server(app, graceful_s=5)
    loop = _new_loop()

    def on_signal() -> None:
        if server.stopping:  # the second one: no more grace
            server.graceful_s = 0
        server.stop()

    def ready() -> None:
        if threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGINT, signal.SIGTERM):
                loop.add_signal_handler(sig, on_signal)
        if on_ready is not None:
            on_ready(config)

    try:
        loop.run_until_complete(_run(app, server, sock, ready))
    finally:
        loop.close()
        if app.recorder is not None:
            app.recorder.close()


def log_handler(app: BridgeApp) -> logging.Handler:
    """The bridge's log lines: cut to LOG_CHARS, then keys masked, then made visible."""
    return stderr_handler("pdnotes bridge", lambda text: app.scrub(text, LOG_CHARS))


def _log_to_stderr(app: BridgeApp) -> None:
    """The bridge's own lines on stderr, scrubbed. Only pdnotes' loggers: the root logger at
    INFO turned on httpx's request log, which prints an upstream's status line as it came
    (with a key the upstream echoed in its reason phrase)."""
    handler = log_handler(app)
    logger = logging.getLogger("pdnotes")
    logger.setLevel(logging.INFO)
    logger.handlers = [handler]
    logger.propagate = False
