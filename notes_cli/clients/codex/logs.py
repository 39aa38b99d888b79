"""Codex's session logs as model calls for `pdnotes trace import` (`trace.agent_logs`).

Codex writes `$CODEX_HOME/sessions/YYYY/MM/DD/rollout-*.jsonl`: a `session_meta` line (its
`payload.id` the session), and per model call an `event_msg` whose `payload.type` is
`token_count` with `payload.info.last_token_usage` (`input_tokens`, the cached part included as
in OpenAI's usage, `cached_input_tokens`, `output_tokens`); `info` is null on rate-limit-only
events, and a repeated event (same running total) is counted once. The call was sent with the
last input `response_item` (the prompt, a tool's output) before its answer's first item, and
ended with its answer's last item; the `token_count` comes later, after the tool it called ran.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from notes_cli.trace.agent_logs import Call, log_files, log_lines, log_time, log_tokens

# Codex's rollout items the client sends (the rest are the model's answer: its messages,
# reasoning and tool calls).
_INPUT_ROLES = {"user", "developer", "system"}


def session_calls(folder: Path) -> Iterator[Call]:
    """Every model call of the Codex rollouts under `folder` (its `sessions/`, or a folder of
    rollout files itself)."""
    root = folder / "sessions" if (folder / "sessions").is_dir() else folder
    for path in log_files(root, "rollout-*.jsonl"):
        yield from _rollout(path)


def _rollout(path: Path) -> Iterator[Call]:
    # A call was sent with the last input item (the prompt, or a tool's output) before its
    # answer's first item, else right after the previous answer; it ended with its answer's
    # last item. Its token_count comes later: after the tool its answer called has run.
    session = path.stem
    last_total: object = None
    last_input: float | None = None
    answer_start: float | None = None  # the call being answered: when it was sent
    answer_end: float | None = None  # its (or the previous call's) last answer item
    for where, row in log_lines(path):
        payload = row.get("payload")
        if not isinstance(payload, dict):
            continue
        kind = row.get("type")
        if kind == "session_meta" and payload.get("id"):
            session = str(payload["id"])
            continue
        if kind == "response_item":
            at = log_time(row.get("timestamp"), where)
            item = str(payload.get("type", ""))
            if item.endswith("_output") or payload.get("role") in _INPUT_ROLES:
                last_input = at
            else:  # the answer's item
                if answer_start is None:
                    started = [t for t in (last_input, answer_end) if t is not None]
                    answer_start = min(max(started), at) if started else at
                answer_end = at
            continue
        if kind != "event_msg" or payload.get("type") != "token_count":
            continue
        info = payload.get("info")
        if not isinstance(info, dict) or not isinstance(info.get("last_token_usage"), dict):
            continue  # a rate-limit-only event
        total = info.get("total_token_usage")
        if total is not None and total == last_total:
            continue  # the same call reported twice
        last_total = total
        usage = info["last_token_usage"]
        at = log_time(row.get("timestamp"), where)
        if answer_start is None or answer_end is None:  # no item logged: all at this event
            answer_start = answer_end = at
        yield Call(
            answer_start,
            answer_end,
            session,
            log_tokens(usage, "input_tokens", where),
            log_tokens(usage, "output_tokens", where),
            log_tokens(usage, "cached_input_tokens", where),
            "codex",
        )
        answer_start = None
