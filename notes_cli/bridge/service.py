"""`pdnotes bridge install | uninstall`: keep the bridge running as a user service.

Linux: a systemd user unit, `$XDG_CONFIG_HOME/systemd/user/pdnotes-bridge.service`.
macOS: a launchd agent, `~/Library/LaunchAgents/net.pdnotes.bridge.plist`.

The service runs `python -m notes_cli bridge serve` with no flags, so it serves the upstream
recorded by `pdnotes config … --bridge`. No key is ever written: the unit passes the key's
variable through from the service manager's environment (`systemctl --user import-environment
NAME` / `launchctl setenv NAME …`), or reads an env file the user writes themselves.

The service-manager commands are data (`ServicePlan.enable` / `.disable`) run by one injectable
function, so tests (and `--no-start`) never touch the real systemctl / launchctl.
"""

from __future__ import annotations

import os
import plistlib
import re
import shlex
import subprocess
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from notes_cli import fileio, paths
from notes_cli.bridge.config import BridgeConfig
from notes_cli.errors import PdnotesError, UsageError

UNIT_NAME = "pdnotes-bridge.service"
AGENT_LABEL = "net.pdnotes.bridge"

Runner = Callable[[Sequence[str]], int]


@dataclass(frozen=True)
class ServicePlan:
    """What install writes and runs (or uninstall removes and runs)."""

    kind: str  # systemd | launchd
    path: Path
    text: str
    enable: tuple[tuple[str, ...], ...]
    disable: tuple[tuple[str, ...], ...]
    key_hint: str | None  # how to hand the upstream key's variable to the service manager


def platform_kind(platform: str | None = None) -> str:
    platform = platform or sys.platform
    if platform.startswith("linux"):
        return "systemd"
    if platform == "darwin":
        return "launchd"
    raise UsageError(
        f"pdnotes bridge install supports Linux (systemd) and macOS (launchd), not {platform}",
        fix="run `pdnotes bridge serve` in a terminal, or start it from your own service manager",
    )


def serve_command() -> list[str]:
    """The command the service runs: this Python, this pdnotes, the recorded upstream."""
    return [sys.executable, "-m", "notes_cli", "bridge", "serve"]


def plan_service(config: BridgeConfig, *, platform: str | None = None) -> ServicePlan:
    kind = platform_kind(platform)
    env = _service_env()
    names = [n for n in (config.upstream_key_env, config.api_key_env) if n]
    _check_writable("the Python running pdnotes", sys.executable, kind, executable=True)
    _check_writable("$PDNOTES_HOME", str(paths.pdnotes_home()), kind)
    for name, value in env.items():
        _check_writable(f"${name}", value, kind)
    if kind == "systemd":
        return _systemd(env, names)
    return _launchd(env, names)


def _service_env() -> dict[str, str]:
    """Variables the service needs to find the same pdnotes and the same record."""
    env = {}
    for name in ("PDNOTES_HOME", "PYTHONPATH"):
        value = os.environ.get(name)
        if value:
            env[name] = value
    return env


def _config_home() -> Path:
    env = os.environ.get("XDG_CONFIG_HOME")
    return Path(env).expanduser() if env else Path.home() / ".config"


def _systemd(env: dict[str, str], names: list[str]) -> ServicePlan:
    path = _config_home() / "systemd" / "user" / UNIT_NAME
    env_file = paths.pdnotes_home() / "bridge.env"
    lines = [
        "# Written by `pdnotes bridge install`; remove with `pdnotes bridge uninstall`.",
        "[Unit]",
        "Description=pdnotes bridge (Codex / Claude Code on a chat-completions endpoint)",
        "After=network-online.target",
        "",
        "[Service]",
        "ExecStart=" + _exec_line(serve_command()),
        *(f"Environment={_unit_word(f'{k}={v}')}" for k, v in env.items()),
        # Keys: never in this file. From the user manager's environment, or a file you write.
        *([f"PassEnvironment={' '.join(names)}"] if names else []),
        # a path, read as written (no quotes, no escapes) but for the specifiers
        f"EnvironmentFile=-{_no_specifiers(str(env_file))}",
        "Restart=on-failure",
        "RestartSec=2",
        "",
        "[Install]",
        "WantedBy=default.target",
        "",
    ]
    hint = None
    if names:
        hint = (
            f"the service needs {', '.join('$' + n for n in names)}: run "
            f"`systemctl --user import-environment {' '.join(names)}` (from a shell that has "
            f"them) or put NAME=value lines in {env_file} (chmod 600)"
        )
    return ServicePlan(
        kind="systemd",
        path=path,
        text="\n".join(lines),
        enable=(
            ("systemctl", "--user", "daemon-reload"),
            ("systemctl", "--user", "enable", "--now", UNIT_NAME),
        ),
        disable=(
            ("systemctl", "--user", "disable", "--now", UNIT_NAME),
            ("systemctl", "--user", "daemon-reload"),
        ),
        key_hint=hint,
    )


# -- writing values into a unit (systemd.syntax(7), systemd.service(5)) --------------------------
#
# `%` starts a specifier in ExecStart=, Environment= and EnvironmentFile= (`%20` in a path made
# systemd drop the line or refuse the unit): it is written `%%`. ExecStart= also expands `$NAME`
# in its arguments: a literal `$` is written `$$`. A word with a space or a quote is written in
# double quotes, `\` and `"` escaped. systemd refuses to run an executable whose path holds a
# quote or a backslash, and expands `$` in argv[0], so such a Python is refused up front.

_PLAIN_WORD = re.compile(r"[A-Za-z0-9_@%+=:,./-]+")
_EXECUTABLE_REFUSED = frozenset("\\\"'$")


def _no_specifiers(value: str) -> str:
    return value.replace("%", "%%")


def _unit_word(value: str) -> str:
    """One word of an ExecStart= / Environment= line, as systemd will unquote it."""
    value = _no_specifiers(value)
    if _PLAIN_WORD.fullmatch(value):
        return value
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _exec_line(argv: list[str]) -> str:
    executable, *args = argv
    return " ".join([_unit_word(executable), *(_unit_word(a.replace("$", "$$")) for a in args)])


def _check_writable(what: str, value: str, kind: str, *, executable: bool = False) -> None:
    """Refuse a value the service file cannot carry exactly (rather than write a unit that
    runs something else, or that systemd rejects): a control character (a line end would
    start a new setting; a plist cannot hold one), a byte that is not UTF-8, and on systemd
    the characters it will not run an executable from."""
    manager = "systemd" if kind == "systemd" else "launchd"
    refused = _EXECUTABLE_REFUSED if executable and kind == "systemd" else frozenset()
    bad = next(
        (
            c
            for c in value
            if ord(c) < 0x20 or ord(c) == 0x7F or 0xD800 <= ord(c) <= 0xDFFF or c in refused
        ),
        None,
    )
    if bad is not None:
        raise UsageError(
            f"{what} ({value!r}) has a character a {manager} service cannot carry "
            f"(U+{ord(bad):04X}), so pdnotes writes no service file",
            fix="use a path without it (a symlink to a plain path works), or run `pdnotes "
            "bridge serve` from your own service manager",
        )


def _launchd(env: dict[str, str], names: list[str]) -> ServicePlan:
    path = Path.home() / "Library" / "LaunchAgents" / f"{AGENT_LABEL}.plist"
    logs = paths.pdnotes_home() / "bridge.log"
    agent: dict[str, object] = {
        "Label": AGENT_LABEL,
        "ProgramArguments": serve_command(),
        "RunAtLoad": True,
        "KeepAlive": {"SuccessfulExit": False},
        "StandardOutPath": str(logs),
        "StandardErrorPath": str(logs),
    }
    if env:
        agent["EnvironmentVariables"] = env
    text = plistlib.dumps(agent, sort_keys=True).decode("utf-8")
    hint = None
    if names:
        hint = (
            f"the agent needs {', '.join('$' + n for n in names)}: run "
            + "; ".join(f'launchctl setenv {n} "${n}"' for n in names)
            + " (from a shell that has them), then `pdnotes bridge install` again"
        )
    return ServicePlan(
        kind="launchd",
        path=path,
        text=text,
        enable=(("launchctl", "load", "-w", str(path)),),
        disable=(("launchctl", "unload", "-w", str(path)),),
        key_hint=hint,
    )


def run_manager(command: Sequence[str]) -> int:
    """Run one service-manager command (bounded); its exit status."""
    try:
        return subprocess.run(list(command), check=False, timeout=30).returncode
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise PdnotesError(
            f"`{shlex.join(command)}` failed: {exc}",
            fix="run it yourself, or pass --no-start and start the service your own way",
        ) from exc


def install(plan: ServicePlan, *, start: bool = True, runner: Runner = run_manager) -> None:
    fileio.atomic_write(plan.path, plan.text)
    if start:
        _run_all(plan.enable, runner)


def uninstall(plan: ServicePlan, *, stop: bool = True, runner: Runner = run_manager) -> bool:
    """Stop and remove the service; False when there was nothing installed."""
    if not plan.path.exists():
        return False
    if stop:
        _run_all(plan.disable, runner)
    fileio.remove_file(plan.path)
    return True


def _run_all(commands: tuple[tuple[str, ...], ...], runner: Runner) -> None:
    for command in commands:
        status = runner(command)
        if status != 0:
            raise PdnotesError(
                f"`{shlex.join(command)}` exited with status {status}",
                fix="see its message above; the service file is written, start it by hand",
            )
