"""Running the bridge on uvicorn: on a background thread (`start_bridge`: tests, the demo, the
benchmarks) or in the foreground until SIGINT / SIGTERM (`serve_forever`: the CLI, the service).

The socket is bound here before uvicorn starts, so `port=0` gives a free port known at once.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import socket
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import replace
from types import TracebackType

import uvicorn

from notes_cli.bridge.app import BridgeApp
from notes_cli.bridge.config import BridgeConfig

_STARTUP_TIMEOUT_S = 20.0


def build_app(config: BridgeConfig) -> BridgeApp:
    """The app with its keys read from the environment now (names checked by `resolve`)."""
    upstream_key = os.environ.get(config.upstream_key_env) if config.upstream_key_env else None
    local_key = os.environ.get(config.api_key_env) if config.api_key_env else None
    if config.api_key_env and not local_key:
        raise ValueError(f"--api-key-env names {config.api_key_env}, which is unset or empty")
    return BridgeApp(config, upstream_key=upstream_key, local_key=local_key)


class RunningBridge:
    """A bridge serving on a background thread; `.stop()` or a `with` block ends it."""

    def __init__(
        self, config: BridgeConfig, app: BridgeApp, server: uvicorn.Server, thread: threading.Thread
    ) -> None:
        self.config = config
        self.app = app
        self._server = server
        self._thread = thread

    @property
    def codex_base_url(self) -> str:
        return self.config.codex_base_url

    @property
    def claude_base_url(self) -> str:
        return self.config.claude_base_url

    def stop(self, timeout: float = 10.0) -> None:
        self._server.should_exit = True
        self._thread.join(timeout)
        if self._thread.is_alive():
            self._server.force_exit = True
            self._thread.join(timeout)

    def __enter__(self) -> RunningBridge:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()


def start_bridge(config: BridgeConfig, *, app: BridgeApp | None = None) -> RunningBridge:
    """Serve `config` on a thread; returns once it accepts connections (`config.port` 0 picks
    a free port: the returned bridge's `.config` has the real one)."""
    sock = _bind(config.host, config.port)
    config = replace(config, port=sock.getsockname()[1])
    app = app or build_app(config)
    app.config = config
    server = _Server(_uvicorn_config(app, graceful_s=1))
    thread = threading.Thread(
        target=server.run, kwargs={"sockets": [sock]}, name="pdnotes-bridge", daemon=True
    )
    thread.start()
    deadline = time.monotonic() + _STARTUP_TIMEOUT_S
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            server.should_exit = True
            sock.close()
            raise RuntimeError("the bridge did not start (see the log above)")
        time.sleep(0.01)
    return RunningBridge(config, app, server, thread)


def serve_forever(
    config: BridgeConfig, *, on_ready: Callable[[BridgeConfig], None] | None = None
) -> None:
    """Serve in the foreground until SIGINT / SIGTERM. Raises OSError when the port is taken."""
    app = build_app(config)
    sock = _bind(config.host, config.port)
    config = replace(config, port=sock.getsockname()[1])
    app.config = config
    logging.basicConfig(level=logging.INFO, format="pdnotes bridge: %(message)s")
    ready = (lambda: on_ready(config)) if on_ready else None
    server = _Server(_uvicorn_config(app, graceful_s=5), on_started=ready)
    server.run(sockets=[sock])


def _bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    # Inherited by accepted sockets: an event must not wait for the client's delayed ACK.
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    try:
        sock.bind((host, port))
    except OSError:
        sock.close()
        raise
    sock.set_inheritable(True)
    return sock


def _uvicorn_config(app: BridgeApp, *, graceful_s: int) -> uvicorn.Config:
    import importlib.util

    return uvicorn.Config(
        app,
        log_level="warning",
        access_log=False,
        lifespan="on",
        http="httptools" if importlib.util.find_spec("httptools") else "h11",
        ws="none",
        timeout_graceful_shutdown=graceful_s,
        timeout_keep_alive=30,
        backlog=2048,
    )


class _Server(uvicorn.Server):
    """Ends quietly on SIGINT / SIGTERM (uvicorn would re-raise the signal after shutdown)."""

    def __init__(self, config: uvicorn.Config, on_started: Callable[[], None] | None = None):
        super().__init__(config)
        self._on_started = on_started

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets=sockets)
        if self.started and self._on_started is not None:
            self._on_started()

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        if threading.current_thread() is not threading.main_thread():
            yield
            return
        handled = (signal.SIGINT, signal.SIGTERM)
        originals = {sig: signal.signal(sig, self.handle_exit) for sig in handled}
        try:
            yield
        finally:
            for sig, handler in originals.items():
                signal.signal(sig, handler)
