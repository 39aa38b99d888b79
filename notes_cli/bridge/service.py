"""`pdnotes bridge install | uninstall`: keep the bridge running as a user service.

Linux: a systemd user unit, `$XDG_CONFIG_HOME/systemd/user/pdnotes-bridge.service`.
macOS: a launchd agent, `~/Library/LaunchAgents/net.pdnotes.bridge.plist`.

The service runs `python -m notes_cli bridge serve` with no flags, so it serves the upstream
recorded by `pdnotes config … --bridge`. No key is ever written: the unit passes the key's
variable through from the service manager's environment (`systemctl --user import-environment
NAME` / `launchctl setenv NAME …`), or reads an env file the user writes themselves.

A service file with changes pdnotes did not write is never replaced or removed silently (see
"a unit the user edited" below).

The service-manager commands are data (`ServicePlan.enable` / `.disable`) run by one injectable
function, so tests (and `--no-start`) never touch the real systemctl / launchctl.
"""

from __future__ import annotations

import contextlib
import json
import os
import plistlib
import re
import shlex
import subprocess
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from notes_cli import backups, fileio, paths
from notes_cli.bridge.config import BridgeConfig
from notes_cli.errors import PdnotesError, UsageError
from notes_cli.secrets import scrub

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


def plan_service(
    config: BridgeConfig, *, platform: str | None = None, removal: bool = False
) -> ServicePlan:
    """The service file for `config` and the commands that start / stop it. With `removal`
    (uninstall needs only the path and the stop commands) the values are not checked, so a
    path a new unit could not carry does not keep an old one installed."""
    kind = platform_kind(platform)
    env = _service_env()
    keys = [u.upstream_key_env for u in config.upstreams] + [config.api_key_env]
    names = list(dict.fromkeys(n for n in keys if n))
    if not removal:
        _check_all(kind, env)
    if kind == "systemd":
        return _systemd(env, names)
    return _launchd(env, names)


def _check_all(kind: str, env: dict[str, str]) -> None:
    _check_writable("the Python running pdnotes", sys.executable, kind, executable=True)
    _check_writable("$PDNOTES_HOME", str(paths.pdnotes_home()), kind)
    for name, value in env.items():
        _check_writable(f"${name}", value, kind)


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


# -- a unit the user edited --------------------------------------------------------------------
#
# `install` and `uninstall` never silently destroy a service file pdnotes did not write as it
# is: what pdnotes writes is remembered by digest in $PDNOTES_HOME/bridge-service.json, so an
# unchanged file from an earlier pdnotes is just replaced, while an edited (or unknown) one is
# refused by `install` unless --force, and backed up under $PDNOTES_HOME/backups/bridge-service/
# before --force replaces it or `uninstall` removes it.

BACKUP_CLIENT = "bridge-service"
WRITTEN_NAME = "bridge-service.json"

FileState = Literal["absent", "same", "ours", "edited"]


class UnitEditedError(PdnotesError):
    """`install` found a service file with changes pdnotes did not write; `diff` shows them."""

    def __init__(self, plan: ServicePlan, diff: str) -> None:
        super().__init__(
            f"{plan.path} has changes pdnotes did not write (the diff above turns it into what "
            "pdnotes would write); nothing was changed",
            fix="keep your settings in a drop-in, which pdnotes never touches (`systemctl "
            "--user edit pdnotes-bridge`), or pass --force to replace the file (a copy of it "
            f"is kept in {backups.backups_dir(BACKUP_CLIENT)})"
            if plan.kind == "systemd"
            else "pass --force to replace the file (a copy of it is kept in "
            f"{backups.backups_dir(BACKUP_CLIENT)})",
        )
        self.diff = diff


@dataclass(frozen=True)
class Outcome:
    """What install / uninstall found at the path and did about it."""

    state: FileState
    backup: Path | None = None  # the copy of an edited file, kept before replacing / removing
    not_stopped: tuple[str, ...] = ()  # uninstall: the stop commands that failed, and how


def file_state(plan: ServicePlan) -> FileState:
    """What is at `plan.path`: nothing, what `plan` would write, what pdnotes last wrote there,
    or something else (edited by the user, or by something that is not pdnotes)."""
    data = fileio.read_bytes(plan.path)
    if data is None:
        return "absent"
    if data == plan.text.encode("utf-8"):
        return "same"
    digest = _written_digest(plan.path)
    if digest is None:  # written before pdnotes kept a note of it, or the note is lost
        return "ours" if _looks_generated(plan, data) else "edited"
    return "ours" if digest == backups.state_digest(data) else "edited"


_VARYING = ("ExecStart=", "Environment=", "PassEnvironment=", "EnvironmentFile=")
_AGENT_KEYS = frozenset(
    {"Label", "ProgramArguments", "RunAtLoad", "KeepAlive", "StandardOutPath"}
    | {"StandardErrorPath", "EnvironmentVariables"}
)


def _looks_generated(plan: ServicePlan, data: bytes) -> bool:
    """A service file with no note of pdnotes writing it (an older pdnotes installed it) is
    pdnotes' own when it has only what pdnotes writes: the template's lines, and for the lines
    that vary (the command, the environment) only such lines. A line the user added
    (`MemoryMax=`, a proxy) makes it edited."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    if plan.kind == "launchd":
        try:
            agent = plistlib.loads(data)
        except Exception:  # plistlib raises several kinds on a damaged file
            return False
        return (
            isinstance(agent, dict)
            and set(agent) <= _AGENT_KEYS
            and agent.get("Label") == AGENT_LABEL
            and "bridge" in map(str, agent.get("ProgramArguments") or ())
        )
    template = set(plan.text.splitlines())
    lines = text.splitlines()
    command = [line for line in lines if line.startswith("ExecStart=")]
    return (
        bool(lines)
        and lines[0] == plan.text.splitlines()[0]  # pdnotes' header comment
        and len(command) == 1
        and "bridge serve" in command[0]
        and all(line in template or line.startswith(_VARYING) for line in lines)
    )


def edited_diff(plan: ServicePlan) -> str:
    """The change from the file at `plan.path` to `plan.text`, secrets masked (a user may have
    put `Environment=API_KEY=…` in their copy)."""
    import difflib

    current = fileio.read_text(plan.path) or ""
    lines = difflib.unified_diff(
        current.splitlines(keepends=True),
        plan.text.splitlines(keepends=True),
        fromfile=f"{plan.path} (now)",
        tofile=f"{plan.path} (pdnotes)",
    )
    return scrub("".join(line if line.endswith("\n") else line + "\n" for line in lines))


def install(
    plan: ServicePlan, *, start: bool = True, force: bool = False, runner: Runner = run_manager
) -> Outcome:
    """Write the service file (refusing to replace an edited one unless `force`, and keeping a
    copy of it then) and, with `start`, enable and start it."""
    with fileio.locked(plan.path):
        state = file_state(plan)
        backup = None
        if state == "edited":
            if not force:
                raise UnitEditedError(plan, edited_diff(plan))
            backup = backups.save(BACKUP_CLIENT, plan.path).data_path
        _remember_written(plan.path, plan.text)
        fileio.atomic_write(plan.path, plan.text)
    if start:
        _run_all(plan.enable, runner)
    return Outcome(state, backup)


def uninstall(plan: ServicePlan, *, stop: bool = True, runner: Runner = run_manager) -> Outcome:
    """Stop and remove the service, keeping a copy of a file pdnotes did not write as it is;
    state "absent" when there was nothing installed. The file is removed even when the service
    manager cannot be reached (no user systemd bus over ssh or in a container): what failed is
    in `not_stopped`, for the caller to say and exit 1 on."""
    with fileio.locked(plan.path):
        state = file_state(plan)
        if state == "absent":
            return Outcome(state)
        backup = backups.save(BACKUP_CLIENT, plan.path).data_path if state == "edited" else None
        failed = _run_each(plan.disable, runner) if stop else ()
        fileio.remove_file(plan.path)
        _remember_written(plan.path, None)
    return Outcome(state, backup, failed)


def _run_each(commands: tuple[tuple[str, ...], ...], runner: Runner) -> tuple[str, ...]:
    """Run every command, whatever the one before did; how each that failed failed."""
    failed: list[str] = []
    for command in commands:
        try:
            status = runner(command)
        except PdnotesError as exc:
            failed.append(exc.message)
            continue
        if status != 0:
            failed.append(f"`{shlex.join(command)}` exited with status {status}")
    return tuple(failed)


def _written_path() -> Path:
    return paths.pdnotes_home() / WRITTEN_NAME


def _written_digest(path: Path) -> str | None:
    """The digest of what pdnotes last wrote at `path`; None when unknown (a missing or damaged
    note counts as unknown, so the file is treated as edited: kept, never lost)."""
    try:
        text = fileio.read_text(_written_path())
        data = json.loads(text) if text else None
    except (PdnotesError, ValueError, RecursionError):
        return None
    if isinstance(data, dict) and data.get("path") == str(path.absolute()):
        digest = data.get("sha256")
        return digest if isinstance(digest, str) else None
    return None


def _remember_written(path: Path, text: str | None) -> None:
    """Note the digest of what is about to be written at `path` (before writing it: if this
    fails, nothing was changed); `None` forgets it (the file is being removed)."""
    note = _written_path()
    if text is None:
        with contextlib.suppress(PdnotesError):
            fileio.remove_file(note)
        return
    digest = backups.state_digest(text.encode("utf-8"))
    fileio.atomic_write(note, json.dumps({"path": str(path.absolute()), "sha256": digest}) + "\n")


def _run_all(commands: tuple[tuple[str, ...], ...], runner: Runner) -> None:
    for command in commands:
        status = runner(command)
        if status != 0:
            raise PdnotesError(
                f"`{shlex.join(command)}` exited with status {status}",
                fix="see its message above; the service file is written, start it by hand",
            )
