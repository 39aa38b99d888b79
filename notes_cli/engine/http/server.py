"""Running the engine app on uvicorn: in a background thread (`start_engine`, for tests, the demo
and the bench) or in the foreground until SIGINT / SIGTERM (`serve_forever`, for the CLI).

The listening socket is bound here, before uvicorn starts, so `port=0` yields a free port that
is known at once and never raced for.
"""

from __future__ import annotations

import contextlib
import signal
import socket
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from types import TracebackType
from typing import TYPE_CHECKING, Any, Self

import uvicorn

from notes_cli.engine.http.app import DEFAULT_FINGERPRINT, Limits, create_app
from notes_cli.engine.http.dialects import PROTOCOLS
from notes_cli.engine.http.faults import FaultSpec, parse_fault
from notes_cli.engine.http.header_deadline import with_header_deadline
from notes_cli.trace.record import TraceRecorder

if TYPE_CHECKING:
    from notes_cli.engine.core.api import EngineService
    from notes_cli.engine.core.config import EngineConfig

_STARTUP_TIMEOUT_S = 20.0


@dataclass(frozen=True)
class EngineAddress:
    """Where a started engine listens, and the base URLs each client wants."""

    host: str
    port: int
    prefix: str

    @property
    def root_url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    @property
    def base_url(self) -> str:
        """OpenAI-style base (Codex `base_url`, the openai SDK): `http://127.0.0.1:PORT/api`."""
        return self.root_url + self.prefix

    @property
    def anthropic_base_url(self) -> str:
        """Claude Code's `ANTHROPIC_BASE_URL`: `…/api/anthropic`."""
        return self.base_url + "/anthropic"

    @property
    def gemini_base_url(self) -> str:
        """Gemini CLI's `GOOGLE_GEMINI_BASE_URL` (the SDK adds `/v1beta`): `…/api/gemini`."""
        return self.base_url + "/gemini"

    def url(self, path: str) -> str:
        """An absolute URL for a server path such as `/metrics` or `/api/models`."""
        return self.root_url + "/" + path.lstrip("/")


class BackgroundServer:
    """A server on a background thread (the engine's, the bridge's): leaving a `with` block
    stops it."""

    def stop(self, timeout: float = 10.0) -> None:
        raise NotImplementedError

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()


class ServerThread(BackgroundServer):
    """A uvicorn server running on a background thread (the engine's); stop it
    with `.stop()` or a `with` block."""

    def __init__(self, server: uvicorn.Server, thread: threading.Thread) -> None:
        self._server = server
        self._thread = thread

    def stop(self, timeout: float = 10.0) -> None:
        """Shut down (open streams are cancelled after a short grace) and join the thread."""
        self._server.should_exit = True
        self._thread.join(timeout)
        if self._thread.is_alive():
            self._server.force_exit = True
            self._thread.join(timeout)


class RunningEngine(ServerThread):
    """An engine serving on a background thread; stop it with `.stop()` or a `with` block."""

    def __init__(self, address: EngineAddress, server: uvicorn.Server, thread: threading.Thread):
        super().__init__(server, thread)
        self.address = address

    @property
    def host(self) -> str:
        return self.address.host

    @property
    def port(self) -> int:
        return self.address.port

    @property
    def base_url(self) -> str:
        return self.address.base_url

    @property
    def anthropic_base_url(self) -> str:
        return self.address.anthropic_base_url

    @property
    def gemini_base_url(self) -> str:
        return self.address.gemini_base_url

    def url(self, path: str) -> str:
        return self.address.url(path)


def start_engine(
    config: EngineConfig,
    *,
    host: str = "127.0.0.1",
    port: int = 0,
    prefix: str = "/api",
    api_key_env: str | None = None,
    faults: Iterable[FaultSpec | str] = (),
    limits: Limits | None = None,
    service: EngineService | None = None,
    protocols: Iterable[str] = PROTOCOLS,
    recorder: TraceRecorder | None = None,
) -> RunningEngine:
    """Start the engine for `config` on a background thread and return once it accepts
    connections. `port=0` picks a free port (see `.port` / `.base_url`). `service` replaces
    the engine core built from `config` (tests use fakes). Raises ValueError for a bad fault
    spec or an unset `api_key_env`, OSError when the port is taken. `protocols` limits the
    APIs served (the others' routes 404); `recorder` gets a trace row per answered request."""
    limits = limits or Limits()
    app = _build_app(config, prefix, api_key_env, faults, limits, service, protocols, recorder)
    sock = bind_socket(host, port)
    server = Server(uvicorn_config(app, graceful_s=1, header_timeout_s=limits.header_timeout_s))
    thread = server.start_thread(sock, "engine")
    address = EngineAddress(host, sock.getsockname()[1], _prefix(prefix))
    return RunningEngine(address, server, thread)


def serve_forever(
    config: EngineConfig,
    *,
    host: str = "127.0.0.1",
    port: int = 8000,
    prefix: str = "/api",
    api_key_env: str | None = None,
    faults: Iterable[FaultSpec | str] = (),
    limits: Limits | None = None,
    on_ready: Callable[[EngineAddress], None] | None = None,
    service: EngineService | None = None,
    protocols: Iterable[str] = PROTOCOLS,
    recorder: TraceRecorder | None = None,
) -> None:
    """Serve in the foreground until SIGINT or SIGTERM, then shut down cleanly: requests in
    flight get a few seconds to finish (a second Ctrl-C forces it). `on_ready` gets the
    address once the socket is listening; `service` replaces the core built from `config`."""
    limits = limits or Limits()
    app = _build_app(config, prefix, api_key_env, faults, limits, service, protocols, recorder)
    sock = bind_socket(host, port)
    address = EngineAddress(host, sock.getsockname()[1], _prefix(prefix))
    settings = uvicorn_config(app, graceful_s=5, header_timeout_s=limits.header_timeout_s)
    server = Server(settings, on_started=lambda: _ready(on_ready, address))
    server.run(sockets=[sock])


def _ready(callback: Callable[[EngineAddress], None] | None, address: EngineAddress) -> None:
    if callback is not None:
        callback(address)


def _build_app(
    config: EngineConfig,
    prefix: str,
    api_key_env: str | None,
    faults: Iterable[FaultSpec | str],
    limits: Limits | None,
    service: EngineService | None,
    protocols: Iterable[str] = PROTOCOLS,
    recorder: TraceRecorder | None = None,
) -> Any:
    specs = tuple(parse_fault(f) if isinstance(f, str) else f for f in faults)
    if service is None:
        from notes_cli.engine.live.service import create_service

        service = create_service(config)
    return create_app(
        service,
        prefix=prefix,
        api_key_env=api_key_env,
        faults=specs,
        limits=limits,
        speed=float(getattr(config, "speed", 1.0)),
        fingerprint=_fingerprint(),
        protocols=tuple(protocols),
        recorder=recorder,
    )


def _fingerprint() -> str:
    try:
        from notes_cli.engine.core.config import SYSTEM_FINGERPRINT
    except ImportError:  # the core has not landed in this checkout
        return DEFAULT_FINGERPRINT
    return str(SYSTEM_FINGERPRINT)


def _prefix(prefix: str) -> str:
    prefix = "/" + prefix.strip("/")
    return "" if prefix == "/" else prefix


def bind_socket(host: str, port: int) -> socket.socket:
    """A listening-ready TCP socket on (host, port), bound before uvicorn starts so that port 0
    gives a free port known at once (shared by the engine's and the bridge's servers)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    # Accepted sockets inherit this: without it a token chunk waits for the client's delayed
    # ACK (~40 ms on Linux) whenever the previous write is still unacknowledged.
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    try:
        sock.bind((host, port))
    except OSError:
        sock.close()
        raise
    sock.set_inheritable(True)
    return sock


def http_protocol() -> str:
    """httptools (a C parser that writes chunks without h11's state machine: ~0.15 ms less per
    streamed request, and less CPU per token) where it is installed; h11 otherwise."""
    import importlib.util

    return "httptools" if importlib.util.find_spec("httptools") else "h11"


ENGINE_LOOP = "notes_cli.engine.live.precise_loop:new_event_loop"  # its precise timers


def uvicorn_config(app: Any, *, graceful_s: int, header_timeout_s: float) -> uvicorn.Config:
    """The engine's uvicorn settings: quiet logs, its precise loop, httptools with a deadline
    on reading request heads, no websockets."""
    return uvicorn.Config(
        app,
        log_level="warning",
        access_log=False,
        lifespan="on",
        loop=ENGINE_LOOP,
        http=with_header_deadline(http_protocol(), header_timeout_s),
        ws="none",
        timeout_graceful_shutdown=graceful_s,
        timeout_keep_alive=30,
        backlog=2048,
    )


class Server(uvicorn.Server):
    """The engine's uvicorn.Server: ends quietly on SIGTERM / SIGINT (uvicorn
    re-raises the signal after shutting down, which would turn a clean stop into exit status
    143 / a KeyboardInterrupt); `on_started` runs once the sockets listen."""

    def __init__(self, config: uvicorn.Config, on_started: Callable[[], None] | None = None):
        super().__init__(config)
        self._on_started = on_started

    def start_thread(self, sock: socket.socket, what: str) -> threading.Thread:
        """Serve `sock` on a daemon thread named pdnotes-`what`; return once it accepts
        connections, or raise RuntimeError (socket closed) if it dies or takes over 20 s."""
        thread = threading.Thread(
            target=self.run, kwargs={"sockets": [sock]}, name=f"pdnotes-{what}", daemon=True
        )
        thread.start()
        deadline = time.monotonic() + _STARTUP_TIMEOUT_S
        while not self.started:
            if not thread.is_alive() or time.monotonic() > deadline:
                self.should_exit = True
                sock.close()
                raise RuntimeError(f"the {what} did not start (see the log above)")
            time.sleep(0.01)
        return thread

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
