"""How long each client waits on a silent stream and how often it retries a cut one (each client
says its own, in its folder), and what doctor's live turn measured against them
(`stream-idle-gap`, `stream-cut`).

A silence of half the idle timeout or more in one short probe turn is near it: a longer turn, a
longer prompt or a busier gateway passes it, and the client drops the stream ("stream
disconnected before completion"). The suggested value leaves four times the silence measured,
rounded up to whole seconds (and at least the client's own minimum, `idle_min`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

NEAR = 0.5  # a silence this share of the idle timeout, or more, is near it
HEADROOM = 4  # the suggested timeout leaves this many times the silence measured


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
    idle_min: int = 0  # the least idle timeout the client takes (a smaller one is raised)


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
    one (and at least the minimum the client takes)."""
    wanted = math.ceil(silence_ms * HEADROOM / 1000) * 1000
    return max(wanted, limits.idle_min, limits.idle_ms + 1000)


def near_idle_timeout(limits: StreamLimits, silence_ms: float) -> bool:
    return silence_ms >= NEAR * limits.idle_ms


def suggested_retries(limits: StreamLimits) -> int:
    return min(max(limits.retries * 2, 10), limits.retries_max)
