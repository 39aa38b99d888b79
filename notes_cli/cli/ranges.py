"""The range of every numeric flag of `engine plan`, `engine simulate`, `engine serve` and
`bench`, checked in one place before any work starts (docs/planner.md, docs/simulate-bench.md).

Click's own `min`/`max` let `nan` through (every comparison with it is false) and `inf` past a
missing bound, and a float flag without a range took `1e308` or `1e-300` straight into the
simulator: a run for hours, gigabytes of candidates, a traceback. Each range is what a real
deployment could ask for, with room to spare; a value outside it is a usage error (exit 2) that
says the range.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, TypeVar

import typer

N = TypeVar("N", int, float)

# Shared by several commands; the command modules hold their own flags' ranges.
RATE = (1e-6, 1e6)  # req/s: a millionth (one request in 11 days) to a million
BURSTINESS = (0.01, 100.0)  # gamma shape of the arrival gaps: 1 = Poisson
REQUESTS = (1, 1_000_000)
INPUT_LEN = (1, 1_048_576)  # a 1M-token context
OUTPUT_LEN = (1, 131_072)
SLO_MS = (0.001, 600_000.0)  # a microsecond to ten minutes
SEED = (0, 2**32 - 1)
SPEED = (0.001, 10_000.0)  # the engine clock's speed-up over simulated hardware time


def within(low: N, high: N) -> Callable[[N | None], N | None]:
    """A Typer callback accepting a finite value in [low, high] (None: the flag was not given)."""

    def check(value: Any) -> Any:  # Typer reads this signature: no TypeVar here
        if value is not None:
            require(value, low, high)
        return value

    return check


def require(value: float, low: float, high: float, flag: str | None = None) -> None:
    """`typer.BadParameter` unless `value` is finite and in [low, high]."""
    if not (math.isfinite(value) and low <= value <= high):
        where = f"{flag}: " if flag else ""
        raise typer.BadParameter(
            f"{where}{_show(value)} is outside the range {_show(low)} to {_show(high)}"
        )


def _show(x: float) -> str:
    return f"{int(x)}" if math.isfinite(x) and x == int(x) and abs(x) < 1e12 else f"{x:g}"


def ranged(default: Any, *names: str, low: float, high: float, help: str) -> Any:
    """`typer.Option(default, *names, help=...)` that accepts only finite values in range."""
    return typer.Option(default, *names, help=help, callback=within(low, high))


def in_range(*names: str, low: float, high: float, help: str, hidden: bool = False) -> Any:
    """The same option for `Annotated[type, in_range(...)]`, the default written after `=`."""
    return typer.Option(*names, help=help, callback=within(low, high), hidden=hidden)
