"""The engine's configuration: which preset, which mode, how fast the wall clock runs."""

from __future__ import annotations

from dataclasses import dataclass

from notes_cli.errors import UsageError

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

    def __post_init__(self) -> None:
        problems = []
        if self.mode is not None and self.mode not in MODES:
            problems.append(f"mode must be one of {', '.join(MODES)} (got {self.mode!r})")
        if not self.speed > 0:
            problems.append(f"speed must be positive (got {self.speed})")
        if not self.served_models:
            problems.append("at least one served model id is needed")
        for name in ("max_queue", "default_max_tokens", "max_context_tokens"):
            if getattr(self, name) < 1:
                problems.append(f"{name} must be at least 1 (got {getattr(self, name)})")
        if problems:
            raise UsageError("invalid engine configuration: " + "; ".join(problems))
