"""How long each client waits on a silent stream and how often it retries a cut one (a client in a
folder of its own says its own), and what
doctor's live turn measured against them (`stream-idle-gap`, `stream-cut`).

    Claude Code  CLAUDE_STREAM_IDLE_TIMEOUT_MS (the stalled-stream watchdog, at least 300000),
                 API_TIMEOUT_MS (600000: the whole request), CLAUDE_CODE_MAX_RETRIES (10, at
                 most 15)

A silence of half the idle timeout or more in one short probe turn is near it: a longer turn, a
longer prompt or a busier gateway passes it, and the client drops the stream ("stream
disconnected before completion"). The suggested value leaves four times the silence measured,
rounded up to whole seconds (Claude Code: at least its 300000 ms minimum).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

NEAR = 0.5  # a silence this share of the idle timeout, or more, is near it
HEADROOM = 4  # the suggested timeout leaves this many times the silence measured
CLAUDE_IDLE_MS, CLAUDE_REQUEST_MS, CLAUDE_RETRIES, CLAUDE_MAX_RETRIES = 300_000, 600_000, 10, 15


@dataclass(frozen=True)
class StreamLimits:
    """One client's limits on a stream, with where each is set (for the fix)."""

    client: str
    idle_ms: int
    idle_setting: str  # e.g. "stream_idle_timeout_ms in [model_providers.gw]"
    idle_default: int
    retries: int
    retries_setting: str
    retries_max: int
    request_ms: int | None = None  # a whole-request timeout (Claude Code's API_TIMEOUT_MS)
    request_setting: str | None = None


def claude_limits(env: Mapping[str, str]) -> StreamLimits:
    """Claude Code's limits from its merged environment (settings files over the shell)."""
    idle = max(count(env.get("CLAUDE_STREAM_IDLE_TIMEOUT_MS"), CLAUDE_IDLE_MS), CLAUDE_IDLE_MS)
    return StreamLimits(
        "claude",
        idle,
        "CLAUDE_STREAM_IDLE_TIMEOUT_MS (settings.json env)",
        CLAUDE_IDLE_MS,
        min(count(env.get("CLAUDE_CODE_MAX_RETRIES"), CLAUDE_RETRIES), CLAUDE_MAX_RETRIES),
        "CLAUDE_CODE_MAX_RETRIES (settings.json env)",
        CLAUDE_MAX_RETRIES,
        count(env.get("API_TIMEOUT_MS"), CLAUDE_REQUEST_MS),
        "API_TIMEOUT_MS (settings.json env)",
    )


def count(value: object, default: int) -> int:
    if isinstance(value, bool):
        return default
    if isinstance(value, int) and value >= 0:
        return value
    if isinstance(value, str) and value.strip().isdigit():
        return int(value.strip())
    return default


def suggested_ms(limits: StreamLimits, silence_ms: float) -> int:
    """A timeout that leaves HEADROOM times `silence_ms`, in whole seconds, above the current
    one (and, for Claude Code, at least the minimum its watchdog takes)."""
    wanted = math.ceil(silence_ms * HEADROOM / 1000) * 1000
    floor = CLAUDE_IDLE_MS if limits.client == "claude" else 0
    return max(wanted, floor, limits.idle_ms + 1000)


def near_idle_timeout(limits: StreamLimits, silence_ms: float) -> bool:
    return silence_ms >= NEAR * limits.idle_ms


def suggested_retries(limits: StreamLimits) -> int:
    return min(max(limits.retries * 2, 10), limits.retries_max)
