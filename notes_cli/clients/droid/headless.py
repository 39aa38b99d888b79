"""One headless turn of the real Factory Droid (`clients.headless.Headless`), for the interop
tests and the request-shape recorder.

    droid exec -m <custom id> -o stream-json --skip-permissions-unsafe PROMPT

`-m` names the custom model `pdnotes config droid` selected (the top-level `model` of the
settings.json it wrote): without one Droid uses Factory's own model and asks for a login.
`--skip-permissions-unsafe`: in exec's default (read-only) mode Droid's Execute tool requires
`riskLevel` and `riskLevelReason`, which the bundled engine's shell call does not send, so Droid
rejects the call ("missing required parameters"); with the switch the tool takes
`{summary, command}` and runs the call (docs/connect.md, Factory Droid).
FACTORY_TELEMETRY_INGEST_BASE_URL points its telemetry at a closed loopback port (it posts to
telemetry.factory.ai otherwise).

`-o stream-json` prints JSON lines: `tool_call` (toolName, parameters.command), `tool_result`
(isError, value), `message` (role assistant, text) and a last `completion` (finalText), or
`error` events. Droid exits 0 even when it rejected a tool call: a rejected call is a
`tool_result` with isError true, which `turn` reports as a call with no output.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from notes_cli.clients.headless import Command, ToolCall, Turn

TELEMETRY_OFF = "http://127.0.0.1:9"
"""Where Droid posts telemetry in a test: a closed port on this machine."""
_EXIT_LINE = re.compile(r"\n*\[Process exited with code -?\d+\]\s*$")


class DroidHeadless:
    def command(self, binary: Path, home: Path, prompt: str) -> Command:
        from notes_cli.clients.droid import config

        layers = config.read_layers(home / ".factory")
        model, _ = config.selected(layers)
        argv = [str(binary), "exec"]
        if model:
            argv += ["-m", model]
        argv += ["-o", "stream-json", "--skip-permissions-unsafe", prompt]
        env = {"HOME": str(home), "FACTORY_TELEMETRY_INGEST_BASE_URL": TELEMETRY_OFF}
        work = home / "work"  # Droid reads the project's .factory/ from here: an empty folder
        work.mkdir(parents=True, exist_ok=True)
        return Command(argv, env, work)

    def turn(self, stdout: str, stderr: str) -> Turn:
        events = _events(stdout)
        errors = [str(e.get("message")) for e in events if e.get("type") == "error"]
        calls: list[ToolCall] = []
        pending: dict[str, int] = {}
        texts: list[str] = []
        final: str | None = None
        for event in events:
            kind = event.get("type")
            if kind == "tool_call":
                parameters = event.get("parameters")
                command = parameters.get("command") if isinstance(parameters, dict) else None
                calls.append(
                    ToolCall(
                        str(event.get("toolName")),
                        command if isinstance(command, str) else None,
                        None,
                    )
                )
                pending[str(event.get("id") or event.get("toolId") or len(calls))] = len(calls) - 1
                texts = []  # the answer is what came after the calls
            elif kind == "tool_result" and calls:
                index = pending.pop(str(event.get("id") or event.get("toolId")), len(calls) - 1)
                call = calls[index]
                value = event.get("value")
                output = None
                if event.get("isError") is not True and isinstance(value, str):
                    output = _EXIT_LINE.sub("\n", value)
                calls[index] = ToolCall(call.name, call.command, output)
            elif kind == "message" and event.get("role") == "assistant":
                text = event.get("text")
                if isinstance(text, str) and text:
                    texts.append(text)
            elif kind == "completion":
                text = event.get("finalText")
                final = text if isinstance(text, str) else None
        if final is None and not texts:
            why = "; ".join(errors) or (stderr.strip()[-300:] or "no completion event")
            raise ValueError(f"Droid printed no turn: {why}")
        if final and final not in texts:
            texts.append(final)
        return Turn(texts, calls)


def _events(stdout: str) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    for line in stdout.splitlines():
        line = line.strip()
        if not line.startswith("{"):
            continue
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if isinstance(event, dict):
            found.append(event)
    return found


HEADLESS = DroidHeadless()
