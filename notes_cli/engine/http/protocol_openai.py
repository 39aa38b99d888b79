"""OpenAI wire formats: Chat Completions and the Responses API (as Codex CLI streams it).

Parsing turns a body into a protocol-neutral `ParsedCall`; encoders turn engine output into
response bodies and SSE. Token chunks are built from a pre-rendered prefix and suffix so a
streamed token costs one `json.dumps` of its text, which matters at hundreds of streams.
"""

from __future__ import annotations

import json
import time
import uuid
from typing import Any

from notes_cli.engine.core.api import ChatMessage, Completion, GenerationRequest
from notes_cli.engine.http.http_errors import ApiError, invalid
from notes_cli.engine.http.protocol_common import (
    ParsedCall,
    content_text,
    decode_json_object,
    optional_bool,
    optional_list,
    optional_object,
    optional_positive_int,
    optional_str,
    require_str,
    sse,
)

_ERROR_TYPES: dict[str, tuple[str, str | None]] = {
    "invalid_request": ("invalid_request_error", None),
    "context_length": ("invalid_request_error", "context_length_exceeded"),
    "authentication": ("invalid_request_error", "invalid_api_key"),
    "not_found": ("invalid_request_error", "not_found"),
    "model_not_found": ("invalid_request_error", "model_not_found"),
    "method_not_allowed": ("invalid_request_error", "method_not_allowed"),
    "request_too_large": ("invalid_request_error", "request_too_large"),
    "rate_limit": ("rate_limit_error", "rate_limit_exceeded"),
    "server_error": ("server_error", None),
    "overloaded": ("server_error", "service_unavailable"),
}


def error_body(error: ApiError) -> dict[str, Any]:
    """The OpenAI error object: `{"error": {"message", "type", "param", "code"}}`."""
    kind, code = _ERROR_TYPES[error.kind]
    return {"error": {"message": error.message, "type": kind, "param": error.param, "code": code}}


def _new_id(prefix: str) -> str:
    return f"{prefix}{uuid.uuid4().hex[:24]}"


# --- Chat Completions ---------------------------------------------------------------------


def parse_chat(raw: bytes) -> ParsedCall:
    """A `POST /chat/completions` body → ParsedCall (400 on wrong shapes)."""
    body = decode_json_object(raw)
    model = require_str(body, "model")
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise invalid("'messages' must be a non-empty array.", param="messages")
    parsed = tuple(_chat_message(m, i) for i, m in enumerate(messages))
    options = optional_object(body, "stream_options")
    request = GenerationRequest(
        model=model,
        messages=parsed,
        max_tokens=optional_positive_int(body, "max_completion_tokens", "max_tokens"),
        request_id=_new_id("chatcmpl-"),
        metadata={"api": "chat"},
    )
    return ParsedCall(
        request,
        stream=optional_bool(body, "stream"),
        include_usage=optional_bool(options, "include_usage"),
    )


def _chat_message(message: Any, index: int) -> ChatMessage:
    param = f"messages[{index}]"
    if not isinstance(message, dict):
        raise invalid(f"'{param}' must be an object.", param=param)
    role = message.get("role")
    if not isinstance(role, str) or not role:
        raise invalid(f"'{param}.role' must be a non-empty string.", param=f"{param}.role")
    return ChatMessage(role, content_text(message.get("content"), param=f"{param}.content"))


def _usage(completion: Completion) -> dict[str, Any]:
    return {
        "prompt_tokens": completion.prompt_tokens,
        "completion_tokens": completion.completion_tokens,
        "total_tokens": completion.prompt_tokens + completion.completion_tokens,
        "pd_timing": completion.pd_timing.to_json(),
    }


def chat_body(call: ParsedCall, text: str, completion: Completion, fingerprint: str) -> dict:
    """The non-streamed `chat.completion` object."""
    request = call.request
    return {
        "id": request.request_id,
        "object": "chat.completion",
        "created": int(time.time()),
        "model": request.model,
        "system_fingerprint": fingerprint,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": text},
                "logprobs": None,
                "finish_reason": completion.finish_reason,
            }
        ],
        "usage": _usage(completion),
    }


class ChatStreamEncoder:
    """`chat.completion.chunk` SSE; with include_usage a final choices-less usage chunk."""

    def __init__(self, call: ParsedCall, fingerprint: str) -> None:
        self._include_usage = call.include_usage
        self._head = {
            "id": call.request.request_id,
            "object": "chat.completion.chunk",
            "created": int(time.time()),
            "model": call.request.model,
            "system_fingerprint": fingerprint,
        }
        head = json.dumps(self._head, separators=(",", ":"))[:-1]
        self._prefix = f'data: {head},"choices":[{{"index":0,"delta":{{"content":'.encode()
        tail = ',"usage":null' if self._include_usage else ""
        self._suffix = f'}},"logprobs":null,"finish_reason":null}}]{tail}}}\n\n'.encode()

    def head(self) -> bytes:
        return b""

    def opening(self) -> bytes:
        return self._chunk({"role": "assistant", "content": ""}, None)

    def token(self, text: str) -> bytes:
        return self._prefix + json.dumps(text).encode() + self._suffix

    def closing(self, completion: Completion) -> bytes:
        out = self._chunk({}, completion.finish_reason)
        if self._include_usage:
            out += sse({**self._head, "choices": [], "usage": _usage(completion)})
        return out + b"data: [DONE]\n\n"

    def _chunk(self, delta: dict[str, Any], finish_reason: str | None) -> bytes:
        choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}
        chunk: dict[str, Any] = {**self._head, "choices": [choice]}
        if self._include_usage:
            chunk["usage"] = None
        return sse(chunk)


# --- Responses API ------------------------------------------------------------------------


def parse_responses(raw: bytes) -> ParsedCall:
    """A `POST /responses` body → ParsedCall. Accepts every item and tool type Codex sends;
    function calls and their outputs become text turns so they count toward the prompt."""
    body = decode_json_object(raw)
    model = require_str(body, "model")
    optional_list(body, "tools")
    messages: list[ChatMessage] = []
    instructions = optional_str(body, "instructions")
    if instructions:
        messages.append(ChatMessage("system", instructions))
    messages.extend(_response_input(body.get("input")))
    if not messages:
        raise invalid("'input' must not be empty.", param="input")
    request = GenerationRequest(
        model=model,
        messages=tuple(messages),
        max_tokens=optional_positive_int(body, "max_output_tokens"),
        request_id=_new_id("resp_"),
        metadata={"api": "responses"},
    )
    return ParsedCall(request, stream=optional_bool(body, "stream"))


def _response_input(value: Any) -> list[ChatMessage]:
    if isinstance(value, str):
        return [ChatMessage("user", value)]
    if not isinstance(value, list):
        raise invalid("'input' must be a string or an array of items.", param="input")
    messages = []
    for index, item in enumerate(value):
        message = _input_item(item, f"input[{index}]")
        if message is not None:
            messages.append(message)
    return messages


def _input_item(item: Any, param: str) -> ChatMessage | None:
    if not isinstance(item, dict):
        raise invalid(f"'{param}' must be an object.", param=param)
    kind = item.get("type", "message")
    if kind == "message":
        role = item.get("role")
        if not isinstance(role, str) or not role:
            raise invalid(f"'{param}.role' must be a non-empty string.", param=f"{param}.role")
        return ChatMessage(role, content_text(item.get("content"), param=f"{param}.content"))
    if kind == "function_call":
        name, arguments = item.get("name"), item.get("arguments")
        return ChatMessage("assistant", f"{name}({arguments})")
    if kind == "function_call_output":
        output = item.get("output")
        text = output if isinstance(output, str) else json.dumps(output)
        return ChatMessage("tool", text)
    return None  # reasoning, web_search_call, …: nothing the mock should read


def _message_item(item_id: str, text: str, status: str) -> dict[str, Any]:
    part = {"type": "output_text", "text": text, "annotations": []}
    return {
        "id": item_id,
        "type": "message",
        "status": status,
        "role": "assistant",
        "content": [part] if status == "completed" else [],
    }


def _response_object(
    call: ParsedCall,
    created_at: int,
    status: str,
    output: list[dict[str, Any]],
    completion: Completion | None,
    fingerprint: str,
) -> dict[str, Any]:
    response: dict[str, Any] = {
        "id": call.request.request_id,
        "object": "response",
        "created_at": created_at,
        "status": status,
        "model": call.request.model,
        "output": output,
        "incomplete_details": None,
        "metadata": {"system_fingerprint": fingerprint},  # labels the answer as the mock's
        "usage": None,
    }
    if completion is not None:
        if completion.finish_reason == "length":
            response["status"] = "incomplete"
            response["incomplete_details"] = {"reason": "max_output_tokens"}
        response["usage"] = {
            "input_tokens": completion.prompt_tokens,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": completion.completion_tokens,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": completion.prompt_tokens + completion.completion_tokens,
            "pd_timing": completion.pd_timing.to_json(),
        }
    return response


def responses_body(call: ParsedCall, text: str, completion: Completion, fingerprint: str) -> dict:
    """The non-streamed Responses object (`output_text` included, as the SDK's helper reads)."""
    item = _message_item(_new_id("msg_"), text, "completed")
    return _response_object(call, int(time.time()), "completed", [item], completion, fingerprint)


class ResponsesStreamEncoder:
    """The full Responses event sequence Codex expects, ending in `response.completed` (or
    `response.incomplete` when the output budget ran out, as OpenAI does)."""

    def __init__(self, call: ParsedCall, fingerprint: str) -> None:
        self._call = call
        self._fingerprint = fingerprint
        self._created_at = int(time.time())
        self._item_id = _new_id("msg_")
        self._texts: list[str] = []
        self._seq = 0
        where = {"item_id": self._item_id, "output_index": 0, "content_index": 0}
        head = json.dumps({"type": "response.output_text.delta", **where}, separators=(",", ":"))
        self._prefix = b"event: response.output_text.delta\ndata: " + head[:-1].encode()

    def _event(self, kind: str, **fields: Any) -> bytes:
        self._seq += 1
        return sse({"type": kind, "sequence_number": self._seq, **fields}, event=kind)

    def head(self) -> bytes:
        response = _response_object(
            self._call, self._created_at, "in_progress", [], None, self._fingerprint
        )
        return self._event("response.created", response=response) + self._event(
            "response.in_progress", response=response
        )

    def opening(self) -> bytes:
        where = {"item_id": self._item_id, "output_index": 0, "content_index": 0}
        return b"".join(
            [
                self._event(
                    "response.output_item.added",
                    output_index=0,
                    item=_message_item(self._item_id, "", "in_progress"),
                ),
                self._event(
                    "response.content_part.added",
                    **where,
                    part={"type": "output_text", "text": "", "annotations": []},
                ),
            ]
        )

    def token(self, text: str) -> bytes:
        self._texts.append(text)
        self._seq += 1
        tail = f',"delta":{json.dumps(text)},"sequence_number":{self._seq}}}\n\n'
        return self._prefix + tail.encode()

    def closing(self, completion: Completion) -> bytes:
        text = "".join(self._texts)
        where = {"item_id": self._item_id, "output_index": 0, "content_index": 0}
        item = _message_item(self._item_id, text, "completed")
        response = _response_object(
            self._call, self._created_at, "completed", [item], completion, self._fingerprint
        )
        final = (
            "response.incomplete" if response["status"] == "incomplete" else "response.completed"
        )
        return b"".join(
            [
                self._event("response.output_text.done", **where, text=text),
                self._event(
                    "response.content_part.done",
                    **where,
                    part={"type": "output_text", "text": text, "annotations": []},
                ),
                self._event("response.output_item.done", output_index=0, item=item),
                self._event(final, response=response),
            ]
        )


# --- Models --------------------------------------------------------------------------------


def models_body(models: tuple[str, ...], fingerprint: str) -> dict[str, Any]:
    """`GET /models`: the OpenAI list object."""
    created = int(time.time())
    return {
        "object": "list",
        "data": [
            {"id": m, "object": "model", "created": created, "owned_by": fingerprint}
            for m in models
        ],
    }
