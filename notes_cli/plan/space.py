"""The search space: every deployment the planner considers, in one deterministic order.

A candidate is one serving instance ("replica"): a mode, the chip and tensor-parallel degree of
each node group, how many nodes each group has (the P:D instance ratio in disagg mode), the
decode batch limit and, in chunked mode, the chunk size. Tensor parallelism must divide the
model's attention heads and stay within --max-tp; an instance uses at most --max-chips chips.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import Any

from notes_cli.engine.core.profiles import Deployment, ModelShape, NodeGroup

ALL_MODES = ("disagg", "colocated", "chunked")


@dataclass(frozen=True)
class ChipOption:
    """A chip kind the user can deploy, with its price per chip-hour if known."""

    name: str
    price: float | None = None


@dataclass(frozen=True)
class SearchSpace:
    chips: tuple[ChipOption, ...]
    modes: tuple[str, ...] = ALL_MODES
    max_tp: int = 8
    max_chips: int = 16
    max_instances: int = 4  # nodes per group (prefill, decode or colocated)
    max_batches: tuple[int, ...] = (256,)
    chunk_sizes: tuple[int, ...] = (512,)

    def tp_choices(self, model: ModelShape) -> tuple[int, ...]:
        """Powers of two up to max_tp that divide the model's attention heads."""
        out, tp = [], 1
        while tp <= self.max_tp:
            if model.heads % tp == 0:
                out.append(tp)
            tp *= 2
        return tuple(out)

    def to_json(self) -> dict[str, Any]:
        return {
            "chips": [{"name": c.name, "price_per_hour": c.price} for c in self.chips],
            "modes": list(self.modes),
            "max_tp": self.max_tp,
            "max_chips": self.max_chips,
            "max_instances": self.max_instances,
            "max_batches": list(self.max_batches),
            "chunk_sizes": list(self.chunk_sizes),
        }


@dataclass(frozen=True)
class Candidate:
    """One instance to evaluate. `index` is its place in the enumeration (stable for a given
    space), so every executor reports the same ids in the same order."""

    index: int
    mode: str
    groups: tuple[tuple[str, NodeGroup], ...]  # (role, group): prefill+decode, or colocated
    max_batch: int
    chunk_tokens: int = 512

    @property
    def id(self) -> str:
        return f"c{self.index:04d}"

    def group(self, role: str) -> NodeGroup | None:
        return next((g for r, g in self.groups if r == role), None)

    @property
    def chips(self) -> int:
        return sum(g.gpus for _, g in self.groups)

    def chips_by_kind(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for _, g in self.groups:
            counts[g.chip] = counts.get(g.chip, 0) + g.gpus
        return counts

    def price_per_hour(self, prices: dict[str, float | None]) -> float | None:
        """Cost of the instance per hour, or None when any of its chips has no price."""
        total = 0.0
        for chip, n in self.chips_by_kind().items():
            price = prices.get(chip)
            if price is None:
                return None
            total += price * n
        return total

    @property
    def label(self) -> str:
        def part(g: NodeGroup) -> str:
            return f"{g.count}x{g.chip}" + (f"-tp{g.tp}" if g.tp > 1 else "")

        if self.mode == "disagg":
            p, d = self.group("prefill"), self.group("decode")
            assert p is not None and d is not None
            shape = f"P {part(p)} + D {part(d)}"
        else:
            g = self.group("colocated")
            assert g is not None
            shape = part(g)
        knobs = f"b{self.max_batch}" + (f" c{self.chunk_tokens}" if self.mode == "chunked" else "")
        return f"{self.mode} {shape} {knobs}"

    def deployment(self, model: str, link: str, base: Deployment | None = None) -> Deployment:
        """This candidate as an engine Deployment (what `engine simulate` and `serve` run)."""
        groups = dict(self.groups)
        fields: dict[str, Any] = {
            "name": f"plan-{self.id}",
            "mode": self.mode,
            "model": model,
            "link": link,
            "prefill": groups.get("prefill"),
            "decode": groups.get("decode"),
            "colocated": groups.get("colocated"),
            "max_batch": self.max_batch,
            "chunk_tokens": self.chunk_tokens,
            "description": f"pdnotes engine plan: {self.label}",
            "source": "found by pdnotes engine plan",
        }
        if base is not None:
            return replace(base, **fields)
        return Deployment(**fields)

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "label": self.label,
            "mode": self.mode,
            "chips": self.chips,
            "groups": {
                role: {"count": g.count, "chip": g.chip, "tp": g.tp} for role, g in self.groups
            },
            "max_batch": self.max_batch,
            "chunk_tokens": self.chunk_tokens if self.mode == "chunked" else None,
        }


def enumerate_candidates(space: SearchSpace, model: ModelShape) -> list[Candidate]:
    """Every candidate of `space`, in a fixed order: mode, chips, TP, counts, batch, chunk."""
    return [
        Candidate(i, mode, groups, batch, chunk)
        for i, (mode, groups, batch, chunk) in enumerate(_shapes(space, model))
    ]


def _shapes(
    space: SearchSpace, model: ModelShape
) -> Iterator[tuple[str, tuple[tuple[str, NodeGroup], ...], int, int]]:
    tps = space.tp_choices(model)
    names = [c.name for c in space.chips]
    counts = range(1, space.max_instances + 1)
    default_chunk = space.chunk_sizes[0]
    for mode in space.modes:
        if mode == "disagg":
            for pc in names:
                for ptp in tps:
                    for dc in names:
                        for dtp in tps:
                            for np_ in counts:
                                for nd in counts:
                                    if np_ * ptp + nd * dtp > space.max_chips:
                                        continue
                                    groups: tuple[tuple[str, NodeGroup], ...] = (
                                        ("prefill", NodeGroup(np_, pc, ptp)),
                                        ("decode", NodeGroup(nd, dc, dtp)),
                                    )
                                    for batch in space.max_batches:
                                        yield mode, groups, batch, default_chunk
            continue
        chunks = space.chunk_sizes if mode == "chunked" else (default_chunk,)
        for chip in names:
            for tp in tps:
                for n in counts:
                    if n * tp > space.max_chips:
                        continue
                    groups = (("colocated", NodeGroup(n, chip, tp)),)
                    for batch in space.max_batches:
                        for chunk in chunks:
                            yield mode, groups, batch, chunk


def count_candidates(space: SearchSpace, model: ModelShape) -> int:
    """How many candidates `enumerate_candidates` would return, counted without building them
    (the CLI refuses a space too large to search before it takes memory)."""
    tps = space.tp_choices(model)
    kinds = len(space.chips)
    batches = len(space.max_batches)

    def fits(tp: int) -> int:  # nodes of one group of TP `tp` within max_chips
        return max(0, min(space.max_instances, space.max_chips // tp))

    total = 0
    for mode in space.modes:
        if mode == "disagg":
            pairs = sum(
                _fits_beside(space, np_ * ptp, dtp)
                for ptp in tps
                for dtp in tps
                for np_ in range(1, fits(ptp) + 1)
            )
            total += kinds * kinds * pairs * batches
        else:
            chunks = len(space.chunk_sizes) if mode == "chunked" else 1
            total += kinds * sum(fits(tp) for tp in tps) * batches * chunks
    return total


def _fits_beside(space: SearchSpace, used: int, tp: int) -> int:
    """Nodes of TP `tp` that fit beside `used` chips: how many decode counts pair with one
    prefill count."""
    return max(0, min(space.max_instances, (space.max_chips - used) // tp))
