"""Anthropic Messages wire format, as Claude Code speaks it.

Claude Code's body carries `system` blocks, `{"role": "system"}` entries inside `messages`,
dozens of tools, `thinking`, `context_management`, `output_config` and a string
`metadata.user_id`; all are accepted, and only the text reaches the engine.
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
    optional_positive_int,
    require_str,
    sse,
)

_ERROR_TYPES: dict[str, str] = {
    "invalid_request": "invalid_request_error",
    "context_length": "invalid_request_error",
    "authentication": "authentication_error",
    "not_found": "not_found_error",
    "model_not_found": "not_found_error",
    "method_not_allowed": "invalid_request_error",
    "request_too_large": "request_too_large",
    "rate_limit": "rate_limit_error",
    "server_error": "api_error",
    "overloaded": "overloaded_error",
}

_STOP_REASONS = {"stop": "end_turn", "length": "max_tokens"}


def error_body(error: ApiError) -> dict[str, Any]:
    """The Anthropic error object: `{"type": "error", "error": {"type", "message"}}`."""
    return {"type": "error", "error": {"type": _ERROR_TYPES[error.kind], "message": error.message}}


def parse_messages(raw: bytes) -> ParsedCall:
    """A `POST /v1/messages` body → ParsedCall (400 on wrong shapes)."""
    body = decode_json_object(raw)
    model = require_str(body, "model")
    optional_list(body, "tools")
    messages: list[ChatMessage] = []
    system = body.get("system")
    if system is not None:
        messages.append(ChatMessage("system", content_text(system, param="system")))
    raw_messages = body.get("messages")
    if not isinstance(raw_messages, list) or not raw_messages:
        raise invalid("messages: must be a non-empty array", param="messages")
    for index, message in enumerate(raw_messages):
        messages.append(_message(message, index))
    request = GenerationRequest(
        model=model,
        messages=tuple(messages),
        max_tokens=optional_positive_int(body, "max_tokens"),
        request_id=f"msg_{uuid.uuid4().hex[:24]}",
        metadata={"api": "anthropic"},
    )
    return ParsedCall(request, stream=optional_bool(body, "stream"))


def _message(message: Any, index: int) -> ChatMessage:
    param = f"messages.{index}"
    if not isinstance(message, dict):
        raise invalid(f"{param}: must be an object", param=param)
    role = message.get("role")
    if not isinstance(role, str) or not role:
        raise invalid(f"{param}.role: must be a non-empty string", param=f"{param}.role")
    return ChatMessage(role, content_text(message.get("content"), param=f"{param}.content"))


def _usage(completion: Completion) -> dict[str, Any]:
    return {
        "input_tokens": completion.prompt_tokens,
        "output_tokens": completion.completion_tokens,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
        "pd_timing": completion.pd_timing.to_json(),
    }


def message_body(call: ParsedCall, text: str, completion: Completion, fingerprint: str) -> dict:
    """The non-streamed Message object."""
    return {
        "id": call.request.request_id,
        "type": "message",
        "role": "assistant",
        "model": call.request.model,
        "content": [{"type": "text", "text": text}],
        "stop_reason": _STOP_REASONS[completion.finish_reason],
        "stop_sequence": None,
        "usage": _usage(completion),
    }


class MessagesStreamEncoder:
    """message_start … message_stop; pd_timing rides in the final message_delta's usage."""

    def __init__(self, call: ParsedCall, fingerprint: str, prompt_tokens: int = 0) -> None:
        self._call = call
        self._prompt_tokens = prompt_tokens
        self._prefix = (
            b"event: content_block_delta\n"
            b'data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":'
        )

    def head(self) -> bytes:
        message: dict[str, Any] = {
            "id": self._call.request.request_id,
            "type": "message",
            "role": "assistant",
            "model": self._call.request.model,
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": {
                "input_tokens": self._prompt_tokens,
                "output_tokens": 1,
                "cache_creation_input_tokens": 0,
                "cache_read_input_tokens": 0,
            },
        }
        return sse({"type": "message_start", "message": message}, event="message_start")

    def opening(self) -> bytes:
        block = {
            "type": "content_block_start",
            "index": 0,
            "content_block": {"type": "text", "text": ""},
        }
        return sse(block, event="content_block_start") + sse({"type": "ping"}, event="ping")

    def token(self, text: str) -> bytes:
        return self._prefix + json.dumps(text).encode() + b"}}\n\n"

    def closing(self, completion: Completion) -> bytes:
        delta = {"stop_reason": _STOP_REASONS[completion.finish_reason], "stop_sequence": None}
        return b"".join(
            [
                sse({"type": "content_block_stop", "index": 0}, event="content_block_stop"),
                sse(
                    {"type": "message_delta", "delta": delta, "usage": _usage(completion)},
                    event="message_delta",
                ),
                sse({"type": "message_stop"}, event="message_stop"),
            ]
        )


def models_body(models: tuple[str, ...]) -> dict[str, Any]:
    """`GET /v1/models`, as Claude Code's gateway discovery reads it."""
    created = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    data = [{"type": "model", "id": m, "display_name": m, "created_at": created} for m in models]
    first, last = (models[0], models[-1]) if models else (None, None)
    return {"data": data, "has_more": False, "first_id": first, "last_id": last}
