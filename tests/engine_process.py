"""`pdnotes engine serve` in a subprocess: its own interpreter, so client-side timing measured in
the test process is not distorted by the server sharing the GIL; started in its own session
and stopped with SIGTERM (then SIGKILL to the group if it lingers)."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
from types import TracebackType

_BASE_URL = re.compile(r"base_url\s+(http://127\.0\.0\.1:(\d+)/api)\b")
STARTUP_TIMEOUT_S = 30.0


class EngineProcess:
    """`with EngineProcess("--mode", "colocated", "--speed", "2") as engine: engine.base_url`"""

    def __init__(self, *args: str) -> None:
        self.args = ["--port", "0", *args]
        self.base_url = ""
        self.port = 0
        self.output: list[str] = []
        self.returncode: int | None = None
        self._process: subprocess.Popen[str] | None = None
        self._reader: threading.Thread | None = None
        self._state = tempfile.TemporaryDirectory(prefix="pdnotes-engine-")

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}/{path.lstrip('/')}"

    def __enter__(self) -> EngineProcess:
        self._process = subprocess.Popen(
            [sys.executable, "-m", "notes_cli", "engine", "serve", *self.args],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
            env=self._env(),
        )
        ready = threading.Event()
        self._reader = threading.Thread(target=self._read, args=(ready,), daemon=True)
        self._reader.start()
        if not ready.wait(STARTUP_TIMEOUT_S):
            self.stop()
            raise RuntimeError("engine serve did not start:\n" + "".join(self.output))
        return self

    def _env(self) -> dict[str, str]:
        """Module-scoped servers start before the per-test isolated home exists, so give the
        server its own empty state folder (no user engine profiles) and no proxy settings."""
        env = {k: v for k, v in os.environ.items() if not k.lower().endswith("_proxy")}
        return {**env, "PDNOTES_HOME": self._state.name, "HOME": self._state.name, "NO_COLOR": "1"}

    def _read(self, ready: threading.Event) -> None:
        assert self._process is not None and self._process.stdout is not None
        for line in self._process.stdout:
            self.output.append(line)
            if match := _BASE_URL.search(line):
                self.base_url, self.port = match.group(1), int(match.group(2))
            if "Ctrl-C to stop" in line:  # the banner's last line
                ready.set()
        ready.set()  # EOF: the server died; __enter__ sees no base_url

    def stop(self, timeout: float = 10.0) -> int | None:
        """SIGTERM and wait (the clean shutdown path); SIGKILL the group if it hangs."""
        process = self._process
        if process is None or self.returncode is not None:
            return self.returncode
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGTERM)
        try:
            self.returncode = process.wait(timeout)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            self.returncode = process.wait(timeout)
        if self._reader is not None:
            self._reader.join(timeout)  # EOF after exit: it has the last lines
        if process.stdout is not None:
            process.stdout.close()
        self._state.cleanup()
        return self.returncode

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()
