"""A fixed-delay EngineService: lets the HTTP tests pin exact texts, delays and failures without
the real scheduler. Behaviour tests use the real core instead."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

from notes_cli.engine.core.api import (
    ADMITTED,
    Admitted,
    Completion,
    GenerationRequest,
    PdTiming,
    QueueFull,
    TokenChunk,
)


@dataclass
class FakeEngine:
    """Answers every request with `reply` split on spaces, after `ttft_s`, one word per
    `tpot_s`. `queue_full` makes admission fail; `requests` records what arrived. With
    `first_seen` the engine makes no second token until the client has set it (at most
    10 s): `first_arrived` says whether it did, so a test can tell a streamed first token from
    one held back until the answer is complete without timing anything."""

    reply: str = "pong"
    ttft_s: float = 0.0
    tpot_s: float = 0.0
    served_models: tuple[str, ...] = ("pd-mock-1",)
    max_context_tokens: int = 1000
    default_max_tokens: int = 64
    queue_full: bool = False
    requests: list[GenerationRequest] = field(default_factory=list)
    link_fallback: bool = False
    started: bool = False
    first_seen: threading.Event | None = None
    first_arrived: bool | None = None

    def count_tokens(self, text: str) -> int:
        return len(text.split())

    async def start(self) -> None:
        self.started = True

    async def stop(self) -> None:
        self.started = False

    def set_link_fallback(self, on: bool) -> None:
        self.link_fallback = on

    def state(self) -> dict[str, Any]:
        return {
            "mode": "disagg",
            "nodes": [{"name": "prefill-0", "role": "prefill", "queue": 0, "batch_size": 0}],
            "link_fallback_tcp": self.link_fallback,
        }

    async def generate(
        self, request: GenerationRequest
    ) -> AsyncIterator[Admitted | TokenChunk | Completion]:
        if self.queue_full:
            raise QueueFull(2.5)
        self.requests.append(request)
        yield ADMITTED
        words = self.reply.split(" ")
        budget = request.max_tokens or self.default_max_tokens
        tokens = [w if i == 0 else " " + w for i, w in enumerate(words)][:budget]
        await asyncio.sleep(self.ttft_s)
        for index, text in enumerate(tokens):
            if index:
                await asyncio.sleep(self.tpot_s)
            yield TokenChunk(text, index)
            if index == 0 and self.first_seen is not None:
                self.first_arrived = await asyncio.to_thread(self.first_seen.wait, 10)
        prompt = sum(self.count_tokens(m.text) for m in request.messages)
        yield Completion(
            "length" if len(words) > budget else "stop",
            prompt,
            len(tokens),
            PdTiming(
                queue_ms=0.0,
                prefill_ms=self.ttft_s * 1000,
                transfer_ms=0.0,
                decode_ms=self.tpot_s * 1000 * len(tokens),
                ttft_ms=self.ttft_s * 1000,
                tpot_ms=self.tpot_s * 1000,
                prefill_node="prefill-0",
                decode_node="decode-0",
                mode="disagg",
            ),
        )
