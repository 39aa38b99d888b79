"""Pi's turn without a terminal (`clients.headless`): `pi -p --offline --no-session --mode json
PROMPT`, after `pdnotes config pi` wrote models.json and settings.json under HOME/.pi/agent.

`--offline` (PI_OFFLINE=1) turns off the update check, the package checks and telemetry, and
`--no-session` keeps the session off disk. `--mode json` prints one JSON event a line (Pi 0.73):
an assistant `message_end` per model reply (`message.content`: `text` and `toolCall` parts,
`stopReason`, `errorMessage` when the call failed), `tool_execution_start` (`toolName`,
`args.command` for `bash`) and `tool_execution_end` (`result.content` text, `isError`) per tool
call Pi ran, and `agent_end` once the turn is over. Pi exits 0 either way.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from notes_cli.clients.headless import Command, ToolCall, Turn

OFFLINE = {"PI_OFFLINE": "1", "PI_SKIP_VERSION_CHECK": "1"}
"""What `--offline` sets, set here too so a `pi` that reads them before its flags stays home."""


class PiHeadless:
    def command(self, binary: Path, home: Path, prompt: str) -> Command:
        work = home / "work"
        work.mkdir(parents=True, exist_ok=True)
        argv = [str(binary), "-p", "--offline", "--no-session", "--mode", "json", prompt]
        return Command(argv, {"HOME": str(home), **OFFLINE}, work)

    def turn(self, stdout: str, stderr: str) -> Turn:
        texts: list[str] = []
        calls: list[ToolCall] = []
        pending: dict[str, tuple[str, str | None]] = {}
        ended = False
        for line in stdout.splitlines():
            event = _event(line)
            kind = event.get("type")
            if kind == "message_end":
                message = _obj(event.get("message"))
                if message.get("role") != "assistant":
                    continue
                if message.get("stopReason") == "error":
                    raise ValueError(f"Pi's model call failed: {message.get('errorMessage')}")
                texts += [
                    str(part.get("text"))
                    for part in _list(message.get("content"))
                    if part.get("type") == "text" and part.get("text")
                ]
            elif kind == "tool_execution_start":
                command = _obj(event.get("args")).get("command")
                name = str(event.get("toolName"))
                pending[str(event.get("toolCallId"))] = (name, _str(command))
                texts.clear()  # the answer is what follows the calls
            elif kind == "tool_execution_end":
                name, command = pending.pop(
                    str(event.get("toolCallId")), (str(event.get("toolName")), None)
                )
                parts = _list(_obj(event.get("result")).get("content"))
                output = "".join(str(p.get("text", "")) for p in parts if p.get("type") == "text")
                calls.append(ToolCall(name, command, output))
            elif kind == "agent_end":
                ended = True
        if not ended:
            raise ValueError(f"Pi printed no finished turn (stderr: {stderr.strip()[-500:]!r})")
        return Turn(texts, calls)


def _event(line: str) -> dict[str, Any]:
    try:
        value = json.loads(line)
    except ValueError:
        return {}  # a line that is not an event (a warning Pi printed)
    return value if isinstance(value, dict) else {}


def _obj(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _list(value: object) -> list[dict[str, Any]]:
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []


def _str(value: object) -> str | None:
    return value if isinstance(value, str) else None


HEADLESS = PiHeadless()
