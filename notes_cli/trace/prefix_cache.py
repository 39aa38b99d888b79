"""A finite LRU prefix cache replayed over a trace's `hash_ids`.

A prompt's leading blocks found in the cache are hits (the match stops at the first miss, as
vLLM's and SGLang's prefix caches do: a block is reusable only with everything before it); then
all the prompt's blocks become the most recently used, and the least recently used ones are
evicted down to the capacity. A prompt always computes at least its last token (the engine needs
its logits), so a request's cached tokens are at most input_length - 1.

A deployment has a cache per prefill (or colocated) node. Routing decides which node's cache a
request meets: KV-aware routing (Dynamo's KV router, SGLang's cache-aware router) sends it to the
node holding the longest prefix of its prompt, so a session stays where its prefix is; without
it, requests go round robin and a session's turns land on different nodes.
"""

from __future__ import annotations

import json
from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from notes_cli.errors import InputError
from notes_cli.trace.format import BLOCK_TOKENS, TraceRow, open_trace

UNBOUNDED = 1 << 62  # capacity of a cache that never evicts (memory: the distinct blocks)


@dataclass(frozen=True)
class CacheReplay:
    """What the cache served over a whole trace."""

    capacity_blocks: int  # per node
    block_tokens: int
    requests: int
    prompt_tokens: int
    cached_tokens: int
    hit_blocks: int
    looked_up_blocks: int
    nodes: int = 1
    kv_aware: bool = True

    @property
    def hit_rate(self) -> float:
        """Share of prompt tokens served from the cache."""
        return self.cached_tokens / self.prompt_tokens if self.prompt_tokens else 0.0

    def to_json(self) -> dict[str, Any]:
        return {
            "capacity_blocks": self.capacity_blocks,
            "block_tokens": self.block_tokens,
            "requests": self.requests,
            "prompt_tokens": self.prompt_tokens,
            "cached_tokens": self.cached_tokens,
            "hit_blocks": self.hit_blocks,
            "looked_up_blocks": self.looked_up_blocks,
            "hit_rate": round(self.hit_rate, 4),
            "nodes": self.nodes,
            "kv_aware_routing": self.kv_aware,
        }


class PrefixCache:
    """An LRU set of block ids holding at most `capacity_blocks`."""

    def __init__(self, capacity_blocks: int, block_tokens: int = BLOCK_TOKENS) -> None:
        self.capacity = max(0, capacity_blocks)
        self.block_tokens = block_tokens
        self._blocks: OrderedDict[int, None] = OrderedDict()

    def matched_blocks(self, row: TraceRow) -> int:
        """How many of `row`'s leading blocks the cache holds."""
        blocks = self._blocks
        hits = 0
        for block in row.hash_ids:
            if block not in blocks:
                break
            hits += 1
        return hits

    def lookup_and_insert(self, row: TraceRow) -> int:
        """The tokens of `row`'s prompt served from the cache; then its blocks are cached."""
        blocks = self._blocks
        hits = self.matched_blocks(row)
        for block in row.hash_ids:
            blocks[block] = None
            blocks.move_to_end(block)
        while len(blocks) > self.capacity:
            blocks.popitem(last=False)
        return min(round(hits * self.tokens_per_block(row)), row.input_length - 1)

    def tokens_per_block(self, row: TraceRow) -> float:
        """`block_tokens` when the row's blocks are Mooncake's (ceil(n / block_tokens) of
        them); else the row's own average: a recording cuts blocks by characters, which the
        tokenizer may count as more or fewer tokens (trace/record.py)."""
        n, count = row.input_length, len(row.hash_ids)
        if count == -(-n // self.block_tokens):
            return float(self.block_tokens)
        return n / count if count else 0.0


def replay(
    rows: Iterable[TraceRow],
    capacity_blocks: int,
    block_tokens: int = BLOCK_TOKENS,
    *,
    nodes: int = 1,
    kv_aware: bool = True,
) -> CacheReplay:
    """Replay `rows` through `nodes` caches of `capacity_blocks` each, routed KV-aware (the
    longest match, ties to the node that served fewest requests) or round robin."""
    caches = [PrefixCache(capacity_blocks, block_tokens) for _ in range(max(1, nodes))]
    served_by = [0] * len(caches)
    requests = prompt = cached = hit_blocks = looked_up = 0
    for row in rows:
        if kv_aware:
            pick = max(
                range(len(caches)), key=lambda i: (caches[i].matched_blocks(row), -served_by[i])
            )
        else:
            pick = requests % len(caches)
        served_by[pick] += 1
        served = caches[pick].lookup_and_insert(row)
        requests += 1
        prompt += row.input_length
        cached += served
        hit_blocks += -(-served // block_tokens) if served else 0
        looked_up += len(row.hash_ids)
    return CacheReplay(
        capacity_blocks, block_tokens, requests, prompt, cached, hit_blocks, looked_up
    )


def has_hash_ids(trace: Path) -> bool:
    """Whether `trace` is a Mooncake-style trace with block hashes (its first row has
    `hash_ids`); other traces (pdnotes rows, vLLM / SGLang results) replay lengths only."""
    try:
        with open_trace(trace) as handle:
            for line in handle:
                if line.strip():
                    value = json.loads(line)
                    return isinstance(value, dict) and "hash_ids" in value
    except (OSError, ValueError, InputError):
        return False  # the trace reader says what is wrong with it
    return False
