"""Engine profiles as data, and the live service driven by a (fast) wall clock, without sockets."""

from __future__ import annotations

import asyncio
import itertools
import json
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from notes_cli.engine.core.api import (
    Admitted,
    ChatMessage,
    Completion,
    EngineStopped,
    GenerationRequest,
    QueueFull,
    RequestRecord,
    StepStats,
    TokenChunk,
)
from notes_cli.engine.core.config import EngineConfig
from notes_cli.engine.core.profiles import load_catalog
from notes_cli.engine.live.service import LiveEngineService, create_service
from notes_cli.errors import InputError, UsageError

REQUIRED_PRESETS = [
    "h800-h20-rdma",
    "ascend-910b-hccs",
    "h100-colocated",
    "h100-chunked",
    "h100-disagg",
]
REQUIRED_MODELS = ["llama-3-8b", "qwen3-8b", "llama-3-70b", "llama-2-13b", "llama-2-7b"]


def test_catalog_ships_the_presets_and_models_with_sources() -> None:
    catalog = load_catalog()
    assert set(REQUIRED_PRESETS) <= set(catalog.deployments)
    assert set(REQUIRED_MODELS) <= set(catalog.models)
    assert "tcp-25g" in catalog.links
    rows = [*catalog.chips.values(), *catalog.links.values(), *catalog.models.values()]
    assert all(row.source for row in [*rows, *catalog.deployments.values()])
    preset = catalog.deployment("h800-h20-rdma")
    assert (preset.mode, preset.link) == ("disagg", "roce-200g")
    assert (preset.prefill and preset.prefill.chip, preset.decode and preset.decode.chip) == (
        "h800",
        "h20",
    )


def write_user_profile(text: str) -> Path:
    from notes_cli.paths import pdnotes_home

    folder = pdnotes_home() / "engine"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "mine.toml"
    path.write_text(text, encoding="utf-8")
    return path


def test_user_profiles_add_rows_and_override_shipped_ones_by_name() -> None:
    write_user_profile(
        """
[chips.h20]
hbm_tbps = 5.0

[deployments.my-lab]
description = "two H20s"
mode = "disagg"
model = "llama-3-8b"
link = "roce-200g"
prefill = { count = 1, chip = "h20" }
decode = { count = 1, chip = "h20" }
"""
    )
    catalog = load_catalog()
    assert catalog.chips["h20"].hbm_tbps == 5.0
    assert catalog.chips["h20"].tflops == 148.0  # the rest of the shipped row stays
    assert catalog.deployment("my-lab").decode.chip == "h20"  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[chips.x\n", "cannot read"),
        ('[deployments.bad]\nmode = "disagg"\nmodel = "nope"\nlink = "roce-200g"\n'
         'prefill = { count = 1, chip = "h20" }\ndecode = { count = 1, chip = "h20" }\n',
         "model 'nope' is not defined"),
        ("[chips.h20]\nbogus = 1\n", "unknown keys: bogus"),
    ],
)  # fmt: skip
def test_bad_user_profiles_are_input_errors_naming_the_file(text: str, message: str) -> None:
    path = write_user_profile(text)
    with pytest.raises(InputError) as info:
        load_catalog()
    assert message in str(info.value)
    assert "bad" in str(info.value) or str(path) in str(info.value)


def test_unknown_preset_and_impossible_mode_are_usage_errors() -> None:
    catalog = load_catalog()
    with pytest.raises(UsageError, match="known presets: .*h800-h20-rdma"):
        catalog.deployment("h9000")
    with pytest.raises(UsageError, match="cannot run disaggregated"):
        catalog.deployment("h100-colocated").with_mode("disagg")
    with pytest.raises(UsageError, match="unknown engine mode"):
        catalog.deployment("h100-disagg").with_mode("turbo")


# ---- the live service ------------------------------------------------------------------


def with_service(config: EngineConfig, body: Callable[[LiveEngineService], Awaitable[Any]]) -> Any:
    async def main() -> Any:
        service = create_service(config)
        await service.start()
        try:
            return await asyncio.wait_for(body(service), timeout=20)
        finally:
            await service.stop()

    return asyncio.run(main())


def request(text: str, max_tokens: int | None = None) -> GenerationRequest:
    return GenerationRequest("pd-mock-1", (ChatMessage("user", text),), max_tokens)


async def collect(
    service: LiveEngineService, req: GenerationRequest
) -> tuple[list[tuple[float, TokenChunk]], Completion]:
    """Every chunk with the wall time (ms since the call) it arrived, and the Completion."""
    start = time.monotonic()
    chunks: list[tuple[float, TokenChunk]] = []
    completion = None
    stream = service.generate(req)
    assert isinstance(await anext(stream), Admitted)
    async for item in stream:
        if isinstance(item, TokenChunk):
            chunks.append(((time.monotonic() - start) * 1000, item))
        else:
            assert isinstance(item, Completion)
            completion = item
    assert completion is not None
    return chunks, completion


def test_generate_streams_tokens_then_a_completion_with_pd_timing() -> None:
    chunks, done = with_service(EngineConfig(speed=10), lambda s: collect(s, request("say pong")))
    assert "".join(c.text for _, c in chunks) == "pong"
    assert (done.finish_reason, done.completion_tokens, done.prompt_tokens) == ("stop", 1, 2)
    timing = done.pd_timing
    assert (timing.mode, timing.prefill_node, timing.decode_node) == (
        "disagg",
        "prefill-0",
        "decode-0",
    )
    assert timing.transfer_ms > 0 and timing.ttft_ms > timing.prefill_ms


def test_tokens_arrive_when_the_scheduler_produces_them() -> None:
    """Each token leaves no earlier than the simulated step that produced it (paced, not sent
    in a burst). Only the lower bound is asserted: a loaded machine can make a token late, never
    early, so this cannot fail by chance."""
    text = "Explain prefill. " * 200
    seen: list[object] = []

    async def body(service: LiveEngineService) -> Any:
        service.add_observer(seen.append)
        return await collect(service, request(text, max_tokens=40))

    chunks, done = with_service(EngineConfig(speed=1), body)
    assert done.finish_reason == "length" and [c.index for _, c in chunks] == list(range(40))
    [record] = [x for x in seen if isinstance(x, RequestRecord)]
    released = [record.ttft_ms, *(record.ttft_ms + g for g in itertools.accumulate(record.itl_ms))]
    assert len(released) == 40 and released[-1] == pytest.approx(record.e2e_ms)
    for (arrived, chunk), due in zip(chunks, released, strict=True):
        assert arrived >= due * 0.99, (chunk.index, arrived, due)


def test_observers_get_request_records_and_step_stats() -> None:
    seen: list[object] = []

    async def body(service: LiveEngineService) -> None:
        service.add_observer(seen.append)
        await asyncio.gather(*(collect(service, request("hello there", 8)) for _ in range(3)))

    with_service(EngineConfig(speed=20), body)
    records = [x for x in seen if isinstance(x, RequestRecord)]
    steps = [x for x in seen if isinstance(x, StepStats)]
    assert len(records) == 3 and all(len(r.itl_ms) == r.output_tokens - 1 for r in records)
    assert {s.phase for s in steps} == {"prefill", "decode"}
    assert max(s.batch_size for s in steps if s.phase == "decode") == 3


def test_queue_full_is_raised_before_the_first_token() -> None:
    async def body(service: LiveEngineService) -> None:
        # a 6000-token prompt: it waits in prefill for ~250 ms of wall time. The next request
        # is sent the moment this one is admitted (not after a sleep, which under load could
        # outlast the prefill and find the queue empty again).
        stream = service.generate(request("a long prompt " * 2000)).__aiter__()
        assert isinstance(await stream.__anext__(), Admitted)
        with pytest.raises(QueueFull) as info:
            await anext(service.generate(request("another")))
        assert info.value.retry_after_s >= 1.0
        await stream.aclose()  # type: ignore[attr-defined]

    with_service(EngineConfig(speed=1, max_queue=1), body)


def test_stop_fails_requests_in_flight() -> None:
    async def main() -> None:
        service = create_service(EngineConfig(speed=1))
        await service.start()
        stream = service.generate(request("Explain. " * 10, max_tokens=200)).__aiter__()
        await stream.__anext__()  # admitted
        await stream.__anext__()  # the first token: the request is decoding
        await service.stop()
        with pytest.raises(EngineStopped):
            while True:
                await stream.__anext__()
        with pytest.raises(EngineStopped):
            await anext(service.generate(request("late")))

    asyncio.run(main())


def test_a_client_that_goes_away_frees_its_slot() -> None:
    async def body(service: LiveEngineService) -> dict[str, Any]:
        stream = service.generate(request("Explain. " * 10, max_tokens=500)).__aiter__()
        await stream.__anext__()  # admitted
        assert isinstance(await stream.__anext__(), TokenChunk)  # decoding, holding KV
        await stream.aclose()  # type: ignore[attr-defined]
        # The engine frees the slot as soon as its loop turns, not when a timer fires: give it
        # turns of the event loop, no wall time (a sleep could be stretched by load, or let the
        # request finish on its own and hide a slot that was never freed).
        for _ in range(1000):
            state = service.state()
            decode = next(n for n in state["nodes"] if n["role"] == "decode")
            if decode["batch_size"] == 0:
                break
            await asyncio.sleep(0)
        return state

    state = with_service(EngineConfig(speed=10), body)
    decode = next(n for n in state["nodes"] if n["role"] == "decode")
    assert (decode["batch_size"], decode["kv_used_tokens"]) == (0, 0)


def test_link_fallback_slows_transfers_and_shows_in_state() -> None:
    async def body(service: LiveEngineService) -> tuple[float, float, dict[str, Any]]:
        text = "Explain the KV cache. " * 300
        _, fast = await collect(service, request(text, 2))
        service.set_link_fallback(True)
        _, slow = await collect(service, request(text, 2))
        return fast.pd_timing.transfer_ms, slow.pd_timing.transfer_ms, service.state()

    fast, slow, state = with_service(EngineConfig(speed=20), body)
    assert slow > 5 * fast
    assert state["link"] == "tcp-25g" and state["link_fallback_tcp"] is True


def test_state_describes_mode_nodes_and_config_as_json() -> None:
    state = with_service(
        EngineConfig(preset="h100-chunked", speed=20), lambda s: asyncio.sleep(0, s.state())
    )
    json.dumps(state)
    assert state["mode"] == "chunked" and state["preset"] == "h100-chunked"
    assert [n["name"] for n in state["nodes"]] == ["node-0"]
    node = state["nodes"][0]
    assert {"queue", "batch_size", "kv_used_tokens", "kv_capacity_tokens", "kv_usage"} <= set(node)
    assert state["config"]["served_models"] == ["pd-mock-1"]


def test_colocated_service_reports_no_transfer() -> None:
    _, done = with_service(
        EngineConfig(preset="h800-h20-rdma", mode="colocated", speed=20),
        lambda s: collect(s, request("say hello")),
    )
    assert done.pd_timing.mode == "colocated" and done.pd_timing.transfer_ms == 0.0


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"speed": 0}, "speed must be positive"),
        ({"mode": "turbo"}, "mode must be one of disagg, colocated, chunked"),
        ({"max_queue": 0}, "max_queue must be at least 1"),
        ({"served_models": ()}, "at least one served model"),
    ],
)
def test_invalid_engine_config_is_a_usage_error(changes: dict[str, Any], message: str) -> None:
    with pytest.raises(UsageError, match=message):
        EngineConfig(**changes)
