"""One turn of the real Copilot CLI without a terminal (`clients.headless.Headless`).

`copilot -p PROMPT --allow-all-tools --output-format json` (tools run without asking, which
prompt mode requires) with the variables `pdnotes config copilot` wrote into
$HOME/.copilot/pdnotes.env, plus what keeps it off the network: COPILOT_OFFLINE=true (no GitHub
login, telemetry, web tools or GitHub MCP server) and no auto-update. Its first run unpacks its
JavaScript package (235 MB) into $COPILOT_CACHE_HOME/pkg: that stays in HOME, so it goes with
the throwaway HOME.

It prints JSONL events: `tool.execution_start` (`data.toolName`, `data.arguments.command`),
`tool.execution_complete` (`data.toolCallId`, `data.success`, `data.result.content`),
`assistant.message` (`data.content`, empty when the message only asks for tools) and a last
`result` (`exitCode`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from notes_cli.clients.headless import Command, ToolCall, Turn


class CopilotHeadless:
    def command(self, binary: Path, home: Path, prompt: str) -> Command:
        from notes_cli.clients.copilot import config

        copilot_home = home / ".copilot"
        written = config.read_env_file(config.env_file(copilot_home))
        env = dict(written.values) if written is not None else {}
        env.update(
            {
                "HOME": str(home),
                "COPILOT_HOME": str(copilot_home),
                "COPILOT_CACHE_HOME": str(home / ".cache" / "copilot"),
                "XDG_CACHE_HOME": str(home / ".cache"),
                "COPILOT_OFFLINE": "true",
                "COPILOT_AUTO_UPDATE": "false",
                "NO_COLOR": "1",
            }
        )
        cwd = home / "work"
        cwd.mkdir(parents=True, exist_ok=True)
        argv = [str(binary), "-p", prompt, "--allow-all-tools", "--output-format", "json"]
        argv += ["--no-auto-update", "--disable-client-telemetry"]
        return Command(argv, env, cwd)

    def turn(self, stdout: str, stderr: str) -> Turn:
        texts: list[str] = []
        calls: dict[str, tuple[str, str | None]] = {}
        outputs: dict[str, str | None] = {}
        order: list[str] = []
        for line in stdout.splitlines():
            event = _event(line)
            if event is None:
                continue
            kind, data = event.get("type"), event.get("data")
            data = data if isinstance(data, dict) else {}
            if kind == "tool.execution_start":
                call_id = str(data.get("toolCallId") or len(order))
                args = data.get("arguments")
                command = args.get("command") if isinstance(args, dict) else None
                shell = command if isinstance(command, str) else None
                calls[call_id] = (str(data.get("toolName")), shell)
                order.append(call_id)
            elif kind == "tool.execution_complete":
                call_id = str(data.get("toolCallId") or (order[-1] if order else ""))
                result = data.get("result")
                content = result.get("content") if isinstance(result, dict) else None
                outputs[call_id] = content if isinstance(content, str) else None
            elif kind == "assistant.message":
                content = data.get("content")
                if isinstance(content, str) and content.strip():
                    texts.append(content)
        if not texts and not order:
            raise ValueError(f"Copilot CLI printed no turn: {(stderr or stdout)[-500:]!r}")
        tool_calls = [ToolCall(calls[i][0], calls[i][1], outputs.get(i)) for i in order]
        return Turn(texts, tool_calls)


def _event(line: str) -> dict[str, Any] | None:
    try:
        event = json.loads(line)
    except ValueError:
        return None
    return event if isinstance(event, dict) else None


HEADLESS = CopilotHeadless()
