"""One turn through the wire layer: the client's request → neutral `Turn` → a chat request,
and the upstream's chat answer → neutral events / `Reply` → the client's protocol.

Each client protocol is a `Leg` made only of `notes_cli.wire` codecs; the chat side is the
same for both. What the bridge adds between decode and encode is policy, on neutral types:
the model map, the conversation a `previous_response_id` continues, and the tools chat
completions can carry (function tools as they are; Responses' custom / freeform tools as a
function taking one string `input`, turned back into a custom call on the way out; hosted
types such as `web_search` or `namespace` dropped, named once in the log).
"""

from __future__ import annotations

import json
import logging
import secrets
from dataclasses import dataclass, replace
from typing import Any

from notes_cli.bridge.config import BridgeConfig
from notes_cli.wire import anthropic, chat, fastjson, responses
from notes_cli.wire import events as ev
from notes_cli.wire.codec import Codec, StreamEncoder
from notes_cli.wire.errors import WireError
from notes_cli.wire.turn import Message, Reply, ToolCallPart, ToolChoice, ToolSpec, Turn

# --------------------------------------------------------------------------- client protocols


@dataclass(frozen=True)
class Leg:
    """A client protocol, as the bridge serves it: its `notes_cli.wire` codec module."""

    name: str
    codec: Codec  # notes_cli.wire.responses or notes_cli.wire.anthropic
    id_prefix: str
    bad_key_message: str

    def decode_request(self, raw: bytes) -> Turn:
        return self.codec.decode_request(raw)

    def new_id(self) -> str:
        return self.id_prefix + secrets.token_hex(12)

    def stream_encoder(self, response_id: str, model: str) -> StreamEncoder:
        return self.codec.StreamEncoder(response_id, model, include_usage=True)

    def encode_reply(self, reply: Reply) -> dict[str, Any]:
        return self.codec.encode_reply(reply)

    def encode_error(self, error: WireError) -> dict[str, Any]:
        return self.codec.encode_error(error)


RESPONSES = Leg(
    "responses",
    responses,
    "resp_",
    "Incorrect API key provided for the pdnotes bridge (see its --api-key-env).",
)
ANTHROPIC = Leg("anthropic", anthropic, "msg_", "invalid x-api-key")


# --------------------------------------------------------------------------- the chat side


@dataclass(frozen=True)
class Plan:
    """What goes upstream for one turn, and how its answer comes back."""

    body: bytes  # the chat-completions request
    history: list[Message]  # the conversation up to this turn (the store adds the answer)
    store: bool  # keep this response for a later previous_response_id
    custom_tools: frozenset[str]

    def decoder(self) -> chat.StreamDecoder | _CustomCalls:
        decoder = chat.StreamDecoder()
        return _CustomCalls(decoder, self.custom_tools) if self.custom_tools else decoder

    def reply(self, body: bytes) -> Reply:
        reply = chat.decode_reply(fastjson.loads(body))
        if not self.custom_tools:
            return reply
        parts = [
            _as_custom(p) if isinstance(p, ToolCallPart) and p.name in self.custom_tools else p
            for p in reply.parts
        ]
        return replace(reply, parts=parts)


def prepare(
    turn: Turn, history: list[Message], config: BridgeConfig, tools: ToolPolicy
) -> tuple[Turn, Plan]:
    """The turn as the upstream will see it, and the plan for its answer."""
    messages = [*history, *turn.messages]
    kept, custom = tools.select(turn.tools)
    choice = turn.tool_choice
    if choice is not None and choice.mode == "tool" and choice.name not in {t.name for t in kept}:
        choice = ToolChoice("auto") if kept else None
    upstream_turn = replace(
        turn,
        model=config.upstream_model(turn.model),
        messages=[_custom_history(m, custom) for m in messages] if custom else messages,
        tools=kept,
        tool_choice=choice if kept else None,
        include_usage=True,
    )
    body = fastjson.dumps(chat.encode_request(upstream_turn))
    store = turn.extra.get("store") is not False
    plan = Plan(body, messages, store, frozenset(custom))
    return turn, plan


class ToolPolicy:
    """Which client tools chat completions can carry. Dropped kinds are logged once per set
    of names (Codex sends the same tools every turn; one line per turn would drown the log)."""

    def __init__(self, log: logging.Logger) -> None:
        self._log = log
        self._logged: set[tuple[str, ...]] = set()

    def select(self, specs: list[ToolSpec]) -> tuple[list[ToolSpec], set[str]]:
        kept: list[ToolSpec] = []
        custom: set[str] = set()
        dropped: list[str] = []
        for spec in specs:
            if spec.kind == "function":
                kept.append(spec)
            elif spec.kind == "custom":
                custom.add(spec.name)
                kept.append(_custom_as_function(spec))
            else:
                dropped.append(f"{spec.kind}:{spec.name}" if spec.name else spec.kind)
        if dropped:
            key = tuple(sorted(dropped))
            if key not in self._logged:
                self._logged.add(key)
                self._log.warning(
                    "tools chat completions cannot carry, not sent upstream: %s", ", ".join(key)
                )
        return kept, custom


_INPUT_SCHEMA = {
    "type": "object",
    "properties": {"input": {"type": "string", "description": "The tool's whole input, as text."}},
    "required": ["input"],
    "additionalProperties": False,
}


def _custom_as_function(spec: ToolSpec) -> ToolSpec:
    """A freeform tool (its input is plain text, e.g. Codex's apply_patch) as a function tool
    with one string argument; the grammar, if any, stays in the description."""
    description = spec.description
    grammar = (spec.raw or {}).get("format")
    if isinstance(grammar, dict) and grammar.get("definition"):
        description += f"\n\nThe input must follow this {grammar.get('syntax', '')} grammar:\n"
        description += str(grammar["definition"])
    return ToolSpec(spec.name, description, _INPUT_SCHEMA, "function")


def _custom_history(message: Message, custom: set[str]) -> Message:
    """Earlier custom calls in the history, in the function form the upstream was offered."""
    if not any(isinstance(p, ToolCallPart) and p.kind == "custom" for p in message.parts):
        return message
    parts = [
        replace(p, kind="function", arguments=json.dumps({"input": p.arguments}))
        if isinstance(p, ToolCallPart) and p.kind == "custom"
        else p
        for p in message.parts
    ]
    return replace(message, parts=parts)


def _unwrap_input(arguments: str) -> str:
    try:
        value = json.loads(arguments)
    except ValueError:
        return arguments
    if isinstance(value, dict) and isinstance(value.get("input"), str):
        return str(value["input"])
    return arguments


def _as_custom(part: ToolCallPart) -> ToolCallPart:
    return replace(part, kind="custom", arguments=_unwrap_input(part.arguments))


class _CustomCalls:
    """A chat decoder whose calls of custom tools come out as custom calls: their JSON
    arguments are held until the call ends (the `input` string can only be unwrapped whole),
    then sent as one delta. Other events pass straight through."""

    def __init__(self, decoder: chat.StreamDecoder, names: frozenset[str]) -> None:
        self._decoder = decoder
        self._names = names
        self._held: dict[int, list[str]] = {}
        self.text_event = decoder.text_event  # (see `chat.StreamDecoder`)

    @property
    def closed(self) -> bool:
        return self._decoder.closed

    @property
    def malformed(self) -> int:
        return self._decoder.malformed

    def feed(self, data: str, event_name: str | None = None) -> list[ev.Event]:
        out: list[ev.Event] = []
        events = self._decoder.feed(data, event_name)
        self.text_event = self._decoder.text_event  # text is not a call: it passes as it is
        for event in events:
            if isinstance(event, ev.ToolCallBegin) and event.name in self._names:
                self._held[event.index] = []
                out.append(replace(event, kind="custom"))
            elif isinstance(event, ev.ToolCallDelta) and event.index in self._held:
                self._held[event.index].append(event.arguments)
            elif isinstance(event, ev.ToolCallEnd) and event.index in self._held:
                arguments = "".join(self._held.pop(event.index))
                out.append(ev.ToolCallDelta(event.index, _unwrap_input(arguments)))
                out.append(event)
            else:
                out.append(event)
        return out


# --------------------------------------------------------------------------- models


def model_ids(body: bytes) -> list[str]:
    """Model ids from an OpenAI-style `GET /models` answer."""
    payload = json.loads(body)
    data = payload.get("data", []) if isinstance(payload, dict) else []
    return [str(m["id"]) for m in data if isinstance(m, dict) and "id" in m]


def models_body(upstream_ids: list[str], config: BridgeConfig) -> dict[str, Any]:
    """One list both clients read: OpenAI fields (`object`, `owned_by`) and Anthropic ones
    (`type`, `display_name`, `created_at`, `has_more`) side by side. Model-map aliases come
    first, so a client sees the names it was configured with."""
    ids = [*config.model_map, *(i for i in upstream_ids if i not in config.model_map)]
    entries = [
        {
            "id": model,
            "object": "model",
            "created": 0,
            "owned_by": "pdnotes-bridge",
            "type": "model",
            "display_name": model,
            "created_at": "1970-01-01T00:00:00Z",
        }
        for model in ids
    ]
    return {
        "object": "list",
        "data": entries,
        "has_more": False,
        "first_id": ids[0] if ids else None,
        "last_id": ids[-1] if ids else None,
    }
