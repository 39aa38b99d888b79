"""The engine's one rule for tool calls (docs/engine.md "Tool calls"), deterministic:

1. The request offers a shell tool: by name `exec_command`, `shell`, `local_shell` (Codex) or
   `Bash` (Claude Code), in that order of preference, else the first function tool whose
   schema takes a `command` or `cmd`; and tool_choice is not "none".
2. The newest user-authored message (system / developer messages and user messages that hold
   only `<system-reminder>` blocks are skipped: clients append those after the prompt) has a
   line `run: <command>`: the answer is one call of that tool running exactly `<command>`,
   in the tool's own argument shape (`{"cmd": …}`; `{"command": …}`; an array-typed
   `command` gets `["bash", "-lc", …]`). The last such line wins.
3. The newest message is the result of a call of a shell tool: the answer is text holding the
   first non-empty line of the command's own output (after Codex's `Output:` header line when
   there is one; after Kimi Code's `Wall time: … seconds` line; the text after `Output: ` in
   Qwen Code's `Command: / Directory: / Output:` block; the `output` field when the result is
   Codex's older JSON form; inside Gemini CLI's `<untrusted_context>` wrapper, after its
   `Output: ` prefix).
Anything else: no plan, the engine answers as it always has.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from notes_cli.engine.core.responder import without_reminders
from notes_cli.wire.turn import Message, TextPart, ToolCallPart, ToolResultPart, ToolSpec, Turn

SHELL_TOOL_NAMES = ("exec_command", "shell", "local_shell", "Bash", "run_shell_command")
_RUN = re.compile(r"^\s*run:\s*(\S.*)$")  # on a line stripped at its end (linear)
_SKIPPED_ROLES = frozenset({"system", "developer"})


@dataclass(frozen=True)
class ToolCallPlan:
    """Call `tool` with `arguments` (JSON text, streamed as the answer's tokens)."""

    tool: str
    arguments: str
    command: str


@dataclass(frozen=True)
class TextPlan:
    """Answer with exactly this text."""

    text: str


def plan(turn: Turn) -> ToolCallPlan | TextPlan | None:
    if turn.tool_choice is not None and turn.tool_choice.mode == "none":
        return None
    shell = shell_tool(turn.tools)
    if shell is None:
        return None
    newest = _newest_authored(turn.messages)
    if newest is None:
        return None
    if newest.role == "tool":
        return _result_plan(turn.messages, newest, turn.tools)
    if newest.role != "user":
        return None
    command = run_command(user_text(newest))
    if command is None:
        return None
    return ToolCallPlan(shell.name, shell_arguments(shell, command), command)


def shell_tool(tools: list[ToolSpec]) -> ToolSpec | None:
    functions = [t for t in tools if t.kind == "function"]
    by_name = {t.name: t for t in functions}
    for name in SHELL_TOOL_NAMES:
        if name in by_name:
            return by_name[name]
    return next((t for t in functions if _command_key(t) is not None), None)


def _properties(tool: ToolSpec) -> dict[str, Any]:
    props = (tool.parameters or {}).get("properties")
    return props if isinstance(props, dict) else {}


def _command_key(tool: ToolSpec) -> str | None:
    props = _properties(tool)
    return next((k for k in ("cmd", "command") if k in props), None)


def shell_arguments(tool: ToolSpec, command: str) -> str:
    key = _command_key(tool) or "command"
    schema = _properties(tool).get(key)
    kind = schema.get("type") if isinstance(schema, dict) else None
    value: Any = ["bash", "-lc", command] if kind == "array" else command
    return json.dumps({key: value}, ensure_ascii=False, separators=(",", ":"))


def user_text(message: Message) -> str:
    text = "\n".join(p.text for p in message.parts if isinstance(p, TextPart))
    return without_reminders(text)


def run_command(text: str) -> str | None:
    """The command of the last `run: <command>` line, or None."""
    found = None
    for line in text.splitlines():
        match = _RUN.match(line.rstrip())
        if match:
            found = match.group(1)
    return found


def _newest_authored(messages: list[Message]) -> Message | None:
    for message in reversed(messages):
        if message.role in _SKIPPED_ROLES:
            continue
        if message.role == "user" and not user_text(message).strip():
            continue  # only reminders (or nothing): a client's note, not the user
        return message
    return None


def _result_plan(
    messages: list[Message], newest: Message, tools: list[ToolSpec]
) -> TextPlan | None:
    result = next((p for p in newest.parts if isinstance(p, ToolResultPart)), None)
    if result is None:
        return None
    call = _call_for(messages, result.call_id)
    offered = {t.name: t for t in tools if t.kind == "function"}
    tool = offered.get(call.name) if call is not None else None
    if tool is None or (tool.name not in SHELL_TOOL_NAMES and _command_key(tool) is None):
        return None
    line = first_output_line(result.output)
    if result.is_error:
        return TextPlan(f"The command failed: {line}" if line else "The command failed.")
    return TextPlan(f"The command printed: {line}" if line else "The command printed nothing.")


def _call_for(messages: list[Message], call_id: str) -> ToolCallPart | None:
    for message in reversed(messages):
        for part in message.parts:
            if isinstance(part, ToolCallPart) and part.call_id == call_id:
                return part
    return None


def first_output_line(output: str) -> str:
    """The first non-empty line of what the command printed. Codex's exec_command result
    starts with header lines (chunk id, wall time, exit code, token count) and then `Output:`;
    its older `shell` result is JSON with an `output` field; Qwen Code's run_shell_command
    result is `Command: …` / `Directory: …` / `Output: <first line>` / `Error: …` lines; Kimi
    Code's Bash result starts with a `Wall time: 0.119 seconds` line."""
    text = output
    if text.lstrip().startswith("{"):
        try:
            data = json.loads(text)
        except ValueError:
            data = None
        if isinstance(data, dict) and isinstance(data.get("output"), str):
            text = data["output"]
    lines = text.splitlines()
    if lines and _WALL_TIME.match(lines[0]):
        lines = lines[1:]
    marker = next((i for i, line in enumerate(lines) if line.strip() == "Output:"), None)
    if marker is not None:
        lines = lines[marker + 1 :]
    elif lines and lines[0].startswith("Command: "):
        inline = next((i for i, line in enumerate(lines) if line.startswith("Output: ")), None)
        if inline is not None:
            lines = [lines[inline].removeprefix("Output: "), *lines[inline + 1 :]]
    # Gemini CLI's run_shell_command: "<untrusted_context>", "Output: <first line>", …
    lines = [line for line in lines if line.strip() not in _UNTRUSTED_WRAPPER]
    if lines and lines[0].startswith(_SHELL_OUTPUT):
        first = lines[0][len(_SHELL_OUTPUT) :]
        if first.strip() == "(empty)":
            return ""
        rest = [line for line in lines[1:] if not _SHELL_TRAILER.match(line)]
        lines = [first, *rest]  # Gemini CLI's own lines (exit code, PGID) dropped
    return next((line.strip() for line in lines if line.strip()), "")


_WALL_TIME = re.compile(r"Wall time: [0-9.]+ seconds?$")
_UNTRUSTED_WRAPPER = frozenset({"<untrusted_context>", "</untrusted_context>"})
_SHELL_OUTPUT = "Output: "
_SHELL_TRAILER = re.compile(r"(Error|Exit Code|Signal|Background PIDs|Process Group PGID): ")
