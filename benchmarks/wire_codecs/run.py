"""Per-token and per-event cost of the wire layer, in microseconds (best of 15 repeats).

    python benchmarks/wire_codecs/run.py            # this checkout
    python benchmarks/wire_codecs/run.py --json

  - engine token: what the engine's stream loop pays per streamed token
    (`engine/http/dialects.EngineStream.token`, the wire encoder's pre-rendered text path),
    for a text answer and for a tool call's argument deltas;
  - decode event: a client-side `StreamDecoder.feed` of one text-delta event (what the gateway
    client and a bridge pay per upstream event).
With `--legacy-engine`, the first row is measured on the engine's encoders from before the
wire layer (commit 75a24a1: `engine/protocol_openai.py`, `protocol_anthropic.py`), run from a
`git archive` of that commit on PYTHONPATH.
"""

from __future__ import annotations

import argparse
import json
import timeit
from typing import Any

N = 20_000


def best_us(fn: Any) -> float:
    return round(min(timeit.repeat(fn, number=N, repeat=15)) / N * 1e6, 3)


def legacy_engine() -> dict[str, float]:
    import importlib  # the old layout: only on a checkout of 75a24a1

    pa = importlib.import_module("notes_cli.engine.protocol_anthropic")
    po = importlib.import_module("notes_cli.engine.protocol_openai")
    api = importlib.import_module("notes_cli.engine.api")
    common = importlib.import_module("notes_cli.engine.protocol_common")
    request = api.GenerationRequest("m", (api.ChatMessage("user", "x"),), request_id="chatcmpl-a")
    call = common.ParsedCall(request, True, True)
    encoders = {
        "chat": po.ChatStreamEncoder(call, "fp"),
        "responses": po.ResponsesStreamEncoder(call, "fp"),
        "anthropic": pa.MessagesStreamEncoder(call, "fp", 10),
    }
    out = {}
    for name, encoder in encoders.items():
        encoder.head()
        encoder.opening()
        out[name] = best_us(lambda e=encoder: e.token(" word"))
    return out


def current() -> dict[str, dict[str, float]]:
    from notes_cli.engine.core.api import GenerationRequest
    from notes_cli.engine.core.tool_rule import ToolCallPlan
    from notes_cli.engine.http import dialects
    from notes_cli.wire import Message, TextPart, Turn

    turn = Turn("m", [Message("user", [TextPart("x")])], stream=True, include_usage=True)
    request = GenerationRequest("m", (), request_id="id-abc")
    rows: dict[str, dict[str, float]] = {"engine token (text)": {}, "engine token (tool args)": {}}
    rows["decode event (text)"] = {}
    for dialect in (dialects.CHAT, dialects.RESPONSES, dialects.MESSAGES, dialects.GEMINI):
        call = dialects.EngineCall(turn, request)
        stream = dialects.EngineStream(dialect, call, "fp", 10)
        stream.head()
        stream.token("first")
        rows["engine token (text)"][dialect.name] = best_us(lambda s=stream: s.token(" word"))
        plan = ToolCallPlan("exec_command", '{"cmd":"ls"}', "ls")
        tool = dialects.EngineStream(
            dialect, dialects.EngineCall(turn, request, plan, "c1"), "fp", 10
        )  # noqa: E501
        tool.head()
        tool.token("{")
        rows["engine token (tool args)"][dialect.name] = best_us(lambda s=tool: s.token('"cmd'))
        sample = _text_event(dialect.wire)
        decoder = dialect.wire.StreamDecoder()
        for data, event in sample[:-1]:
            decoder.feed(data, event)
        data, event = sample[-1]
        rows["decode event (text)"][dialect.name] = best_us(
            lambda d=decoder, data=data, event=event: d.feed(data, event)
        )
    return rows


def _text_event(module: Any) -> list[tuple[str, str | None]]:
    """A stream's opening events and one text delta, as (data, event) pairs."""
    encoder = module.StreamEncoder("id-abc", "m", created=1)
    raw = (encoder.head() + encoder.text("hello") + encoder.text(" word")).decode()
    pairs = []
    for block in raw.split("\n\n"):
        event = None
        data = None
        for line in block.splitlines():
            if line.startswith("event: "):
                event = line[7:]
            elif line.startswith("data: "):
                data = line[6:]
        if data is not None:
            pairs.append((data, event))
    return pairs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--legacy-engine", action="store_true")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    result: dict[str, Any] = (
        {"legacy engine token (text)": legacy_engine()} if args.legacy_engine else current()
    )
    if args.json:
        print(json.dumps(result, indent=2))
        return
    for row, values in result.items():
        cells = "  ".join(f"{name} {us:6.3f} µs" for name, us in values.items())
        print(f"{row:28s} {cells}")


if __name__ == "__main__":
    main()
