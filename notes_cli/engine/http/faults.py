"""Fault injection: deterministic failures a gateway or engine shows in real life.

A spec is `KIND[:SECONDS][@SCHEDULE]` (spaces work too: `"500 first 2"`):

    KIND       401 | 404 (model_not_found) | 429 | 500 | 503
               hang-before-headers   never answer (until the client gives up or the server stops)
               slow-headers[:S]      wait S seconds (default 2) before the response starts
               stall-mid-stream[:S]  go silent for S seconds (default 60) after the first token
               cut-before-completion send every token, then close without the completion event
               kv-tcp-fallback       the KV link silently falls back to TCP (always on while set)
               no-stop               the answer never stops by itself: it runs to max_tokens
                                     (finish reason "length"), like a base model
    SCHEDULE   always (default) | first:N | every:N | rate:P[:seed:S]

Schedules count generation requests (chat, Responses, Messages) from when the fault was set,
so `500@first:2` fails exactly the next two and `503@rate:0.2:seed:7` fails the same ones on
every run.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass, field
from typing import Literal

ScheduleKind = Literal["always", "first", "every", "rate"]

HTTP_FAULTS = ("401", "404", "429", "500", "503")
TIMING_FAULTS = ("hang-before-headers", "slow-headers", "stall-mid-stream", "cut-before-completion")
LINK_FAULTS = ("kv-tcp-fallback",)
ANSWER_FAULTS = ("no-stop",)
FAULT_KINDS = HTTP_FAULTS + TIMING_FAULTS + LINK_FAULTS + ANSWER_FAULTS

_ALIASES = {
    "unauthorized": "401",
    "model-not-found": "404",
    "model_not_found": "404",
    "rate-limit": "429",
    "server-error": "500",
    "overloaded": "503",
    "unavailable": "503",
    "hang": "hang-before-headers",
    "slow": "slow-headers",
    "stall": "stall-mid-stream",
    "cut": "cut-before-completion",
    "tcp-fallback": "kv-tcp-fallback",
    "ignore-eos": "no-stop",
    "base-model": "no-stop",
}
_DEFAULT_SECONDS = {"slow-headers": 2.0, "stall-mid-stream": 60.0, "hang-before-headers": 3600.0}
_DURATION = re.compile(r"^(\d+(?:\.\d+)?)(ms|s)?$")


class FaultSpecError(ValueError):
    """A `--fault` string that does not parse; the message says what is expected."""


@dataclass(frozen=True)
class Schedule:
    """Which generation requests a fault hits."""

    kind: ScheduleKind = "always"
    n: int = 0
    rate: float = 0.0
    seed: int = 0

    def describe(self) -> str:
        if self.kind == "always":
            return "always"
        if self.kind == "rate":
            return f"rate:{self.rate:g}:seed:{self.seed}"
        return f"{self.kind}:{self.n}"


@dataclass(frozen=True)
class FaultSpec:
    kind: str
    schedule: Schedule = Schedule()
    seconds: float | None = None

    def describe(self) -> str:
        duration = f":{self.seconds:g}s" if self.seconds is not None else ""
        return f"{self.kind}{duration}@{self.schedule.describe()}"


def parse_fault(text: str) -> FaultSpec:
    """Parse one `--fault` string (grammar in the module docstring)."""
    tokens = [t for t in re.split(r"[\s:@,=]+", text.strip().lower()) if t]
    if not tokens:
        raise FaultSpecError(
            "empty fault spec; expected KIND[:SECONDS][@SCHEDULE], e.g. 500@first:2"
        )
    kind = _ALIASES.get(tokens[0], tokens[0])
    if kind not in FAULT_KINDS:
        raise FaultSpecError(f"unknown fault kind {tokens[0]!r}; known: {', '.join(FAULT_KINDS)}")
    rest = tokens[1:]
    seconds = _DEFAULT_SECONDS.get(kind)
    if rest and (match := _DURATION.match(rest[0])):
        if kind not in _DEFAULT_SECONDS:
            raise FaultSpecError(f"fault {kind!r} takes no duration (got {rest[0]!r})")
        value = float(match.group(1))
        seconds = value / 1000 if match.group(2) == "ms" else value
        rest = rest[1:]
    return FaultSpec(kind, _parse_schedule(rest, text), seconds)


def _parse_schedule(tokens: list[str], text: str) -> Schedule:
    usage = f"bad schedule in {text!r}; expected always, first:N, every:N or rate:P[:seed:S]"
    if not tokens or tokens == ["always"]:
        return Schedule()
    try:
        if tokens[0] in ("first", "every") and len(tokens) == 2:
            n = int(tokens[1])
            if n < 1:
                raise FaultSpecError(usage)
            return Schedule(tokens[0], n=n)  # type: ignore[arg-type]
        if tokens[0] == "rate" and len(tokens) in (2, 4):
            rate = float(tokens[1])
            seed = 0
            if len(tokens) == 4:
                if tokens[2] != "seed":
                    raise FaultSpecError(usage)
                seed = int(tokens[3])
            if not 0.0 <= rate <= 1.0:
                raise FaultSpecError(f"rate must be between 0 and 1 in {text!r}")
            return Schedule("rate", rate=rate, seed=seed)
    except ValueError as exc:
        if isinstance(exc, FaultSpecError):
            raise
        raise FaultSpecError(usage) from exc
    raise FaultSpecError(usage)


@dataclass
class _ActiveFault:
    spec: FaultSpec
    seen: int = 0
    fired: int = 0
    rng: random.Random = field(default_factory=random.Random)

    def hits(self) -> bool:
        self.seen += 1
        schedule = self.spec.schedule
        if schedule.kind == "first":
            hit = self.seen <= schedule.n
        elif schedule.kind == "every":
            hit = self.seen % schedule.n == 0
        elif schedule.kind == "rate":
            hit = self.rng.random() < schedule.rate
        else:
            hit = True
        self.fired += hit
        return hit


@dataclass(frozen=True)
class FaultPlan:
    """What to do to one request: an HTTP error status, and/or timing misbehaviour."""

    http_status: int | None = None
    hang_s: float | None = None
    slow_headers_s: float | None = None
    stall_s: float | None = None
    cut_before_completion: bool = False
    no_stop: bool = False


class FaultInjector:
    """The faults currently set, with their counters. Lives in the app's event loop."""

    def __init__(self, specs: tuple[FaultSpec, ...] = ()) -> None:
        self._active: list[_ActiveFault] = []
        self.set(specs)

    def set(self, specs: tuple[FaultSpec, ...] | list[FaultSpec]) -> None:
        """Replace all faults; counters start again from zero."""
        self._active = [_ActiveFault(s, rng=random.Random(s.schedule.seed)) for s in specs]

    def add(self, specs: list[FaultSpec]) -> None:
        self._active += [_ActiveFault(s, rng=random.Random(s.schedule.seed)) for s in specs]

    @property
    def link_fallback(self) -> bool:
        """True while a kv-tcp-fallback fault is set."""
        return any(f.spec.kind == "kv-tcp-fallback" for f in self._active)

    def plan(self) -> FaultPlan:
        """Advance every schedule by one generation request and say what fires."""
        status = hang = slow = stall = None
        cut = no_stop = False
        for fault in self._active:
            kind = fault.spec.kind
            if kind in LINK_FAULTS or not fault.hits():
                continue
            if kind in HTTP_FAULTS:
                status = status or int(kind)
            elif kind == "hang-before-headers":
                hang = fault.spec.seconds
            elif kind == "slow-headers":
                slow = fault.spec.seconds
            elif kind == "stall-mid-stream":
                stall = fault.spec.seconds
            elif kind == "no-stop":
                no_stop = True
            else:
                cut = True
        return FaultPlan(status, hang, slow, stall, cut, no_stop)

    def describe(self) -> list[dict[str, object]]:
        """JSON for GET /engine/faults."""
        return [
            {"spec": f.spec.describe(), "kind": f.spec.kind, "seen": f.seen, "fired": f.fired}
            for f in self._active
        ]
