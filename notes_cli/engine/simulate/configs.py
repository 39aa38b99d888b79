"""What `pdnotes engine simulate` runs and what runs it: a configuration (`SimConfig`), the
configuration as the simulator resolves it (`Resolved`), and the `Simulator` protocol the runner
drives. Its own module so the runner and the engine's simulator both import it, and neither the
other."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any, Protocol

from notes_cli.bench.workload import WorkItem


@dataclass(frozen=True)
class SimConfig:
    """One deployment to simulate: a preset, optionally run in another mode and with another
    prefill:decode node ratio. Colocated and chunked modes run `prefill + decode` general
    nodes, so every mode of a ratio spends the same number of chips."""

    preset: str
    mode: str | None = None  # None: the preset's own mode
    pd_ratio: tuple[int, int] | None = None  # None: the preset's own node counts
    weight_dtype: str | None = None  # None: the preset's own precision
    kv_dtype: str | None = None
    prefix_cache_hit: float | None = None  # None: the preset's own (a trace's replay sets it)


@dataclass(frozen=True)
class Resolved:
    """A configuration as the simulator will run it."""

    label: str
    mode: str
    prefill_chips: int
    decode_chips: int
    colocated_chips: int = 0
    provenance: str | None = None  # a calibrated deployment's records, endpoint and model

    @property
    def chips(self) -> int:
        return self.prefill_chips + self.decode_chips + self.colocated_chips

    def to_json(self) -> dict[str, Any]:
        return {
            "label": self.label,
            "mode": self.mode,
            "chips": self.chips,
            "prefill_chips": self.prefill_chips,
            "decode_chips": self.decode_chips,
            "colocated_chips": self.colocated_chips,
            "provenance": self.provenance,
        }


class Simulator(Protocol):
    """What the runner needs from a simulator: how a configuration resolves (label, chips) and
    a lazy stream of per-request records as requests finish.

    A record needs `ttft_ms`, `e2e_ms`, `output_tokens`, `tpot_ms` (None when undefined) and
    may carry `itl_ms` (an iterable of gaps) for pooled ITL."""

    def resolve(self, config: SimConfig) -> Resolved: ...

    def run(self, config: SimConfig, items: Iterable[WorkItem], seed: int) -> Iterator[Any]: ...
