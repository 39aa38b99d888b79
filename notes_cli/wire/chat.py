"""Chat completions (`POST /chat/completions`) ⇄ the neutral turn.

Lossy on purpose, where chat completions has no way to say it: a `developer` message is sent
as `system` (most chat-only servers know no `developer` role); an assistant message's parts
come back in the order reasoning, text, tool calls; each tool result is its own `tool`
message. Reasoning travels as DeepSeek's `reasoning_content`, the field chat-only reasoning
servers (DeepSeek, Qwen, GLM, vLLM's reasoning parsers) stream; `reasoning` is read too.
"""

from __future__ import annotations

import json
import re
import secrets
import time
from collections.abc import Callable
from typing import Any

import msgspec

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

_ROLES = frozenset({"system", "developer", "user", "assistant", "tool", "function"})
_EFFORTS = frozenset({"none", "minimal", "low", "medium", "high", "xhigh"})
_PART_TYPES = frozenset({"text", "image_url", "input_audio", "file", "refusal"})
_HANDLED = frozenset(
    {
        "model", "messages", "tools", "tool_choice", "temperature", "top_p", "n", "stream",
        "stream_options", "max_tokens", "max_completion_tokens", "stop", "seed",
        "presence_penalty", "frequency_penalty", "parallel_tool_calls", "reasoning_effort",
        "logprobs", "top_logprobs", "user", "top_k",
    }
)  # fmt: skip
_FINISH_IN: dict[str, FinishReason] = {
    "stop": "stop",
    "length": "length",
    "tool_calls": "tool_calls",
    "function_call": "tool_calls",
    "content_filter": "content_filter",
    "error": "error",
}
_ERROR_TYPES: dict[str, tuple[str, str | None]] = {
    "invalid_request": ("invalid_request_error", None),
    "context_length": ("invalid_request_error", "context_length_exceeded"),
    "authentication": ("invalid_request_error", "invalid_api_key"),
    "permission": ("invalid_request_error", "permission_denied"),
    "not_found": ("invalid_request_error", "not_found"),
    "model_not_found": ("invalid_request_error", "model_not_found"),
    "method_not_allowed": ("invalid_request_error", "method_not_allowed"),
    "request_too_large": ("invalid_request_error", "request_too_large"),
    "rate_limit": ("rate_limit_error", "rate_limit_exceeded"),
    "server_error": ("server_error", None),
    "bad_gateway": ("server_error", "bad_gateway"),
    "overloaded": ("server_error", "service_unavailable"),
}


def new_id() -> str:
    return f"chatcmpl-{secrets.token_hex(12)}"


# --------------------------------------------------------------------------- requests


def decode_request(body: bytes | str | dict[str, Any]) -> Turn:
    """A chat completions request body → Turn; WireError (400 naming the param) on bad input."""
    data = f.decode_json_object(body)
    model = f.require_str(data, "model")
    raw_messages = data.get("messages")
    if not isinstance(raw_messages, list) or not raw_messages:
        raise invalid("'messages' must be a non-empty array.", param="messages")
    messages = [_decode_message(m, i) for i, m in enumerate(raw_messages)]
    tools = [_decode_tool(t, i) for i, t in enumerate(f.optional_list(data, "tools"))]
    n = f.optional_int(data, "n", low=1, high=128)
    f.optional_bool(data, "logprobs")
    f.optional_int(data, "top_logprobs", low=0, high=20)
    f.optional_str(data, "user")
    options = f.optional_object(data, "stream_options") or {}
    effort = f.optional_enum(data, "reasoning_effort", _EFFORTS)
    max_tokens = f.optional_int(data, "max_completion_tokens", low=1)
    if max_tokens is None:
        max_tokens = f.optional_int(data, "max_tokens", low=1)
    sampling = Sampling(
        max_tokens=max_tokens,
        temperature=f.optional_number(data, "temperature", low=0, high=2),
        top_p=f.optional_number(data, "top_p", low=0, high=1),
        stop=f.stop_list(data, "stop", most=4),
        seed=f.optional_int(data, "seed"),
        presence_penalty=f.optional_number(data, "presence_penalty", low=-2, high=2),
        frequency_penalty=f.optional_number(data, "frequency_penalty", low=-2, high=2),
        top_k=f.optional_int(data, "top_k", low=-1),
    )
    extra = {k: v for k, v in data.items() if k not in _HANDLED}
    if n is not None:
        extra["n"] = n
    return Turn(
        model=model,
        messages=messages,
        tools=tools,
        tool_choice=_decode_tool_choice(data.get("tool_choice")),
        sampling=sampling,
        stream=bool(f.optional_bool(data, "stream")),
        reasoning=Reasoning(effort=effort) if effort else None,
        parallel_tool_calls=f.optional_bool(data, "parallel_tool_calls"),
        include_usage=bool(f.optional_bool(options, "include_usage", param="stream_options")),
        extra=extra,
    )


def _decode_message(raw: Any, index: int) -> Message:
    param = f"messages[{index}]"
    message = f.require_object(raw, param)
    role = message.get("role")
    if role not in _ROLES:
        raise invalid(
            f"Invalid value for '{param}.role': {role!r}; expected one of 'system', "
            "'developer', 'user', 'assistant', 'tool'.",
            param=f"{param}.role",
        )
    content = message.get("content")
    if role in ("tool", "function"):
        call_id = message.get("tool_call_id", message.get("name"))
        if not isinstance(call_id, str):
            raise invalid(
                f"'{param}.tool_call_id' is required for a tool message.",
                param=f"{param}.tool_call_id",
            )
        output = _content_text(content, f"{param}.content")
        return Message("tool", [ToolResultPart(call_id, output)])
    parts: list[Part] = []
    if role == "assistant":
        reasoning = message.get("reasoning_content", message.get("reasoning"))
        if isinstance(reasoning, str) and reasoning:
            parts.append(ReasoningPart(reasoning))
    elif content is None:
        raise invalid(f"'{param}.content' is required.", param=f"{param}.content")
    parts.extend(_decode_content(content, f"{param}.content"))
    if role == "assistant":
        calls = f.optional_list(message, "tool_calls", param=f"{param}.tool_calls")
        parts.extend(_decode_call(c, f"{param}.tool_calls[{i}]") for i, c in enumerate(calls))
    return Message(role, parts)


def _decode_content(content: Any, param: str) -> list[Part]:
    if content is None:
        return []
    if isinstance(content, str):
        return [TextPart(content)] if content else []
    if not isinstance(content, list):
        raise invalid(f"'{param}' must be a string or an array of content parts.", param=param)
    parts: list[Part] = []
    for index, raw in enumerate(content):
        where = f"{param}[{index}]"
        part = f.require_object(raw, where)
        kind = part.get("type")
        if kind not in _PART_TYPES:
            raise invalid(
                f"Invalid value for '{where}.type': {kind!r}; expected 'text' or 'image_url'.",
                param=f"{where}.type",
            )
        if kind in ("text", "refusal"):
            text = part.get(kind)
            if not isinstance(text, str):
                raise invalid(f"'{where}.{kind}' must be a string.", param=f"{where}.{kind}")
            parts.append(TextPart(text))
        elif kind == "image_url":
            image = part.get("image_url")
            url = image.get("url") if isinstance(image, dict) else image
            if not isinstance(url, str):
                raise invalid(f"'{where}.image_url.url' must be a string.", param=where)
            detail = image.get("detail") if isinstance(image, dict) else None
            parts.append(ImagePart(url, detail if isinstance(detail, str) else None))
    return parts


def _content_text(content: Any, param: str) -> str:
    return "".join(p.text for p in _decode_content(content, param) if isinstance(p, TextPart))


def _decode_call(raw: Any, param: str) -> ToolCallPart:
    call = f.require_object(raw, param)
    kind = call.get("type", "function")
    body = call.get(kind) if kind in ("function", "custom") else None
    if not isinstance(body, dict):
        raise invalid(f"'{param}.function' must be an object.", param=f"{param}.function")
    name = f.require_str(body, "name", param=f"{param}.{kind}.name")
    key = "arguments" if kind == "function" else "input"
    arguments = body.get(key, "")
    if not isinstance(arguments, str):
        arguments = f.json_text(arguments)
    call_id = call.get("id")
    if not isinstance(call_id, str):
        raise invalid(f"'{param}.id' must be a string.", param=f"{param}.id")
    return ToolCallPart(call_id, name, arguments, kind)


def _decode_tool(raw: Any, index: int) -> ToolSpec:
    param = f"tools[{index}]"
    tool = f.require_object(raw, param)
    kind = tool.get("type", "function")
    if kind not in ("function", "custom"):
        raise invalid(
            f"Invalid value for '{param}.type': {kind!r}; expected 'function' or 'custom'.",
            param=f"{param}.type",
        )
    body = tool.get(kind)
    if not isinstance(body, dict):
        raise invalid(f"'{param}.{kind}' must be an object.", param=f"{param}.{kind}")
    name = f.require_str(body, "name", param=f"{param}.{kind}.name")
    description = f.optional_str(body, "description", param=f"{param}.{kind}.description")
    if kind == "custom":
        return ToolSpec(name, description or "", None, "custom", raw=tool)
    parameters = f.optional_object(body, "parameters", param=f"{param}.function.parameters")
    return ToolSpec(name, description or "", parameters)


def _decode_tool_choice(value: Any) -> ToolChoice | None:
    if value is None:
        return None
    if value in ("auto", "none", "required"):
        return ToolChoice(value)
    if isinstance(value, dict):
        body = value.get("function") or value.get("custom") or {}
        name = body.get("name") if isinstance(body, dict) else None
        if isinstance(name, str) and name:
            return ToolChoice("tool", name)
    raise invalid(
        "'tool_choice' must be 'auto', 'none', 'required' or "
        '{"type": "function", "function": {"name": …}}.',
        param="tool_choice",
    )


def encode_request(turn: Turn) -> dict[str, Any]:
    """Turn → a chat completions request body (JSON-ready)."""
    body: dict[str, Any] = {"model": turn.model, "messages": _encode_messages(turn.messages)}
    tools = [t for t in (_encode_tool(s) for s in turn.tools) if t is not None]
    if tools:
        body["tools"] = tools
        if turn.tool_choice is not None:
            body["tool_choice"] = _encode_tool_choice(turn.tool_choice)
        if turn.parallel_tool_calls is not None:
            body["parallel_tool_calls"] = turn.parallel_tool_calls
    s = turn.sampling
    for key, value in (
        ("max_tokens", s.max_tokens),
        ("temperature", s.temperature),
        ("top_p", s.top_p),
        ("seed", s.seed),
        ("presence_penalty", s.presence_penalty),
        ("frequency_penalty", s.frequency_penalty),
    ):
        if value is not None:
            body[key] = value
    if s.stop:
        body["stop"] = list(s.stop)
    if turn.reasoning is not None and turn.reasoning.effort:
        body["reasoning_effort"] = turn.reasoning.effort
    body["stream"] = turn.stream
    if turn.stream and turn.include_usage:
        body["stream_options"] = {"include_usage": True}
    return body


def dropped_tools(turn: Turn) -> list[str]:
    """Names of the turn's tools chat completions cannot express (encode_request leaves
    them out)."""
    return [t.name or t.kind for t in turn.tools if _encode_tool(t) is None]


def _encode_messages(messages: list[Message]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for message in messages:
        if message.role == "tool":
            for part in message.parts:
                if isinstance(part, ToolResultPart):
                    out.append(
                        {"role": "tool", "tool_call_id": part.call_id, "content": part.output}
                    )
            continue
        role = "system" if message.role == "developer" else message.role
        entry: dict[str, Any] = {"role": role}
        content = [p for p in message.parts if isinstance(p, (TextPart, ImagePart))]
        if role == "assistant":
            texts = [p.text for p in content if isinstance(p, TextPart)]
            calls = [p for p in message.parts if isinstance(p, ToolCallPart)]
            reasoning = "".join(p.text for p in message.parts if isinstance(p, ReasoningPart))
            entry["content"] = "".join(texts) if texts else None
            if reasoning:
                entry["reasoning_content"] = reasoning
            if calls:
                entry["tool_calls"] = [_encode_call(c) for c in calls]
        else:
            entry["content"] = _encode_content(content)
        out.append(entry)
    return out


def _encode_content(parts: list[TextPart | ImagePart]) -> str | list[dict[str, Any]]:
    if not parts:
        return ""
    if len(parts) == 1 and isinstance(parts[0], TextPart):
        return parts[0].text
    encoded: list[dict[str, Any]] = []
    for part in parts:
        if isinstance(part, TextPart):
            encoded.append({"type": "text", "text": part.text})
        else:
            image: dict[str, Any] = {"url": part.url}
            if part.detail:
                image["detail"] = part.detail
            encoded.append({"type": "image_url", "image_url": image})
    return encoded


def _encode_call(call: ToolCallPart) -> dict[str, Any]:
    if call.kind == "custom":
        custom = {"name": call.name, "input": call.arguments}
        return {"id": call.call_id, "type": "custom", "custom": custom}
    return {
        "id": call.call_id,
        "type": "function",
        "function": {"name": call.name, "arguments": call.arguments},
    }


def _encode_tool(spec: ToolSpec) -> dict[str, Any] | None:
    if spec.kind == "function":
        function: dict[str, Any] = {"name": spec.name}
        if spec.description:
            function["description"] = spec.description
        function["parameters"] = spec.parameters or {"type": "object", "properties": {}}
        return {"type": "function", "function": function}
    if spec.kind == "custom":
        custom: dict[str, Any] = {"name": spec.name}
        if spec.description:
            custom["description"] = spec.description
        return {"type": "custom", "custom": custom}
    return None


def _encode_tool_choice(choice: ToolChoice) -> Any:
    if choice.mode == "tool":
        return {"type": "function", "function": {"name": choice.name}}
    return choice.mode


# --------------------------------------------------------------------------- replies


def usage_json(usage: Usage) -> dict[str, Any]:
    out: dict[str, Any] = {
        "prompt_tokens": usage.input_tokens,
        "completion_tokens": usage.output_tokens,
        "total_tokens": usage.input_tokens + usage.output_tokens,
    }
    if usage.cached_input_tokens:
        out["prompt_tokens_details"] = {"cached_tokens": usage.cached_input_tokens}
    if usage.reasoning_tokens:
        out["completion_tokens_details"] = {"reasoning_tokens": usage.reasoning_tokens}
    out.update(f.extra_fields(usage.extra, out))
    return out


def decode_usage(raw: Any) -> Usage | None:
    if not isinstance(raw, dict):
        return None
    prompt = f.as_object(raw.get("prompt_tokens_details"))
    completion = f.as_object(raw.get("completion_tokens_details"))
    known = {
        "prompt_tokens", "completion_tokens", "total_tokens",
        "prompt_tokens_details", "completion_tokens_details",
    }  # fmt: skip
    return Usage(
        input_tokens=f.token_count(raw, "prompt_tokens", "usage.prompt_tokens") or 0,
        output_tokens=f.token_count(raw, "completion_tokens", "usage.completion_tokens") or 0,
        reasoning_tokens=f.token_count(
            completion, "reasoning_tokens", "usage.completion_tokens_details.reasoning_tokens"
        )
        or 0,
        cached_input_tokens=f.token_count(
            prompt, "cached_tokens", "usage.prompt_tokens_details.cached_tokens"
        )
        or 0,
        extra={k: v for k, v in raw.items() if k not in known},
    )


def encode_reply(
    reply: Reply, *, created: int | None = None, fingerprint: str | None = None
) -> dict[str, Any]:
    """Reply → a `chat.completion` object."""
    message = _encode_messages([Message("assistant", reply.parts)])[0]
    body: dict[str, Any] = {
        "id": reply.id,
        "object": "chat.completion",
        "created": created if created is not None else int(time.time()),
        "model": reply.model,
    }
    if fingerprint is not None:
        body["system_fingerprint"] = fingerprint
    body["choices"] = [
        {"index": 0, "message": message, "logprobs": None, "finish_reason": reply.finish}
    ]
    if reply.usage is not None:
        body["usage"] = usage_json(reply.usage)
    return body


def decode_reply(body: dict[str, Any]) -> Reply:
    """A `chat.completion` object → Reply (the first choice)."""
    choices = f.as_list(body.get("choices")) or [{}]
    choice = f.as_object(choices[0])
    message = f.as_object(choice.get("message"))
    parts: list[Part] = []
    reasoning = message.get("reasoning_content") or message.get("reasoning")
    if isinstance(reasoning, str) and reasoning:
        parts.append(ReasoningPart(reasoning))
    content = message.get("content")
    if isinstance(content, str) and content:
        parts.append(TextPart(content))
    for index, call in enumerate(f.as_list(message.get("tool_calls"))):
        try:
            parts.append(_decode_call(call, f"tool_calls[{index}]"))
        except WireError:
            continue
    finish = _FINISH_IN.get(str(choice.get("finish_reason")), "stop")
    return Reply(
        id=str(body.get("id") or ""),
        model=str(body.get("model") or ""),
        parts=parts,
        finish=finish,
        usage=decode_usage(body.get("usage")),
    )


def native_finish(body: dict[str, Any]) -> str | None:
    """A `chat.completion` object's own `finish_reason` word (`stop`, `length`, `eos`, …),
    for diagnostics; `decode_reply` maps it onto the neutral FinishReason."""
    choices = f.as_list(body.get("choices"))
    finish = f.as_object(choices[0]).get("finish_reason") if choices else None
    return str(finish) if finish else None


def encode_error(error: WireError) -> dict[str, Any]:
    """The OpenAI error object: `{"error": {"message", "type", "param", "code"}}`."""
    kind, code = _ERROR_TYPES.get(error.kind, ("server_error", None))
    return {
        "error": {
            "message": error.message,
            "type": kind,
            "param": error.param,
            "code": error.code or code,
        }
    }


def decode_error(status: int, body: Any) -> WireError:
    """An upstream's error answer (OpenAI shape, or anything) → WireError with its message."""
    error = body.get("error") if isinstance(body, dict) else None
    if isinstance(error, dict):
        message = str(error.get("message") or error.get("type") or error)
        param, code = error.get("param"), error.get("code")
    else:
        message = str(error or body) if body not in (None, "") else f"HTTP {status}"
        param = code = None
    kind = kind_for_status(status)
    if code == "model_not_found":
        kind = "model_not_found"
    elif code == "context_length_exceeded":
        kind = "context_length"
    return WireError(
        status or KIND_STATUS[kind],
        kind,
        message,
        param=param if isinstance(param, str) else None,
        code=code if isinstance(code, str) else None,
    )


# --------------------------------------------------------------------------- streams


class StreamEncoder:
    """Neutral events → `chat.completion.chunk` SSE. The role chunk goes out with the first
    output (as vLLM sends it: its benchmark times TTFT at the first chunk with a choice);
    with include_usage every chunk says `"usage": null` and a final choices-less chunk
    carries the usage."""

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
        self._include_usage = include_usage
        self._head: dict[str, Any] = {
            "id": id,
            "object": "chat.completion.chunk",
            "created": created if created is not None else int(time.time()),
            "model": model,
        }
        if fingerprint is not None:
            self._head["system_fingerprint"] = fingerprint
        self._opened = False
        self._finish: FinishReason | None = None
        self._usage: Usage | None = None
        self._saw_tool = False
        # A text chunk is prefix + json.dumps(text) + suffix: one dumps per token.
        head = json.dumps(self._head, separators=(",", ":"))[:-1]
        self._prefix = f'data: {head},"choices":[{{"index":0,"delta":{{"content":'.encode()
        tail = ',"usage":null' if include_usage else ""
        self._suffix = f'}},"logprobs":null,"finish_reason":null}}]{tail}}}\n\n'.encode()

    def head(self) -> bytes:
        return b""

    def _open(self) -> bytes:
        self._opened = True
        return self._chunk({"role": "assistant", "content": ""}, None)

    def text(self, text: str) -> bytes:
        chunk = self._prefix + fastjson.string(text).encode() + self._suffix
        return chunk if self._opened else self._open() + chunk

    def encode(self, event: Event) -> bytes:
        if isinstance(event, TextDelta):
            return self.text(event.text)
        if isinstance(event, FinishEvent):
            self._finish = event.finish
            return b""
        if isinstance(event, UsageEvent):
            self._usage = event.usage
            return b""
        if isinstance(event, ErrorEvent):
            return self.error(WireError(event.status or 500, "server_error", event.message))
        delta: dict[str, Any]
        if isinstance(event, ReasoningDelta):
            if not event.text:
                return b""
            delta = {"reasoning_content": event.text}
        elif isinstance(event, ToolCallBegin):
            self._saw_tool = True
            call = {
                "index": event.index,
                "id": event.call_id,
                "type": "function",
                "function": {"name": event.name, "arguments": ""},
            }
            delta = {"tool_calls": [call]}
        elif isinstance(event, ToolCallDelta):
            arguments = {"index": event.index, "function": {"arguments": event.arguments}}
            delta = {"tool_calls": [arguments]}
        else:
            return b""  # StartEvent, ToolCallEnd: nothing on this wire
        out = self._chunk(delta, None)
        return out if self._opened else self._open() + out

    def close(self) -> bytes:
        out = b"" if self._opened else self._open()
        finish = self._finish or ("tool_calls" if self._saw_tool else "stop")
        out += self._chunk({}, finish)
        if self._include_usage and self._usage is not None:
            out += f.sse({**self._head, "choices": [], "usage": usage_json(self._usage)})
        return out + b"data: [DONE]\n\n"

    def error(self, error: WireError) -> bytes:
        return f.sse(encode_error(error))

    def _chunk(self, delta: dict[str, Any], finish: str | None) -> bytes:
        choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
        chunk: dict[str, Any] = {**self._head, "choices": [choice]}
        if self._include_usage:
            chunk["usage"] = None
        return f.sse(chunk)


class _TextDelta(msgspec.Struct, gc=False):
    content: object = None
    reasoning_content: object = None
    reasoning: object = None
    tool_calls: object = None


class _TextChoice(msgspec.Struct, gc=False):
    index: object = 0
    delta: _TextDelta | None = None
    finish_reason: object = None


class _TextChunk(msgspec.Struct, gc=False):
    choices: list[_TextChoice] = msgspec.field(default_factory=list)
    usage: object = None
    error: object = None


_decode_text_chunk = msgspec.json.Decoder(_TextChunk).decode


def _text_only(data: str | bytes) -> str | None:
    """The text of a chunk that carries nothing but a text delta for choice 0 (nearly every
    chunk of an answer), read straight into typed fields; None for anything else, which
    `StreamDecoder.feed` reads the general way, with the same result for these. Why: the
    general way (a dict, then a dozen lookups and type checks) was a third of the bridge's
    Python per streamed event; with this a lone bridged event takes 42,959 instructions
    instead of 50,850 (valgrind, the whole user-space path)."""
    try:
        chunk = _decode_text_chunk(data)
    except msgspec.DecodeError:  # (ValidationError is one): not JSON, or another shape
        return None
    if chunk.error or chunk.usage is not None or len(chunk.choices) != 1:
        return None
    choice = chunk.choices[0]
    delta = choice.delta
    if delta is None or choice.finish_reason or choice.index not in (0, None):
        return None
    if delta.reasoning_content is not None or delta.reasoning is not None:
        return None
    content = delta.content
    if delta.tool_calls is not None or type(content) is not str or not content:
        return None
    return content


_decode_string = msgspec.json.Decoder(str).decode
_CONTENT_STRING = re.compile(rb'"content"\s*:\s*("(?:[^"\\]|\\.)*")')


class _TextTemplate:
    """`StreamDecoder.text_event` once the answer has started: the event read last, around its
    text. An upstream sends every text chunk of an answer alike but for the text (the same id,
    model, created, field order), so an event whose bytes are an event already read in full
    (`_text_only`) up to the text's JSON string, and from its end, is text-only too: only that
    string is decoded. Anything else (a new shape, a finish, usage, an escape msgspec refuses)
    is read in full, and its shape becomes the template when it is text-only. The template
    holds the event's framing (`data: `, the blank line), so a match is also exactly one
    one-line event: the learned event had no other line end, and a JSON string holds none.
    Why: the full typed decode was the largest part of the bridge's per-token work, and the
    framing checks beside it a sixth (docs/benchmarks/bridge.md: instructions per event).
    `startswith` / `endswith` rather than slices: slices run fewer instructions but copy, and
    took 20-30% longer per event here (benchmarks/bridge/event_cost.py)."""

    __slots__ = ("prefix", "suffix", "start", "cut")

    def __init__(self) -> None:
        self.prefix = b"\x00"  # (matches no event: the first is read in full)
        self.suffix = b""
        self.start = 1  # len(prefix), up to the text's opening quote
        self.cut = 0  # len(suffix), from its closing quote

    def text(self, event: bytes) -> str | None:
        if event.startswith(self.prefix) and event.endswith(self.suffix):
            try:  # (the quotes are the template's: no whitespace can hide a line end around)
                text = _decode_string(event[self.start - 1 : len(event) - self.cut + 1])
            except msgspec.DecodeError:  # not one JSON string there: another shape
                return self.learn(event)
            if text:
                return text
        return self.learn(event)

    def learn(self, event: bytes) -> str | None:
        """Read `event` in full; when it is one text-only `data:` line, its shape is the
        template."""
        end = len(event) - 2
        if event[:6] != b"data: " or event.find(b"\n") != end or event[end:] != b"\n\n":
            return None  # (`find`, not `in`: see `bridge.pump`)
        if event.find(b"\r") >= 0:  # a CR ends a line too: the general parser's work
            return None
        data = event[6:end]
        text = _text_only(data)
        if text is None:
            return None
        found = list(_CONTENT_STRING.finditer(data))
        if len(found) == 1:  # (a `"content":` inside a string value would have its quotes escaped)
            start, stop = found[0].span(1)
            if _decode_string(data[start:stop]) == text:  # the quotes go with the template
                self.prefix, self.suffix = event[: 7 + start], event[5 + stop :]
                self.start, self.cut = 7 + start, len(event) - 5 - stop
        return text


def _not_started(event: bytes) -> None:
    """`StreamDecoder.text_event` before the first chunk: that one takes the long way."""
    return None


class StreamDecoder:
    """`chat.completion.chunk` SSE → neutral events. Tolerates what chat upstreams do:
    `reasoning_content` / `reasoning` deltas, a whole tool call in one chunk, a missing tool
    `index`, usage in the finish chunk or in every chunk, `message` instead of `delta`."""

    def __init__(self) -> None:
        self.done = False  # a finish reason was seen
        self.closed = False  # `data: [DONE]` was seen
        self.native_finish: str | None = None  # the last finish_reason word, as sent
        self.malformed = 0  # events whose data was not a JSON object (skipped), for callers
        # llama.cpp's own account of the request (`timings`: prompt_ms, cache_n,
        # predicted_per_token_ms, ...), sent beside the last chunk; bench compares against it.
        self.server_timings: dict[str, Any] | None = None
        self._started = False
        # `text_event(event)`: the text of one whole SSE event as it came (`data: {json}\n\n`)
        # when its chunk is nothing but a text delta of an answer already started, the one
        # thing a relay's per-token path needs, without a neutral event made for it; None when
        # `feed` must read it (and it then reads it the same). A plain attribute, not a
        # method: one call per token.
        self.text_event: Callable[[bytes], str | None] = _not_started
        self._calls: dict[tuple[int, Any], int] = {}  # (choice, upstream index) → neutral
        self._open: list[int] = []
        self._last_key: tuple[int, Any] | None = None

    def feed(self, data: str, event: str | None = None) -> list[Event]:
        if self._started:  # the first chunk (the answer's id and model) takes the long way
            text = _text_only(data)
            if text is not None:
                return [TextDelta(text)]
        if data.strip() == "[DONE]":  # before parsing: it is not JSON, and each refusal
            self.closed = True  # (msgspec's, then json's) cost more than the whole check
            return self._end_calls()
        obj = f.parse_sse_json(data)
        if obj is None:
            self.malformed += 1
            return []
        out: list[Event] = []
        if obj.get("error"):
            error = obj["error"]
            code = error.get("code") if isinstance(error, dict) else None
            code = code if isinstance(code, str) else None
            return [ErrorEvent(f.error_text(error), None, code)]
        if not self._started and (obj.get("id") or obj.get("model")):
            self._started = True
            self.text_event = _TextTemplate().text
            out.append(StartEvent(str(obj.get("id") or ""), str(obj.get("model") or "")))
        choices = obj.get("choices")
        for choice in choices if isinstance(choices, list) else ():
            if not isinstance(choice, dict) or choice.get("index", 0) not in (0, None):
                continue
            delta = choice.get("delta") or choice.get("message") or {}
            if isinstance(delta, dict):
                out.extend(self._delta(delta))
            finish = choice.get("finish_reason")
            if finish:
                out.extend(self._end_calls())
                out.append(FinishEvent(_FINISH_IN.get(str(finish), "stop")))
                self.done = True
                self.native_finish = str(finish)
        raw_usage = obj.get("usage")
        if raw_usage is not None:  # most chunks: none, or `"usage": null`
            usage = decode_usage(raw_usage)
            if usage is not None:
                out.append(UsageEvent(usage))
        timings = obj.get("timings")
        if isinstance(timings, dict):
            self.server_timings = timings
        return out

    def _delta(self, delta: dict[str, Any]) -> list[Event]:
        out: list[Event] = []
        reasoning = delta.get("reasoning_content")
        if not isinstance(reasoning, str):
            reasoning = delta.get("reasoning")
        if isinstance(reasoning, str) and reasoning:
            out.append(ReasoningDelta(reasoning))
        content = delta.get("content")
        if isinstance(content, str) and content:
            out.append(TextDelta(content))
        calls = delta.get("tool_calls")
        if isinstance(calls, list):
            for call in calls:
                if isinstance(call, dict):
                    out.extend(self._tool_delta(call))
        return out

    def _tool_delta(self, call: dict[str, Any]) -> list[Event]:
        out: list[Event] = []
        function = call.get("function") or {}
        upstream = call.get("index")
        call_id = call.get("id")
        if not isinstance(call_id, str):
            call_id = None
        if not isinstance(upstream, (int, str)):
            # No index (or one naming nothing: a list, an object): a new id starts a new
            # call, otherwise it continues the last one.
            upstream = call_id if call_id else (self._last_key or (0, 0))[1]
        key = (0, upstream)
        if key not in self._calls:
            index = len(self._calls)
            self._calls[key] = index
            self._open.append(index)
            name = function.get("name") if isinstance(function, dict) else None
            out.append(
                ToolCallBegin(
                    index,
                    call_id or f"call_{index}",
                    name if isinstance(name, str) else "",
                )
            )
        self._last_key = key
        arguments = function.get("arguments") if isinstance(function, dict) else None
        if isinstance(arguments, dict):
            arguments = f.json_text(arguments)
        if isinstance(arguments, str) and arguments:
            out.append(ToolCallDelta(self._calls[key], arguments))
        return out

    def _end_calls(self) -> list[Event]:
        ended: list[Event] = [ToolCallEnd(i) for i in self._open]
        self._open = []
        return ended


# --------------------------------------------------------------------------- models


def encode_models(models: tuple[str, ...] | list[str], owned_by: str) -> dict[str, Any]:
    """`GET /models`: the OpenAI list object."""
    created = int(time.time())
    data = [{"id": m, "object": "model", "created": created, "owned_by": owned_by} for m in models]
    return {"object": "list", "data": data}
