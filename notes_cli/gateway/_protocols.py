"""What each client sends, and how to read what comes back, for the three wire protocols:

- "responses": Codex's Responses API stream (`POST {base}/responses`, Bearer auth),
- "anthropic": Claude Code's Messages stream (`POST {base}/v1/messages?beta=true`,
  `anthropic-version`, x-api-key and/or Bearer),
- "chat": chat completions with `stream_options.include_usage` (the OpenAI SDK's way).

Pure functions and small state machines, no IO: the sync and async drivers share them.
"""

from __future__ import annotations

import json
from typing import Any

from notes_cli import __version__
from notes_cli.clients.endpoint import Endpoint, join_url
from notes_cli.gateway.results import StreamResult, Timings
from notes_cli.gateway.sse import ServerSentEvent
from notes_cli.wire import Message, Part, Sampling, TextPart, Turn
from notes_cli.wire import anthropic as wire_anthropic
from notes_cli.wire import chat as wire_chat
from notes_cli.wire import responses as wire_responses

ANTHROPIC_VERSION = "2023-06-01"
USER_AGENT = f"pdnotes/{__version__}"

_WIRE = {"chat": wire_chat, "responses": wire_responses, "anthropic": wire_anthropic}

# Finish reasons that mean "the model stopped by itself".
NATURAL_STOPS = frozenset({"stop", "end_turn", "stop_sequence", "completed", "eos"})


class StreamFailed(Exception):
    """The stream reported an error event; the driver turns it into UpstreamError."""


# --------------------------------------------------------------------------- requests


def request_url(endpoint: Endpoint) -> str:
    """The URL the client posts a turn to; Claude Code always adds `?beta=true`."""
    if endpoint.protocol == "anthropic":
        params = {**endpoint.query_params, "beta": "true"}
        return join_url(endpoint.base_url, "/v1/messages", params)
    return endpoint.request_url()


def auth_headers(endpoint: Endpoint) -> dict[str, str]:
    """The credential headers in the client's style (never logged)."""
    headers: dict[str, str] = {}
    if not endpoint.key or endpoint.auth_style == "none":
        return headers
    if endpoint.auth_style in ("bearer", "both"):
        headers["authorization"] = f"Bearer {endpoint.key}"
    if endpoint.auth_style in ("x-api-key", "both"):
        headers["x-api-key"] = endpoint.key
    return headers


def base_headers(endpoint: Endpoint, *, stream: bool) -> dict[str, str]:
    accept = "text/event-stream" if stream else "application/json"
    headers = {"user-agent": USER_AGENT, "accept": accept}
    if endpoint.protocol == "anthropic":
        headers["anthropic-version"] = ANTHROPIC_VERSION
    headers.update(endpoint.headers)
    headers.update(auth_headers(endpoint))
    return headers


def build_body(
    endpoint: Endpoint,
    messages: list[dict[str, Any]] | str,
    *,
    max_tokens: int,
    stream: bool,
    extra_body: dict[str, Any] | None = None,
) -> bytes:
    """The JSON body of one turn in the endpoint's protocol, encoded by the wire layer from a
    neutral turn (system prompts go to Responses as `developer` messages, as Codex sends them;
    `store: false` too)."""
    chat = [{"role": "user", "content": messages}] if isinstance(messages, str) else messages
    turn = Turn(
        model=endpoint.model or "",
        messages=[_message(m, endpoint.protocol) for m in chat],
        sampling=Sampling(max_tokens=max_tokens),
        stream=stream,
        include_usage=True,
    )
    body: dict[str, Any] = _WIRE[endpoint.protocol].encode_request(turn)
    if endpoint.protocol == "responses":
        body["store"] = False
    if extra_body:
        body.update(extra_body)
    return json.dumps(body, ensure_ascii=False).encode()


def _message(message: dict[str, Any], protocol: str) -> Message:
    role = message.get("role", "user")
    if role == "system" and protocol == "responses":
        role = "developer"
    content = message.get("content", "")
    if isinstance(content, str):
        parts: list[Part] = [TextPart(content)]
    else:
        parts = [TextPart(str(p["text"])) for p in content if isinstance(p, dict) and "text" in p]
    return Message(role, parts)


def parse_model_ids(payload: Any) -> list[str]:
    """Ids from an OpenAI (`{"data": [{"id"}]}`) or Anthropic model list, or a bare list."""
    items = payload.get("data", payload.get("models", [])) if isinstance(payload, dict) else payload
    ids: list[str] = []
    for item in items if isinstance(items, list) else []:
        if isinstance(item, dict) and isinstance(item.get("id"), str):
            ids.append(item["id"])
        elif isinstance(item, str):
            ids.append(item)
    return ids


# --------------------------------------------------------------------------- streams


class StreamState:
    """Accumulates one stream. Subclasses read one protocol's events; `mark_chunk` records
    when output arrived. `done` means the protocol's completion event was seen."""

    __slots__ = (
        "text_parts",
        "finish_reason",
        "done",
        "output_tokens",
        "input_tokens",
        "pd_timing",
        "model",
        "events",
        "reasoning_chars",
        "chunk_ms",
        "content_chunks",
        "closed",
        "item_text_seen",
    )

    def __init__(self) -> None:
        self.text_parts: list[str] = []
        self.finish_reason: str | None = None
        self.done = False
        self.output_tokens: int | None = None
        self.input_tokens: int | None = None
        self.pd_timing: dict[str, Any] | None = None
        self.model: str | None = None
        self.events = 0
        self.reasoning_chars = 0
        self.chunk_ms: list[float] = []
        self.content_chunks = 0
        self.closed = False  # the last event of the stream arrived: stop reading
        self.item_text_seen = False  # Responses: a finished message item carried text

    def handle(self, event: ServerSentEvent, now_ms: float) -> str | None:
        """Read one event. Returns the text it carried ("" for reasoning-only output), or None
        when it carried no output."""
        self.events += 1
        data = event.data
        if data == "[DONE]":
            self.closed = True
            return None
        try:
            obj = json.loads(data)
        except (ValueError, RecursionError):  # RecursionError: `[[[[…` thousands deep
            return None  # tolerate junk lines; a missing completion event is caught later
        if not isinstance(obj, dict):
            return None
        got = self.read(obj)
        if got is not None:
            self.chunk_ms.append(now_ms)
        return got

    def read(self, obj: dict[str, Any]) -> str | None:
        raise NotImplementedError

    def add_text(self, text: Any) -> str | None:
        if isinstance(text, str) and text:
            self.text_parts.append(text)
            self.content_chunks += 1
            return text
        return None

    def add_reasoning(self, text: Any) -> str | None:
        if isinstance(text, str) and text:
            self.reasoning_chars += len(text)
            return ""
        return None

    def read_usage(self, usage: Any, out_key: str, in_key: str) -> None:
        if not isinstance(usage, dict):
            return
        if isinstance(usage.get(out_key), int):
            self.output_tokens = usage[out_key]
        if isinstance(usage.get(in_key), int):
            self.input_tokens = usage[in_key]
        if isinstance(usage.get("pd_timing"), dict):
            self.pd_timing = usage["pd_timing"]

    def result(self, status: int, timings: Timings) -> StreamResult:
        timings.chunk_ms = self.chunk_ms
        if self.chunk_ms:
            timings.ttft_ms = self.chunk_ms[0]
        counted = self.output_tokens is None
        return StreamResult(
            status=status,
            text="".join(self.text_parts),
            finish_reason=self.finish_reason,
            completed=self.done and self.finish_reason in NATURAL_STOPS,
            output_tokens=self.content_chunks if counted else int(self.output_tokens or 0),
            input_tokens=self.input_tokens,
            tokens_source="counted" if counted else "usage",
            model=self.model,
            timings=timings,
            pd_timing=self.pd_timing,
            raw_events_count=self.events,
            reasoning_chars=self.reasoning_chars,
            client_issues=self.client_issues(),
        )

    def client_issues(self) -> list[str]:
        return []


class ChatState(StreamState):
    __slots__ = ()

    def read(self, obj: dict[str, Any]) -> str | None:
        if obj.get("error"):
            raise StreamFailed(_error_text(obj["error"]))
        if "model" in obj:
            self.model = obj["model"] or self.model
        got: str | None = None
        for choice in obj.get("choices") or ():
            delta = choice.get("delta") or choice.get("message") or {}
            text = self.add_text(delta.get("content"))
            if text is None:
                text = self.add_reasoning(delta.get("reasoning_content") or delta.get("reasoning"))
            if text is not None:
                got = text if got is None else got + text
            if choice.get("finish_reason"):
                self.finish_reason = choice["finish_reason"]
                self.done = True
        if obj.get("usage"):
            self.read_usage(obj["usage"], "completion_tokens", "prompt_tokens")
        return got


class ResponsesState(StreamState):
    __slots__ = ()

    def read(self, obj: dict[str, Any]) -> str | None:
        kind = obj.get("type", "")
        if kind == "response.output_text.delta":
            return self.add_text(obj.get("delta"))
        if kind.startswith("response.reasoning") and kind.endswith(".delta"):
            return self.add_reasoning(obj.get("delta"))
        if kind == "response.output_item.done":
            # Minimal servers (and Codex's own test doubles) send whole items, no deltas.
            item_text = _item_text(obj.get("item") or {})
            self.item_text_seen = self.item_text_seen or bool(item_text)
            return None if self.text_parts else self.add_text(item_text)
        if kind in ("response.completed", "response.incomplete"):
            self.finish(obj.get("response") or {}, kind)
            self.closed = True
        elif kind in ("response.created", "response.in_progress"):
            self.model = (obj.get("response") or {}).get("model") or self.model
        elif kind in ("response.failed", "error"):
            error = (obj.get("response") or {}).get("error") or obj.get("error") or obj
            raise StreamFailed(_error_text(error))
        return None

    def client_issues(self) -> list[str]:
        if self.text_parts and not self.item_text_seen and self.events > 1:
            return [
                "text arrived only as deltas, with no response.output_item.done message item: "
                "Codex prints an empty answer for this stream"
            ]
        return []

    def finish(self, response: dict[str, Any], kind: str) -> None:
        self.done = True
        self.model = response.get("model") or self.model
        if kind == "response.completed":
            self.finish_reason = "completed"
        else:
            details = response.get("incomplete_details") or {}
            self.finish_reason = details.get("reason") or "incomplete"
        self.read_usage(response.get("usage"), "output_tokens", "input_tokens")
        for item in response.get("output") or ():
            text = _item_text(item)
            self.item_text_seen = self.item_text_seen or bool(text)
            if not self.text_parts:
                self.add_text(text)


class AnthropicState(StreamState):
    __slots__ = ()

    def read(self, obj: dict[str, Any]) -> str | None:
        kind = obj.get("type", "")
        if kind == "content_block_delta":
            delta = obj.get("delta") or {}
            if delta.get("type") == "text_delta":
                return self.add_text(delta.get("text"))
            return self.add_reasoning(delta.get("thinking"))
        if kind == "message_start":
            message = obj.get("message") or {}
            self.model = message.get("model") or self.model
            self.read_usage(message.get("usage"), "output_tokens", "input_tokens")
            self.output_tokens = None  # message_start's count is a placeholder
        elif kind == "message_delta":
            stop = (obj.get("delta") or {}).get("stop_reason")
            if stop:
                self.finish_reason = stop
                self.done = True  # the stop reason is the semantic end; message_stop follows
            self.read_usage(obj.get("usage"), "output_tokens", "input_tokens")
        elif kind == "message_stop":
            self.closed = True
        elif kind == "error":
            raise StreamFailed(_error_text(obj.get("error") or obj))
        return None


STATES: dict[str, type[StreamState]] = {
    "chat": ChatState,
    "responses": ResponsesState,
    "anthropic": AnthropicState,
}


def parse_body(
    protocol: str, payload: dict[str, Any], status: int, timings: Timings
) -> StreamResult:
    """A non-streamed answer read with the same rules as a stream."""
    state = STATES[protocol]()
    if protocol == "chat":
        state.read(payload)
    elif protocol == "responses":
        assert isinstance(state, ResponsesState)
        completed = payload.get("status", "completed") == "completed"
        state.finish(payload, "response.completed" if completed else "response.incomplete")
    else:
        state.model = payload.get("model")
        for block in payload.get("content") or ():
            if block.get("type") == "text":
                state.add_text(block.get("text"))
        state.finish_reason = payload.get("stop_reason")
        state.done = state.finish_reason is not None
        state.read_usage(payload.get("usage"), "output_tokens", "input_tokens")
    state.events = 1
    return state.result(status, timings)


def _item_text(item: dict[str, Any]) -> str:
    parts = item.get("content") or ()
    return "".join(p.get("text", "") for p in parts if p.get("type") == "output_text")


def _error_text(error: Any) -> str:
    if isinstance(error, dict):
        return str(error.get("message") or error.get("type") or error)
    return str(error)
