"""Claude Code's limits on a stream, from its merged environment (settings files over the
shell): CLAUDE_STREAM_IDLE_TIMEOUT_MS (the stalled-stream watchdog, at least 300000),
API_TIMEOUT_MS (600000: the whole request), CLAUDE_CODE_MAX_RETRIES (10, at most 15); doctor's
live turn is measured against them (`doctor.stream_limits`)."""

from __future__ import annotations

from collections.abc import Mapping

from notes_cli.doctor.stream_limits import StreamLimits, count

IDLE_MS, REQUEST_MS, RETRIES, MAX_RETRIES = 300_000, 600_000, 10, 15


def stream_limits(env: Mapping[str, str]) -> StreamLimits:
    """Claude Code's limits from its merged environment (settings files over the shell)."""
    idle = max(count(env.get("CLAUDE_STREAM_IDLE_TIMEOUT_MS"), IDLE_MS), IDLE_MS)
    return StreamLimits(
        "claude",
        idle,
        "CLAUDE_STREAM_IDLE_TIMEOUT_MS (settings.json env)",
        IDLE_MS,
        min(count(env.get("CLAUDE_CODE_MAX_RETRIES"), RETRIES), MAX_RETRIES),
        "CLAUDE_CODE_MAX_RETRIES (settings.json env)",
        MAX_RETRIES,
        count(env.get("API_TIMEOUT_MS"), REQUEST_MS),
        "API_TIMEOUT_MS (settings.json env)",
        idle_min=IDLE_MS,
    )
