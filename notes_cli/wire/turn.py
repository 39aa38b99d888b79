"""The protocol-neutral turn: what one request asks for and what one answer says.

Every protocol module (`chat`, `responses`, `anthropic`) converts its own JSON to and from
these types once; nothing converts one protocol into another directly. The types are plain
dataclasses with no behaviour beyond small read helpers, so they compare by value (the
property tests rely on that) and cost nothing to build on the hot path.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

Role = Literal["system", "developer", "user", "assistant", "tool"]
ROLES: frozenset[str] = frozenset({"system", "developer", "user", "assistant", "tool"})

# Why an answer ended, in one vocabulary; each protocol maps its own words onto these
# (chat `stop`/`length`/`tool_calls`/`content_filter`, Responses `completed`/`incomplete`,
# Anthropic `end_turn`/`max_tokens`/`tool_use`/`refusal`/`stop_sequence`).
FinishReason = Literal["stop", "length", "tool_calls", "content_filter", "error"]
FINISH_REASONS: frozenset[str] = frozenset(
    {"stop", "length", "tool_calls", "content_filter", "error"}
)


@dataclass(frozen=True, slots=True)
class TextPart:
    text: str


@dataclass(frozen=True, slots=True)
class ImagePart:
    """An image by URL (`https://…` or a `data:` URL carrying base64 bytes)."""

    url: str
    detail: str | None = None


@dataclass(frozen=True, slots=True)
class ToolCallPart:
    """The model asks to call a tool. `arguments` is the JSON text as streamed (chat and
    Responses carry a string; Anthropic's `input` object is serialised compactly). `kind`
    is "function", or "custom" for Responses' freeform tools whose input is plain text."""

    call_id: str
    name: str
    arguments: str
    kind: str = "function"


@dataclass(frozen=True, slots=True)
class ToolResultPart:
    """What a tool returned, answering the call with the same `call_id`."""

    call_id: str
    output: str
    is_error: bool = False


@dataclass(frozen=True, slots=True)
class ReasoningPart:
    """The model's visible reasoning. `signature` is Anthropic's thinking signature or
    Responses' `encrypted_content`, passed back verbatim on the next turn."""

    text: str
    signature: str | None = None


Part = TextPart | ImagePart | ToolCallPart | ToolResultPart | ReasoningPart


@dataclass(frozen=True, slots=True)
class Message:
    role: Role
    parts: list[Part] = field(default_factory=list)

    @property
    def text(self) -> str:
        """The text parts joined by newlines (reasoning, images and tool parts left out)."""
        return "\n".join(p.text for p in self.parts if isinstance(p, TextPart) and p.text)


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """A tool the model may call. `parameters` is the JSON schema of a function tool's
    arguments (Anthropic's `input_schema`). `kind` is "function", "custom" (freeform text
    input) or another protocol's own tool type (`namespace`, `web_search`, `local_shell`, …);
    those keep the original object in `raw`, so a server can pass them on or name them when it
    drops them."""

    name: str
    description: str = ""
    parameters: dict[str, Any] | None = None
    kind: str = "function"
    raw: dict[str, Any] | None = None


@dataclass(frozen=True, slots=True)
class ToolChoice:
    """`mode` "auto", "none", "required" (any tool), or "tool" (the one named)."""

    mode: Literal["auto", "none", "required", "tool"] = "auto"
    name: str | None = None


@dataclass(frozen=True, slots=True)
class Sampling:
    max_tokens: int | None = None
    temperature: float | None = None
    top_p: float | None = None
    stop: tuple[str, ...] = ()
    seed: int | None = None
    presence_penalty: float | None = None
    frequency_penalty: float | None = None
    top_k: int | None = None


@dataclass(frozen=True, slots=True)
class Reasoning:
    """Reasoning asked for: an effort word (OpenAI: minimal/low/medium/high/…) and/or a token
    budget (Anthropic's `thinking.budget_tokens`); `summary` is Responses' summary mode."""

    effort: str | None = None
    budget_tokens: int | None = None
    summary: str | None = None


@dataclass(frozen=True, slots=True)
class Turn:
    """One request. `extra` holds protocol-specific keys a codec read but the neutral turn has
    no field for (`previous_response_id`, `store`, `metadata`, …), under their own names."""

    model: str
    messages: list[Message]
    tools: list[ToolSpec] = field(default_factory=list)
    tool_choice: ToolChoice | None = None
    sampling: Sampling = field(default_factory=Sampling)
    stream: bool = False
    reasoning: Reasoning | None = None
    parallel_tool_calls: bool | None = None
    include_usage: bool = False
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Usage:
    """Token counts. `extra` carries additions a server puts in its usage object (the
    engine's `pd_timing`), merged into each protocol's usage JSON as they are."""

    input_tokens: int = 0
    output_tokens: int = 0
    reasoning_tokens: int = 0
    cached_input_tokens: int = 0
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Reply:
    """One whole (non-streamed) answer; `parts` are the assistant's output in order."""

    id: str
    model: str
    parts: list[Part]
    finish: FinishReason = "stop"
    usage: Usage | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def text(self) -> str:
        return "".join(p.text for p in self.parts if isinstance(p, TextPart))

    @property
    def tool_calls(self) -> list[ToolCallPart]:
        return [p for p in self.parts if isinstance(p, ToolCallPart)]
