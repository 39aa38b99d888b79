"""Codex's limits on a stream, from its provider table: `stream_idle_timeout_ms` (300000;
counted after the response headers, reset by every event) and `stream_max_retries` (5, at most
100: whole-turn reconnects after a stream breaks); doctor's live turn is measured against them
(`doctor.stream_limits`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from notes_cli.doctor.stream_limits import StreamLimits, count

IDLE_MS, STREAM_RETRIES, MAX_RETRIES = 300_000, 5, 100


def stream_limits(provider_id: str, provider: Mapping[str, Any]) -> StreamLimits:
    """Codex's limits from its provider table (defaults where unset or not a count)."""
    where = f"in [model_providers.{provider_id}]"
    return StreamLimits(
        "codex",
        count(provider.get("stream_idle_timeout_ms"), IDLE_MS),
        f"stream_idle_timeout_ms {where}",
        IDLE_MS,
        count(provider.get("stream_max_retries"), STREAM_RETRIES),
        f"stream_max_retries {where}",
        MAX_RETRIES,
    )
