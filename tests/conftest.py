"""Shared fixtures. Every test runs with HOME, CODEX_HOME, CLAUDE_CONFIG_DIR, QWEN_HOME,
PDNOTES_HOME and the XDG_* folders in a temp dir and without the developer's gateway, proxy or
client variables (GEMINI_*, GOOGLE_*, QWEN_* and OPENCODE_* included), so nothing touches the
real ~/.codex, ~/.claude, ~/.gemini, ~/.qwen or ~/.config.

tests/README.md maps the suite: which files test which area, every shared fixture here and the
helper modules beside it (loopback, hostile_gateway, engine_process, bridge_support, …)."""

from __future__ import annotations

import io
import os
import shutil
import sys
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from hypothesis import HealthCheck, settings
from hypothesis.configuration import set_hypothesis_home_dir

if TYPE_CHECKING:
    import httpx
    from hostile_gateway import HostileGateway
    from real_engine import LlamaServer

    from notes_cli.engine.core.profiles import Catalog

# Every property test draws the same examples on every run and remembers none: no
# `.hypothesis/` example database whose saved failure would make a later run of the same
# checkout fail (or pass) by what an earlier run found. A test's own @settings only adds to
# this profile (max_examples, deadline); none may set database or derandomize.
# `too_slow` is a wall-clock check: how busy the machine is decides it, not the code (it failed
# a URL-cleaning test once under load, and a Gemini bridge test when tracing allocations). A
# test that names its own suppressed checks names too_slow as well.
settings.register_profile(
    "pdnotes",
    derandomize=True,
    database=None,
    print_blob=False,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.load_profile("pdnotes")
# Hypothesis still keeps a cache (the constants it collects from the source) under
# ./.hypothesis: each test process gets its own throw-away folder instead (removed at the end).
_HYPOTHESIS_HOME = tempfile.mkdtemp(prefix="pdnotes-hypothesis-")
set_hypothesis_home_dir(_HYPOTHESIS_HOME)


def pytest_unconfigure(config: pytest.Config) -> None:
    shutil.rmtree(_HYPOTHESIS_HOME, ignore_errors=True)


def _client_prefixes() -> tuple[str, ...]:
    """Each registered client's own variables (PI_…, COPILOT_…): a developer's settings for a
    client never reach a test, whichever clients there are."""
    from notes_cli.clients import registry

    return tuple(f"{name.upper()}_" for name in registry.names())


_SCRUBBED_PREFIXES = _client_prefixes() + (
    "OPENAI_",
    "ANTHROPIC_",
    "CODEX_",
    "CLAUDE_",
    "TAOTOKEN_",
    "DEEPSEEK_",
    "GEMINI_",
    "GOOGLE_",
    "QWEN_",
    "OPENCODE_",
)
_SCRUBBED = {
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "ALL_PROXY",
    "NO_PROXY",
    "http_proxy",
    "https_proxy",
    "all_proxy",
    "no_proxy",
    "API_TIMEOUT_MS",
    "MOCK_API_KEY",
    "PDNOTES_HOME",
}


_XDG = {
    "XDG_CONFIG_HOME": ".config",
    "XDG_DATA_HOME": ".local/share",
    "XDG_CACHE_HOME": ".cache",
    "XDG_STATE_HOME": ".local/state",
}


@pytest.fixture(autouse=True)
def isolated_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh home for every test: clients' folders and pdnotes state all under tmp_path."""
    for name in list(os.environ):
        if name in _SCRUBBED or name.startswith(_SCRUBBED_PREFIXES):
            monkeypatch.delenv(name, raising=False)
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("CODEX_HOME", str(home / ".codex"))
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(home / ".claude"))
    monkeypatch.setenv("PDNOTES_HOME", str(home / ".pdnotes"))
    # aiconfigurator (optional, heavy) runs only where a test names a Python for it.
    monkeypatch.setenv("PDNOTES_AICONFIGURATOR_PYTHON", "off")
    # OpenCode (and any XDG client) reads and writes under these: all inside the temp home.
    for name, folder in _XDG.items():
        monkeypatch.setenv(name, str(home / folder))
    # The system-wide layers (Claude Code's managed settings, /etc/codex) stay out of tests.
    monkeypatch.setenv("PDNOTES_CLAUDE_MANAGED_DIR", str(home / "managed-claude"))
    monkeypatch.setenv("PDNOTES_CODEX_SYSTEM_CONFIG", str(home / "etc-codex" / "config.toml"))
    monkeypatch.setenv(
        "GEMINI_CLI_SYSTEM_SETTINGS_PATH", str(home / "etc-gemini" / "settings.json")
    )
    monkeypatch.setenv(
        "GEMINI_CLI_SYSTEM_DEFAULTS_PATH", str(home / "etc-gemini" / "system-defaults.json")
    )
    # Qwen Code: its user folder and both system-wide layers, each moved by its own variable.
    monkeypatch.setenv("QWEN_HOME", str(home / ".qwen"))
    monkeypatch.setenv("QWEN_CODE_SYSTEM_SETTINGS_PATH", str(home / "etc-qwen" / "settings.json"))
    monkeypatch.setenv(
        "QWEN_CODE_SYSTEM_DEFAULTS_PATH", str(home / "etc-qwen" / "system-defaults.json")
    )
    monkeypatch.setenv("NO_COLOR", "1")
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    monkeypatch.chdir(tmp_path)
    return home


@dataclass
class CliResult:
    exit_code: int
    stdout: str
    stderr: str

    def json(self) -> dict:  # type: ignore[type-arg]
        import json

        return json.loads(self.stdout)


@pytest.fixture
def cli() -> Callable[..., CliResult]:
    """Run `pdnotes ARGS…` in-process through the real entry point (error mapping included)."""

    def run(*args: str, input: str | None = None) -> CliResult:
        from notes_cli.cli import main

        out, err = io.StringIO(), io.StringIO()
        old = sys.stdout, sys.stderr, sys.stdin
        sys.stdout, sys.stderr = out, err
        if input is not None:
            sys.stdin = io.StringIO(input)
        code = 0
        try:
            main(list(args))
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        finally:
            sys.stdout, sys.stderr, sys.stdin = old
        return CliResult(code, out.getvalue(), err.getvalue())

    return run


@pytest.fixture
def sentinel_key() -> Iterator[str]:
    """A key value that must never appear in any output or file pdnotes writes unasked."""
    yield "sk-SENTINEL0123456789abcdefXYZW"


@pytest.fixture
def modes_deny(tmp_path: Path) -> None:
    """Skips the test where chmod 000 does not deny access: as root (CAP_DAC_OVERRIDE), which
    the suite usually runs as. Every test using it has a twin that simulates the same OSError,
    so the code path is covered either way; this one checks the real thing for a normal user
    (or root without the capability: setpriv --bounding-set=-dac_override,-dac_read_search)."""
    probe = tmp_path / "mode-probe"
    probe.mkdir(mode=0o700)
    probe.chmod(0)
    try:
        os.listdir(probe)
    except PermissionError:
        return
    finally:
        probe.chmod(0o700)
    pytest.skip("chmod 000 does not deny here (root); the simulated twin covers this path")


@pytest.fixture
def codex_doctor(
    cli: Callable[..., CliResult], isolated_home: Path, monkeypatch: pytest.MonkeyPatch
) -> Callable[..., dict]:  # type: ignore[type-arg]
    """`codex_doctor(text, **env)`: write `text` as $CODEX_HOME/config.toml, set the `env`
    variables, run `doctor --offline --client codex --json` (no codex binary on PATH), and
    return the JSON document."""
    monkeypatch.setenv("PDNOTES_CODEX_BIN", str(isolated_home / "no-codex-here"))

    def run(text: str, **env: str) -> dict:  # type: ignore[type-arg]
        for name, value in env.items():
            monkeypatch.setenv(name, value)
        path = isolated_home / ".codex" / "config.toml"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        return cli("doctor", "--offline", "--client", "codex", "--json").json()

    return run


# --- the hostile gateway (tests/hostile_gateway.py) -----------------------------------------


@pytest.fixture(scope="module")
def hostile() -> Iterator[HostileGateway]:
    """One hostile gateway for the module; `hostile.base(mode)` is a base URL that misbehaves."""
    # Import what the commands import lazily, so the first case does not time Python's imports.
    from hostile_gateway import HostileGateway

    import notes_cli.bench.client
    import notes_cli.cli.doctor
    import notes_cli.cli.notes
    import notes_cli.cli.smoke
    import notes_cli.doctor.live
    import notes_cli.doctor.run
    import notes_cli.notes.generate
    import notes_cli.smoke  # noqa: F401

    with HostileGateway() as server:
        yield server


# --- engine area: the shipped catalog and an HTTP client ------------------------------------


@pytest.fixture(scope="module")
def catalog() -> Catalog:
    """The shipped engine profiles (chips, links, models, deployments), loaded once a module.
    The user's $PDNOTES_HOME/engine rows stay out: a module-scoped fixture runs before the
    per-test isolated home exists, so it must not read the developer's folder."""
    from notes_cli.engine.core.profiles import load_catalog

    return load_catalog(user=False)


@pytest.fixture
def http() -> Iterator[httpx.Client]:
    """A plain httpx client for talking to a test's engine; every request bounded in time."""
    import httpx

    with httpx.Client(timeout=20) as client:
        yield client


# --- engine_server (owned by the engine HTTP helper) -----------------------------------------
# A real engine on 127.0.0.1 and a free port, run in a background thread and stopped after the
# test. `engine_server` is the default engine (preset h800-h20-rdma, model "pd-mock-1"), its
# wall clock ENGINE_TEST_SPEED times faster than simulated hardware so tests stay short;
# `start_engine_server(**kwargs)` starts more, with EngineConfig fields (mode=, preset=, speed=,
# served_models=, …) and start_engine options (api_key_env=, faults=, prefix=, limits=,
# service=) as keywords. Use `.base_url` (…/api) for OpenAI clients and Codex,
# `.anthropic_base_url` (…/api/anthropic) for Claude Code, and `.url("/metrics")`.

ENGINE_TEST_SPEED = 20.0
_START_ENGINE_OPTIONS = (
    "api_key_env", "faults", "prefix", "limits", "service", "host", "port", "protocols",
)  # fmt: skip


@pytest.fixture
def start_engine_server() -> Iterator[Callable[..., object]]:
    from notes_cli.engine.core.config import EngineConfig
    from notes_cli.engine.http.server import start_engine

    started: list = []  # type: ignore[type-arg]

    def start(**kwargs: object) -> object:
        options = {k: kwargs.pop(k) for k in _START_ENGINE_OPTIONS if k in kwargs}
        kwargs.setdefault("speed", ENGINE_TEST_SPEED)
        engine = start_engine(EngineConfig(**kwargs), **options)  # type: ignore[arg-type]
        started.append(engine)
        return engine

    yield start
    for engine in reversed(started):
        engine.stop()


@pytest.fixture
def engine_server(start_engine_server: Callable[..., object]) -> object:
    """The default engine, running for the duration of the test."""
    return start_engine_server()


# --- the interop matrix ----------------------------------------------------------------------
# With PDNOTES_INTEROP_NEWEST_BIN set (scripts/test.sh does, for PDNOTES_INTEROP_MATRIX=both),
# every interop-marked test runs twice in the one session, as test[pinned] on the clients in
# $PDNOTES_INTEROP_BIN and as test[newest] on those in $PDNOTES_INTEROP_NEWEST_BIN, so the
# second set shares the session and its workers instead of a second pytest run.


def _interop_matrix() -> dict[str, str]:
    newest = os.environ.get("PDNOTES_INTEROP_NEWEST_BIN")
    if not newest:
        return {}
    return {"pinned": os.environ.get("PDNOTES_INTEROP_BIN", ""), "newest": newest}


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    matrix = _interop_matrix()
    if matrix and metafunc.definition.get_closest_marker("interop"):
        metafunc.parametrize("interop_clients", list(matrix), indirect=True)


@pytest.fixture(autouse=True)
def interop_clients(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str | None:
    """Which client versions an interop test runs on (None: $PDNOTES_INTEROP_BIN as set)."""
    name = getattr(request, "param", None)
    if name is not None:
        folder = _interop_matrix()[name]
        if folder:
            monkeypatch.setenv("PDNOTES_INTEROP_BIN", folder)
        else:
            monkeypatch.delenv("PDNOTES_INTEROP_BIN", raising=False)
    return name


@pytest.fixture(scope="module")
def llama() -> Iterator[LlamaServer]:
    """A real llama.cpp server (tests/real_engine.py) for one test module; skips, saying why,
    where it cannot run."""
    from real_engine import LlamaServer, missing

    reason = missing()
    if reason is not None:
        pytest.skip(reason)
    with LlamaServer() as server:
        yield server
