"""The demo's PD experiment: the seed article's story on its own hardware.

A few short requests are decoding when one long prompt arrives. On one H800 running both phases
(`h800-colocated`) the long prefill runs on the same chip, so every decoding stream waits for
it: one huge inter-token gap. In the article's disaggregated setup (`dlslime-h800-h20`: the
H800 prefills, an H20 decodes, DLSlime moves the KV over RoCE layer by layer) the decoding
streams never notice, and the long request pays a KV-cache transfer instead, most of it hidden
under its own prefill. The two sides use different chip counts (1 and 2); the sentence says so.

The requests go over real sockets (the engines run on loopback). The largest gap, which decides
whether the experiment shows the PD difference, is the engine's own account (`pd_timing.max_itl_ms`
on the simulated clock), so a busy machine cannot blur it; the other gaps are the client's, its
wall-clock gaps multiplied by the engine's --speed to give simulated hardware milliseconds.
"""

from __future__ import annotations

import asyncio
import statistics
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from notes_cli.clients.endpoint import Endpoint

PRESETS = ("h800-colocated", "dlslime-h800-h20")
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


def _chips(count: int) -> str:
    return f"{count} chip" if count == 1 else f"{count} chips"


def ms_text(value: float | None) -> str:
    """How the demo shows a duration, table and sentence alike: one decimal under 10 ms."""
    if value is None:
        return "—"
    return f"{value:.1f} ms" if round(value, 1) < 10 else f"{value:.0f} ms"  # 9.96: "10 ms"


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
    long_transfer_overlap_ms: float = 0.0  # link time hidden under the prefill (layer-wise)
    chips: int = 1

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
        """The sentence under the table, quoting the numbers exactly as the table shows them."""
        colocated, disagg = (p.to_json() for p in self.presets[:2])
        hidden = disagg["long_transfer_overlap_ms"]
        overlap = (
            f" ({ms_text(hidden)} more of it ran under the prefill, layer by layer)"
            if hidden > 0
            else ""
        )
        return (
            f"While a {LONG_PROMPT_TOKENS}-token prompt was prefilled, the colocated node "
            f"({_chips(colocated['chips'])}) froze its decoding streams for "
            f"{ms_text(colocated['max_gap_ms'])} (largest inter-token gap), "
            f"{self.gap_ratio:.0f}x the disaggregated one's {ms_text(disagg['max_gap_ms'])} "
            f"({_chips(disagg['chips'])}); disaggregation paid instead a "
            f"{ms_text(disagg['long_transfer_ms'])} KV-cache transfer inside the long request's "
            f"TTFT{overlap}."
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
    from notes_cli.engine.core.profiles import load_catalog
    from notes_cli.engine.http.server import start_engine

    catalog = load_catalog()
    results = []
    for preset in PRESETS:
        chips = sum(group.gpus for _, group in catalog.deployment(preset).worker_groups())
        with start_engine(EngineConfig(preset=preset, speed=speed, seed=seed)) as engine:
            endpoint = Endpoint(
                client="openai",
                base_url=engine.base_url,
                protocol="chat",
                model="pd-mock-1",
                auth_style="none",
            )
            result = asyncio.run(_load(endpoint, preset, speed))
            results.append(replace(result, chips=chips))
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
    served = first.pd_timing or {}
    return PresetResult(
        preset=preset,
        mode=str(timing.get("mode", "?")),
        short_ttft_ms=statistics.median(s.timings.ttft_ms or 0.0 for s in shorts) * speed,
        tpot_ms=statistics.median(gaps) if gaps else 0.0,
        max_gap_ms=float(served.get("max_itl_ms", max(gaps, default=0.0))),
        long_ttft_ms=float(timing.get("ttft_ms", 0.0)),
        long_transfer_ms=float(timing.get("transfer_ms", 0.0)),
        gaps_ms=gaps,
        long_transfer_overlap_ms=float(timing.get("transfer_overlap_ms", 0.0)),
    )
