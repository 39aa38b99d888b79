"""What the OpenAI and Anthropic protocol modules share: the parsed call, the stream-encoder
interface and strict-but-forgiving body readers.

Readers raise `http_errors.ApiError` (400) on wrong types but ignore keys they do not know,
because real clients send many (Codex: `tools` of unknown types; Claude Code: `thinking`, …).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Protocol

from notes_cli.engine.core.api import Completion, GenerationRequest
from notes_cli.engine.http.http_errors import invalid


@dataclass(frozen=True)
class ParsedCall:
    """A request body understood: what to generate and how to answer."""

    request: GenerationRequest
    stream: bool
    include_usage: bool = False


class StreamEncoder(Protocol):
    """Turns engine output into one protocol's SSE bytes.

    `head` goes out as soon as the request is admitted, with the response headers: only what
    the real API sends before the model has produced anything (Responses' `response.created`,
    Anthropic's `message_start`). `opening` goes out with the first token: the chat role chunk
    travels with it, as vLLM sends it, because vLLM's benchmark times TTFT at the first chunk
    that carries a choice."""

    def head(self) -> bytes: ...

    def opening(self) -> bytes: ...

    def token(self, text: str) -> bytes: ...

    def closing(self, completion: Completion) -> bytes: ...


def sse(data: Any, event: str | None = None) -> bytes:
    """One server-sent event; compact JSON keeps the per-token cost low."""
    payload = data if isinstance(data, str) else json.dumps(data, separators=(",", ":"))
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {payload}\n\n".encode()


def decode_json_object(raw: bytes) -> dict[str, Any]:
    """The request body as a JSON object, or 400."""
    try:
        data = json.loads(raw)
    except (UnicodeDecodeError, ValueError) as exc:
        raise invalid(f"We could not parse the JSON body of your request: {exc}") from exc
    if not isinstance(data, dict):
        raise invalid("The request body must be a JSON object.")
    return data


def require_str(body: dict[str, Any], key: str) -> str:
    value = body.get(key)
    if not isinstance(value, str) or not value:
        raise invalid(f"'{key}' is required and must be a non-empty string.", param=key)
    return value


def optional_bool(body: dict[str, Any], key: str) -> bool:
    value = body.get(key, False)
    if value is None:
        return False
    if not isinstance(value, bool):
        raise invalid(f"'{key}' must be a boolean.", param=key)
    return value


def optional_positive_int(body: dict[str, Any], *keys: str) -> int | None:
    """The first of `keys` present, as an integer >= 1 (booleans are not integers here)."""
    for key in keys:
        value = body.get(key)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise invalid(f"'{key}' must be an integer >= 1.", param=key)
        return value
    return None


def optional_str(body: dict[str, Any], key: str) -> str | None:
    value = body.get(key)
    if value is None or isinstance(value, str):
        return value
    raise invalid(f"'{key}' must be a string.", param=key)


def optional_list(body: dict[str, Any], key: str) -> list[Any]:
    value = body.get(key)
    if value is None:
        return []
    if not isinstance(value, list):
        raise invalid(f"'{key}' must be an array.", param=key)
    return value


def optional_object(body: dict[str, Any], key: str) -> dict[str, Any]:
    value = body.get(key)
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise invalid(f"'{key}' must be an object.", param=key)
    return value


_TEXT_PART_TYPES = frozenset({"text", "input_text", "output_text"})


def content_text(content: Any, *, param: str) -> str:
    """Flatten message content: a string, or a list of parts whose text parts are joined.

    Non-text parts (images, tool blocks, thinking) are accepted and contribute their text
    fields when they have one, so prompt length stays roughly honest."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        raise invalid(f"'{param}' must be a string or an array of content parts.", param=param)
    texts: list[str] = []
    for index, part in enumerate(content):
        if isinstance(part, str):
            texts.append(part)
            continue
        if not isinstance(part, dict):
            raise invalid(f"'{param}[{index}]' must be an object.", param=f"{param}[{index}]")
        texts.append(_part_text(part, param=f"{param}[{index}]"))
    return "\n".join(t for t in texts if t)


def _part_text(part: dict[str, Any], *, param: str) -> str:
    kind = part.get("type")
    if kind in _TEXT_PART_TYPES:
        text = part.get("text")
        if not isinstance(text, str):
            raise invalid(f"'{param}.text' must be a string.", param=f"{param}.text")
        return text
    for key in ("text", "thinking", "output"):
        value = part.get(key)
        if isinstance(value, str):
            return value
    nested = part.get("content")
    if isinstance(nested, (str, list)):
        return content_text(nested, param=f"{param}.content")
    return ""
