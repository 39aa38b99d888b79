"""Running the REAL Codex CLI, Claude Code and OpenCode against the engine, as the references'
"Running in a test" sections say: closed stdin, a minimal `env -i`-style environment, a temp
HOME, an outer timeout, its own process group killed as a whole.

Binaries come from $PDNOTES_INTEROP_BIN (CI sets it; default .interop/node_modules/.bin). A
missing binary fails the test under CI=true and skips it elsewhere, saying why.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import tomllib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "scripts"))
from client_shapes import OPENCODE_OFFLINE, recording_server  # noqa: E402, F401  (shared)

_DEFAULT_BIN = Path(__file__).resolve().parent.parent / ".interop" / "node_modules" / ".bin"
CLIENT_TIMEOUT_S = 60.0


def client_binary(name: str) -> Path:
    """The installed client, or skip (fail under CI) with the reason."""
    folder = Path(os.environ.get("PDNOTES_INTEROP_BIN") or _DEFAULT_BIN)
    binary = folder / name
    if binary.exists() and os.access(binary, os.X_OK):
        return binary
    reason = (
        f"{name} is not installed at {binary}; run scripts/test.sh (npm-installs the pinned "
        "clients into .interop/) or set PDNOTES_INTEROP_BIN"
    )
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(reason)
    pytest.skip(reason)


@dataclass(frozen=True)
class ClientRun:
    returncode: int
    stdout: str
    stderr: str


def run_client(args: list[str], *, env: dict[str, str], cwd: Path) -> ClientRun:
    """Run a client to completion in its own session; kill the whole group on timeout
    (Codex's Node launcher leaves its native child running if only Node dies)."""
    base = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8"}
    process = subprocess.Popen(
        args,
        cwd=cwd,
        env={**base, **env},
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        stdout, stderr = process.communicate(timeout=CLIENT_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        stdout, stderr = process.communicate()
        pytest.fail(f"{Path(args[0]).name} did not finish in {CLIENT_TIMEOUT_S:.0f}s:\n{stderr}")
    finally:
        _kill_group(process.pid)
    return ClientRun(process.returncode, stdout, stderr)


def _kill_group(pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):  # already gone
        os.killpg(pgid, signal.SIGKILL)


# --- Codex ------------------------------------------------------------------------------------


# Flags every Codex run gets: no retries (a failure shows in one request), a short idle timeout,
# no side connections to github.com / chatgpt.com.
def codex_overrides(provider: str) -> list[str]:
    return [
        "-c", f"model_providers.{provider}.request_max_retries=0",
        "-c", f"model_providers.{provider}.stream_max_retries=0",
        "-c", f"model_providers.{provider}.stream_idle_timeout_ms=10000",
        "-c", "check_for_update_on_startup=false",
        "-c", "analytics.enabled=false",
        "-c", "features.plugins=false",
    ]  # fmt: skip


def write_codex_config(cli: Callable[..., Any], base_url: str, env_key: str | None) -> str:
    """Write $CODEX_HOME/config.toml with `pdnotes config codex --preset mock`; return the
    provider id it uses."""
    args = ["config", "codex", "--preset", "mock", "--base-url", base_url]
    if env_key:
        args += ["--env-key", env_key]
    result = cli(*args)
    assert result.exit_code == 0, result.stderr
    config = tomllib.loads((Path(os.environ["CODEX_HOME"]) / "config.toml").read_text())
    return str(config["model_provider"])


# --- Claude Code ------------------------------------------------------------------------------


def write_claude_settings(cli: Callable[..., Any], base_url: str) -> None:
    """User settings.json with `pdnotes config claude --preset mock`."""
    result = cli("config", "claude", "--preset", "mock", "--base-url", base_url)
    assert result.exit_code == 0, result.stderr


def set_claude_base_url(claude_home: Path, base_url: str) -> None:
    """Edit ANTHROPIC_BASE_URL by hand, the way the article's reader adds a stray /v1 (pdnotes
    config itself refuses to write one for the mock preset)."""
    path = claude_home / "settings.json"
    settings = json.loads(path.read_text())
    settings["env"]["ANTHROPIC_BASE_URL"] = base_url
    path.write_text(json.dumps(settings))


CLAUDE_ENV = {
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    "CLAUDE_CODE_MAX_RETRIES": "0",
    "API_TIMEOUT_MS": "20000",
}


# --- Gemini CLI -------------------------------------------------------------------------------


def write_gemini_config(cli: Callable[..., Any], home: Path, *args: str) -> None:
    """~/.gemini/settings.json holding a comment and a setting of the user's, then `pdnotes
    config gemini --no-phone-home ARGS…` merged in (no usage statistics, telemetry or update
    check: the only connection left is the model's)."""
    settings = home / ".gemini" / "settings.json"
    settings.parent.mkdir(parents=True, exist_ok=True)
    settings.write_text('// mine\n{"ui": {"hideBanner": true}}\n')
    result = cli("config", "gemini", "--no-phone-home", *args)
    assert result.exit_code == 0, result.stderr
    assert settings.read_text().startswith("// mine\n")


def gemini_print(home: Path, prompt: str, *extra: str, env: dict[str, str]) -> ClientRun:
    """`gemini -p PROMPT -o json` in a project under `home`; the folder trusted the way
    `pdnotes config gemini` says for scripts (GEMINI_CLI_TRUST_WORKSPACE=true)."""
    gemini = client_binary("gemini")
    project = home / "project"
    project.mkdir(exist_ok=True)
    args = [str(gemini), "-p", prompt, "-o", "json", *extra]
    return run_client(
        args, env={"HOME": str(home), "GEMINI_CLI_TRUST_WORKSPACE": "true", **env}, cwd=project
    )


# --- OpenCode ---------------------------------------------------------------------------------


def opencode_env(home: Path) -> dict[str, str]:
    """HOME and the XDG folders under `home` (OpenCode keeps config, data, cache and state
    there), and OpenCode off the network: the switches scripts/client_shapes.py documents."""
    return {
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_DATA_HOME": str(home / ".local" / "share"),
        "XDG_CACHE_HOME": str(home / ".cache"),
        "XDG_STATE_HOME": str(home / ".local" / "state"),
        **OPENCODE_OFFLINE,
    }


def opencode_run(
    home: Path, prompt: str, *extra: str, env: dict[str, str] | None = None
) -> ClientRun:
    """`opencode run --format json` in a project folder under `home`. The prompt goes as separate
    words: `opencode run` wraps an argument that holds a space in double quotes, and the model
    would then see `"run: …"` rather than the line `run: …`."""
    opencode = client_binary("opencode")
    project = home / "project"
    project.mkdir(exist_ok=True)
    args = [str(opencode), "run", "--format", "json", *extra, *prompt.split()]
    return run_client(args, env={**opencode_env(home), **(env or {})}, cwd=project)


def opencode_events(run: ClientRun) -> list[dict[str, Any]]:
    """The JSON events `opencode run --format json` printed, one a line."""
    return [json.loads(line) for line in run.stdout.splitlines() if line.startswith("{")]
