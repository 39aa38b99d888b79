"""Claude Code's credential as it will actually send it (not as the user thinks it will):
`apiKeyHelper` wins over the variables, and a helper that fails still sends the request, with
an empty key.

Helpers run only when the user's own (user- or managed-scope) file defines them, or with
`--run-helpers`: a project file's helper is code from the repository. A run is bounded to 5 s
in its own process group, and its output is never shown, stored or logged: only whether it
exited 0 with non-empty output.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from notes_cli.clients.claude.setup import helper_variable
from notes_cli.doctor.findings import Finding
from notes_cli.doctor.registry import make

HELPER_TIMEOUT_S = 5.0
TRUSTED_HELPER_SCOPES = ("user", "managed")


@dataclass(frozen=True)
class HelperSource:
    command: str
    file: str
    scope: str
    line: int | None = None


def helper_findings(
    helper: HelperSource, env: Mapping[str, str], *, run_helpers: bool
) -> list[Finding]:
    """An `apiKeyHelper` that will fail: statically when it reads an unset variable; by running
    it when its file is the user's own (or `run_helpers`)."""
    where: dict[str, Any] = {"file": helper.file, "line": helper.line}
    variable = helper_variable(helper.command)
    if variable is not None:
        if env.get(variable):
            return []
        return [
            make(
                "api-key-helper-fails",
                "claude",
                f"apiKeyHelper `{helper.command}` reads ${variable}, which is not set here: "
                'Claude Code logs "apiKeyHelper failed" and sends an empty key',
                command=helper.command,
                detail=f"export {variable}, or point apiKeyHelper at the variable you use",
                **where,
            )
        ]
    if not (run_helpers or helper.scope in TRUSTED_HELPER_SCOPES):
        return []
    outcome = run_helper(helper.command, env)
    if outcome is None:
        return []
    return [
        make(
            "api-key-helper-fails",
            "claude",
            f"apiKeyHelper from {helper.file} {outcome}: Claude Code sends an empty key",
            command=helper.command,
            detail="run the helper yourself and fix it, or remove apiKeyHelper",
            **where,
        )
    ]


def run_helper(command: str, env: Mapping[str, str]) -> str | None:
    """Run `command` as Claude Code does (`sh -c`); None when it exits 0 with output, else what
    went wrong. The output is read and dropped, never returned."""
    try:
        proc = subprocess.Popen(
            ["/bin/sh", "-c", command],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=dict(env),
            start_new_session=True,
        )
    except OSError as exc:
        return f"could not start ({exc.strerror})"
    try:
        out, _ = proc.communicate(timeout=HELPER_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(OSError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        return f"did not finish within {HELPER_TIMEOUT_S:.0f} s"
    finally:
        with contextlib.suppress(OSError):
            os.killpg(proc.pid, signal.SIGKILL)
    if proc.returncode != 0:
        return f"exited {proc.returncode}"
    if not out.strip():
        return "exited 0 but printed nothing"
    return None


def side_by_side(
    helper: HelperSource | None, token: tuple[str, str], api_key: tuple[str, str]
) -> list[Finding]:
    """A helper next to a literal ANTHROPIC_AUTH_TOKEN / ANTHROPIC_API_KEY (left by a switch):
    the helper wins and the literal is dead weight, or the other way round after an edit."""
    if helper is None:
        return []
    others = [
        (name, src)
        for name, (value, src) in (("ANTHROPIC_AUTH_TOKEN", token), ("ANTHROPIC_API_KEY", api_key))
        if value and src != "environment"
    ]
    if not others:
        return []
    names = ", ".join(f"{name} (in {src})" for name, src in others)
    return [
        make(
            "claude-credential-conflict",
            "claude",
            f"apiKeyHelper (in {helper.file}) and {names} are both configured: Claude Code "
            "uses the helper's output as the key and ignores the other",
            keep="apiKeyHelper",
            drop=others[0][0],
            file=others[0][1],
        )
    ]
