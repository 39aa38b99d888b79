"""Anthropic Messages (`POST /v1/messages`, as Claude Code speaks it) ⇄ the neutral turn.

`system` (a string or text blocks) becomes a leading system message; Claude Code's
`{"role": "system"}` entries inside `messages` are accepted as system messages. A user
message's `tool_result` blocks become one `tool` message each, in order, around the user's own
blocks; encoding joins a run of tool messages (and a user message right after them) back into
one user message. `tool_use.input` objects are the neutral call's `arguments` as compact JSON.
Thinking blocks are reasoning parts (their signature kept); `redacted_thinking` is a reasoning
part with empty text whose signature is the redacted data.
"""

from __future__ import annotations

import json
import re
import secrets
import time
from typing import Any

from notes_cli.wire import _fields as f
from notes_cli.wire import fastjson
from notes_cli.wire.errors import KIND_STATUS, WireError, invalid, kind_for_status
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
    Sampling,
    TextPart,
    ToolCallPart,
    ToolChoice,
    ToolResultPart,
    ToolSpec,
    Turn,
    Usage,
)

_ROLES = frozenset({"user", "assistant", "system"})
_BLOCKS = frozenset(
    {
        "text", "image", "document", "tool_use", "tool_result", "thinking",
        "redacted_thinking", "server_tool_use", "web_search_tool_result", "search_result",
        "container_upload", "mcp_tool_use", "mcp_tool_result",
    }
)  # fmt: skip
_HANDLED = frozenset(
    {
        "model", "messages", "system", "max_tokens", "temperature", "top_p", "top_k",
        "stop_sequences", "stream", "tools", "tool_choice", "thinking", "output_config",
    }
)  # fmt: skip
_EFFORTS = frozenset({"low", "medium", "high", "max", "xhigh"})
_DATA_URL = re.compile(r"^data:([^;,]+);base64,(.*)$", re.DOTALL)
_FINISH_IN: dict[str, FinishReason] = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "pause_turn": "stop",
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
    "tool_use": "tool_calls",
    "refusal": "content_filter",
}
_FINISH_OUT: dict[str, str] = {
    "stop": "end_turn",
    "length": "max_tokens",
    "tool_calls": "tool_use",
    "content_filter": "refusal",
    "error": "end_turn",
}
_ERROR_TYPES: dict[str, str] = {
    "invalid_request": "invalid_request_error",
    "context_length": "invalid_request_error",
    "authentication": "authentication_error",
    "permission": "permission_error",
    "not_found": "not_found_error",
    "model_not_found": "not_found_error",
    "method_not_allowed": "invalid_request_error",
    "request_too_large": "request_too_large",
    "rate_limit": "rate_limit_error",
    "server_error": "api_error",
    "bad_gateway": "api_error",
    "overloaded": "overloaded_error",
}
_KINDS_IN: dict[str, Any] = {
    "invalid_request_error": "invalid_request",
    "authentication_error": "authentication",
    "permission_error": "permission",
    "not_found_error": "not_found",
    "request_too_large": "request_too_large",
    "rate_limit_error": "rate_limit",
    "api_error": "server_error",
    "overloaded_error": "overloaded",
}


def new_id() -> str:
    return f"msg_{secrets.token_hex(12)}"


def _param(*parts: Any) -> str:
    return ".".join(str(p) for p in parts)


# --------------------------------------------------------------------------- requests


def decode_request(body: bytes | str | dict[str, Any]) -> Turn:
    """A Messages request body → Turn; WireError (400 naming the param) on bad input, its
    message starting with the param as Anthropic's do (`messages.0.role: …`)."""
    try:
        return _decode_request(body)
    except WireError as error:
        if error.param and not error.message.startswith(error.param):
            error.message = f"{error.param}: {error.message}"
            error.args = (error.message,)
        raise


def _decode_request(body: bytes | str | dict[str, Any]) -> Turn:
    data = f.decode_json_object(body)
    model = f.require_str(data, "model")
    messages: list[Message] = []
    system = data.get("system")
    if system is not None and system != "" and system != []:
        messages.append(Message("system", _decode_system(system)))
    raw_messages = data.get("messages")
    if not isinstance(raw_messages, list) or not raw_messages:
        raise invalid("messages: must be a non-empty array", param="messages")
    for index, raw in enumerate(raw_messages):
        messages.extend(_decode_message(raw, index))
    tools = [_decode_tool(t, i) for i, t in enumerate(f.optional_list(data, "tools"))]
    choice, parallel = _decode_tool_choice(data.get("tool_choice"))
    sampling = Sampling(
        max_tokens=f.optional_int(data, "max_tokens", low=1),
        temperature=f.optional_number(data, "temperature", low=0, high=1),
        top_p=f.optional_number(data, "top_p", low=0, high=1),
        top_k=f.optional_int(data, "top_k", low=0),
        stop=_stop_sequences(data),
    )
    f.optional_object(data, "metadata")
    return Turn(
        model=model,
        messages=messages,
        tools=tools,
        tool_choice=choice,
        sampling=sampling,
        stream=bool(f.optional_bool(data, "stream")),
        reasoning=_decode_reasoning(data),
        parallel_tool_calls=parallel,
        include_usage=True,
        extra={k: v for k, v in data.items() if k not in _HANDLED},
    )


def _stop_sequences(data: dict[str, Any]) -> tuple[str, ...]:
    value = data.get("stop_sequences")
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(s, str) for s in value):
        raise invalid("stop_sequences: must be an array of strings", param="stop_sequences")
    return tuple(value)


def _decode_reasoning(data: dict[str, Any]) -> Reasoning | None:
    thinking = f.optional_object(data, "thinking")
    budget = None
    if thinking is not None:
        kind = thinking.get("type")
        if kind not in ("enabled", "disabled", "adaptive"):
            raise invalid(
                "thinking.type: must be 'enabled', 'disabled' or 'adaptive'",
                param="thinking.type",
            )
        if kind == "enabled":
            where = "thinking.budget_tokens"
            budget = f.optional_int(thinking, "budget_tokens", low=1, param=where)
    output = f.optional_object(data, "output_config") or {}
    effort = f.optional_enum(output, "effort", _EFFORTS, param="output_config.effort")
    if budget is None and effort is None:
        return None
    return Reasoning(effort=effort, budget_tokens=budget)


def _decode_system(system: Any) -> list[Part]:
    if isinstance(system, str):
        return [TextPart(system)]
    if not isinstance(system, list):
        raise invalid("system: must be a string or an array of text blocks", param="system")
    parts: list[Part] = []
    for index, raw in enumerate(system):
        block = f.require_object(raw, _param("system", index))
        text = block.get("text")
        if block.get("type") != "text" or not isinstance(text, str):
            raise invalid(f"system.{index}: must be a text block", param=_param("system", index))
        parts.append(TextPart(text))
    return parts


def _decode_message(raw: Any, index: int) -> list[Message]:
    where = _param("messages", index)
    message = f.require_object(raw, where)
    role = message.get("role")
    if role not in _ROLES:
        raise invalid(
            f"{where}.role: Input should be 'user' or 'assistant' (got {role!r})",
            param=f"{where}.role",
        )
    content = message.get("content")
    if isinstance(content, str):
        return [Message(role, [TextPart(content)] if content else [])]
    if not isinstance(content, list):
        raise invalid(
            f"{where}.content: must be a string or an array of blocks", param=f"{where}.content"
        )
    out: list[Message] = []
    own: list[Part] = []
    for block_index, raw_block in enumerate(content):
        at = _param(where, "content", block_index)
        block = f.require_object(raw_block, at)
        kind = block.get("type")
        if kind not in _BLOCKS:
            raise invalid(f"{at}.type: unknown content block type {kind!r}", param=f"{at}.type")
        if kind == "tool_result":
            if own:
                out.append(Message(role, own))
                own = []
            out.append(Message("tool", [_decode_result(block, at)]))
            continue
        part = _decode_block(block, kind, at)
        if part is not None:
            own.append(part)
    if own or not out:
        out.append(Message(role, own))
    return out


def _decode_block(block: dict[str, Any], kind: str, at: str) -> Part | None:
    if kind == "text":
        text = block.get("text")
        if not isinstance(text, str):
            raise invalid(f"{at}.text: must be a string", param=f"{at}.text")
        return TextPart(text)
    if kind == "image":
        source = block.get("source") or {}
        if source.get("type") == "base64":
            url = f"data:{source.get('media_type')};base64,{source.get('data')}"
            return ImagePart(url)
        if isinstance(source.get("url"), str):
            return ImagePart(source["url"])
        return None
    if kind == "tool_use":
        call_id = f.require_str(block, "id", param=f"{at}.id")
        name = f.require_str(block, "name", param=f"{at}.name")
        tool_input = block.get("input", {})
        if not isinstance(tool_input, dict):
            raise invalid(f"{at}.input: must be an object", param=f"{at}.input")
        return ToolCallPart(call_id, name, f.json_text(tool_input))
    if kind == "thinking":
        thinking = block.get("thinking")
        if not isinstance(thinking, str):
            raise invalid(f"{at}.thinking: must be a string", param=f"{at}.thinking")
        signature = block.get("signature")
        return ReasoningPart(thinking, signature if isinstance(signature, str) else None)
    if kind == "redacted_thinking":
        data = block.get("data")
        return ReasoningPart("", data if isinstance(data, str) else None)
    return None  # documents, server tool blocks: nothing the neutral turn holds


def _decode_result(block: dict[str, Any], at: str) -> ToolResultPart:
    call_id = f.require_str(block, "tool_use_id", param=f"{at}.tool_use_id")
    content = block.get("content", "")
    if isinstance(content, list):
        text = "\n".join(
            b["text"] for b in content if isinstance(b, dict) and isinstance(b.get("text"), str)
        )
    elif isinstance(content, str):
        text = content
    else:
        raise invalid(f"{at}.content: must be a string or an array", param=f"{at}.content")
    is_error = f.optional_bool(block, "is_error", param=f"{at}.is_error")
    return ToolResultPart(call_id, text, bool(is_error))


def _decode_tool(raw: Any, index: int) -> ToolSpec:
    at = _param("tools", index)
    tool = f.require_object(raw, at)
    kind = tool.get("type")
    name = f.require_str(tool, "name", param=f"{at}.name")
    if kind in (None, "custom"):
        schema = tool.get("input_schema")
        if not isinstance(schema, dict):
            raise invalid(f"{at}.input_schema: Field required", param=f"{at}.input_schema")
        description = f.optional_str(tool, "description", param=f"{at}.description")
        return ToolSpec(name, description or "", schema)
    if not isinstance(kind, str):
        raise invalid(f"{at}.type: must be a string", param=f"{at}.type")
    return ToolSpec(name, "", None, kind, raw=tool)  # server tools: bash_20250124, …


def _decode_tool_choice(value: Any) -> tuple[ToolChoice | None, bool | None]:
    if value is None:
        return None, None
    if not isinstance(value, dict):
        raise invalid("tool_choice: must be an object", param="tool_choice")
    kind = value.get("type")
    disable = f.optional_bool(value, "disable_parallel_tool_use", param="tool_choice")
    parallel = None if disable is None else not disable
    if kind in ("auto", "none"):
        return ToolChoice(kind), parallel
    if kind == "any":
        return ToolChoice("required"), parallel
    if kind == "tool":
        name = f.require_str(value, "name", param="tool_choice.name")
        return ToolChoice("tool", name), parallel
    raise invalid(
        "tool_choice.type: must be 'auto', 'any', 'tool' or 'none'", param="tool_choice.type"
    )


def encode_request(turn: Turn) -> dict[str, Any]:
    """Turn → a Messages request body (JSON-ready). `max_tokens` is required by the API:
    4096 when the turn says nothing."""
    messages = list(turn.messages)
    body: dict[str, Any] = {"model": turn.model}
    if messages and messages[0].role in ("system", "developer"):
        body["system"] = [
            {"type": "text", "text": p.text} for p in messages[0].parts if isinstance(p, TextPart)
        ]
        messages = messages[1:]
    body["messages"] = _encode_messages(messages)
    s = turn.sampling
    body["max_tokens"] = s.max_tokens if s.max_tokens is not None else 4096
    for key, value in (("temperature", s.temperature), ("top_p", s.top_p), ("top_k", s.top_k)):
        if value is not None:
            body[key] = value
    if s.stop:
        body["stop_sequences"] = list(s.stop)
    tools = [t for t in (_encode_tool(spec) for spec in turn.tools) if t is not None]
    if tools:
        body["tools"] = tools
        choice = _encode_tool_choice(turn.tool_choice, turn.parallel_tool_calls)
        if choice is not None:
            body["tool_choice"] = choice
    if turn.reasoning is not None:
        if turn.reasoning.budget_tokens:
            body["thinking"] = {"type": "enabled", "budget_tokens": turn.reasoning.budget_tokens}
        if turn.reasoning.effort:
            body["output_config"] = {"effort": turn.reasoning.effort}
    body["stream"] = turn.stream
    return body


def dropped_tools(turn: Turn) -> list[str]:
    return [t.name or t.kind for t in turn.tools if _encode_tool(t) is None]


def _encode_messages(messages: list[Message]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    joining = False  # the last encoded message is a user message made of tool results
    for message in messages:
        blocks = [b for b in (_encode_part(p) for p in message.parts) if b is not None]
        if message.role == "tool":
            if joining:
                out[-1]["content"].extend(blocks)
            else:
                out.append({"role": "user", "content": blocks})
                joining = True
            continue
        if message.role == "user" and joining:
            out[-1]["content"].extend(blocks)
            joining = False
            continue
        joining = False
        role = "system" if message.role == "developer" else message.role
        if role == "user" and len(message.parts) == 1 and isinstance(message.parts[0], TextPart):
            out.append({"role": role, "content": message.parts[0].text})
        else:
            out.append({"role": role, "content": blocks})
    return out


def _encode_part(part: Part) -> dict[str, Any] | None:
    if isinstance(part, TextPart):
        return {"type": "text", "text": part.text}
    if isinstance(part, ImagePart):
        match = _DATA_URL.match(part.url)
        if match:
            source = {"type": "base64", "media_type": match.group(1), "data": match.group(2)}
        else:
            source = {"type": "url", "url": part.url}
        return {"type": "image", "source": source}
    if isinstance(part, ToolCallPart):
        return {"type": "tool_use", "id": part.call_id, "name": part.name, "input": _input(part)}
    if isinstance(part, ToolResultPart):
        result: dict[str, Any] = {
            "type": "tool_result",
            "tool_use_id": part.call_id,
            "content": part.output,
        }
        if part.is_error:
            result["is_error"] = True
        return result
    if not part.text and part.signature is not None:
        return {"type": "redacted_thinking", "data": part.signature}
    return {"type": "thinking", "thinking": part.text, "signature": part.signature or ""}


def _input(part: ToolCallPart) -> dict[str, Any]:
    """A call's arguments as the object `tool_use.input` must be (a custom tool's raw text,
    or arguments that are not a JSON object, travel as {"input": text})."""
    try:
        value = json.loads(part.arguments) if part.arguments else {}
    except ValueError:
        value = None
    return value if isinstance(value, dict) else {"input": part.arguments}


def _encode_tool(spec: ToolSpec) -> dict[str, Any] | None:
    if spec.kind == "function":
        tool: dict[str, Any] = {"name": spec.name}
        if spec.description:
            tool["description"] = spec.description
        tool["input_schema"] = spec.parameters or {"type": "object", "properties": {}}
        return tool
    if spec.raw is not None and re.search(r"_\d{8}$", spec.kind):
        return spec.raw  # an Anthropic server tool passes through
    return None


def _encode_tool_choice(choice: ToolChoice | None, parallel: bool | None) -> Any:
    if choice is None and parallel is None:
        return None
    mode = choice.mode if choice is not None else "auto"
    out: dict[str, Any] = {"type": {"required": "any"}.get(mode, mode)}
    if mode == "tool" and choice is not None:
        out["name"] = choice.name
    if parallel is not None:
        out["disable_parallel_tool_use"] = not parallel
    return out


# --------------------------------------------------------------------------- replies


def usage_json(usage: Usage) -> dict[str, Any]:
    out: dict[str, Any] = {
        "input_tokens": usage.input_tokens,
        "output_tokens": usage.output_tokens,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": usage.cached_input_tokens,
    }
    out.update(f.extra_fields(usage.extra, out))
    return out


def decode_usage(raw: Any, base: Usage | None = None) -> Usage | None:
    """Usage from a usage object; `base` (message_start's) fills what a message_delta omits."""
    if not isinstance(raw, dict):
        return None
    known = {
        "input_tokens", "output_tokens", "cache_creation_input_tokens",
        "cache_read_input_tokens", "server_tool_use", "service_tier", "cache_creation",
    }  # fmt: skip
    base = base or Usage()
    inputs = f.token_count(raw, "input_tokens", "usage.input_tokens")
    cached = f.token_count(raw, "cache_read_input_tokens", "usage.cache_read_input_tokens")
    return Usage(
        input_tokens=base.input_tokens if inputs is None else inputs,
        output_tokens=f.token_count(raw, "output_tokens", "usage.output_tokens") or 0,
        cached_input_tokens=base.cached_input_tokens if cached is None else cached,
        extra={k: v for k, v in raw.items() if k not in known},
    )


def encode_reply(
    reply: Reply, *, created: int | None = None, fingerprint: str | None = None
) -> dict[str, Any]:
    """Reply → a Message object (Anthropic has no fingerprint field)."""
    content = [b for b in (_encode_part(p) for p in reply.parts) if b is not None]
    body: dict[str, Any] = {
        "id": reply.id,
        "type": "message",
        "role": "assistant",
        "model": reply.model,
        "content": content,
        "stop_reason": _FINISH_OUT[reply.finish],
        "stop_sequence": None,
    }
    if reply.usage is not None:
        body["usage"] = usage_json(reply.usage)
    return body


def decode_reply(body: dict[str, Any]) -> Reply:
    parts: list[Part] = []
    for block in f.as_list(body.get("content")):
        kind = block.get("type") if isinstance(block, dict) else None
        if not isinstance(kind, str) or kind not in _BLOCKS:
            continue
        try:
            part = _decode_block(block, kind, "content")
        except WireError:
            continue
        if part is not None:
            parts.append(part)
    return Reply(
        id=str(body.get("id") or ""),
        model=str(body.get("model") or ""),
        parts=parts,
        finish=_FINISH_IN.get(str(body.get("stop_reason")), "stop"),
        usage=decode_usage(body.get("usage")),
    )


def native_finish(body: dict[str, Any]) -> str | None:
    """A Message object's own `stop_reason` (`end_turn`, `max_tokens`, `pause_turn`, …), for
    diagnostics; `decode_reply` maps it onto the neutral FinishReason."""
    stop = body.get("stop_reason")
    return str(stop) if stop else None


def encode_error(error: WireError) -> dict[str, Any]:
    """The Anthropic error object: `{"type": "error", "error": {"type", "message"}}`."""
    kind = _ERROR_TYPES.get(error.kind, "api_error")
    return {"type": "error", "error": {"type": kind, "message": error.message}}


def decode_error(status: int, body: Any) -> WireError:
    error = body.get("error") if isinstance(body, dict) else None
    if isinstance(error, dict):
        message = str(error.get("message") or error.get("type") or error)
        kind = _KINDS_IN.get(str(error.get("type")), kind_for_status(status))
    else:
        message = str(error or body) if body not in (None, "") else f"HTTP {status}"
        kind = kind_for_status(status)
    return WireError(status or KIND_STATUS[kind], kind, message)


# --------------------------------------------------------------------------- streams


class StreamEncoder:
    """Neutral events → message_start, content blocks (text / thinking / tool_use with
    `input_json_delta`), message_delta with the stop reason and usage, message_stop. Text and
    thinking blocks close when another block starts; tool_use blocks stay open until their
    ToolCallEnd, so interleaved parallel calls keep their own indexes."""

    def __init__(
        self,
        id: str,
        model: str,
        *,
        include_usage: bool = True,
        fingerprint: str | None = None,
        input_tokens: int = 0,
        created: int | None = None,
    ) -> None:
        self._id = id
        self._model = model
        self._input_tokens = input_tokens
        self._blocks = 0
        self._current: tuple[str, int] | None = None  # open text / thinking block
        self._tools: dict[int, int] = {}  # neutral call index → open block index
        self._saw_tool = False
        self._finish: FinishReason | None = None
        self._usage: Usage | None = None
        self._text_prefix = b""

    def head(self) -> bytes:
        message: dict[str, Any] = {
            "id": self._id,
            "type": "message",
            "role": "assistant",
            "model": self._model,
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": {
                "input_tokens": self._input_tokens,
                "output_tokens": 1,
                "cache_creation_input_tokens": 0,
                "cache_read_input_tokens": 0,
            },
        }
        return f.sse({"type": "message_start", "message": message}, event="message_start")

    def _start(self, block: dict[str, Any]) -> tuple[bytes, int]:
        index = self._blocks
        self._blocks += 1
        out = f.sse(
            {"type": "content_block_start", "index": index, "content_block": block},
            event="content_block_start",
        )
        if index == 0:
            out += f.sse({"type": "ping"}, event="ping")
        return out, index

    @staticmethod
    def _stop(index: int) -> bytes:
        return f.sse({"type": "content_block_stop", "index": index}, event="content_block_stop")

    def _close_current(self) -> bytes:
        if self._current is None:
            return b""
        index = self._current[1]
        self._current = None
        return self._stop(index)

    def text(self, text: str) -> bytes:
        out = b""
        if self._current is None or self._current[0] != "text":
            out = self._close_current()
            started, index = self._start({"type": "text", "text": ""})
            out += started
            self._current = ("text", index)
            self._text_prefix = (
                b"event: content_block_delta\n"
                b'data: {"type":"content_block_delta","index":'
                + str(index).encode()
                + b',"delta":{"type":"text_delta","text":'
            )
        return out + self._text_prefix + fastjson.string(text).encode() + b"}}\n\n"

    def _delta(self, index: int, delta: dict[str, Any]) -> bytes:
        return f.sse(
            {"type": "content_block_delta", "index": index, "delta": delta},
            event="content_block_delta",
        )

    def encode(self, event: Event) -> bytes:
        if isinstance(event, TextDelta):
            return self.text(event.text)
        if isinstance(event, ReasoningDelta):
            out = b""
            if self._current is None or self._current[0] != "thinking":
                out = self._close_current()
                started, index = self._start({"type": "thinking", "thinking": "", "signature": ""})
                out += started
                self._current = ("thinking", index)
            index = self._current[1]
            if event.text:
                out += self._delta(index, {"type": "thinking_delta", "thinking": event.text})
            if event.signature:
                signature = {"type": "signature_delta", "signature": event.signature}
                out += self._delta(index, signature)
            return out
        if isinstance(event, ToolCallBegin):
            self._saw_tool = True
            out = self._close_current()
            block = {"type": "tool_use", "id": event.call_id, "name": event.name, "input": {}}
            started, index = self._start(block)
            self._tools[event.index] = index
            return out + started
        if isinstance(event, ToolCallDelta):
            index_of = self._tools.get(event.index)
            if index_of is None or not event.arguments:
                return b""
            partial = {"type": "input_json_delta", "partial_json": event.arguments}
            return self._delta(index_of, partial)
        if isinstance(event, ToolCallEnd):
            index_of = self._tools.pop(event.index, None)
            return self._stop(index_of) if index_of is not None else b""
        if isinstance(event, FinishEvent):
            self._finish = event.finish
        elif isinstance(event, UsageEvent):
            self._usage = event.usage
        elif isinstance(event, ErrorEvent):
            return self.error(WireError(event.status or 500, "server_error", event.message))
        return b""

    def close(self) -> bytes:
        out = b""
        if self._blocks == 0:
            started, index = self._start({"type": "text", "text": ""})
            out += started
            self._current = ("text", index)
        out += self._close_current()
        for index in self._tools.values():
            out += self._stop(index)
        self._tools = {}
        finish = self._finish or ("tool_calls" if self._saw_tool else "stop")
        delta = {"stop_reason": _FINISH_OUT[finish], "stop_sequence": None}
        usage = self._usage or Usage(input_tokens=self._input_tokens)
        message_delta = {"type": "message_delta", "delta": delta, "usage": usage_json(usage)}
        return (
            out
            + f.sse(message_delta, event="message_delta")
            + f.sse({"type": "message_stop"}, event="message_stop")
        )

    def error(self, error: WireError) -> bytes:
        return f.sse(encode_error(error), event="error")


class StreamDecoder:
    """Messages SSE → neutral events."""

    def __init__(self) -> None:
        self.done = False  # a stop reason was seen
        self.closed = False  # message_stop was seen
        self.native_finish: str | None = None  # the stop_reason, as sent
        self._tools: dict[int, int] = {}  # block index → neutral call index
        self._calls = 0
        self._base: Usage | None = None

    def feed(self, data: str, event: str | None = None) -> list[Event]:
        obj = f.parse_sse_json(data)
        if obj is None:
            return []
        kind = obj.get("type", event or "")
        if kind == "content_block_delta":
            return self._block_delta(obj)
        if kind == "content_block_start":
            return self._block_start(obj)
        if kind == "content_block_stop":
            index = self._tools.pop(_block_index(obj), None)
            return [ToolCallEnd(index)] if index is not None else []
        if kind == "message_start":
            message = f.as_object(obj.get("message"))
            self._base = decode_usage(message.get("usage"))
            return [StartEvent(str(message.get("id") or ""), str(message.get("model") or ""))]
        if kind == "message_delta":
            out: list[Event] = []
            usage = decode_usage(obj.get("usage"), self._base)
            if usage is not None:
                out.append(UsageEvent(usage))
            stop = f.as_object(obj.get("delta")).get("stop_reason")
            if stop:
                self.done = True
                self.native_finish = str(stop)
                out.append(FinishEvent(_FINISH_IN.get(str(stop), "stop")))
            return out
        if kind == "message_stop":
            self.closed = True
            return []
        if kind == "error":
            error = obj.get("error") or obj
            code = error.get("type") if isinstance(error, dict) else None
            code = code if isinstance(code, str) else None
            return [ErrorEvent(f.error_text(error), None, code)]
        return []

    def _block_start(self, obj: dict[str, Any]) -> list[Event]:
        block = f.as_object(obj.get("content_block"))
        kind = block.get("type")
        if kind == "text" and block.get("text"):
            return [TextDelta(str(block["text"]))]
        if kind == "thinking" and block.get("thinking"):
            return [ReasoningDelta(str(block["thinking"]))]
        if kind == "redacted_thinking" and isinstance(block.get("data"), str):
            return [ReasoningDelta("", block["data"])]
        if kind == "tool_use":
            index = self._calls
            self._calls += 1
            self._tools[_block_index(obj, index)] = index
            out: list[Event] = [
                ToolCallBegin(index, str(block.get("id") or ""), str(block.get("name") or ""))
            ]
            if isinstance(block.get("input"), dict) and block["input"]:
                out.append(ToolCallDelta(index, f.json_text(block["input"])))
            return out
        return []

    def _block_delta(self, obj: dict[str, Any]) -> list[Event]:
        delta = f.as_object(obj.get("delta"))
        kind = delta.get("type")
        if kind == "text_delta" and isinstance(delta.get("text"), str) and delta["text"]:
            return [TextDelta(delta["text"])]
        if kind == "thinking_delta" and isinstance(delta.get("thinking"), str):
            return [ReasoningDelta(delta["thinking"])] if delta["thinking"] else []
        if kind == "signature_delta" and isinstance(delta.get("signature"), str):
            return [ReasoningDelta("", delta["signature"])]
        if kind == "input_json_delta":
            index = self._tools.get(_block_index(obj))
            partial = delta.get("partial_json")
            if index is not None and isinstance(partial, str) and partial:
                return [ToolCallDelta(index, partial)]
        return []


def _block_index(obj: dict[str, Any], default: int = -1) -> int:
    """A content block's `index` (an integer; anything else names no block)."""
    index = obj.get("index", default)
    return index if isinstance(index, int) else default


# --------------------------------------------------------------------------- models


def encode_models(
    models: tuple[str, ...] | list[str], input_limit: int | None = None
) -> dict[str, Any]:
    """`GET /v1/models`, as Claude Code's gateway discovery reads it; `input_limit` is each
    model's `max_input_tokens` (the window, as Anthropic's Models API states it)."""
    created = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    data: list[dict[str, Any]] = [
        {"type": "model", "id": m, "display_name": m, "created_at": created} for m in models
    ]
    if input_limit is not None:
        for entry in data:
            entry["max_input_tokens"] = input_limit
    first, last = (models[0], models[-1]) if models else (None, None)
    return {"data": data, "has_more": False, "first_id": first, "last_id": last}
