"""Claude Code's session logs as model calls for `pdnotes trace import` (`trace.agent_logs`).

Claude Code writes `$CLAUDE_CONFIG_DIR/projects/<project>/<session>.jsonl`: one line per event;
an `assistant` line carries `message.usage` (`input_tokens`, `cache_creation_input_tokens`,
`cache_read_input_tokens`, `output_tokens`) and a `timestamp`; one API answer may span several
lines with the same `message.id`, counted once. The prompt was input + cache creation + cache
read tokens, of which the cache read was served from the prefix cache. The call was sent with
the session's last `user` line before its answer (the prompt, or the tool results), and ended
with its answer's last line.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

from notes_cli.trace.agent_logs import Call, log_files, log_lines, log_time, log_tokens


def session_calls(folder: Path) -> Iterator[Call]:
    """Every model call of the Claude Code session logs under `folder` (its `projects/`, or a
    folder of session files itself)."""
    root = folder / "projects" if (folder / "projects").is_dir() else folder
    for path in log_files(root, "*.jsonl"):
        yield from _session_file(path)


def _session_file(path: Path) -> Iterator[Call]:
    # A call was sent with the session's last `user` line (the prompt, or the tool results
    # its previous answer asked for), else right after that previous answer ended; it ended
    # with the last line of its answer (one line per content block, the same message.id).
    calls: dict[str, Call] = {}
    sent: dict[str, float] = {}  # session → its last user line, or its last answer's end
    for where, row in log_lines(path):
        session = str(row.get("sessionId") or path.stem)
        if row.get("isSidechain"):
            session += "/" + str(row.get("agentId") or "sidechain")
        if row.get("type") == "user" and isinstance(row.get("timestamp"), str):
            sent[session] = log_time(row.get("timestamp"), where)
            continue
        message = row.get("message")
        if row.get("type") != "assistant" or not isinstance(message, dict):
            continue
        usage = message.get("usage")
        if not isinstance(usage, dict):
            continue
        at = log_time(row.get("timestamp"), where)
        key = f"{message.get('id')}/{row.get('requestId')}"
        known = calls.get(key)
        if known is not None:  # the same answer's next content block: counted once
            calls[key] = replace(known, ended_ms=max(known.ended_ms, at))
            sent[session] = calls[key].ended_ms
            continue
        fresh = log_tokens(usage, "input_tokens", where)
        written = log_tokens(usage, "cache_creation_input_tokens", where)
        read = log_tokens(usage, "cache_read_input_tokens", where)
        calls[key] = Call(
            min(sent.get(session, at), at),
            at,
            session,
            fresh + written + read,
            log_tokens(usage, "output_tokens", where),
            read,
            "claude",
        )
        sent[session] = at
    yield from calls.values()
