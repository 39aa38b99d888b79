"""Clocks the scheduler runs against: simulated hardware milliseconds, either following the wall
clock (scaled by --speed, for the live server) or jumping from event to event (the simulator)."""

from __future__ import annotations

import time
from typing import Protocol


class Clock(Protocol):
    def now_ms(self) -> float:
        """Simulated milliseconds since the clock started."""
        ...

    def wall_delay_s(self, at_ms: float) -> float:
        """Wall seconds until simulated time `at_ms` (0 when it has passed)."""
        ...


class WallClock:
    """Simulated time = wall time since start * speed (speed 10: ten times faster than real)."""

    def __init__(self, speed: float = 1.0) -> None:
        if speed <= 0:
            raise ValueError("speed must be positive")
        self.speed = speed
        self._start = time.monotonic()
        self.held_ms = 0.0  # simulated time given up by hold_at (the process was starved)
        self.holds = 0  # how many times that happened

    def now_ms(self) -> float:
        return (time.monotonic() - self._start) * 1000.0 * self.speed - self.held_ms

    def hold_at(self, at_ms: float) -> None:
        """Set simulated time back to `at_ms` (<= now): the hardware did not run while the
        process could not drive it, so the time it lost is not replayed as a burst."""
        behind = self.now_ms() - at_ms
        if behind > 0:
            self.held_ms += behind
            self.holds += 1

    def wall_delay_s(self, at_ms: float) -> float:
        return max(0.0, (at_ms - self.now_ms()) / 1000.0 / self.speed)


class VirtualClock:
    """A clock that only moves when told to: the simulator advances it to each event's time."""

    def __init__(self, start_ms: float = 0.0) -> None:
        self._now = start_ms

    def now_ms(self) -> float:
        return self._now

    def advance_to(self, at_ms: float) -> None:
        if at_ms > self._now:
            self._now = at_ms

    def wall_delay_s(self, at_ms: float) -> float:
        return 0.0
