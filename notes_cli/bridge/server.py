"""Running the bridge on uvicorn: on a background thread (`start_bridge`: tests, the demo, the
benchmarks) or in the foreground until SIGINT / SIGTERM (`serve_forever`: the CLI, the service).

The socket is bound here before uvicorn starts, so `port=0` gives a free port known at once.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable
from dataclasses import replace

import uvicorn

from notes_cli.bridge.app import BridgeApp
from notes_cli.bridge.config import BridgeConfig

# One way of serving for the engine and the bridge: bind first (port 0 known at once, nodelay),
# quiet SIGTERM, httptools. The engine's server module owns it.
from notes_cli.engine.http.server import Server, ServerThread, bind_socket, uvicorn_config

HEADER_TIMEOUT_S = 30.0  # a client that sends no complete request head in this long is cut


def build_app(config: BridgeConfig) -> BridgeApp:
    """The app with its keys read from the environment now (names checked by `resolve`)."""
    upstream_key = os.environ.get(config.upstream_key_env) if config.upstream_key_env else None
    local_key = os.environ.get(config.api_key_env) if config.api_key_env else None
    if config.api_key_env and not local_key:
        raise ValueError(f"--api-key-env names {config.api_key_env}, which is unset or empty")
    return BridgeApp(config, upstream_key=upstream_key, local_key=local_key)


class RunningBridge(ServerThread):
    """A bridge serving on a background thread; `.stop()` or a `with` block ends it."""

    def __init__(
        self, config: BridgeConfig, app: BridgeApp, server: uvicorn.Server, thread: threading.Thread
    ) -> None:
        super().__init__(server, thread)
        self.config = config
        self.app = app

    @property
    def codex_base_url(self) -> str:
        return self.config.codex_base_url

    @property
    def claude_base_url(self) -> str:
        return self.config.claude_base_url


def start_bridge(config: BridgeConfig, *, app: BridgeApp | None = None) -> RunningBridge:
    """Serve `config` on a thread; returns once it accepts connections (`config.port` 0 picks
    a free port: the returned bridge's `.config` has the real one)."""
    sock = bind_socket(config.host, config.port)
    config = replace(config, port=sock.getsockname()[1])
    app = app or build_app(config)
    app.config = config
    server = Server(_uvicorn_config(app, graceful_s=1))
    thread = server.start_thread(sock, "bridge")
    return RunningBridge(config, app, server, thread)


def serve_forever(
    config: BridgeConfig, *, on_ready: Callable[[BridgeConfig], None] | None = None
) -> None:
    """Serve in the foreground until SIGINT / SIGTERM. Raises OSError when the port is taken."""
    app = build_app(config)
    sock = bind_socket(config.host, config.port)
    config = replace(config, port=sock.getsockname()[1])
    app.config = config
    logging.basicConfig(level=logging.INFO, format="pdnotes bridge: %(message)s")
    ready = (lambda: on_ready(config)) if on_ready else None
    server = Server(_uvicorn_config(app, graceful_s=5), on_started=ready)
    server.run(sockets=[sock])


def _uvicorn_config(app: BridgeApp, *, graceful_s: int) -> uvicorn.Config:
    # uvloop where installed (a dependency off Windows): its C transports and loop cut the
    # bridge's CPU per streamed request by 15-25% and, with 64 streams opening at once, the
    # median added first-token time by a half to two thirds (benchmarks/bridge). The engine
    # keeps its precise loop for its timers; the bridge has no timers to keep.
    return uvicorn_config(
        app, graceful_s=graceful_s, header_timeout_s=HEADER_TIMEOUT_S, loop="auto"
    )
