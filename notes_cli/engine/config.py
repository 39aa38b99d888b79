"""The engine's configuration: which preset, which mode, how fast the wall clock runs."""

from __future__ import annotations

from dataclasses import dataclass

SYSTEM_FINGERPRINT = "pdnotes-mock-engine"
"""Set by the HTTP layer on every answer so no one mistakes the mock for a real model."""

MODES = ("disagg", "colocated", "chunked")


@dataclass(frozen=True)
class EngineConfig:
    """Everything `pdnotes engine serve` and the simulator need to build an engine."""

    preset: str = "h800-h20-rdma"
    mode: str | None = None  # overrides the preset's mode: "disagg" | "colocated" | "chunked"
    speed: float = 1.0  # the wall clock runs `speed` times faster than simulated hardware time
    seed: int = 0
    served_models: tuple[str, ...] = ("pd-mock-1",)
    max_queue: int = 512
    default_max_tokens: int = 256
    max_context_tokens: int = 32768
    link_fallback_tcp: bool = False
