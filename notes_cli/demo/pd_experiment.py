"""The demo's PD experiment: the same load on a colocated engine and a disaggregated one.

A few short requests are decoding when one long prompt arrives. On a colocated node the long
prefill runs on the same chip, so every decoding stream waits for it: one huge inter-token gap.
With prefill and decode on separate nodes the decoding streams never notice, and the long
request's time to first token carries a visible KV-cache transfer instead.

Everything is measured from the client side over real sockets (the engines run on loopback);
wall-clock gaps are multiplied by the engine's --speed to give simulated hardware milliseconds.
"""

from __future__ import annotations

import asyncio
import statistics
from dataclasses import asdict, dataclass, field
from typing import Any

from notes_cli.clients.endpoint import Endpoint

PRESETS = ("h100-colocated", "h100-disagg")
DECODERS = 3  # short requests decoding when the long prompt arrives
LONG_PROMPT_TOKENS = 8000
LONG_ARRIVES_AFTER_TOKENS = 40
# Slow enough that the client's own scheduling jitter (a few wall ms, shared with the in-process
# engine) stays small next to the simulated gaps it measures; the whole run takes about a second.
SPEED = 2.0  # the long prompt is sent once stream 1 has this many tokens
_SENTENCE = (
    "Prefill is compute bound and sets the time to first token while decode is memory bound "
    "and sets the time per output token so a serving system that runs both on one chip lets a "
    "long prompt stall every stream that is decoding"
)
SHORT_PROMPT = "Repeat this sentence: " + " ".join([_SENTENCE] * 4)


@dataclass
class PresetResult:
    """What one preset did under the load (simulated ms)."""

    preset: str
    mode: str
    short_ttft_ms: float
    tpot_ms: float
    max_gap_ms: float
    long_ttft_ms: float
    long_transfer_ms: float
    gaps_ms: list[float] = field(default_factory=list)  # stream 1's inter-token gaps

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["gaps_ms"] = [round(g, 2) for g in self.gaps_ms]
        return {k: round(v, 2) if isinstance(v, float) else v for k, v in data.items()}


@dataclass
class ExperimentResult:
    speed: float
    presets: list[PresetResult]

    @property
    def gap_ratio(self) -> float:
        """Colocated largest gap over disaggregated largest gap."""
        colocated, disagg = self.presets[0], self.presets[1]
        return colocated.max_gap_ms / max(disagg.max_gap_ms, 1e-9)

    def conclusion(self) -> str:
        colocated, disagg = self.presets[0], self.presets[1]
        return (
            f"While a {LONG_PROMPT_TOKENS}-token prompt was prefilled, the colocated node froze "
            f"its decoding streams for {colocated.max_gap_ms:.0f} ms (largest inter-token gap), "
            f"{self.gap_ratio:.0f}x the disaggregated one's {disagg.max_gap_ms:.0f} ms; "
            f"disaggregation paid instead a {disagg.long_transfer_ms:.1f} ms KV-cache transfer "
            f"inside the long request's TTFT."
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "speed": self.speed,
            "long_prompt_tokens": LONG_PROMPT_TOKENS,
            "decoding_requests": DECODERS,
            "gap_ratio": round(self.gap_ratio, 2),
            "conclusion": self.conclusion(),
            "presets": [p.to_json() for p in self.presets],
        }


def run_experiment(speed: float = SPEED, *, seed: int = 0) -> ExperimentResult:
    """Run the load on each preset (one engine at a time) and collect the client's view."""
    from notes_cli.engine.core.config import EngineConfig
    from notes_cli.engine.http.server import start_engine

    results = []
    for preset in PRESETS:
        with start_engine(EngineConfig(preset=preset, speed=speed, seed=seed)) as engine:
            endpoint = Endpoint(
                client="openai",
                base_url=engine.base_url,
                protocol="chat",
                model="pd-mock-1",
                auth_style="none",
            )
            results.append(asyncio.run(_load(endpoint, preset, speed)))
    return ExperimentResult(speed, results)


async def _load(endpoint: Endpoint, preset: str, speed: float) -> PresetResult:
    from notes_cli.gateway.client import AsyncGatewayClient

    long_may_go = asyncio.Event()
    seen = 0

    def watch(text: str, elapsed_ms: float) -> None:
        nonlocal seen
        seen += 1
        if seen >= LONG_ARRIVES_AFTER_TOKENS:
            long_may_go.set()

    long_prompt = "context " * LONG_PROMPT_TOKENS + "\nsay ok"
    async with AsyncGatewayClient(endpoint, timeout=60.0) as client:

        async def long_request() -> Any:
            await long_may_go.wait()
            return await client.stream(long_prompt, max_tokens=8)

        decoders = [
            client.stream(SHORT_PROMPT, max_tokens=400, on_chunk=watch if i == 0 else None)
            for i in range(DECODERS)
        ]
        *shorts, long = await asyncio.gather(*decoders, long_request())
    first = shorts[0]
    arrivals = first.timings.chunk_ms
    gaps = [(b - a) * speed for a, b in zip(arrivals, arrivals[1:], strict=False)]
    timing = long.pd_timing or {}
    return PresetResult(
        preset=preset,
        mode=str(timing.get("mode", "?")),
        short_ttft_ms=statistics.median(s.timings.ttft_ms or 0.0 for s in shorts) * speed,
        tpot_ms=statistics.median(gaps) if gaps else 0.0,
        max_gap_ms=max(gaps, default=0.0),
        long_ttft_ms=float(timing.get("ttft_ms", 0.0)),
        long_transfer_ms=float(timing.get("transfer_ms", 0.0)),
        gaps_ms=gaps,
    )
