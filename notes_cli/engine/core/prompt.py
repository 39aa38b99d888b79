"""A prompt as the bundled engine reads and charges it: each message's text, reasoning, tool
calls and tool results joined, counted by `tokens.count_tokens`.

One rule for the engine's `usage.input_tokens` and for `/v1/messages/count_tokens` on both the
engine and the bridge, so Claude Code's pre-flight count is the count the turn is charged.
"""

from __future__ import annotations

from collections.abc import Iterable

from notes_cli.engine.core.tokens import count_tokens
from notes_cli.wire.turn import Message, Part, ReasoningPart, TextPart, ToolCallPart, ToolResultPart


def message_text(message: Message) -> str:
    """All of a message the model reads, so the prompt's token count stays roughly honest."""
    return "\n".join(t for t in map(_part_text, message.parts) if t)


def prompt_tokens(messages: Iterable[Message]) -> int:
    return sum(count_tokens(message_text(m)) for m in messages)


def _part_text(part: Part) -> str:
    if isinstance(part, (TextPart, ReasoningPart)):
        return part.text
    if isinstance(part, ToolCallPart):
        return f"{part.name}({part.arguments})"
    if isinstance(part, ToolResultPart):
        return part.output
    return ""
