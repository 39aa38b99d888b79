"""llama.cpp's server with Gemma 3 270M, as installed by scripts/real_engine.sh, started on a
free 127.0.0.1 port for the tests marked `real_engine`: its own session, bounded start, stopped
with SIGTERM and then SIGKILL to the group.

The server is PyPI's xllamacpp wheel through scripts/xllamacpp_server.py (which takes
llama-server's flags), or a llama-server built from source (PDNOTES_REAL_ENGINE=source).
PDNOTES_REAL_ENGINE_SERVER and PDNOTES_REAL_ENGINE_MODEL, when set (`real_engine.sh --env`),
name the two; otherwise `real_engine.sh --paths` does."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
CHAT_TEMPLATE = ROOT / "tests" / "fixtures" / "real_engine" / "gemma-chat-template.jinja"
STARTUP_TIMEOUT_S = 120.0
MODEL_ID = "gemma-3-270m"


def _installed_paths() -> tuple[Path, Path]:
    """(server, model.gguf) where scripts/real_engine.sh puts them (nothing is installed)."""
    server, model = (
        os.environ.get("PDNOTES_REAL_ENGINE_SERVER"),
        os.environ.get("PDNOTES_REAL_ENGINE_MODEL"),
    )
    if server and model:
        return Path(server), Path(model)
    out = subprocess.run(
        ["bash", str(ROOT / "scripts" / "real_engine.sh"), "--paths"],
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    ).stdout.split("\n")
    return Path(out[0]), Path(out[1])


# Read at import, before the tests' isolated HOME replaces the one the cache is under.
SERVER, MODEL = _installed_paths()
ON_XLLAMACPP = SERVER.suffix == ".py"  # the launcher, run by this interpreter


def _server_command() -> list[str]:
    return [sys.executable, str(SERVER)] if ON_XLLAMACPP else [str(SERVER)]


def missing() -> str | None:
    """Why the real engine cannot run here, or None."""
    if ON_XLLAMACPP:
        import importlib.util

        ready = importlib.util.find_spec("xllamacpp") is not None
    else:
        ready = os.access(SERVER, os.X_OK)
    if not ready or not MODEL.is_file():
        engine = "xllamacpp" if ON_XLLAMACPP else f"llama-server ({SERVER})"
        return (
            f"{engine} or the model ({MODEL}) is not installed: run "
            "`bash scripts/real_engine.sh` (about a minute; PDNOTES_REAL_ENGINE=source builds "
            "llama-server instead, about an hour on 2 cores)"
        )
    return None


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class LlamaServer:
    """`with LlamaServer() as server: server.base_url` (the OpenAI root, …/v1)."""

    def __init__(self, *, parallel: int = 1) -> None:
        """`parallel`: llama-server's slots (-np), the requests it decodes in one batch; each
        slot gets 4096 tokens of context."""
        self.parallel = parallel
        self.port = _free_port()
        self.base_url = f"http://127.0.0.1:{self.port}/v1"
        self._log = tempfile.TemporaryFile()  # noqa: SIM115 - closed in stop()
        self._process: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> LlamaServer:
        args = [
            *_server_command(),
            *("-m", str(MODEL), "--alias", MODEL_ID),
            *("--host", "127.0.0.1", "--port", str(self.port)),
            # One thread is faster than two on the 2-core machines this runs on; one slot keeps
            # the prompt cache deterministic (each request follows the last in that slot).
            *("-t", "1", "-tb", "1", "--parallel", str(self.parallel)),
            *("-c", str(4096 * self.parallel)),
            "--no-repack",  # the CPU repack path (AMX) of a native build crashes on these VMs
            # Gemma 3 has sliding-window layers: without a full-size SWA cache llama.cpp cannot
            # cut the cache back to a shared prefix and re-processes the whole prompt.
            "--swa-full",
            *("--chat-template-file", str(CHAT_TEMPLATE)),  # the GGUF carries none
            *("--metrics", "--no-webui"),
            # the same sampling on every run (default: a random seed), so what a model writes
            # on a machine does not change between runs; tests still accept any answer
            *("--seed", "7"),
        ]
        self._process = subprocess.Popen(
            args,
            stdin=subprocess.DEVNULL,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        deadline = time.monotonic() + STARTUP_TIMEOUT_S
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                break
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(self.url("/health"), timeout=2.0).status_code == 200:
                    return self
            time.sleep(0.2)
        log = self.log()
        self.stop()
        raise RuntimeError(f"{SERVER.name} did not become healthy:\n{log[-4000:]}")

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}/{path.lstrip('/')}"

    def log(self) -> str:
        self._log.seek(0)
        return self._log.read().decode("utf-8", "replace")

    def stop(self) -> None:
        process = self._process
        if process is None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait(10)
        self._process = None
        self._log.close()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def pdnotes(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """The CLI in its own interpreter (the isolated HOME of conftest is in the environment)."""
    return subprocess.run(
        [sys.executable, "-m", "notes_cli", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )
