"""The search space: every deployment the planner considers, in one deterministic order.

A candidate is one serving instance ("replica"): a mode, the chip and parallel layout of each
node group, how many nodes each group has (the P:D instance ratio in disagg mode), the decode
batch limit and, in chunked mode, the chunk size. Tensor parallelism must divide the model's
attention heads and stay within --max-tp; an instance uses at most --max-chips chips. A
mixture-of-experts model also gets expert-parallel layouts: TP with the experts split over the
same GPUs (ep = tp), and attention data parallelism with expert parallelism over all its GPUs
(tp 1, dp = ep = 8, 16, 32, ... up to --max-chips), the large-EP recipe of SGLang and Dynamo.
The weights' and KV cache's precision are the user's (--weight-dtype, --kv-dtype), not searched.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import Any

from notes_cli.engine.core.profiles import Deployment, ModelShape, NodeGroup

ALL_MODES = ("disagg", "colocated", "chunked")
_MIN_EP = 8


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
    weight_dtype: str | None = None  # None: the model's own precision
    kv_dtype: str | None = None
    prefix_cache_hit: float = 0.0  # a trace's measured prefix reuse (plan/workload.from_trace)

    def tp_choices(self, model: ModelShape) -> tuple[int, ...]:
        """Powers of two up to max_tp that divide the model's attention heads."""
        out, tp = [], 1
        while tp <= self.max_tp:
            if model.heads % tp == 0:
                out.append(tp)
            tp *= 2
        return tuple(out)

    def layouts(self, model: ModelShape) -> tuple[Layout, ...]:
        """(tp, dp, ep) of one node, fewest GPUs first: every TP choice, and for a MoE model
        also TP + EP over the same GPUs and attention DP + EP (tp 1, dp = ep), for EP degrees
        from 8 up (a full node) that divide the experts. Dense models keep the TP choices
        alone."""
        out = [Layout(tp) for tp in self.tp_choices(model)]
        if model.is_moe:  # EP from a full node: smaller EP changes little and costs search time
            out += [Layout(tp, 1, tp) for tp in self.tp_choices(model) if tp >= _MIN_EP]
            dp = _MIN_EP
            while dp <= self.max_chips:
                out.append(Layout(1, dp, dp))
                dp *= 2
            out = [lay for lay in out if model.experts % lay.ep == 0]
        return tuple(sorted(out, key=lambda lay: (lay.gpus, lay.dp, lay.ep)))

    def to_json(self) -> dict[str, Any]:
        return {
            "chips": [{"name": c.name, "price_per_hour": c.price} for c in self.chips],
            "modes": list(self.modes),
            "max_tp": self.max_tp,
            "max_chips": self.max_chips,
            "max_instances": self.max_instances,
            "max_batches": list(self.max_batches),
            "chunk_sizes": list(self.chunk_sizes),
            "weight_dtype": self.weight_dtype,
            "kv_dtype": self.kv_dtype,
            "prefix_cache_hit": self.prefix_cache_hit,
        }


@dataclass(frozen=True)
class Layout:
    """How one node's GPUs are split: tp-way tensor parallel attention in dp replicas, the
    routed experts over ep of the tp x dp GPUs."""

    tp: int
    dp: int = 1
    ep: int = 1

    @property
    def gpus(self) -> int:
        return self.tp * self.dp

    def group(self, count: int, chip: str) -> NodeGroup:
        return NodeGroup(count, chip, self.tp, 1, self.ep, self.dp)


@dataclass(frozen=True)
class Candidate:
    """One instance to evaluate. `index` is its place in the enumeration (stable for a given
    space), so every executor reports the same ids in the same order."""

    index: int
    mode: str
    groups: tuple[tuple[str, NodeGroup], ...]  # (role, group): prefill+decode, or colocated
    max_batch: int
    chunk_tokens: int = 512
    weight_dtype: str | None = None  # the space's precision, carried into the deployment
    kv_dtype: str | None = None
    prefix_cache_hit: float = 0.0  # the space's, carried into the deployment

    @property
    def id(self) -> str:
        return f"c{self.index:04d}"

    def group(self, role: str) -> NodeGroup | None:
        return next((g for r, g in self.groups if r == role), None)

    @property
    def shape(self) -> tuple[Any, ...]:
        """Everything but its node counts."""
        groups = tuple((role, replace(g, count=1)) for role, g in self.groups)
        c = self
        return (c.mode, groups, c.max_batch, c.chunk_tokens, c.weight_dtype, c.kv_dtype,
                c.prefix_cache_hit)  # fmt: skip

    def scale_of(self, other: Candidate) -> float | None:
        """k when this candidate is `other` with every group's node count k times as large
        (k != 1: more or fewer replicas' worth of the same nodes), else None."""
        if other.shape != self.shape:
            return None
        pairs = zip(self.groups, other.groups, strict=True)
        ratios = {g.count / o.count for (_, g), (_, o) in pairs}
        k = ratios.pop()
        return k if not ratios and k != 1 else None

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
            degrees = (("tp", g.tp), ("dp", g.dp), ("ep", g.ep))
            return f"{g.count}x{g.chip}" + "".join(f"-{k}{v}" for k, v in degrees if v > 1)

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
            "weight_dtype": self.weight_dtype,
            "kv_dtype": self.kv_dtype,
            "prefix_cache_hit": self.prefix_cache_hit,
            "description": f"pdnotes engine plan: {self.label}",
            "source": "found by pdnotes engine plan",
        }
        if base is not None:  # its engine settings kept, and where they came from
            fields["source"] = f"found by pdnotes engine plan, engine as {base.name}: {base.source}"
            return replace(base, **fields)
        return Deployment(**fields)

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "label": self.label,
            "mode": self.mode,
            "chips": self.chips,
            "groups": {
                role: {"count": g.count, "chip": g.chip, "tp": g.tp, "dp": g.dp, "ep": g.ep}
                for role, g in self.groups
            },
            "max_batch": self.max_batch,
            "chunk_tokens": self.chunk_tokens if self.mode == "chunked" else None,
        }


def enumerate_candidates(space: SearchSpace, model: ModelShape) -> list[Candidate]:
    """Every candidate of `space`, in a fixed order: mode, chips, TP, counts, batch, chunk."""
    return [
        Candidate(
            i,
            mode,
            groups,
            batch,
            chunk,
            space.weight_dtype,
            space.kv_dtype,
            space.prefix_cache_hit,
        )  # fmt: skip
        for i, (mode, groups, batch, chunk) in enumerate(_shapes(space, model))
    ]


def _shapes(
    space: SearchSpace, model: ModelShape
) -> Iterator[tuple[str, tuple[tuple[str, NodeGroup], ...], int, int]]:
    layouts = space.layouts(model)
    names = [c.name for c in space.chips]
    counts = range(1, space.max_instances + 1)
    default_chunk = space.chunk_sizes[0]
    for mode in space.modes:
        if mode == "disagg":
            for pc in names:
                for pl in layouts:
                    for dc in names:
                        for dl in layouts:
                            for np_ in counts:
                                for nd in counts:
                                    if np_ * pl.gpus + nd * dl.gpus > space.max_chips:
                                        continue
                                    groups: tuple[tuple[str, NodeGroup], ...] = (
                                        ("prefill", pl.group(np_, pc)),
                                        ("decode", dl.group(nd, dc)),
                                    )
                                    for batch in space.max_batches:
                                        yield mode, groups, batch, default_chunk
            continue
        chunks = space.chunk_sizes if mode == "chunked" else (default_chunk,)
        for chip in names:
            for layout in layouts:
                for n in counts:
                    if n * layout.gpus > space.max_chips:
                        continue
                    groups = (("colocated", layout.group(n, chip)),)
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
