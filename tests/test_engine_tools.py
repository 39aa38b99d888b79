"""Tool calls end to end in the engine (docs/engine.md "Tool calls"): a `run: <command>` line
and a shell tool give one call of that tool in its own argument shape, in each protocol's real
stream form; the tool's result gives a text answer quoting the command's first output line.
Over a real socket, on the real engine core."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from notes_cli.engine.core import tool_rule
from notes_cli.wire import Message, TextPart, ToolChoice, ToolResultPart, ToolSpec, Turn

MODEL = "pd-mock-1"
EXEC_COMMAND = {  # Codex 0.171's shell tool (Responses shape)
    "type": "function",
    "name": "exec_command",
    "parameters": {"type": "object", "properties": {"cmd": {"type": "string"}}},
}
BASH = {  # Claude Code 2.1.197's
    "name": "Bash",
    "description": "Run a command",
    "input_schema": {"type": "object", "properties": {"command": {"type": "string"}}},
}
SHELL_ARRAY = {  # Codex's older `shell` tool, as a chat tool
    "type": "function",
    "function": {
        "name": "shell",
        "parameters": {
            "type": "object",
            "properties": {"command": {"type": "array", "items": {"type": "string"}}},
        },
    },
}
CODEX_RESULT = (
    "Chunk ID: 7c1e\nWall time: 0.0012 seconds\nProcess exited with code 0\n"
    "Original token count: 3\nOutput:\n\nmarker-42\nsecond line\n"
)


@pytest.fixture
def engine(start_engine_server: Callable[..., Any]) -> Any:
    return start_engine_server()


def data_events(text: str) -> list[Any]:
    return [
        json.loads(line[6:])
        for line in text.splitlines()
        if line.startswith("data: ") and line[6:] != "[DONE]"
    ]


# --- the rule itself --------------------------------------------------------------------


def turn(messages: list[Message], tools: list[ToolSpec]) -> Turn:
    return Turn(model=MODEL, messages=messages, tools=tools)


def cmd_tool(name: str = "exec_command", key: str = "cmd", kind: str = "string") -> ToolSpec:
    return ToolSpec(name, "", {"type": "object", "properties": {key: {"type": kind}}})


@pytest.mark.parametrize(
    ("tool", "arguments"),
    [
        (cmd_tool(), {"cmd": "echo hi"}),
        (cmd_tool("Bash", "command"), {"command": "echo hi"}),
        (cmd_tool("shell", "command", "array"), {"command": ["bash", "-lc", "echo hi"]}),
        (cmd_tool("run_anything", "command"), {"command": "echo hi"}),  # any command tool
    ],
)
def test_the_call_takes_the_tools_own_argument_shape(tool: ToolSpec, arguments: Any) -> None:
    plan = tool_rule.plan(turn([Message("user", [TextPart("run: echo hi")])], [tool]))

    assert isinstance(plan, tool_rule.ToolCallPlan)
    assert plan.tool == tool.name
    assert json.loads(plan.arguments) == arguments


def test_a_named_shell_tool_wins_over_other_command_tools() -> None:
    tools = [cmd_tool("TaskStop", "command"), cmd_tool("Bash", "command")]
    plan = tool_rule.plan(turn([Message("user", [TextPart("run: ls")])], tools))

    assert isinstance(plan, tool_rule.ToolCallPlan) and plan.tool == "Bash"


def test_the_newest_user_text_counts_not_reminders_or_system_messages_after_it() -> None:
    messages = [
        Message("user", [TextPart("run: echo old")]),
        Message("assistant", [TextPart("ok")]),
        Message("user", [TextPart("<system-reminder>ctx</system-reminder>"), TextPart("run: ls")]),
        Message("user", [TextPart("<system-reminder>run: rm -rf /</system-reminder>")]),
        Message("system", [TextPart("Available agent types… run: nope")]),
    ]
    plan = tool_rule.plan(turn(messages, [cmd_tool("Bash", "command")]))

    assert isinstance(plan, tool_rule.ToolCallPlan) and plan.command == "ls"


def test_no_shell_tool_no_run_line_or_tool_choice_none_means_no_call() -> None:
    run = [Message("user", [TextPart("run: ls")])]
    assert tool_rule.plan(turn(run, [])) is None
    assert (
        tool_rule.plan(turn(run, [ToolSpec("view_image", "", {"properties": {"path": {}}})]))
        is None
    )
    assert tool_rule.plan(turn([Message("user", [TextPart("say pong")])], [cmd_tool()])) is None
    none = Turn(model=MODEL, messages=run, tools=[cmd_tool()], tool_choice=ToolChoice("none"))
    assert tool_rule.plan(none) is None


@pytest.mark.parametrize(
    ("output", "line"),
    [
        (CODEX_RESULT, "marker-42"),
        ('{"output":"marker-42\\n","metadata":{"exit_code":0}}', "marker-42"),  # older shell
        ("\n\n  marker-42  \nmore", "marker-42"),  # Claude Code's Bash: the output itself
        ("Chunk ID: 1\nOutput:\n", ""),
        # Gemini CLI's run_shell_command, wrapped as untrusted tool output
        (
            "<untrusted_context>\nOutput: marker-42\nProcess Group PGID: 7\n</untrusted_context>",
            "marker-42",
        ),  # fmt: skip
        ("<untrusted_context>\nOutput: (empty)\nProcess Group PGID: 7\n</untrusted_context>", ""),
        ("Output: \n\nmarker-42\nExit Code: 1", "marker-42"),
        # Qwen Code's run_shell_command: the output follows `Output: ` on its line
        ("Command: printf 'x-%s' 42\nDirectory: (root)\nOutput: x-42\nError: (none)", "x-42"),
        ("Command: true\nDirectory: (root)\nOutput: \nsecond\nError: (none)", "second"),
        # Kimi Code's Bash: a wall-time line, then the output itself
        ("Wall time: 0.119 seconds\nmarker-42\n", "marker-42"),
        ("Wall time: 1 second\n", ""),
    ],
)
def test_the_answer_to_a_result_quotes_the_first_output_line(output: str, line: str) -> None:
    assert tool_rule.first_output_line(output) == line


def test_a_result_of_a_non_shell_call_is_not_the_rules_business() -> None:
    from notes_cli.wire import ToolCallPart

    messages = [
        Message("user", [TextPart("run: ls")]),
        Message("assistant", [ToolCallPart("c1", "view_image", "{}")]),
        Message("tool", [ToolResultPart("c1", "marker")]),
    ]
    tools = [cmd_tool(), ToolSpec("view_image", "", {"properties": {"path": {}}})]
    assert tool_rule.plan(turn(messages, tools)) is None


# --- over HTTP: each protocol's own stream form ---------------------------------------------


def test_chat_streams_one_tool_call_with_incremental_arguments(
    engine: Any, http: httpx.Client
) -> None:
    body = {
        "model": MODEL,
        "stream": True,
        "messages": [{"role": "user", "content": "run: echo marker-1"}],
        "tools": [SHELL_ARRAY],
    }
    reply = http.post(f"{engine.base_url}/chat/completions", json=body)

    assert reply.status_code == 200
    chunks = data_events(reply.text)
    deltas = [c["choices"][0]["delta"] for c in chunks if c["choices"]]
    calls = [d["tool_calls"][0] for d in deltas if d.get("tool_calls")]
    assert calls[0]["id"].startswith("call_") and calls[0]["function"]["name"] == "shell"
    assert all(c["index"] == 0 for c in calls)
    pieces = [c["function"]["arguments"] for c in calls if c["function"].get("arguments")]
    assert len(pieces) > 1  # streamed token by token, not in one piece
    assert json.loads("".join(pieces)) == {"command": ["bash", "-lc", "echo marker-1"]}
    assert not any(d.get("content") for d in deltas)
    assert chunks[-1]["choices"][0]["finish_reason"] == "tool_calls"


def test_responses_streams_a_function_call_item_the_way_codex_reads_it(
    engine: Any, http: httpx.Client
) -> None:
    body = {
        "model": MODEL,
        "stream": True,
        "input": [
            {"type": "message", "role": "developer", "content": "You are Codex."},
            {
                "type": "message",
                "role": "user",
                "content": [{"type": "input_text", "text": "run: echo marker-2"}],
            },  # noqa: E501
        ],
        "tools": [EXEC_COMMAND, {"type": "web_search"}, {"type": "namespace", "name": "x"}],
    }
    reply = http.post(f"{engine.base_url}/responses", json=body)

    events = data_events(reply.text)
    kinds = [e["type"] for e in events]
    added = next(e for e in events if e["type"] == "response.output_item.added")
    assert added["item"]["type"] == "function_call" and added["item"]["name"] == "exec_command"
    deltas = [e["delta"] for e in events if e["type"] == "response.function_call_arguments.delta"]
    assert len(deltas) > 1
    done = next(e for e in events if e["type"] == "response.function_call_arguments.done")
    assert done["arguments"] == "".join(deltas) == '{"cmd":"echo marker-2"}'
    item = next(e for e in events if e["type"] == "response.output_item.done")["item"]
    assert item["type"] == "function_call" and item["status"] == "completed"
    assert item["call_id"].startswith("call_") and item["arguments"] == done["arguments"]
    assert kinds[-1] == "response.completed"
    assert events[-1]["response"]["output"] == [item]
    assert "response.output_text.delta" not in kinds


def test_anthropic_streams_a_tool_use_block_with_input_json_deltas(
    engine: Any, http: httpx.Client
) -> None:
    body = {
        "model": MODEL,
        "max_tokens": 256,
        "stream": True,
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": "run: echo marker-3"}]},
            {"role": "system", "content": "Available agent types: …"},  # Claude Code's last
        ],
        "tools": [BASH],
    }
    reply = http.post(f"{engine.anthropic_base_url}/v1/messages?beta=true", json=body)

    events = data_events(reply.text)
    start = next(e for e in events if e["type"] == "content_block_start")
    assert start["content_block"]["type"] == "tool_use"
    assert start["content_block"]["name"] == "Bash"
    assert start["content_block"]["id"].startswith("toolu_")
    partial = [
        e["delta"]["partial_json"]
        for e in events
        if e["type"] == "content_block_delta" and e["delta"]["type"] == "input_json_delta"
    ]
    assert len(partial) > 1
    assert json.loads("".join(partial)) == {"command": "echo marker-3"}
    stop = next(e for e in events if e["type"] == "message_delta")
    assert stop["delta"]["stop_reason"] == "tool_use"
    assert events[-1]["type"] == "message_stop"


def test_whole_answers_carry_the_call_too(engine: Any, http: httpx.Client) -> None:
    chat = http.post(
        f"{engine.base_url}/chat/completions",
        json={
            "model": MODEL,
            "messages": [{"role": "user", "content": "run: pwd"}],
            "tools": [SHELL_ARRAY],
        },  # noqa: E501
    ).json()
    call = chat["choices"][0]["message"]["tool_calls"][0]
    assert json.loads(call["function"]["arguments"]) == {"command": ["bash", "-lc", "pwd"]}
    assert chat["choices"][0]["finish_reason"] == "tool_calls"

    responses = http.post(
        f"{engine.base_url}/responses",
        json={"model": MODEL, "input": "run: pwd", "tools": [EXEC_COMMAND]},  # noqa: E501
    ).json()
    assert [i["type"] for i in responses["output"]] == ["function_call"]
    assert responses["output"][0]["arguments"] == '{"cmd":"pwd"}'

    anthropic = http.post(
        f"{engine.anthropic_base_url}/v1/messages",
        json={
            "model": MODEL,
            "max_tokens": 99,
            "messages": [{"role": "user", "content": "run: pwd"}],
            "tools": [BASH],
        },  # noqa: E501
    ).json()
    assert anthropic["content"] == [
        {
            "type": "tool_use",
            "id": anthropic["content"][0]["id"],
            "name": "Bash",
            "input": {"command": "pwd"},
        }  # noqa: E501
    ]
    assert anthropic["stop_reason"] == "tool_use"


def test_the_tool_result_turn_answers_with_the_commands_output(
    engine: Any, http: httpx.Client
) -> None:
    body = {
        "model": MODEL,
        "input": [
            {"type": "message", "role": "user", "content": "run: echo marker-42"},
            {
                "type": "function_call",
                "call_id": "call_1",
                "name": "exec_command",
                "arguments": '{"cmd":"echo marker-42"}',
            },  # noqa: E501
            {"type": "function_call_output", "call_id": "call_1", "output": CODEX_RESULT},
        ],
        "tools": [EXEC_COMMAND],
    }
    answer = http.post(f"{engine.base_url}/responses", json=body).json()

    message = answer["output"][0]
    assert message["type"] == "message"
    assert message["content"][0]["text"] == "The command printed: marker-42"

    claude = {
        "model": MODEL,
        "max_tokens": 99,
        "messages": [
            {"role": "user", "content": "run: echo marker-43"},
            {
                "role": "assistant",
                "content": [
                    {
                        "type": "tool_use",
                        "id": "toolu_1",
                        "name": "Bash",
                        "input": {"command": "echo marker-43"},
                    }
                ],
            },  # noqa: E501
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": "toolu_1", "content": "marker-43\n"},
                    {"type": "text", "text": "<system-reminder>x</system-reminder>"},
                ],
            },  # noqa: E501
        ],
        "tools": [BASH],
    }
    reply = http.post(f"{engine.anthropic_base_url}/v1/messages", json=claude).json()
    assert reply["content"] == [{"type": "text", "text": "The command printed: marker-43"}]
    assert reply["stop_reason"] == "end_turn"


def test_other_prompts_behave_as_before_even_with_tools(engine: Any, http: httpx.Client) -> None:
    body = {
        "model": MODEL,
        "messages": [{"role": "user", "content": "say pong"}],
        "tools": [SHELL_ARRAY],
    }  # noqa: E501
    reply = http.post(f"{engine.base_url}/chat/completions", json=body).json()

    assert reply["choices"][0]["message"]["content"].lower().rstrip(".") == "pong"
    assert "tool_calls" not in reply["choices"][0]["message"]


# --- --protocols -------------------------------------------------------------------------


def test_a_chat_only_engine_answers_404_on_the_other_apis(
    start_engine_server: Callable[..., Any], http: httpx.Client
) -> None:
    engine = start_engine_server(protocols=("chat",))

    chat = {"model": MODEL, "messages": [{"role": "user", "content": "say pong"}]}
    assert http.post(f"{engine.base_url}/chat/completions", json=chat).status_code == 200
    assert http.get(f"{engine.base_url}/models").status_code == 200
    responses = http.post(f"{engine.base_url}/responses", json={"model": MODEL, "input": "hi"})
    assert responses.status_code == 404
    assert responses.json()["error"]["code"] == "not_found"
    messages = http.post(f"{engine.anthropic_base_url}/v1/messages", json={})
    assert messages.status_code == 404
    assert messages.json()["type"] == "error"
    assert http.head(f"{engine.base_url}/responses").status_code == 404


def test_engine_serve_refuses_an_unknown_protocol(cli: Callable[..., Any]) -> None:
    result = cli("engine", "serve", "--protocols", "chat,grpc", "--port", "0")

    assert result.exit_code == 2
    assert "grpc" in result.stderr and "chat, responses, anthropic" in result.stderr
