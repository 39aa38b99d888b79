"""One wire layer for the four protocols pdnotes speaks: chat completions, the Responses API,
Anthropic Messages and Google's Gemini `generateContent`, each in both directions, around one
protocol-neutral turn.

Users: the engine's routes (`engine/http/dialects.py`), the gateway client (request bodies in
`gateway/_requests.build_body`, every answer read in `gateway/_reader.py` with the decoders
below), the bridge. No translator per pair of protocols: each
protocol module converts to and from the neutral types once, so a Responses request reaches a
chat upstream as `responses.decode_request` → `Turn` → `chat.encode_request`, and the chat
stream comes back as `chat.StreamDecoder` → neutral events → `responses.StreamEncoder`.

Neutral types (`notes_cli.wire.turn`)
    Turn(model, messages, tools, tool_choice, sampling, stream, reasoning,
         parallel_tool_calls, include_usage, extra)
    Message(role: system|developer|user|assistant|tool, parts)
    parts: TextPart(text) · ImagePart(url, detail) · ToolCallPart(call_id, name, arguments:
           str JSON, kind) · ToolResultPart(call_id, output, is_error) ·
           ReasoningPart(text, signature)
    ToolSpec(name, description, parameters, kind: "function" | "custom" | other, raw)
    ToolChoice(mode: auto|none|required|tool, name) · Sampling(max_tokens, temperature,
           top_p, stop, seed, presence_penalty, frequency_penalty, top_k)
    Reasoning(effort, budget_tokens, summary) · Usage(input_tokens, output_tokens,
           reasoning_tokens, cached_input_tokens, extra)
    Reply(id, model, parts, finish, usage, extra)
    FinishReason = "stop" | "length" | "tool_calls" | "content_filter" | "error"

Stream vocabulary (`notes_cli.wire.events`)
    StartEvent(id, model) · TextDelta(text) · ReasoningDelta(text, signature) ·
    ToolCallBegin(index, call_id, name, kind) · ToolCallDelta(index, arguments) ·
    ToolCallEnd(index) · UsageEvent(usage) · FinishEvent(finish) ·
    ErrorEvent(message, status, code);  `Event` is their union.

Errors (`notes_cli.wire.errors`)
    WireError(status, kind, message, param=, code=, headers=): decoders raise it (400 naming
    the param, as the real APIs do: `temperature: "hot"`, `n: -1`, `role: "god"`, NaN, a lone
    surrogate); servers raise it for their own refusals; `encode_error` renders it.

Per protocol (`notes_cli.wire.chat`, `.responses`, `.anthropic`, `.gemini`; the API in
`.codec`)
    Each module satisfies the `codec.Codec` Protocol (mypy checks it: `codec.CODECS` maps the
    protocol names to the modules): requests, replies, errors and usage both ways, `new_id`,
    `dropped_tools`, and its stream classes, typed by `codec.StreamEncoder` (server side,
    bytes out; `.text` is the per-token hot path) and `codec.StreamDecoder` (client side, one
    SSE event in). Gemini's model and stream mode are in the URL: its `decode_request` takes
    them as `model=` / `stream=` and `request_path(turn)` gives the path; its
    `JsonArrayStreamEncoder` is the stream without `?alt=sse`, `decode_count_request` reads a
    `:countTokens` body. Beside the Protocols: `encode_models` (chat, anthropic, gemini) renders the
    `GET /models` list; chat's decoder counts `.malformed` events (not JSON objects,
    skipped); Responses' decoder says `.item_text_seen` (a finished message item carried
    output_text: what Codex shows, deltas alone it does not), its encoder can `.prime()`.
    Decoders accept upstream variants (DeepSeek/Qwen/GLM `reasoning_content` / `reasoning`
    deltas, whole items without deltas, Responses deltas naming no item, text only in
    `response.completed`, usage-only chunks), and read wrong types (a string where an object
    belongs, a list as an index) as junk: they never raise on what a server sends.

JSON (`notes_cli.wire.fastjson`): `loads(data)` / `dumps(value) -> bytes`, json's answers
through msgspec where it gives the same ones (the codecs' per-event cost; the bridge uses them).

Tool kinds: a function tool keeps its JSON schema in `parameters`; Responses custom/freeform
tools are kind "custom" (their input is raw text, not JSON); any other type (`namespace`,
`web_search`, `local_shell`, Anthropic server tools like `bash_20250124`) keeps its object in
`ToolSpec.raw` and `kind` = its type, so a bridge can map or name what it drops.

Imports nothing of pdnotes: every other layer uses it, so it must not import any of them.
"""

from __future__ import annotations

from notes_cli.wire.errors import WireError, invalid
from notes_cli.wire.events import (
    ErrorEvent,
    Event,
    FinishEvent,
    ReasoningDelta,
    StartEvent,
    TextDelta,
    ToolCallBegin,
    ToolCallDelta,
    ToolCallEnd,
    UsageEvent,
)
from notes_cli.wire.turn import (
    FinishReason,
    ImagePart,
    Message,
    Part,
    Reasoning,
    ReasoningPart,
    Reply,
    Role,
    Sampling,
    TextPart,
    ToolCallPart,
    ToolChoice,
    ToolResultPart,
    ToolSpec,
    Turn,
    Usage,
)

__all__ = [
    "ErrorEvent",
    "Event",
    "FinishEvent",
    "FinishReason",
    "ImagePart",
    "Message",
    "Part",
    "Reasoning",
    "ReasoningDelta",
    "ReasoningPart",
    "Reply",
    "Role",
    "Sampling",
    "StartEvent",
    "TextDelta",
    "TextPart",
    "ToolCallBegin",
    "ToolCallDelta",
    "ToolCallEnd",
    "ToolCallPart",
    "ToolChoice",
    "ToolResultPart",
    "ToolSpec",
    "Turn",
    "Usage",
    "UsageEvent",
    "WireError",
    "invalid",
]
