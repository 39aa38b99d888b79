"""The Responses API (`POST /responses`, as Codex streams it) ⇄ the neutral turn.

Input items map to messages: `message` items keep their role; `function_call`,
`custom_tool_call` and `reasoning` items join the assistant message around them (consecutive
assistant-side items form one neutral assistant message, parts in order); each
`function_call_output` is one `tool` message. `instructions` becomes a leading system message.
Tool types other than function/custom (`namespace`, `web_search`, `local_shell`, …) are kept
raw. Reasoning streams as a reasoning item with a summary part (what Codex displays); its
`encrypted_content` is the neutral signature.
"""

from __future__ import annotations

import re
import secrets
import time
from typing import Any

from notes_cli.wire import _fields as f
from notes_cli.wire import fastjson
from notes_cli.wire.chat import decode_error, encode_error
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
    "StreamDecoder",
    "StreamEncoder",
    "decode_error",
    "decode_reply",
    "decode_request",
    "decode_usage",
    "dropped_tools",
    "encode_error",
    "encode_reply",
    "encode_request",
    "native_finish",
    "new_id",
    "usage_json",
]

_ROLES = frozenset({"system", "developer", "user", "assistant"})
_EFFORTS = frozenset({"none", "minimal", "low", "medium", "high", "xhigh"})
_SUMMARIES = frozenset({"auto", "concise", "detailed", "none"})
_TEXT_PARTS = frozenset({"input_text", "output_text", "text", "refusal", "summary_text"})
_ASSISTANT_ITEMS = frozenset({"function_call", "custom_tool_call", "reasoning"})
_HANDLED = frozenset(
    {
        "model", "input", "instructions", "tools", "tool_choice", "temperature", "top_p",
        "max_output_tokens", "stream", "reasoning", "parallel_tool_calls",
    }
)  # fmt: skip


_DATED = re.compile(r"_\d{8}$")
_ARGUMENT_DELTAS = frozenset(
    {"response.function_call_arguments.delta", "response.custom_tool_call_input.delta"}
)


def new_id() -> str:
    return f"resp_{secrets.token_hex(12)}"


def _item_id(prefix: str) -> str:
    return f"{prefix}_{secrets.token_hex(12)}"


# --------------------------------------------------------------------------- requests


def decode_request(body: bytes | str | dict[str, Any]) -> Turn:
    """A Responses request body → Turn; WireError (400 naming the param) on bad input."""
    data = f.decode_json_object(body)
    model = f.require_str(data, "model")
    messages: list[Message] = []
    instructions = f.optional_str(data, "instructions")
    if instructions:
        messages.append(Message("system", [TextPart(instructions)]))
    messages.extend(_decode_input(data.get("input")))
    if not messages:
        raise invalid("'input' must not be empty.", param="input")
    tools = [_decode_tool(t, i) for i, t in enumerate(f.optional_list(data, "tools"))]
    reasoning_body = f.optional_object(data, "reasoning")
    reasoning = None
    if reasoning_body is not None:
        effort = f.optional_enum(reasoning_body, "effort", _EFFORTS, param="reasoning.effort")
        summary = f.optional_enum(reasoning_body, "summary", _SUMMARIES, param="reasoning.summary")
        reasoning = Reasoning(effort=effort, summary=summary)
    f.optional_bool(data, "store")
    f.optional_str(data, "previous_response_id")
    f.optional_object(data, "metadata")
    f.optional_enum(data, "truncation", frozenset({"auto", "disabled"}))
    sampling = Sampling(
        max_tokens=f.optional_int(data, "max_output_tokens", low=1),
        temperature=f.optional_number(data, "temperature", low=0, high=2),
        top_p=f.optional_number(data, "top_p", low=0, high=1),
    )
    return Turn(
        model=model,
        messages=messages,
        tools=tools,
        tool_choice=_decode_tool_choice(data.get("tool_choice")),
        sampling=sampling,
        stream=bool(f.optional_bool(data, "stream")),
        reasoning=reasoning,
        parallel_tool_calls=f.optional_bool(data, "parallel_tool_calls"),
        include_usage=True,
        extra={k: v for k, v in data.items() if k not in _HANDLED},
    )


def _decode_input(value: Any) -> list[Message]:
    if isinstance(value, str):
        return [Message("user", [TextPart(value)])] if value else []
    if value is None:
        return []
    if not isinstance(value, list):
        raise invalid("'input' must be a string or an array of items.", param="input")
    messages: list[Message] = []
    for index, raw in enumerate(value):
        param = f"input[{index}]"
        item = f.require_object(raw, param)
        kind = item.get("type", "message")
        if kind == "message":
            message = _decode_message(item, param)
            if message.role == "assistant" and _joins(messages):
                messages[-1].parts.extend(message.parts)
            else:
                messages.append(message)
        elif kind in _ASSISTANT_ITEMS:
            part = _decode_assistant_item(item, kind, param)
            if part is None:
                continue
            if _joins(messages):
                messages[-1].parts.append(part)
            else:
                messages.append(Message("assistant", [part]))
        elif kind in ("function_call_output", "custom_tool_call_output"):
            call_id = f.require_str(item, "call_id", param=f"{param}.call_id")
            output = item.get("output")
            if isinstance(output, list):
                text = "".join(
                    p.get("text", "") for p in output if isinstance(p, dict) and p.get("text")
                )
            elif isinstance(output, str):
                text = output
            else:
                raise invalid(f"'{param}.output' must be a string.", param=f"{param}.output")
            messages.append(Message("tool", [ToolResultPart(call_id, text)]))
        # item_reference, web_search_call, local_shell_call, …: nothing a neutral turn holds
    return messages


def _joins(messages: list[Message]) -> bool:
    return bool(messages) and messages[-1].role == "assistant"


def _decode_message(item: dict[str, Any], param: str) -> Message:
    role = item.get("role")
    if role not in _ROLES:
        raise invalid(
            f"Invalid value for '{param}.role': {role!r}; expected one of 'assistant', "
            "'developer', 'system', 'user'.",
            param=f"{param}.role",
        )
    content = item.get("content")
    where = f"{param}.content"
    if isinstance(content, str):
        return Message(role, [TextPart(content)] if content else [])
    if not isinstance(content, list):
        raise invalid(f"'{where}' must be a string or an array of parts.", param=where)
    parts: list[Part] = []
    for index, raw in enumerate(content):
        at = f"{where}[{index}]"
        part = f.require_object(raw, at)
        kind = part.get("type")
        if kind in _TEXT_PARTS:
            text = part.get("refusal" if kind == "refusal" else "text")
            if not isinstance(text, str):
                raise invalid(f"'{at}.text' must be a string.", param=f"{at}.text")
            parts.append(TextPart(text))
        elif kind == "input_image":
            url = part.get("image_url")
            if isinstance(url, str):
                detail = part.get("detail")
                parts.append(ImagePart(url, detail if isinstance(detail, str) else None))
        elif kind not in ("input_file", "input_audio"):
            raise invalid(f"Invalid value for '{at}.type': {kind!r}.", param=f"{at}.type")
    return Message(role, parts)


def _decode_assistant_item(item: dict[str, Any], kind: str, param: str) -> Part | None:
    if kind == "reasoning":
        texts = [
            p.get("text", "")
            for key in ("summary", "content")
            for p in item.get(key) or ()
            if isinstance(p, dict)
        ]
        signature = item.get("encrypted_content")
        text = "".join(t for t in texts if isinstance(t, str))
        if not text and not isinstance(signature, str):
            return None
        return ReasoningPart(text, signature if isinstance(signature, str) else None)
    call_id = f.require_str(item, "call_id", param=f"{param}.call_id")
    name = f.require_str(item, "name", param=f"{param}.name")
    key = "arguments" if kind == "function_call" else "input"
    arguments = item.get(key, "")
    if not isinstance(arguments, str):
        raise invalid(f"'{param}.{key}' must be a string.", param=f"{param}.{key}")
    tool_kind = "function" if kind == "function_call" else "custom"
    return ToolCallPart(call_id, name, arguments, tool_kind)


def _decode_tool(raw: Any, index: int) -> ToolSpec:
    param = f"tools[{index}]"
    tool = f.require_object(raw, param)
    kind = tool.get("type")
    if not isinstance(kind, str) or not kind:
        raise invalid(f"'{param}.type' is required.", param=f"{param}.type")
    if kind == "function":
        name = f.require_str(tool, "name", param=f"{param}.name")
        description = f.optional_str(tool, "description", param=f"{param}.description")
        parameters = f.optional_object(tool, "parameters", param=f"{param}.parameters")
        return ToolSpec(name, description or "", parameters)
    if kind == "custom":
        name = f.require_str(tool, "name", param=f"{param}.name")
        description = f.optional_str(tool, "description", param=f"{param}.description")
        return ToolSpec(name, description or "", None, "custom", raw=tool)
    label = tool.get("name")
    return ToolSpec(label if isinstance(label, str) else kind, "", None, kind, raw=tool)


def _decode_tool_choice(value: Any) -> ToolChoice | None:
    if value is None:
        return None
    if value in ("auto", "none", "required"):
        return ToolChoice(value)
    if isinstance(value, dict):
        if value.get("type") in ("function", "custom") and isinstance(value.get("name"), str):
            return ToolChoice("tool", value["name"])
        mode = value.get("mode")
        if value.get("type") == "allowed_tools" and mode in ("auto", "required"):
            return ToolChoice(mode)
    raise invalid(
        "'tool_choice' must be 'auto', 'none', 'required' or "
        '{"type": "function", "name": …}.',
        param="tool_choice",
    )


def encode_request(turn: Turn) -> dict[str, Any]:
    """Turn → a Responses request body (JSON-ready); system messages stay input messages."""
    body: dict[str, Any] = {"model": turn.model, "input": _encode_input(turn.messages)}
    tools = [t for t in (_encode_tool(s) for s in turn.tools) if t is not None]
    if tools:
        body["tools"] = tools
        if turn.tool_choice is not None:
            body["tool_choice"] = _encode_tool_choice(turn.tool_choice)
        if turn.parallel_tool_calls is not None:
            body["parallel_tool_calls"] = turn.parallel_tool_calls
    s = turn.sampling
    if s.max_tokens is not None:
        body["max_output_tokens"] = s.max_tokens
    if s.temperature is not None:
        body["temperature"] = s.temperature
    if s.top_p is not None:
        body["top_p"] = s.top_p
    if turn.reasoning is not None and (turn.reasoning.effort or turn.reasoning.summary):
        reasoning = {"effort": turn.reasoning.effort, "summary": turn.reasoning.summary}
        body["reasoning"] = {k: v for k, v in reasoning.items() if v}
    body["stream"] = turn.stream
    return body


def dropped_tools(turn: Turn) -> list[str]:
    return [t.name or t.kind for t in turn.tools if _encode_tool(t) is None]


def _encode_input(messages: list[Message]) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    for message in messages:
        if message.role == "tool":
            for part in message.parts:
                if isinstance(part, ToolResultPart):
                    items.append(
                        {
                            "type": "function_call_output",
                            "call_id": part.call_id,
                            "output": part.output,
                        }
                    )
            continue
        if message.role == "assistant":
            items.extend(_output_items(message.parts, status="completed", ids=False))
            continue
        content: list[dict[str, Any]] = []
        for part in message.parts:
            if isinstance(part, TextPart):
                content.append({"type": "input_text", "text": part.text})
            elif isinstance(part, ImagePart):
                image: dict[str, Any] = {"type": "input_image", "image_url": part.url}
                if part.detail:
                    image["detail"] = part.detail
                content.append(image)
        items.append({"type": "message", "role": message.role, "content": content})
    return items


def _output_items(parts: list[Part], *, status: str, ids: bool) -> list[dict[str, Any]]:
    """Assistant parts → output items: adjacent text parts share one message item."""
    items: list[dict[str, Any]] = []
    for part in parts:
        if isinstance(part, TextPart):
            text = {"type": "output_text", "text": part.text, "annotations": []}
            if items and items[-1]["type"] == "message":
                items[-1]["content"].append(text)
                continue
            message = {"type": "message", "role": "assistant", "content": [text]}
            if ids:
                message = {"id": _item_id("msg"), **message, "status": status}
            items.append(message)
        elif isinstance(part, ReasoningPart):
            summary = [{"type": "summary_text", "text": part.text}] if part.text else []
            reasoning: dict[str, Any] = {"type": "reasoning", "summary": summary}
            if ids:
                reasoning = {"id": _item_id("rs"), **reasoning}
            if part.signature is not None:
                reasoning["encrypted_content"] = part.signature
            items.append(reasoning)
        elif isinstance(part, ToolCallPart):
            items.append(_call_item(part, status, ids))
    return items


def _call_item(part: ToolCallPart, status: str, ids: bool) -> dict[str, Any]:
    if part.kind == "custom":
        kind, key = "custom_tool_call", "input"
    else:
        kind, key = "function_call", "arguments"
    item = {"type": kind, "call_id": part.call_id, "name": part.name, key: part.arguments}
    if ids:
        item = {"id": _item_id("fc" if part.kind != "custom" else "ctc"), **item, "status": status}
    return item


def _encode_tool(spec: ToolSpec) -> dict[str, Any] | None:
    if spec.kind == "function":
        tool: dict[str, Any] = {"type": "function", "name": spec.name}
        if spec.description:
            tool["description"] = spec.description
        tool["parameters"] = spec.parameters or {"type": "object", "properties": {}}
        return tool
    if spec.kind == "custom":
        custom: dict[str, Any] = {"type": "custom", "name": spec.name}
        if spec.description:
            custom["description"] = spec.description
        if spec.raw and "format" in spec.raw:
            custom["format"] = spec.raw["format"]
        return custom
    if spec.raw is not None and spec.raw.get("type") == spec.kind and not _DATED.search(spec.kind):
        # A Responses tool type (namespace, web_search, …) passes through; Anthropic's
        # dated server tools (`bash_20250124`) mean nothing here.
        return spec.raw
    return None


def _encode_tool_choice(choice: ToolChoice) -> Any:
    if choice.mode == "tool":
        return {"type": "function", "name": choice.name}
    return choice.mode


# --------------------------------------------------------------------------- replies


def usage_json(usage: Usage) -> dict[str, Any]:
    out: dict[str, Any] = {
        "input_tokens": usage.input_tokens,
        "input_tokens_details": {"cached_tokens": usage.cached_input_tokens},
        "output_tokens": usage.output_tokens,
        "output_tokens_details": {"reasoning_tokens": usage.reasoning_tokens},
        "total_tokens": usage.input_tokens + usage.output_tokens,
    }
    out.update(f.extra_fields(usage.extra, out))
    return out


def decode_usage(raw: Any) -> Usage | None:
    if not isinstance(raw, dict):
        return None
    inputs = f.as_object(raw.get("input_tokens_details"))
    outputs = f.as_object(raw.get("output_tokens_details"))
    known = {
        "input_tokens", "output_tokens", "total_tokens",
        "input_tokens_details", "output_tokens_details",
    }  # fmt: skip
    return Usage(
        input_tokens=f.token_count(raw, "input_tokens", "usage.input_tokens") or 0,
        output_tokens=f.token_count(raw, "output_tokens", "usage.output_tokens") or 0,
        reasoning_tokens=f.token_count(
            outputs, "reasoning_tokens", "usage.output_tokens_details.reasoning_tokens"
        )
        or 0,
        cached_input_tokens=f.token_count(
            inputs, "cached_tokens", "usage.input_tokens_details.cached_tokens"
        )
        or 0,
        extra={k: v for k, v in raw.items() if k not in known},
    )


def _status(finish: FinishReason) -> tuple[str, dict[str, Any] | None]:
    if finish == "length":
        return "incomplete", {"reason": "max_output_tokens"}
    if finish == "content_filter":
        return "incomplete", {"reason": "content_filter"}
    if finish == "error":
        return "failed", None
    return "completed", None


def _response(
    id: str,
    model: str,
    created: int,
    status: str,
    output: list[dict[str, Any]],
    usage: Usage | None,
    fingerprint: str | None,
    incomplete: dict[str, Any] | None = None,
) -> dict[str, Any]:
    response: dict[str, Any] = {
        "id": id,
        "object": "response",
        "created_at": created,
        "status": status,
        "model": model,
        "output": output,
        "incomplete_details": incomplete,
    }
    if fingerprint is not None:
        response["metadata"] = {"system_fingerprint": fingerprint}  # labels the answer
    response["usage"] = usage_json(usage) if usage is not None else None
    return response


def encode_reply(
    reply: Reply, *, created: int | None = None, fingerprint: str | None = None
) -> dict[str, Any]:
    """Reply → a Responses object (status `incomplete` when the output budget ran out)."""
    status, incomplete = _status(reply.finish)
    output = _output_items(reply.parts, status="completed", ids=True)
    when = created if created is not None else int(time.time())
    body = _response(
        reply.id, reply.model, when, status, output, reply.usage, fingerprint, incomplete
    )
    return body


def decode_reply(body: dict[str, Any]) -> Reply:
    """A Responses object → Reply."""
    parts: list[Part] = []
    for item in f.as_list(body.get("output")):
        if not isinstance(item, dict):
            continue
        kind = item.get("type")
        if kind == "message":
            for part in f.as_list(item.get("content")):
                if isinstance(part, dict) and isinstance(part.get("text"), str):
                    parts.append(TextPart(part["text"]))
        elif isinstance(kind, str) and kind in _ASSISTANT_ITEMS:
            try:
                part = _decode_assistant_item(item, kind, "output")
            except WireError:
                continue
            if part is not None:
                parts.append(part)
    return Reply(
        id=str(body.get("id") or ""),
        model=str(body.get("model") or ""),
        parts=parts,
        finish=_finish_of(body, any(isinstance(p, ToolCallPart) for p in parts)),
        usage=decode_usage(body.get("usage")),
    )


def native_finish(body: dict[str, Any]) -> str | None:
    """A Responses object's own word for how it ended, for diagnostics: `completed`, else the
    `incomplete_details.reason` (`max_output_tokens`, `content_filter`) or the status."""
    status = body.get("status", "completed")
    if status == "completed":
        return "completed"
    return str(f.as_object(body.get("incomplete_details")).get("reason") or status)


def _finish_of(response: dict[str, Any], called: bool) -> FinishReason:
    status = response.get("status", "completed")
    if status == "incomplete":
        reason = f.as_object(response.get("incomplete_details")).get("reason")
        return "content_filter" if reason == "content_filter" else "length"
    if status == "failed":
        return "error"
    return "tool_calls" if called else "stop"


# --------------------------------------------------------------------------- streams


class _Item:
    """One output item being streamed."""

    __slots__ = ("kind", "id", "index", "text", "call_id", "name", "signature", "tool_kind")

    def __init__(self, kind: str, id: str, index: int) -> None:
        self.kind = kind
        self.id = id
        self.index = index
        self.text: list[str] = []
        self.call_id = ""
        self.name = ""
        self.signature: str | None = None
        self.tool_kind = "function"


class StreamEncoder:
    """Neutral events → the full Responses event sequence Codex expects: `response.created`,
    output items (message with `output_text` deltas, reasoning with summary deltas,
    function_call with `function_call_arguments` deltas) each ending in
    `response.output_item.done`, then `response.completed` (`response.incomplete` when the
    output budget ran out, as OpenAI does)."""

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
        self._fingerprint = fingerprint
        self._created = created if created is not None else int(time.time())
        self._seq = 0
        self._items: list[_Item] = []  # every item, in output order
        self._current: _Item | None = None  # the open message / reasoning item
        self._tools: dict[int, _Item] = {}  # open tool-call items by neutral index
        self._finish: FinishReason | None = None
        self._usage: Usage | None = None
        self._text_prefix = b""
        self._primed: tuple[int, bytes, _Item, int, bytes] | None = None  # see `prime`

    def _event(self, kind: str, **fields: Any) -> bytes:
        self._seq += 1
        return f.sse({"type": kind, "sequence_number": self._seq, **fields}, event=kind)

    def head(self) -> bytes:
        response = _response(
            self._id, self._model, self._created, "in_progress", [], None, self._fingerprint
        )
        return self._event("response.created", response=response) + self._event(
            "response.in_progress", response=response
        )

    def prime(self) -> None:
        """Encode ahead the events that open a first message (its output item and content
        part), so that a stream's first text delta adds only itself. A relay calls this while
        it waits for its upstream; the work is kept only if the first output is text, before
        any other event (else it is dropped and nothing changes)."""
        if self._items or self._current is not None:
            return
        seq, prefix = self._seq, self._text_prefix
        frames = self._open_message()
        item = self._items.pop()
        self._primed = (seq, frames, item, self._seq, self._text_prefix)
        self._current, self._seq, self._text_prefix = None, seq, prefix

    # the hot path: one text delta
    def text(self, text: str) -> bytes:
        item = self._current
        out = b""
        if item is None or item.kind != "message":
            primed, self._primed = self._primed, None
            if primed is not None and primed[0] == self._seq and not self._items:
                _, out, item, self._seq, self._text_prefix = primed
                self._items.append(item)
                self._current = item
            else:
                out = self._open_message()
                item = self._current
            assert item is not None
        item.text.append(text)
        self._seq = seq = self._seq + 1
        delta = fastjson.string(text).encode()  # (ASCII: `\uXXXX` escapes)
        return b'%s%s,"delta":%s,"sequence_number":%d}\n\n' % (out, self._text_prefix, delta, seq)

    def _open_message(self) -> bytes:
        out = self._close_current()
        item = self._new_item("message", _item_id("msg"))
        where = {"item_id": item.id, "output_index": item.index, "content_index": 0}
        head = fastjson.dumps({"type": "response.output_text.delta", **where})
        self._text_prefix = b"event: response.output_text.delta\ndata: " + head[:-1]
        return out + b"".join(
            [
                self._event(
                    "response.output_item.added",
                    output_index=item.index,
                    item=self._item_json(item, "in_progress"),
                ),
                self._event(
                    "response.content_part.added",
                    **where,
                    part={"type": "output_text", "text": "", "annotations": []},
                ),
            ]
        )

    def _new_item(self, kind: str, id: str) -> _Item:
        item = _Item(kind, id, len(self._items))
        self._items.append(item)
        if kind in ("message", "reasoning"):
            self._current = item
        return item

    def encode(self, event: Event) -> bytes:
        if isinstance(event, TextDelta):
            return self.text(event.text)
        if isinstance(event, ReasoningDelta):
            return self._reasoning(event)
        if isinstance(event, ToolCallBegin):
            out = self._close_current()
            item = self._new_item("tool", _item_id("ctc" if event.kind == "custom" else "fc"))
            item.call_id, item.name, item.tool_kind = event.call_id, event.name, event.kind
            self._tools[event.index] = item
            return out + self._event(
                "response.output_item.added",
                output_index=item.index,
                item=self._item_json(item, "in_progress"),
            )
        if isinstance(event, ToolCallDelta):
            tool = self._tools.get(event.index)
            if tool is None or not event.arguments:
                return b""
            tool.text.append(event.arguments)
            kind = (
                "response.custom_tool_call_input.delta"
                if tool.tool_kind == "custom"
                else "response.function_call_arguments.delta"
            )
            return self._event(
                kind, item_id=tool.id, output_index=tool.index, delta=event.arguments
            )
        if isinstance(event, ToolCallEnd):
            tool = self._tools.pop(event.index, None)
            return self._close_tool(tool) if tool is not None else b""
        if isinstance(event, FinishEvent):
            self._finish = event.finish
        elif isinstance(event, UsageEvent):
            self._usage = event.usage
        elif isinstance(event, ErrorEvent):
            return self.error(WireError(event.status or 500, "server_error", event.message))
        return b""

    def _reasoning(self, event: ReasoningDelta) -> bytes:
        item = self._current
        out = b""
        if item is None or item.kind != "reasoning":
            out = self._close_current()
            item = self._new_item("reasoning", _item_id("rs"))
            out += self._event(
                "response.output_item.added",
                output_index=item.index,
                item=self._item_json(item, "in_progress"),
            )
            out += self._event(
                "response.reasoning_summary_part.added",
                item_id=item.id,
                output_index=item.index,
                summary_index=0,
                part={"type": "summary_text", "text": ""},
            )
        if event.signature is not None:
            item.signature = event.signature
        if event.text:
            item.text.append(event.text)
            out += self._event(
                "response.reasoning_summary_text.delta",
                item_id=item.id,
                output_index=item.index,
                summary_index=0,
                delta=event.text,
            )
        return out

    def _close_current(self) -> bytes:
        item, self._current = self._current, None
        if item is None:
            return b""
        text = "".join(item.text)
        if item.kind == "message":
            where = {"item_id": item.id, "output_index": item.index, "content_index": 0}
            part = {"type": "output_text", "text": text, "annotations": []}
            return b"".join(
                [
                    self._event("response.output_text.done", **where, text=text),
                    self._event("response.content_part.done", **where, part=part),
                    self._done(item),
                ]
            )
        where = {"item_id": item.id, "output_index": item.index, "summary_index": 0}
        part = {"type": "summary_text", "text": text}
        return b"".join(
            [
                self._event("response.reasoning_summary_text.done", **where, text=text),
                self._event("response.reasoning_summary_part.done", **where, part=part),
                self._done(item),
            ]
        )

    def _close_tool(self, tool: _Item) -> bytes:
        arguments = "".join(tool.text)
        if tool.tool_kind == "custom":
            done = self._event(
                "response.custom_tool_call_input.done",
                item_id=tool.id,
                output_index=tool.index,
                input=arguments,
            )
        else:
            done = self._event(
                "response.function_call_arguments.done",
                item_id=tool.id,
                output_index=tool.index,
                arguments=arguments,
                name=tool.name,
            )
        return done + self._done(tool)

    def _done(self, item: _Item) -> bytes:
        return self._event(
            "response.output_item.done",
            output_index=item.index,
            item=self._item_json(item, "completed"),
        )

    def _item_json(self, item: _Item, status: str) -> dict[str, Any]:
        text = "".join(item.text)
        if item.kind == "message":
            content = (
                [{"type": "output_text", "text": text, "annotations": []}]
                if status == "completed"
                else []
            )
            return {
                "id": item.id,
                "type": "message",
                "status": status,
                "role": "assistant",
                "content": content,
            }
        if item.kind == "reasoning":
            summary = [{"type": "summary_text", "text": text}] if status == "completed" else []
            reasoning: dict[str, Any] = {"id": item.id, "type": "reasoning", "summary": summary}
            if item.signature is not None:
                reasoning["encrypted_content"] = item.signature
            return reasoning
        part = ToolCallPart(item.call_id, item.name, text, item.tool_kind)
        call = _call_item(part, status, ids=False)
        return {"id": item.id, **call, "status": status}

    def close(self) -> bytes:
        # An answer without output still has a message item.
        out = b"" if self._items else self._open_message()
        out += self._close_current()
        for index in list(self._tools):
            out += self._close_tool(self._tools.pop(index))
        finish = self._finish or (
            "tool_calls" if any(i.kind == "tool" for i in self._items) else "stop"
        )
        status, incomplete = _status(finish)
        output = [self._item_json(i, "completed") for i in self._items]
        response = _response(
            self._id,
            self._model,
            self._created,
            status,
            output,
            self._usage,
            self._fingerprint,
            incomplete,
        )
        final = {"incomplete": "response.incomplete", "failed": "response.failed"}.get(
            status, "response.completed"
        )
        return out + self._event(final, response=response)

    def error(self, error: WireError) -> bytes:
        response = _response(
            self._id, self._model, self._created, "failed", [], None, self._fingerprint
        )
        response["error"] = {"code": error.code or error.kind, "message": error.message}
        return self._event("response.failed", response=response)


class StreamDecoder:
    """Responses SSE → neutral events. Accepts whole items without deltas (minimal servers
    and Codex's own test doubles send only `response.output_item.done`), text deltas that name
    no item (they belong to the next message item to finish), and a stream whose only text is
    in `response.completed`'s output."""

    def __init__(self) -> None:
        self.done = False
        self.closed = False
        self.native_finish: str | None = None  # `completed`, or the incomplete reason
        # A finished message item carried output_text (an `output_item.done`, or the output of
        # `response.completed`): what Codex shows as the answer; deltas alone it does not show.
        self.item_text_seen = False
        self._texted = False  # a TextDelta went out
        self._calls: dict[str, int] = {}  # item id (or output index) → neutral index
        self._args: dict[int, list[str]] = {}
        self._ended: set[int] = set()
        self._text_items: set[str] = set()  # message items that streamed deltas
        self._reasoning_items: set[str] = set()
        self._called = False

    def feed(self, data: str, event: str | None = None) -> list[Event]:
        obj = f.parse_sse_json(data)
        if obj is None:
            return []
        kind = obj.get("type", event or "")
        if not isinstance(kind, str):
            return []
        key = str(obj.get("item_id") or obj.get("output_index", ""))
        if kind == "response.output_text.delta":
            self._text_items.add(key)
            delta = obj.get("delta")
            if isinstance(delta, str) and delta:
                self._texted = True
                return [TextDelta(delta)]
            return []
        if kind.startswith("response.reasoning") and kind.endswith(".delta"):
            self._reasoning_items.add(key)
            delta = obj.get("delta")
            return [ReasoningDelta(delta)] if isinstance(delta, str) and delta else []
        if kind in _ARGUMENT_DELTAS:
            index = self._calls.get(key)
            delta = obj.get("delta")
            if index is None or not isinstance(delta, str) or not delta:
                return []
            self._args[index].append(delta)
            return [ToolCallDelta(index, delta)]
        if kind == "response.output_item.added":
            return self._item_added(obj)
        if kind == "response.output_item.done":
            return self._item_done(obj)
        if kind in ("response.completed", "response.incomplete"):
            self.done = self.closed = True
            response = f.as_object(obj.get("response"))
            if kind == "response.completed":
                self.native_finish = "completed"
            else:
                details = f.as_object(response.get("incomplete_details"))
                self.native_finish = str(details.get("reason") or "incomplete")
            out: list[Event] = self._completed_output(response)
            usage = decode_usage(response.get("usage"))
            if usage is not None:
                out.append(UsageEvent(usage))
            out.append(FinishEvent(_finish_of(response, self._called)))
            return out
        if kind == "response.created":
            response = f.as_object(obj.get("response"))
            return [StartEvent(str(response.get("id") or ""), str(response.get("model") or ""))]
        if kind in ("response.failed", "error"):
            self.closed = True
            error = f.as_object(obj.get("response")).get("error") or obj.get("error") or obj
            code = error.get("code") if isinstance(error, dict) else None
            code = code if isinstance(code, str) else None
            return [ErrorEvent(f.error_text(error), None, code)]
        return []

    def _completed_output(self, response: dict[str, Any]) -> list[Event]:
        """Text from `response.completed`'s output, when nothing else carried any."""
        out: list[Event] = []
        for item in f.as_list(response.get("output")):
            if not isinstance(item, dict) or item.get("type") != "message":
                continue
            texts = _message_texts(item)
            self.item_text_seen = self.item_text_seen or _has_output_text(item)
            if not self._texted:
                out.extend(TextDelta(text) for text in texts)
        self._texted = self._texted or bool(out)
        return out

    def _item_key(self, obj: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
        item = f.as_object(obj.get("item"))
        keys = [str(k) for k in (item.get("id"), obj.get("output_index")) if k is not None]
        return item, keys

    def _item_added(self, obj: dict[str, Any]) -> list[Event]:
        item, keys = self._item_key(obj)
        if item.get("type") not in ("function_call", "custom_tool_call"):
            return []
        return self._begin(item, keys)

    def _begin(self, item: dict[str, Any], keys: list[str]) -> list[Event]:
        index = len(self._args)
        for key in keys:
            self._calls[key] = index
        self._args[index] = []
        self._called = True
        kind = "custom" if item.get("type") == "custom_tool_call" else "function"
        call_id = item.get("call_id") or item.get("id") or f"call_{index}"
        return [ToolCallBegin(index, str(call_id), str(item.get("name") or ""), kind)]

    def _item_done(self, obj: dict[str, Any]) -> list[Event]:
        item, keys = self._item_key(obj)
        kind = item.get("type")
        out: list[Event] = []
        if kind in ("function_call", "custom_tool_call"):
            index = next((self._calls[k] for k in keys if k in self._calls), None)
            if index is None:
                out.extend(self._begin(item, keys))
                index = len(self._args) - 1
            if index in self._ended:
                return []
            full = item.get("arguments" if kind == "function_call" else "input")
            sent = "".join(self._args[index])
            if isinstance(full, str) and len(full) > len(sent) and full.startswith(sent):
                out.append(ToolCallDelta(index, full[len(sent) :]))
            self._ended.add(index)
            out.append(ToolCallEnd(index))
        elif kind == "message":
            self.item_text_seen = self.item_text_seen or _has_output_text(item)
            streamed = set(keys) & self._text_items or "" in self._text_items
            self._text_items.discard("")  # deltas that named no item belonged to this one
            if not streamed:
                out.extend(TextDelta(text) for text in _message_texts(item))
                self._texted = self._texted or bool(out)
        elif kind == "reasoning":
            streamed = set(keys) & self._reasoning_items or "" in self._reasoning_items
            self._reasoning_items.discard("")
            if not streamed:
                for key in ("summary", "content"):
                    for part in f.as_list(item.get(key)):
                        if isinstance(part, dict) and part.get("text"):
                            out.append(ReasoningDelta(str(part["text"])))
            signature = item.get("encrypted_content")
            if isinstance(signature, str) and signature:
                out.append(ReasoningDelta("", signature))
        return out


def _message_texts(item: dict[str, Any]) -> list[str]:
    parts = f.as_list(item.get("content"))
    return [
        p["text"]
        for p in parts
        if isinstance(p, dict) and isinstance(p.get("text"), str) and p["text"]
    ]


def _has_output_text(item: dict[str, Any]) -> bool:
    parts = f.as_list(item.get("content"))
    return any(
        isinstance(p, dict) and p.get("type") == "output_text" and p.get("text") for p in parts
    )
