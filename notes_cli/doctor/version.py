"""The installed clients' versions, for version-dependent findings and shapes.

`<client> --version` runs only when the client is on PATH (or `$PDNOTES_<CLIENT>_BIN` names one),
bounded to 5 s in its own process group. Nothing is cached between runs. None means "unknown";
the checks then assume the newest behaviour.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import subprocess

TIMEOUT_S = 5.0
# Starts only where a run of digits starts, each part at most 9 digits: `(\d+)\.` from every
# digit of a long run of them was quadratic, and int() refuses 5,000-digit parts.
_VERSION = re.compile(r"(?<!\d)(\d{1,9}+)\.(\d{1,9}+)\.(\d{1,9}+)")


def installed_version(name: str, override: str) -> tuple[int, int, int] | None:
    """`<name> --version` of the binary `$override` names or PATH finds; None when absent."""
    binary = os.environ.get(override) or shutil.which(name)
    if not binary or not os.access(binary, os.X_OK):
        return None
    try:
        proc = subprocess.Popen(
            [binary, "--version"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
    except OSError:
        return None
    try:
        out, err = proc.communicate(timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        _kill_group(proc)
        return None
    except BaseException:  # interrupted (Ctrl-C, SIGTERM): the child's session ends with us
        _kill_group(proc)
        raise
    # stdout first; some clients (Pi) print their version on stderr
    return parse_version(out.decode("utf-8", "replace")) or parse_version(
        err.decode("utf-8", "replace")
    )


def parse_version(text: str) -> tuple[int, int, int] | None:
    """`codex-cli 0.171.0` -> (0, 171, 0)."""
    match = _VERSION.search(text)
    return (int(match[1]), int(match[2]), int(match[3])) if match else None


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(OSError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=TIMEOUT_S)
    for pipe in (proc.stdout, proc.stderr):
        if pipe is not None:
            pipe.close()
