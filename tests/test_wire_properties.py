"""Property tests: a turn survives encode_request → decode_request unchanged in each protocol
(for turns in the protocol's canonical form: what it can say, in the order it says it), and any
stream of neutral events survives StreamEncoder → SSE → StreamDecoder."""

from __future__ import annotations

import json
from types import ModuleType
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from wire_support import decode, encode, summarise

from notes_cli.wire import (
    FinishEvent,
    ImagePart,
    Message,
    Reasoning,
    ReasoningDelta,
    ReasoningPart,
    Sampling,
    TextDelta,
    TextPart,
    ToolCallBegin,
    ToolCallDelta,
    ToolCallEnd,
    ToolCallPart,
    ToolChoice,
    ToolResultPart,
    ToolSpec,
    Turn,
    Usage,
    UsageEvent,
    anthropic,
    chat,
    gemini,
    responses,
)

text = st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=20)
ident = st.from_regex(r"[A-Za-z0-9_]{1,12}", fullmatch=True)
json_args = st.dictionaries(ident, st.one_of(st.integers(-5, 5), text, st.booleans()), max_size=3)
arguments = json_args.map(lambda d: json.dumps(d, separators=(",", ":"), ensure_ascii=False))
unit = st.floats(0, 1, allow_nan=False)
schema = st.fixed_dictionaries(
    {
        "type": st.just("object"),
        "properties": st.dictionaries(ident, st.just({"type": "string"}), max_size=2),
    }
)  # noqa: E501
function_tool = st.builds(ToolSpec, ident, st.one_of(st.just(""), text), schema)
image = st.builds(
    ImagePart, st.sampled_from(["https://x.test/a.png", "data:image/png;base64,iVBO"])
)  # noqa: E501
call = st.builds(ToolCallPart, ident, ident, arguments)


def user_parts(images: bool = True) -> st.SearchStrategy[list[Any]]:
    part = st.one_of(st.builds(TextPart, text), image) if images else st.builds(TextPart, text)
    return st.lists(part, max_size=3)


def choice_for(tools: list[ToolSpec]) -> st.SearchStrategy[ToolChoice | None]:
    if not tools:
        return st.none()
    modes = st.sampled_from(["auto", "none", "required"]).map(ToolChoice)
    return st.one_of(
        st.none(),
        modes,
        st.sampled_from([t.name for t in tools]).map(lambda n: ToolChoice("tool", n)),
    )  # noqa: E501


# --- chat completions ------------------------------------------------------------------


@st.composite
def chat_assistant(draw: st.DrawFn) -> Message:
    parts: list[Any] = []
    if draw(st.booleans()):
        parts.append(ReasoningPart(draw(text)))
    if draw(st.booleans()):
        parts.append(TextPart(draw(text)))
    parts.extend(draw(st.lists(call, max_size=2)))
    return Message("assistant", parts)


chat_message = st.one_of(
    user_parts().map(lambda p: Message("user", p)),
    user_parts(images=False).map(lambda p: Message("system", p)),
    chat_assistant(),
    st.builds(ToolResultPart, ident, text).map(lambda r: Message("tool", [r])),
)


@st.composite
def chat_turn(draw: st.DrawFn) -> Turn:
    tools = draw(st.lists(function_tool, max_size=2, unique_by=lambda t: t.name))
    stream = draw(st.booleans())
    return Turn(
        model=draw(ident),
        messages=draw(st.lists(chat_message, min_size=1, max_size=5)),
        tools=tools,
        tool_choice=draw(choice_for(tools)),
        sampling=Sampling(
            max_tokens=draw(st.one_of(st.none(), st.integers(1, 10**6))),
            temperature=draw(st.one_of(st.none(), st.floats(0, 2, allow_nan=False))),
            top_p=draw(st.one_of(st.none(), unit)),
            stop=tuple(draw(st.lists(text, max_size=4))),
            seed=draw(st.one_of(st.none(), st.integers(-(2**31), 2**31))),
            presence_penalty=draw(st.one_of(st.none(), st.floats(-2, 2, allow_nan=False))),
            frequency_penalty=draw(st.one_of(st.none(), st.floats(-2, 2, allow_nan=False))),
        ),
        stream=stream,
        reasoning=draw(
            st.one_of(
                st.none(), st.sampled_from(["low", "high"]).map(lambda e: Reasoning(effort=e))
            )
        ),  # noqa: E501
        parallel_tool_calls=draw(st.one_of(st.none(), st.booleans())) if tools else None,
        include_usage=draw(st.booleans()) if stream else False,
    )


# --- Responses --------------------------------------------------------------------------


@st.composite
def responses_assistant(draw: st.DrawFn) -> Message:
    part = st.one_of(
        st.builds(ReasoningPart, text, st.one_of(st.none(), ident)),
        st.builds(TextPart, text),
        call,
        st.builds(ToolCallPart, ident, ident, text, st.just("custom")),
    )
    return Message("assistant", draw(st.lists(part, min_size=1, max_size=4)))


@st.composite
def responses_messages(draw: st.DrawFn) -> list[Message]:
    messages: list[Message] = []
    for _ in range(draw(st.integers(1, 5))):
        kinds = ["user", "system", "developer", "tool"]
        if not messages or messages[-1].role != "assistant":
            kinds.append("assistant")  # consecutive assistant items form one message
        kind = draw(st.sampled_from(kinds))
        if kind == "assistant":
            messages.append(draw(responses_assistant()))
        elif kind == "tool":
            messages.append(Message("tool", [ToolResultPart(draw(ident), draw(text))]))
        else:
            messages.append(Message(kind, draw(user_parts(images=kind == "user"))))
    return messages


raw_tool = st.sampled_from(["namespace", "web_search", "file_search"]).flatmap(
    lambda kind: ident.map(lambda n: ToolSpec(n, "", None, kind, raw={"type": kind, "name": n}))
)


@st.composite
def responses_turn(draw: st.DrawFn) -> Turn:
    tools = draw(
        st.lists(st.one_of(function_tool, raw_tool), max_size=3, unique_by=lambda t: t.name)
    )  # noqa: E501
    reasoning = draw(
        st.one_of(
            st.none(),
            st.builds(
                Reasoning,
                st.sampled_from(["low", "medium", "high"]),
                st.none(),
                st.one_of(st.none(), st.just("auto")),
            ),  # noqa: E501
        )
    )
    return Turn(
        model=draw(ident),
        messages=draw(responses_messages()),
        tools=tools,
        tool_choice=draw(choice_for(tools)),
        sampling=Sampling(
            max_tokens=draw(st.one_of(st.none(), st.integers(1, 10**6))),
            temperature=draw(st.one_of(st.none(), st.floats(0, 2, allow_nan=False))),
            top_p=draw(st.one_of(st.none(), unit)),
        ),
        stream=draw(st.booleans()),
        reasoning=reasoning,
        parallel_tool_calls=draw(st.one_of(st.none(), st.booleans())) if tools else None,
        include_usage=True,
    )


# --- Anthropic --------------------------------------------------------------------------


@st.composite
def anthropic_messages(draw: st.DrawFn) -> list[Message]:
    messages: list[Message] = []
    if draw(st.booleans()):
        messages.append(
            Message("system", draw(st.lists(st.builds(TextPart, text), min_size=1, max_size=2)))
        )  # noqa: E501
    for index in range(draw(st.integers(1, 5))):
        kinds = ["user", "assistant", "tool"] + (["system"] if index else [])
        kind = draw(st.sampled_from(kinds))
        after_tool = bool(messages) and messages[-1].role == "tool"
        if kind == "assistant":
            part = st.one_of(
                st.builds(ReasoningPart, st.one_of(st.just(""), text), ident),
                st.builds(TextPart, text),
                call,
            )
            messages.append(Message("assistant", draw(st.lists(part, max_size=3))))
        elif kind == "tool":
            result = st.builds(ToolResultPart, ident, text, st.booleans())
            messages.append(Message("tool", [draw(result)]))
        elif kind == "system":
            messages.append(
                Message("system", draw(st.lists(st.builds(TextPart, text), min_size=1, max_size=2)))
            )  # noqa: E501
        else:
            parts = draw(user_parts())
            if after_tool and not parts:
                parts = [TextPart(draw(text))]  # joins the tool results' user message
            messages.append(Message("user", parts))
    if all(m.role == "system" for m in messages):
        messages.append(Message("user", [TextPart("hi")]))
    return messages


@st.composite
def anthropic_turn(draw: st.DrawFn) -> Turn:
    server = ident.map(
        lambda n: ToolSpec(n, "", None, "bash_20250124", raw={"type": "bash_20250124", "name": n})
    )  # noqa: E501
    tools = draw(st.lists(st.one_of(function_tool, server), max_size=3, unique_by=lambda t: t.name))  # noqa: E501
    choice = draw(choice_for(tools))
    parallel = draw(st.one_of(st.none(), st.booleans())) if choice is not None else None
    reasoning = draw(
        st.one_of(
            st.none(),
            st.builds(
                Reasoning,
                st.one_of(st.none(), st.sampled_from(["low", "high"])),
                st.integers(1024, 9999),
            ),  # noqa: E501
        )
    )
    return Turn(
        model=draw(ident),
        messages=draw(anthropic_messages()),
        tools=tools,
        tool_choice=choice,
        sampling=Sampling(
            max_tokens=draw(st.integers(1, 10**6)),
            temperature=draw(st.one_of(st.none(), unit)),
            top_p=draw(st.one_of(st.none(), unit)),
            top_k=draw(st.one_of(st.none(), st.integers(0, 500))),
            stop=tuple(draw(st.lists(text, max_size=3))),
        ),
        stream=draw(st.booleans()),
        reasoning=reasoning,
        parallel_tool_calls=parallel,
        include_usage=True,
    )


# --- Gemini -------------------------------------------------------------------------------


@st.composite
def gemini_messages(draw: st.DrawFn) -> list[Message]:
    """Gemini's canonical form: at most one leading system message (the
    systemInstruction); tool results answer an earlier call, each call once (the API names
    the function in a result, which the neutral result only knows through its call)."""
    messages: list[Message] = []
    if draw(st.booleans()):
        system = draw(st.lists(st.builds(TextPart, text), min_size=1, max_size=2))
        messages.append(Message("system", system))
    unanswered: list[str] = []
    used: set[str] = set()
    for _ in range(draw(st.integers(1, 6))):
        kinds = ["user", "assistant"] + (["tool"] if unanswered else [])
        kind = draw(st.sampled_from(kinds))
        if kind == "assistant":
            parts: list[Any] = []
            for _ in range(draw(st.integers(0, 4))):
                which = draw(st.sampled_from(["reasoning", "signature", "text", "call"]))
                if which == "reasoning":
                    parts.append(ReasoningPart(draw(text), draw(st.one_of(st.none(), ident))))
                elif which == "signature":  # a bare signature (encoded onto the next part)
                    parts.append(ReasoningPart("", draw(ident)))
                elif which == "text":
                    parts.append(TextPart(draw(text)))
                else:
                    part = draw(call)
                    if part.call_id in used:
                        continue
                    used.add(part.call_id)
                    unanswered.append(part.call_id)
                    parts.append(part)
            messages.append(Message("assistant", parts))
        elif kind == "tool":
            call_id = unanswered.pop(draw(st.integers(0, len(unanswered) - 1)))
            result = ToolResultPart(call_id, draw(text), draw(st.booleans()))
            messages.append(Message("tool", [result]))
        else:
            messages.append(Message("user", draw(user_parts())))
    return messages


raw_gemini_tool = st.sampled_from(["googleSearch", "codeExecution", "urlContext"]).map(
    lambda kind: ToolSpec("", "", None, kind, raw={kind: {}})
)


@st.composite
def gemini_turn(draw: st.DrawFn) -> Turn:
    functions = draw(st.lists(function_tool, max_size=2, unique_by=lambda t: t.name))
    hosted = draw(st.lists(raw_gemini_tool, max_size=1))
    reasoning = draw(
        st.one_of(
            st.none(),
            st.just(Reasoning(effort="none")),
            st.builds(
                Reasoning,
                st.one_of(st.none(), st.sampled_from(["minimal", "low", "medium", "high"])),
                st.one_of(st.none(), st.integers(1, 32768)),
                st.one_of(st.none(), st.just("auto")),
            ).filter(lambda r: r != Reasoning()),
        )
    )
    return Turn(
        model=draw(ident),
        messages=draw(gemini_messages()),
        tools=functions + hosted,
        tool_choice=draw(choice_for(functions)) if functions else None,
        sampling=Sampling(
            max_tokens=draw(st.one_of(st.none(), st.integers(1, 10**6))),
            temperature=draw(st.one_of(st.none(), st.floats(0, 2, allow_nan=False))),
            top_p=draw(st.one_of(st.none(), unit)),
            top_k=draw(st.one_of(st.none(), st.integers(0, 500))),
            stop=tuple(draw(st.lists(text, max_size=4))),
            seed=draw(st.one_of(st.none(), st.integers(-(2**31), 2**31))),
            presence_penalty=draw(st.one_of(st.none(), st.floats(-2, 2, allow_nan=False))),
            frequency_penalty=draw(st.one_of(st.none(), st.floats(-2, 2, allow_nan=False))),
        ),
        stream=draw(st.booleans()),
        reasoning=reasoning,
        include_usage=True,
    )


def survives(module: ModuleType, turn: Turn) -> None:
    body = json.loads(json.dumps(module.encode_request(turn)))  # as it travels
    if module is gemini:  # the model and the stream mode travel in the URL
        assert gemini.decode_request(body, model=turn.model, stream=turn.stream) == turn
        return
    assert module.decode_request(body) == turn


@settings(max_examples=150, deadline=None)
@given(chat_turn())
def test_a_chat_turn_survives_encode_then_decode(turn: Turn) -> None:
    survives(chat, turn)


@settings(max_examples=150, deadline=None)
@given(responses_turn())
def test_a_responses_turn_survives_encode_then_decode(turn: Turn) -> None:
    survives(responses, turn)


@settings(max_examples=150, deadline=None)
@given(anthropic_turn())
def test_an_anthropic_turn_survives_encode_then_decode(turn: Turn) -> None:
    survives(anthropic, turn)


@settings(max_examples=150, deadline=None)
@given(gemini_turn())
def test_a_gemini_turn_survives_encode_then_decode(turn: Turn) -> None:
    survives(gemini, turn)


# --- streams ------------------------------------------------------------------------------


@st.composite
def answer_events(draw: st.DrawFn) -> list[Any]:
    events: list[Any] = []
    if draw(st.booleans()):
        events += [ReasoningDelta(t) for t in draw(st.lists(text, min_size=1, max_size=3))]
    events += [TextDelta(t) for t in draw(st.lists(text, max_size=4))]
    calls = draw(st.lists(st.tuples(ident, ident, arguments), max_size=3))
    for index, (call_id, name, _) in enumerate(calls):
        events.append(ToolCallBegin(index, f"call_{index}_{call_id}", name))
    pieces = []
    for index, (_, _, args) in enumerate(calls):
        cut = draw(st.integers(0, len(args)))
        pieces += [(index, args[:cut]), (index, args[cut:])]
    order = draw(st.permutations(range(len(pieces))))
    done: list[int] = []
    for i in order:  # interleaved, each call's own pieces in order
        index, _ = pieces[i]
        done.append(index)
    by_call: dict[int, list[str]] = {}
    for index, piece in pieces:
        by_call.setdefault(index, []).append(piece)
    for index in done:
        events.append(ToolCallDelta(index, by_call[index].pop(0)))
    events += [ToolCallEnd(i) for i in range(len(calls))]
    events.append(UsageEvent(Usage(draw(st.integers(0, 999)), draw(st.integers(0, 999)))))
    events.append(FinishEvent("tool_calls" if calls else draw(st.sampled_from(["stop", "length"]))))  # noqa: E501
    return events


@settings(max_examples=100, deadline=None)
@given(
    answer_events(),
    st.sampled_from(["chat", "responses", "anthropic", "gemini"]),
    st.integers(1, 64),
)
def test_any_answer_survives_each_protocols_stream(events: list[Any], name: str, size: int) -> None:
    module = {"chat": chat, "responses": responses, "anthropic": anthropic, "gemini": gemini}[name]
    stream = encode(module, events)
    chunks = [stream[i : i + size] for i in range(0, len(stream), size)]

    got = summarise(decode(module, chunks))
    want = summarise([e for e in events if not (isinstance(e, ToolCallDelta) and not e.arguments)])
    assert got == want


# --- the chat decoder's typed path for text-only chunks ------------------------------------

_odd = st.one_of(
    st.none(), st.just(""), text, st.integers(-2, 2), st.booleans(), st.just([]), st.just({})
)
_delta = st.fixed_dictionaries(
    {},
    optional={
        "role": st.just("assistant"),
        "content": _odd,
        "reasoning_content": _odd,
        "reasoning": _odd,
        "tool_calls": st.one_of(st.none(), st.just([]), st.just([{"index": 0, "id": "c"}])),
    },
)
_choice = st.fixed_dictionaries(
    {},
    optional={
        "index": st.one_of(st.just(0), st.none(), st.just(1), st.just("0")),
        "delta": st.one_of(_delta, st.none(), st.just("x")),
        "message": st.one_of(_delta, st.none()),
        "finish_reason": st.one_of(st.none(), st.just("stop"), st.just("")),
        "logprobs": st.none(),
    },
)
_chunk = st.fixed_dictionaries(
    {"id": st.just("c1"), "object": st.just("chat.completion.chunk")},
    optional={
        "choices": st.one_of(st.lists(_choice, max_size=3), st.none(), st.just("x")),
        "usage": st.one_of(st.none(), st.just({"prompt_tokens": 1, "completion_tokens": 2})),
        "error": st.one_of(st.none(), st.just({"message": "boom"}), st.just("")),
        "model": st.just("m"),
    },
)


@st.composite
def _near_text_only(draw: st.DrawFn) -> dict[str, Any]:
    """A text-only chunk with some of its parts changed: each change alone is one the typed
    path must hand to the general one (or read exactly as it would)."""
    choice: dict[str, Any] = {"index": 0, "delta": {"content": draw(text)}, "finish_reason": None}
    chunk: dict[str, Any] = {"id": "c1", "object": "chat.completion.chunk", "choices": [choice]}
    changes = {
        "usage": lambda: chunk.update(usage={"prompt_tokens": 1, "completion_tokens": 2}),
        "error": lambda: chunk.update(error=draw(st.sampled_from([{"message": "x"}, "e", None]))),
        "index": lambda: choice.update(index=draw(st.sampled_from([1, None, "0", True]))),
        "finish": lambda: choice.update(finish_reason=draw(st.sampled_from(["stop", ""]))),
        "content": lambda: choice["delta"].update(content=draw(_odd)),
        "reasoning": lambda: choice["delta"].update(reasoning_content=draw(_odd)),
        "reasoning2": lambda: choice["delta"].update(reasoning=draw(_odd)),
        "calls": lambda: choice["delta"].update(tool_calls=[{"index": 0, "id": "c"}]),
        "message": lambda: choice.update(message=choice.pop("delta")),
        "second": lambda: chunk["choices"].append({"index": 1, "delta": {"content": "y"}}),
    }
    chosen = draw(st.sets(st.sampled_from(sorted(changes)), min_size=1, max_size=2))
    for name in sorted(chosen, key=lambda name: name == "message"):  # it moves the delta
        changes[name]()
    return chunk


@settings(max_examples=300, deadline=None)
@given(st.one_of(_chunk, _near_text_only()))
def test_the_typed_path_reads_any_chunk_as_the_general_path_does(chunk: dict[str, Any]) -> None:
    _same_events(chunk)


@settings(max_examples=600, deadline=None)
@given(_near_text_only())
def test_the_typed_path_hands_on_every_other_chunk(chunk: dict[str, Any]) -> None:
    _same_events(chunk)


def _same_events(chunk: dict[str, Any]) -> None:
    data = json.dumps(chunk)
    started = '{"id":"c1","model":"m","choices":[{"index":0,"delta":{"role":"assistant"}}]}'
    typed, general = chat.StreamDecoder(), chat.StreamDecoder()
    typed.feed(started)
    general.feed(started)
    general_feed = general.feed
    real = chat._text_only
    try:
        chat._text_only = lambda _: None  # type: ignore[assignment]  # the general path only
        expected = general_feed(data)
    finally:
        chat._text_only = real  # type: ignore[assignment]
    assert typed.feed(data) == expected
    assert (typed.done, typed.native_finish) == (general.done, general.native_finish)
