"""Malformed URLs (an unclosed or non-IPv6 `[host]`, a port past 65535 or negative) given to any
command: as a flag they are a usage error (exit 2, a message naming the flag, no traceback,
nothing written); inside a client's config file `doctor` names them (`base-url-malformed`,
offline and live) and `smoke` / `notes generate` stop with exit 2 naming the file."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

MALFORMED = [
    "http://[::1",
    "http://[zz]/v1",
    "http://gw.example:99999/v1",
    "http://gw.example:-1/v1",
]
GOOD = "http://127.0.0.1:9/v1"  # a port nothing listens on: no test reaches the network

CLIENTS = ["codex", "claude", "gemini", "qwen", "opencode"]
_CONFIG_EXTRA = {"codex": ["--provider", "gw", "--env-key", "GW_KEY"]}

# Every command that takes a URL as a flag, with the flag the message must name.
FLAG_COMMANDS: dict[str, tuple[list[str], str]] = {
    **{
        f"config {c}": (
            ["config", c, *_CONFIG_EXTRA.get(c, []), "--model", "m", "--base-url", "{url}"],
            "--base-url",
        )
        for c in CLIENTS
    },
    "config codex --bridge": (
        ["config", "codex", "--bridge", "--model", "m", "--base-url", "{url}"],
        "--base-url",
    ),
    "config claude --bridge-fallback": (
        ["config", "claude", "--bridge", "--model", "m", "--base-url", GOOD]
        + ["--bridge-fallback", "{url}"],
        "--bridge-fallback",
    ),
    "smoke": (["smoke", "--client", "openai", "--model", "m", "--base-url", "{url}"], "--base-url"),
    "bench": (["bench", "--model", "m", "--requests", "1", "--base-url", "{url}"], "--base-url"),
    "bench --metrics-url": (
        ["bench", "--model", "m", "--requests", "1", "--base-url", GOOD, "--metrics-url", "{url}"],
        "--metrics-url",
    ),
    "notes generate": (
        ["notes", "generate", "--model", "m", "--base-url", "{url}"],
        "--base-url",
    ),
    "notes sources": (["notes", "sources", "{url}"], "is not a usable URL"),
}


def _files(home: Path) -> dict[str, bytes]:
    """Every file under `home` but pdnotes' lock files, with its bytes."""
    return {
        str(p.relative_to(home)): p.read_bytes()
        for p in sorted(home.rglob("*"))
        if p.is_file() and "locks" not in p.parts
    }


@pytest.mark.parametrize("url", MALFORMED)
@pytest.mark.parametrize("command", list(FLAG_COMMANDS))
def test_a_malformed_url_flag_is_a_usage_error_and_writes_nothing(
    cli, isolated_home: Path, command: str, url: str
) -> None:
    args, named = FLAG_COMMANDS[command]
    before = _files(isolated_home)

    result = cli(*[url if a == "{url}" else a for a in args])

    assert result.exit_code == 2, (result.stdout, result.stderr)
    assert "is not a usable URL" in result.stderr
    assert named in result.stderr
    assert "Traceback" not in result.stderr + result.stdout
    assert _files(isolated_home) == before  # no config, record or backup written


@pytest.mark.parametrize("url", MALFORMED)
def test_bridge_serve_refuses_a_malformed_upstream_before_it_listens(url: str) -> None:
    """Through a real process: a bridge that accepted the URL would serve (and crash on the
    first request) instead of exiting."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "notes_cli", "bridge", "serve", "--port", "0"]
        + ["--upstream", GOOD, "--upstream", url],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)},
    )
    try:
        out, err = proc.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        pytest.fail(f"bridge serve accepted --upstream {url} and kept serving")
    assert proc.returncode == 2, (out, err)
    assert "--upstream" in err and "is not a usable URL" in err
    assert "Traceback" not in err


def _configure_then_break(cli, home: Path, client: str, url: str) -> dict[str, bytes]:
    """Configure `client` for GOOD through the real command, then put `url` where GOOD is in
    the files it wrote (a hand edit); returns the files as they are then."""
    result = cli(
        "config", client, *_CONFIG_EXTRA.get(client, []), "--model", "m", "--base-url", GOOD
    )
    assert result.exit_code == 0, result.stderr
    edited = 0
    for path in home.rglob("*"):
        if path.is_file() and ".pdnotes" not in path.parts:
            text = path.read_text()
            if "127.0.0.1:9" in text:
                path.write_text(text.replace(GOOD, url).replace("http://127.0.0.1:9", url))
                edited += 1
    assert edited
    return _files(home)


@pytest.fixture
def keys(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every client's key variable set, and the temp folder trusted by Gemini CLI, so the
    malformed URL is what stops a command."""
    for name in ("GW_KEY", "GEMINI_API_KEY", "OPENAI_API_KEY", "ANTHROPIC_AUTH_TOKEN"):
        monkeypatch.setenv(name, "test-key-value")
    monkeypatch.setenv("GEMINI_CLI_TRUST_WORKSPACE", "true")


@pytest.mark.parametrize("offline", [True, False], ids=["offline", "live"])
@pytest.mark.parametrize("url", MALFORMED)
@pytest.mark.parametrize("client", CLIENTS)
def test_doctor_names_a_malformed_url_in_a_config_file(
    cli, isolated_home: Path, keys: None, client: str, url: str, offline: bool
) -> None:
    files = _configure_then_break(cli, isolated_home, client, url)

    result = cli(
        "doctor", "--client", client, "--json", "--timeout", "2", *(["--offline"] * offline)
    )

    assert result.exit_code == 1, result.stderr
    found = [f for f in result.json()["findings"] if f["id"] == "base-url-malformed"]
    assert len(found) == 1, result.stdout
    assert found[0]["client"] == client
    assert found[0]["file"] and found[0]["file"] in found[0]["fix"]
    assert _files(isolated_home) == files


@pytest.mark.parametrize("url", MALFORMED)
@pytest.mark.parametrize("client", CLIENTS)
def test_smoke_stops_on_a_malformed_url_in_a_config_file(
    cli, isolated_home: Path, keys: None, client: str, url: str
) -> None:
    _configure_then_break(cli, isolated_home, client, url)

    result = cli("smoke", "--client", client, "-n", "1")

    assert result.exit_code == 2, (result.stdout, result.stderr)
    assert "is not a usable URL" in result.stderr
    assert "Traceback" not in result.stderr


def test_notes_generate_stops_on_a_malformed_url_in_a_config_file(
    cli, isolated_home: Path, keys: None
) -> None:
    _configure_then_break(cli, isolated_home, "codex", "http://gw.example:99999/v1")

    result = cli("notes", "generate", "--client", "codex")

    assert result.exit_code == 2, (result.stdout, result.stderr)
    assert "config.toml" in result.stderr and "is not a usable URL" in result.stderr


@pytest.mark.parametrize(
    "proxy", ["http://[::1", "http://proxy.example:99999", "http://user:pw-proxy@proxy:-1"]
)
def test_a_malformed_proxy_variable_is_a_usage_error_naming_it(
    cli, monkeypatch: pytest.MonkeyPatch, proxy: str
) -> None:
    """httpx parses HTTPS_PROXY building any client: a malformed one was a traceback."""
    monkeypatch.setenv("HTTPS_PROXY", proxy)
    monkeypatch.setenv("NO_PROXY", "")

    result = cli("notes", "sources", "https://gw.example/page")

    assert result.exit_code == 2, result.stderr
    assert "HTTPS_PROXY" in result.stderr and "is not a usable URL" in result.stderr
    assert "pw-proxy" not in result.stderr  # the proxy's password is masked


def test_a_malformed_url_carrying_a_key_is_refused_without_showing_the_key(
    cli, sentinel_key: str, isolated_home: Path
) -> None:
    for args in (
        ["smoke", "--client", "openai", "--model", "m"],
        ["config", "claude", "--model", "m"],
    ):
        result = cli(*args, "--base-url", f"http://user:{sentinel_key}@gw.example:99999/v1")
        assert result.exit_code == 2, result.stderr
        assert sentinel_key not in result.stdout + result.stderr
