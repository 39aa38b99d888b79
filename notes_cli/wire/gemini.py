"""Google's Gemini API (`models/{model}:generateContent` and `:streamGenerateContent`, as Gemini
CLI and the @google/genai SDK send it) ⇄ the neutral turn.

The model and whether the answer streams are in the URL, not the body: servers pass them to
`decode_request(body, model=, stream=)`, clients put them in the path `request_path(turn)`
gives. `systemInstruction` is a leading system message; `contents` roles are `user` and
`model` (assistant). A user content's `functionResponse` parts become one `tool` message each,
in order, around the user's own parts; encoding joins a run of tool messages back into one
user content. `functionCall.args` objects are the neutral call's `arguments` as compact JSON.

Gemini names the function in a `functionResponse` but the neutral result only has the call's
id, so the encoder takes the name from the call with that id earlier in the turn (the id
itself when there is none). Calls may come without an id (the Gemini API sends none; Gemini
CLI then makes one up for its `functionResponse`): the decoder gives such a call the id
`gemini_call_N` (its place in the request) and pairs a response whose id names no call with
the oldest unanswered call of the same name, so the chat upstream a bridge feeds sees ids that
match.

Thought parts (`thought: true`) are reasoning parts; a `thoughtSignature` on a text or
function-call part is a reasoning part with empty text before it (and encodes back onto the
part after it). `functionResponse.response` is `{"output": text}` or `{"error": text}` (what
Gemini CLI sends): the text is the result, `error` marks it an error; any other object is kept
as its compact JSON. Tool declarations take `parametersJsonSchema` (JSON Schema), else
`parameters` (Google's OpenAPI subset: its upper-case type names are lower-cased); the encoder
writes `parametersJsonSchema`.

Streams are SSE (`?alt=sse`: each `data:` a whole GenerateContentResponse) or, without it, one
JSON array of those responses (`JsonArrayStreamEncoder`). A function call is never split:
argument deltas are held until the call ends and go out as one `functionCall` part. The last
chunk carries `finishReason` and the full `usageMetadata`. An error after the first byte goes
out as Google sends it: a bare JSON error object, not an SSE event, which both Google SDKs
raise (the decoder also reads one sent as a `data:` event).
"""

from __future__ import annotations

import json
import mimetypes
import re
import secrets
from typing import Any

from notes_cli.wire import _fields as f
from notes_cli.wire import fastjson
from notes_cli.wire.errors import KIND_STATUS, ErrorKind, WireError, invalid, kind_for_status
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

_HANDLED = frozenset(
    {"model", "contents", "systemInstruction", "tools", "toolConfig", "generationConfig"}
)
_GENERATION = frozenset(
    {
        "maxOutputTokens",
        "temperature",
        "topP",
        "topK",
        "stopSequences",
        "seed",
        "presencePenalty",
        "frequencyPenalty",
        "thinkingConfig",
        "candidateCount",
    }
)
# Part payloads the API accepts (one per part); those the neutral turn has no field for are
# accepted and left out.
_PART_KEYS = frozenset(
    {
        "text",
        "inlineData",
        "fileData",
        "functionCall",
        "functionResponse",
        "executableCode",
        "codeExecutionResult",
        "toolCall",
        "toolResponse",
    }
)
_MODES = frozenset({"AUTO", "ANY", "NONE", "VALIDATED", "MODE_UNSPECIFIED"})
_LEVELS = frozenset({"MINIMAL", "LOW", "MEDIUM", "HIGH"})
_SCHEMA_TYPES = frozenset({"STRING", "NUMBER", "INTEGER", "BOOLEAN", "ARRAY", "OBJECT", "NULL"})
_DATA_URL = re.compile(r"^data:([^;,]+);base64,(.*)$", re.DOTALL)
_FINISH_IN: dict[str, FinishReason] = {
    "STOP": "stop",
    "MAX_TOKENS": "length",
    "SAFETY": "content_filter",
    "RECITATION": "content_filter",
    "BLOCKLIST": "content_filter",
    "PROHIBITED_CONTENT": "content_filter",
    "SPII": "content_filter",
    "IMAGE_SAFETY": "content_filter",
    "LANGUAGE": "content_filter",
    "MALFORMED_FUNCTION_CALL": "error",
    "UNEXPECTED_TOOL_CALL": "error",
    "TOO_MANY_TOOL_CALLS": "error",
    "OTHER": "error",
}
# Gemini has no finish word for tool calls: an answer that calls a function stops with STOP.
_FINISH_OUT: dict[str, str] = {
    "stop": "STOP",
    "length": "MAX_TOKENS",
    "tool_calls": "STOP",
    "content_filter": "SAFETY",
    "error": "OTHER",
}
# google.rpc status words, by HTTP status (Google's own pairing) and back to neutral kinds.
_STATUS_WORDS: dict[int, str] = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    409: "ABORTED",
    429: "RESOURCE_EXHAUSTED",
    499: "CANCELLED",
    500: "INTERNAL",
    501: "UNIMPLEMENTED",
    502: "UNAVAILABLE",
    503: "UNAVAILABLE",
    504: "DEADLINE_EXCEEDED",
}
_KINDS_IN: dict[str, ErrorKind] = {
    "INVALID_ARGUMENT": "invalid_request",
    "FAILED_PRECONDITION": "invalid_request",
    "OUT_OF_RANGE": "invalid_request",
    "UNAUTHENTICATED": "authentication",
    "PERMISSION_DENIED": "permission",
    "NOT_FOUND": "not_found",
    "RESOURCE_EXHAUSTED": "rate_limit",
    "INTERNAL": "server_error",
    "UNKNOWN": "server_error",
    "DEADLINE_EXCEEDED": "server_error",
    "UNAVAILABLE": "overloaded",
}
_RETRY_INFO = "type.googleapis.com/google.rpc.RetryInfo"
_ERROR_INFO = "type.googleapis.com/google.rpc.ErrorInfo"


def new_id() -> str:
    """A responseId in Google's style (22 URL-safe characters)."""
    return secrets.token_urlsafe(16)[:22]


def request_path(turn: Turn) -> str:
    """Where a client sends `encode_request(turn)`, below the API version's base
    (`…/v1beta`): the model and the stream mode are in the URL."""
    if turn.stream:
        return f"/models/{turn.model}:streamGenerateContent?alt=sse"
    return f"/models/{turn.model}:generateContent"


def _camel(obj: Any) -> Any:
    """`obj` with its snake_case keys in camelCase: Google's JSON parser accepts a field by
    either name, and the Python SDK sends some in snake_case (`parameters_json_schema`).
    Applied one level at a time, to the request's own objects only (never inside a schema, a
    call's `args` or a response, whose keys are the user's)."""
    if not isinstance(obj, dict) or not any("_" in key for key in obj):
        return obj
    return {_camel_word(key): value for key, value in obj.items()}


def _camel_word(key: str) -> str:
    head, *rest = key.split("_")
    return head + "".join(word[:1].upper() + word[1:] for word in rest) if head else key


def _at(*parts: Any) -> str:
    """A param path as Google spells it: `contents[0].parts[1].text`."""
    out = ""
    for part in parts:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


# --------------------------------------------------------------------------- requests


def decode_request(
    body: bytes | str | dict[str, Any], *, model: str | None = None, stream: bool = False
) -> Turn:
    """A GenerateContentRequest body → Turn; WireError (400 naming the param) on bad input.
    `model` (a bare id or `models/ID`) and `stream` come from the URL; without `model`, the
    body's own `model` field is read, else the turn's model is empty."""
    data = _camel(f.decode_json_object(body))
    if model is None:
        model = f.optional_str(data, "model") or ""
    model = model.removeprefix("models/")
    messages: list[Message] = []
    system = data.get("systemInstruction")
    if system is not None:
        parts = _decode_system(system)
        if parts:
            messages.append(Message("system", parts))
    raw_contents = data.get("contents")
    if not isinstance(raw_contents, list) or not raw_contents:
        raise invalid("contents: must be a non-empty array", param="contents")
    calls = _Calls()
    for index, raw in enumerate(raw_contents):
        messages.extend(_decode_content(raw, index, calls))
    tools = _decode_tools(f.optional_list(data, "tools"))
    generation = _camel(f.optional_object(data, "generationConfig") or {})
    extra = {k: v for k, v in data.items() if k not in _HANDLED}
    rest = {k: v for k, v in generation.items() if k not in _GENERATION}
    if rest:
        extra["generationConfig"] = rest
    count = f.optional_int(
        generation, "candidateCount", low=1, param=_at("generationConfig", "candidateCount")
    )
    if count is not None:
        extra["candidateCount"] = count
    return Turn(
        model=model,
        messages=messages,
        tools=tools,
        tool_choice=_decode_tool_config(data.get("toolConfig")),
        sampling=_decode_sampling(generation),
        stream=stream,
        reasoning=_decode_thinking(generation),
        include_usage=True,
        extra=extra,
    )


def decode_count_request(body: bytes | str | dict[str, Any], *, model: str) -> Turn:
    """A `:countTokens` body: `{"contents"}`, or a whole `{"generateContentRequest"}`."""
    data = _camel(f.decode_json_object(body))
    inner = data.get("generateContentRequest")
    return decode_request(inner if isinstance(inner, dict) else data, model=model)


def _decode_sampling(generation: dict[str, Any]) -> Sampling:
    def at(key: str) -> str:
        return _at("generationConfig", key)

    stops = generation.get("stopSequences")
    if stops is not None and (
        not isinstance(stops, list) or not all(isinstance(s, str) for s in stops)
    ):
        raise invalid(
            f"{at('stopSequences')}: must be an array of strings", param=at("stopSequences")
        )
    top_k = f.optional_number(generation, "topK", low=0, param=at("topK"))
    return Sampling(
        max_tokens=f.optional_int(
            generation, "maxOutputTokens", low=1, param=at("maxOutputTokens")
        ),
        temperature=f.optional_number(
            generation, "temperature", low=0, high=2, param=at("temperature")
        ),
        top_p=f.optional_number(generation, "topP", low=0, high=1, param=at("topP")),
        top_k=None if top_k is None else int(top_k),
        stop=tuple(stops or ()),
        seed=f.optional_int(generation, "seed", param=at("seed")),
        presence_penalty=f.optional_number(
            generation, "presencePenalty", param=at("presencePenalty")
        ),
        frequency_penalty=f.optional_number(
            generation, "frequencyPenalty", param=at("frequencyPenalty")
        ),
    )


def _decode_thinking(generation: dict[str, Any]) -> Reasoning | None:
    """`thinkingConfig`: `thinkingLevel` is the effort (lower-cased), a positive
    `thinkingBudget` the budget, 0 the effort "none" (thinking off), -1 (dynamic) nothing;
    `includeThoughts` asks for the thoughts, as Responses' summary "auto" does."""
    where = _at("generationConfig", "thinkingConfig")
    thinking = _camel(f.optional_object(generation, "thinkingConfig", param=where))
    if thinking is None:
        return None
    level = f.optional_str(thinking, "thinkingLevel", param=f"{where}.thinkingLevel")
    if level is not None and level not in _LEVELS and level != "THINKING_LEVEL_UNSPECIFIED":
        raise invalid(
            f"{where}.thinkingLevel: must be one of {', '.join(sorted(_LEVELS))}",
            param=f"{where}.thinkingLevel",
        )
    budget = f.optional_int(thinking, "thinkingBudget", low=-1, param=f"{where}.thinkingBudget")
    include = f.optional_bool(thinking, "includeThoughts", param=f"{where}.includeThoughts")
    effort = level.lower() if level in _LEVELS else None
    if budget == 0 and effort is None:
        effort = "none"
    reasoning = Reasoning(
        effort=effort,
        budget_tokens=budget if budget is not None and budget > 0 else None,
        summary="auto" if include else None,
    )
    return None if reasoning == Reasoning() else reasoning


def _decode_system(system: Any) -> list[Part]:
    if isinstance(system, str):
        return [TextPart(system)] if system else []
    content = _camel(f.require_object(system, "systemInstruction"))
    parts = content.get("parts")
    if not isinstance(parts, list):
        raise invalid("systemInstruction.parts: must be an array", param="systemInstruction.parts")
    out: list[Part] = []
    for index, raw in enumerate(parts):
        where = _at("systemInstruction", "parts", index)
        part = _camel(f.require_object(raw, where))
        text = part.get("text")
        if not isinstance(text, str):
            raise invalid(f"{where}: must be a text part", param=where)
        out.append(TextPart(text))
    return out


class _Calls:
    """The function calls of a request in order, for ids: a call without one gets
    `gemini_call_N`, and a response is paired with the call it answers."""

    def __init__(self) -> None:
        self.count = 0
        self.open: list[tuple[str, str]] = []  # (call id, name) not yet answered

    def call(self, call_id: str | None, name: str) -> str:
        self.count += 1
        given = call_id or f"gemini_call_{self.count - 1}"
        self.open.append((given, name))
        return given

    def answer(self, call_id: str | None, name: str) -> str:
        for i, (open_id, _) in enumerate(self.open):
            if call_id and open_id == call_id:
                del self.open[i]
                return open_id
        for i, (open_id, open_name) in enumerate(self.open):
            if open_name == name:
                del self.open[i]
                return open_id
        return call_id or name


def _decode_content(raw: Any, index: int, calls: _Calls) -> list[Message]:
    where = _at("contents", index)
    content = _camel(f.require_object(raw, where))
    role = content.get("role", "user")
    if role not in ("user", "model"):
        raise invalid(
            f"{where}.role: Please use a valid role: user, model (got {role!r}).",
            param=f"{where}.role",
        )
    raw_parts = content.get("parts")
    if not isinstance(raw_parts, list):
        raise invalid(f"{where}.parts: must be an array", param=f"{where}.parts")
    out: list[Message] = []
    own: list[Part] = []
    for part_index, raw_part in enumerate(raw_parts):
        at = _at("contents", index, "parts", part_index)
        part = _camel(f.require_object(raw_part, at))
        if not any(key in part for key in _PART_KEYS):
            raise invalid(
                f"{at}: a part needs one of text, inlineData, fileData, functionCall or "
                "functionResponse",
                param=at,
            )
        if "functionResponse" in part:
            if role == "model":
                raise invalid(
                    f"{at}.functionResponse: only a user content may answer a call",
                    param=f"{at}.functionResponse",
                )
            if own:
                out.append(Message("user", own))
                own = []
            out.append(Message("tool", [_decode_response(part["functionResponse"], at, calls)]))
            continue
        own.extend(_decode_part(part, at, model=role == "model", calls=calls))
    if own or not out:
        out.append(Message("assistant" if role == "model" else "user", own))
    return out


def _decode_part(part: dict[str, Any], at: str, *, model: bool, calls: _Calls) -> list[Part]:
    signature = f.optional_str(part, "thoughtSignature", param=f"{at}.thoughtSignature")
    thought = f.optional_bool(part, "thought", param=f"{at}.thought")
    if "text" in part:
        text = part["text"]
        if not isinstance(text, str):
            raise invalid(f"{at}.text: must be a string", param=f"{at}.text")
        if thought and model:
            return [ReasoningPart(text, signature)]
        return _signed(signature, TextPart(text))
    if "functionCall" in part:
        if not model:
            raise invalid(
                f"{at}.functionCall: only a model content may call a function",
                param=f"{at}.functionCall",
            )
        call = _camel(f.require_object(part["functionCall"], f"{at}.functionCall"))
        name = f.require_str(call, "name", param=f"{at}.functionCall.name")
        call_id = f.optional_str(call, "id", param=f"{at}.functionCall.id")
        args = call.get("args", {})
        if not isinstance(args, dict):
            raise invalid(
                f"{at}.functionCall.args: must be an object", param=f"{at}.functionCall.args"
            )
        return _signed(signature, ToolCallPart(calls.call(call_id, name), name, f.json_text(args)))
    if "inlineData" in part:
        blob = _camel(f.require_object(part["inlineData"], f"{at}.inlineData"))
        mime = f.require_str(blob, "mimeType", param=f"{at}.inlineData.mimeType")
        data = f.optional_str(blob, "data", param=f"{at}.inlineData.data") or ""
        return _signed(signature, ImagePart(f"data:{mime};base64,{data}"))
    if "fileData" in part:
        file = _camel(f.require_object(part["fileData"], f"{at}.fileData"))
        uri = f.require_str(file, "fileUri", param=f"{at}.fileData.fileUri")
        return _signed(signature, ImagePart(uri))
    return []  # executable code and its results: nothing the neutral turn holds


def _signed(signature: str | None, part: Part) -> list[Part]:
    return [ReasoningPart("", signature), part] if signature else [part]


def _decode_response(raw: Any, at: str, calls: _Calls) -> ToolResultPart:
    where = f"{at}.functionResponse"
    response = _camel(f.require_object(raw, where))
    name = f.require_str(response, "name", param=f"{where}.name")
    call_id = f.optional_str(response, "id", param=f"{where}.id")
    value = response.get("response", {})
    if not isinstance(value, dict):
        raise invalid(f"{where}.response: must be an object", param=f"{where}.response")
    error = False
    if set(value) == {"output"} and isinstance(value["output"], str):
        output = value["output"]
    elif set(value) == {"error"} and isinstance(value["error"], str):
        output, error = value["error"], True
    else:
        output = f.json_text(value) if value else ""
    return ToolResultPart(calls.answer(call_id, name), output, error)


def _decode_tools(raw_tools: list[Any]) -> list[ToolSpec]:
    out: list[ToolSpec] = []
    for index, raw in enumerate(raw_tools):
        where = _at("tools", index)
        tool = _camel(f.require_object(raw, where))
        for key, value in tool.items():
            if key != "functionDeclarations":
                out.append(ToolSpec("", "", None, key, raw={key: value}))  # googleSearch, …
                continue
            if not isinstance(value, list):
                raise invalid(
                    f"{where}.functionDeclarations: must be an array",
                    param=f"{where}.functionDeclarations",
                )
            for number, declaration in enumerate(value):
                out.append(
                    _decode_declaration(declaration, f"{where}.functionDeclarations[{number}]")
                )
    return out


def _decode_declaration(raw: Any, where: str) -> ToolSpec:
    declaration = _camel(f.require_object(raw, where))
    name = f.require_str(declaration, "name", param=f"{where}.name")
    description = f.optional_str(declaration, "description", param=f"{where}.description")
    schema = f.optional_object(
        declaration, "parametersJsonSchema", param=f"{where}.parametersJsonSchema"
    )
    if schema is None:
        openapi = f.optional_object(declaration, "parameters", param=f"{where}.parameters")
        schema = _json_schema(openapi) if openapi is not None else None
    return ToolSpec(name, description or "", schema)


def _json_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """Google's OpenAPI-subset Schema as JSON Schema: its type names (`OBJECT`, `STRING`, …)
    lower-cased everywhere in the tree. A copy (the request body is left as it came), made
    iteratively: a schema can be nested deeper than Python's recursion limit."""
    root: dict[str, Any] = {}
    stack: list[tuple[Any, Any]] = [(schema, root)]
    while stack:
        source, target = stack.pop()
        items = source.items() if isinstance(source, dict) else enumerate(source)
        for key, value in items:
            if isinstance(value, dict):
                copy: Any = {}
                stack.append((value, copy))
            elif isinstance(value, list):
                copy = [None] * len(value)
                stack.append((value, copy))
            elif key == "type" and isinstance(value, str) and value in _SCHEMA_TYPES:
                copy = value.lower()
            else:
                copy = value
            target[key] = copy
    return root


def _decode_tool_config(raw: Any) -> ToolChoice | None:
    if raw is None:
        return None
    config = _camel(f.require_object(raw, "toolConfig"))
    calling = _camel(
        f.optional_object(config, "functionCallingConfig", param="toolConfig.functionCallingConfig")
    )
    if calling is None:
        return None
    where = "toolConfig.functionCallingConfig"
    mode = f.optional_enum(calling, "mode", _MODES, param=f"{where}.mode") or "AUTO"
    allowed = f.optional_list(
        calling, "allowedFunctionNames", param=f"{where}.allowedFunctionNames"
    )
    if not all(isinstance(name, str) for name in allowed):
        raise invalid(
            f"{where}.allowedFunctionNames: must be an array of strings",
            param=f"{where}.allowedFunctionNames",
        )
    if mode == "NONE":
        return ToolChoice("none")
    if mode == "ANY":
        return ToolChoice("tool", allowed[0]) if len(allowed) == 1 else ToolChoice("required")
    return ToolChoice("auto")


def encode_request(turn: Turn) -> dict[str, Any]:
    """Turn → a GenerateContentRequest body (JSON-ready). The model and the stream mode are
    not in it: `request_path(turn)` puts them in the URL. Leading system / developer messages
    are the `systemInstruction`; one later in the conversation is sent as user text (the API
    has no system role in `contents`)."""
    messages = list(turn.messages)
    body: dict[str, Any] = {}
    system: list[dict[str, Any]] = []
    while messages and messages[0].role in ("system", "developer"):
        system += [{"text": p.text} for p in messages[0].parts if isinstance(p, TextPart)]
        messages = messages[1:]
    body["contents"] = _encode_contents(messages)
    if system:
        body["systemInstruction"] = {"parts": system}
    declarations = [_encode_declaration(t) for t in turn.tools if t.kind == "function"]
    tools: list[dict[str, Any]] = [{"functionDeclarations": declarations}] if declarations else []
    tools += [t.raw for t in turn.tools if _passes(t) and t.raw is not None]
    if tools:
        body["tools"] = tools
        config = _encode_tool_config(turn.tool_choice)
        if config is not None:
            body["toolConfig"] = config
    generation = _encode_generation(turn)
    if generation:
        body["generationConfig"] = generation
    return body


def _passes(spec: ToolSpec) -> bool:
    """A Gemini tool of its own (googleSearch, codeExecution, …) passes through as it came."""
    raw = spec.raw
    return raw is not None and len(raw) == 1 and spec.kind in raw and spec.kind != "custom"


def dropped_tools(turn: Turn) -> list[str]:
    return [t.name or t.kind for t in turn.tools if t.kind != "function" and not _passes(t)]


def _encode_generation(turn: Turn) -> dict[str, Any]:
    s = turn.sampling
    out: dict[str, Any] = {}
    for key, value in (
        ("maxOutputTokens", s.max_tokens),
        ("temperature", s.temperature),
        ("topP", s.top_p),
        ("topK", s.top_k),
        ("seed", s.seed),
        ("presencePenalty", s.presence_penalty),
        ("frequencyPenalty", s.frequency_penalty),
    ):
        if value is not None:
            out[key] = value
    if s.stop:
        out["stopSequences"] = list(s.stop)
    reasoning = turn.reasoning
    if reasoning is not None:
        thinking: dict[str, Any] = {}
        if reasoning.summary is not None:
            thinking["includeThoughts"] = True
        if reasoning.budget_tokens:
            thinking["thinkingBudget"] = reasoning.budget_tokens
        effort = (reasoning.effort or "").upper()
        if effort in _LEVELS:
            thinking["thinkingLevel"] = effort
        elif effort == "NONE" and not reasoning.budget_tokens:
            thinking["thinkingBudget"] = 0
        if thinking:
            out["thinkingConfig"] = thinking
    return out


def _encode_contents(messages: list[Message]) -> list[dict[str, Any]]:
    names = {p.call_id: p.name for m in messages for p in m.parts if isinstance(p, ToolCallPart)}
    out: list[dict[str, Any]] = []
    joining = False  # the last content is a user content made of function responses
    for message in messages:
        if message.role == "tool":
            parts = [
                _encode_result(p, names) for p in message.parts if isinstance(p, ToolResultPart)
            ]
            if joining:
                out[-1]["parts"].extend(parts)
            else:
                out.append({"role": "user", "parts": parts})
                joining = True
            continue
        joining = False
        role = "model" if message.role == "assistant" else "user"
        out.append({"role": role, "parts": _encode_parts(message.parts)})
    return out


def _encode_parts(parts: list[Part]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    signature: str | None = None  # a bare signature waiting for the part after it
    for index, part in enumerate(parts):
        if isinstance(part, ReasoningPart):
            following = parts[index + 1] if index + 1 < len(parts) else None
            if (
                not part.text
                and part.signature
                and isinstance(following, (TextPart, ToolCallPart, ImagePart))
            ):
                signature = part.signature
                continue
            thought: dict[str, Any] = {"text": part.text, "thought": True}
            if part.signature:
                thought["thoughtSignature"] = part.signature
            out.append(thought)
            continue
        encoded = _encode_part(part)
        if encoded is None:
            continue
        if signature:
            encoded["thoughtSignature"] = signature
            signature = None
        out.append(encoded)
    return out


def _encode_part(part: Part) -> dict[str, Any] | None:
    if isinstance(part, TextPart):
        return {"text": part.text}
    if isinstance(part, ImagePart):
        match = _DATA_URL.match(part.url)
        if match:
            return {"inlineData": {"mimeType": match.group(1), "data": match.group(2)}}
        file: dict[str, Any] = {"fileUri": part.url}
        mime, _ = mimetypes.guess_type(part.url)
        if mime:
            file["mimeType"] = mime
        return {"fileData": file}
    if isinstance(part, ToolCallPart):
        return {"functionCall": {"id": part.call_id, "name": part.name, "args": _args(part)}}
    return None  # tool results travel in their own contents


def _encode_result(part: ToolResultPart, names: dict[str, str]) -> dict[str, Any]:
    response = {"error" if part.is_error else "output": part.output}
    name = names.get(part.call_id, part.call_id)
    return {"functionResponse": {"id": part.call_id, "name": name, "response": response}}


def _args(part: ToolCallPart) -> dict[str, Any]:
    """A call's arguments as the object `functionCall.args` must be (a custom tool's raw
    text, or arguments that are not a JSON object, travel as {"input": text})."""
    try:
        value = json.loads(part.arguments) if part.arguments else {}
    except ValueError:
        value = None
    return value if isinstance(value, dict) else {"input": part.arguments}


def _encode_declaration(spec: ToolSpec) -> dict[str, Any]:
    declaration: dict[str, Any] = {"name": spec.name}
    if spec.description:
        declaration["description"] = spec.description
    if spec.parameters is not None:
        declaration["parametersJsonSchema"] = spec.parameters
    return declaration


def _encode_tool_config(choice: ToolChoice | None) -> dict[str, Any] | None:
    if choice is None:
        return None
    mode = {"auto": "AUTO", "none": "NONE", "required": "ANY", "tool": "ANY"}[choice.mode]
    calling: dict[str, Any] = {"mode": mode}
    if choice.mode == "tool" and choice.name:
        calling["allowedFunctionNames"] = [choice.name]
    return {"functionCallingConfig": calling}


# --------------------------------------------------------------------------- replies


def usage_json(usage: Usage) -> dict[str, Any]:
    """`usageMetadata`. Gemini counts thoughts apart from the candidates (the neutral output
    count holds both, as OpenAI's does), and the prompt count includes the cached part."""
    candidates = max(0, usage.output_tokens - usage.reasoning_tokens)
    out: dict[str, Any] = {
        "promptTokenCount": usage.input_tokens,
        "candidatesTokenCount": candidates,
        "totalTokenCount": usage.input_tokens + usage.output_tokens,
    }
    if usage.reasoning_tokens:
        out["thoughtsTokenCount"] = usage.reasoning_tokens
    if usage.cached_input_tokens:
        out["cachedContentTokenCount"] = usage.cached_input_tokens
    out.update(f.extra_fields(usage.extra, out))
    return out


def decode_usage(raw: Any) -> Usage | None:
    if not isinstance(raw, dict):
        return None
    known = {
        "promptTokenCount",
        "candidatesTokenCount",
        "totalTokenCount",
        "thoughtsTokenCount",
        "cachedContentTokenCount",
        "toolUsePromptTokenCount",
        "promptTokensDetails",
        "candidatesTokensDetails",
        "cacheTokensDetails",
        "toolUsePromptTokensDetails",
        "trafficType",
    }
    thoughts = f.token_count(raw, "thoughtsTokenCount", "usageMetadata.thoughtsTokenCount") or 0
    candidates = f.token_count(raw, "candidatesTokenCount", "usageMetadata.candidatesTokenCount")
    return Usage(
        input_tokens=f.token_count(raw, "promptTokenCount", "usageMetadata.promptTokenCount") or 0,
        output_tokens=(candidates or 0) + thoughts,
        reasoning_tokens=thoughts,
        cached_input_tokens=f.token_count(
            raw, "cachedContentTokenCount", "usageMetadata.cachedContentTokenCount"
        )
        or 0,
        extra={k: v for k, v in raw.items() if k not in known},
    )


def encode_reply(
    reply: Reply, *, created: int | None = None, fingerprint: str | None = None
) -> dict[str, Any]:
    """Reply → a GenerateContentResponse (one candidate; Gemini has no fingerprint field)."""
    parts = _encode_parts(reply.parts)
    candidate = {
        "content": {"parts": parts, "role": "model"},
        "finishReason": _FINISH_OUT[reply.finish],
        "index": 0,
    }
    body: dict[str, Any] = {"candidates": [candidate]}
    if reply.usage is not None:
        body["usageMetadata"] = usage_json(reply.usage)
    body["modelVersion"] = reply.model
    body["responseId"] = reply.id
    return body


def decode_reply(body: dict[str, Any]) -> Reply:
    candidates = f.as_list(body.get("candidates"))
    candidate = f.as_object(candidates[0]) if candidates else {}
    parts: list[Part] = []
    calls = _Calls()
    for raw in f.as_list(f.as_object(candidate.get("content")).get("parts")):
        if not isinstance(raw, dict):
            continue
        try:
            parts.extend(_decode_part(raw, "parts", model=True, calls=calls))
        except WireError:
            continue
    return Reply(
        id=str(body.get("responseId") or ""),
        model=str(body.get("modelVersion") or ""),
        parts=parts,
        finish=_finish_in(native_finish(body), calls.count > 0),
        usage=decode_usage(body.get("usageMetadata")),
    )


def _finish_in(word: str | None, called: bool) -> FinishReason:
    finish = _FINISH_IN.get(word or "", "stop")
    return "tool_calls" if called and finish == "stop" else finish


def native_finish(body: dict[str, Any]) -> str | None:
    """The first candidate's own `finishReason` (`STOP`, `MAX_TOKENS`, `SAFETY`, …), or the
    prompt's `blockReason` when the prompt itself was blocked."""
    candidates = f.as_list(body.get("candidates"))
    word = f.as_object(candidates[0]).get("finishReason") if candidates else None
    if not word:
        word = f.as_object(body.get("promptFeedback")).get("blockReason")
        if word:
            return "SAFETY" if word != "OTHER" else "OTHER"
    return str(word) if word else None


def status_word(status: int) -> str:
    """The google.rpc status word Google pairs with an HTTP status."""
    if status in _STATUS_WORDS:
        return _STATUS_WORDS[status]
    return "INVALID_ARGUMENT" if 400 <= status < 500 else "INTERNAL"


def encode_error(error: WireError) -> dict[str, Any]:
    """Google's error object: `{"error": {"code", "message", "status"}}`, with a RetryInfo
    detail when the error says when to retry (Gemini CLI reads it) and an ErrorInfo naming
    the reason when there is a code."""
    body: dict[str, Any] = {
        "code": error.status,
        "message": error.message,
        "status": status_word(error.status),
    }
    details: list[dict[str, Any]] = []
    if error.code:
        details.append({"@type": _ERROR_INFO, "reason": error.code, "domain": "googleapis.com"})
    retry = error.headers.get("retry-after", "")
    if retry.isdigit():
        details.append({"@type": _RETRY_INFO, "retryDelay": f"{int(retry)}s"})
    if details:
        body["details"] = details
    return {"error": body}


def decode_error(status: int, body: Any) -> WireError:
    if isinstance(body, list) and body:  # a stream without ?alt=sse answers with an array
        body = body[0]
    error = body.get("error") if isinstance(body, dict) else None
    if isinstance(error, dict):
        message = str(error.get("message") or error.get("status") or error)
        word = error.get("status")
        kind = _KINDS_IN.get(str(word), kind_for_status(status))
        code = _reason(error) or (word if isinstance(word, str) else None)
    else:
        message = str(error or body) if body not in (None, "") else f"HTTP {status}"
        kind, code = kind_for_status(status), None
    return WireError(status or KIND_STATUS[kind], kind, message, code=code)


def _reason(error: dict[str, Any]) -> str | None:
    for detail in f.as_list(error.get("details")):
        reason = f.as_object(detail).get("reason")
        if isinstance(reason, str) and reason:
            return reason
    return None


# --------------------------------------------------------------------------- streams


class StreamEncoder:
    """Neutral events → `?alt=sse` events, each a whole GenerateContentResponse: one per
    text or thought delta, one per function call (its arguments gathered until its
    ToolCallEnd), and a last one with the finish reason and the full usage. Every chunk
    carries the prompt's token count, the model and the response id, as Google's do."""

    _sse = True

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
        self._input_tokens = input_tokens
        self._calls: dict[int, list[str]] = {}  # index → [call id, name, argument pieces…]
        self._saw_tool = False
        self._finish: FinishReason | None = None
        self._usage: Usage | None = None
        self._chunks = 0
        # Everything after a chunk's parts, fixed for the whole stream: the text hot path is
        # one JSON string between two pre-rendered pieces.
        tail = {"promptTokenCount": input_tokens, "totalTokenCount": input_tokens}
        self._tail = (
            b'],"role":"model"},"index":0}],"usageMetadata":'
            + fastjson.dumps(tail)
            + b',"modelVersion":'
            + fastjson.string(model).encode()
            + b',"responseId":'
            + fastjson.string(id).encode()
            + b"}"
        )
        self._model = model
        self._id = id
        self._text_head = b'{"candidates":[{"content":{"parts":[{"text":'
        self._text_tail = b"}" + self._tail

    def head(self) -> bytes:
        return b""

    def _frame(self, payload: bytes) -> bytes:
        self._chunks += 1
        return b"data: " + payload + b"\n\n"

    def _parts(self, parts: list[dict[str, Any]]) -> bytes:
        inner = b",".join(fastjson.dumps(p) for p in parts)
        return self._frame(b'{"candidates":[{"content":{"parts":[' + inner + self._tail)

    def text(self, text: str) -> bytes:
        return self._frame(self._text_head + fastjson.string(text).encode() + self._text_tail)

    def encode(self, event: Event) -> bytes:
        if isinstance(event, TextDelta):
            return self.text(event.text)
        if isinstance(event, ReasoningDelta):
            thought: dict[str, Any] = {"text": event.text, "thought": True}
            if event.signature:
                thought["thoughtSignature"] = event.signature
            return self._parts([thought])
        if isinstance(event, ToolCallBegin):
            self._saw_tool = True
            self._calls[event.index] = [event.call_id, event.name]
            return b""
        if isinstance(event, ToolCallDelta):
            call = self._calls.get(event.index)
            if call is not None:
                call.append(event.arguments)
            return b""
        if isinstance(event, ToolCallEnd):
            call = self._calls.pop(event.index, None)
            return self._parts([_call_part(call)]) if call is not None else b""
        if isinstance(event, FinishEvent):
            self._finish = event.finish
        elif isinstance(event, UsageEvent):
            self._usage = event.usage
        elif isinstance(event, ErrorEvent):
            kind = kind_for_status(event.status) if event.status else "server_error"
            return self.error(WireError(event.status or 500, kind, event.message))
        return b""

    def close(self) -> bytes:
        """The last chunk: calls still open (their parts), the finish reason, the usage."""
        parts = [_call_part(call) for call in self._calls.values()] or [{"text": ""}]
        self._calls = {}
        finish = self._finish or ("tool_calls" if self._saw_tool else "stop")
        usage = self._usage or Usage(input_tokens=self._input_tokens)
        last = {
            "candidates": [
                {
                    "content": {"parts": parts, "role": "model"},
                    "finishReason": _FINISH_OUT[finish],
                    "index": 0,
                }
            ],
            "usageMetadata": usage_json(usage),
            "modelVersion": self._model,
            "responseId": self._id,
        }
        return self._frame(fastjson.dumps(last)) + self._end()

    def _end(self) -> bytes:
        return b""

    def error(self, error: WireError) -> bytes:
        """A bare JSON error object, as Google sends one mid-stream (not an SSE event)."""
        return fastjson.dumps(encode_error(error)) + b"\n\n"


class JsonArrayStreamEncoder(StreamEncoder):
    """`:streamGenerateContent` without `?alt=sse`: the same responses as one JSON array
    written as it grows (`[{…}` `,\\r\\n{…}` … `]`), as Google's server writes it."""

    def head(self) -> bytes:
        return b"["

    def _frame(self, payload: bytes) -> bytes:
        self._chunks += 1
        return (b",\r\n" if self._chunks > 1 else b"") + payload

    def _end(self) -> bytes:
        return b"]"

    def error(self, error: WireError) -> bytes:
        return self._frame(fastjson.dumps(encode_error(error))) + b"]"


def _call_part(call: list[str]) -> dict[str, Any]:
    call_id, name, *pieces = call
    arguments = "".join(pieces)
    args = _args(ToolCallPart(call_id, name, arguments))
    return {"functionCall": {"id": call_id, "name": name, "args": args}}


class StreamDecoder:
    """`?alt=sse` events → neutral events. Each event is a whole GenerateContentResponse;
    the stream's last one has a `finishReason` (there is no `[DONE]`)."""

    def __init__(self) -> None:
        self.done = False  # a finish reason was seen
        self.closed = False  # the same: Gemini's last chunk is the one with the finish reason
        self.native_finish: str | None = None
        self._started = False
        self._calls = 0
        self._usage: dict[str, Any] | None = None  # the latest usageMetadata, as sent

    def feed(self, data: str, event: str | None = None) -> list[Event]:
        obj = f.parse_sse_json(data)
        if obj is None:
            return []
        if "error" in obj:
            error = obj["error"]
            code = error.get("status") if isinstance(error, dict) else None
            status = error.get("code") if isinstance(error, dict) else None
            return [
                ErrorEvent(
                    f.error_text(error),
                    status if type(status) is int else None,
                    code if isinstance(code, str) else None,
                )
            ]
        out: list[Event] = []
        if not self._started and (obj.get("responseId") or obj.get("modelVersion")):
            self._started = True
            out.append(
                StartEvent(str(obj.get("responseId") or ""), str(obj.get("modelVersion") or ""))
            )
        raw_usage = obj.get("usageMetadata")
        if isinstance(raw_usage, dict):
            self._usage = raw_usage  # read once, at the finish (each chunk repeats it)
        candidates = f.as_list(obj.get("candidates"))
        candidate = f.as_object(candidates[0]) if candidates else {}
        for part in f.as_list(f.as_object(candidate.get("content")).get("parts")):
            if isinstance(part, dict):
                out.extend(self._part(part))
        word = candidate.get("finishReason") or f.as_object(obj.get("promptFeedback")).get(
            "blockReason"
        )
        if word and isinstance(word, str) and not self.done:
            self.done = self.closed = True
            self.native_finish = word
            usage = decode_usage(self._usage)
            if usage is not None:
                out.append(UsageEvent(usage))
            finish = _finish_in(word if "finishReason" in candidate else "SAFETY", self._calls > 0)
            out.append(FinishEvent(finish))
        return out

    def _part(self, part: dict[str, Any]) -> list[Event]:
        signature = part.get("thoughtSignature")
        signature = signature if isinstance(signature, str) and signature else None
        text = part.get("text")
        if isinstance(text, str):
            if part.get("thought") is True:
                return [ReasoningDelta(text, signature)] if text or signature else []
            out: list[Event] = [ReasoningDelta("", signature)] if signature else []
            return out + [TextDelta(text)] if text else out
        call = part.get("functionCall")
        if isinstance(call, dict):
            index = self._calls
            self._calls += 1
            call_id = call.get("id")
            call_id = call_id if isinstance(call_id, str) and call_id else f"gemini_call_{index}"
            args = call.get("args")
            out = [ReasoningDelta("", signature)] if signature else []
            out.append(ToolCallBegin(index, call_id, str(call.get("name") or "")))
            if isinstance(args, dict):
                out.append(ToolCallDelta(index, f.json_text(args)))
            out.append(ToolCallEnd(index))
            return out
        return []


# --------------------------------------------------------------------------- models


def encode_models(
    models: tuple[str, ...] | list[str], *, input_limit: int | None = None
) -> dict[str, Any]:
    """`GET /v1beta/models`, as the Gemini API lists models."""
    entries = []
    for model in models:
        entry: dict[str, Any] = {
            "name": f"models/{model}",
            "version": "001",
            "displayName": model,
            "supportedGenerationMethods": [
                "generateContent",
                "streamGenerateContent",
                "countTokens",
            ],
        }
        if input_limit is not None:
            entry["inputTokenLimit"] = input_limit
        entries.append(entry)
    return {"models": entries}
