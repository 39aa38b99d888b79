"""The engine's event loop waits for its timers with microsecond resolution, not epoll's
whole milliseconds (notes_cli/engine/live/precise_loop.py). Tested by what the selector asks the
kernel for, not by timing, so a loaded machine cannot make these flaky."""

from __future__ import annotations

import asyncio
import select
import selectors
import socket
from typing import Any

import pytest

from notes_cli.engine.live import precise_loop
from notes_cli.engine.live.precise_loop import PreciseEpollSelector, new_event_loop

pytestmark = pytest.mark.skipif(
    not hasattr(selectors, "EpollSelector"), reason="epoll is Linux's; elsewhere the stock loop"
)


class SpyEpoll:
    """Stands in for the selector's epoll object and records each poll's timeout."""

    def __init__(self, real: Any) -> None:
        self.real = real
        self.timeouts: list[float] = []

    def poll(self, timeout: float = -1, maxevents: int = -1) -> list[tuple[int, int]]:
        self.timeouts.append(timeout)
        return list(self.real.poll(timeout, maxevents))

    def __getattr__(self, name: str) -> Any:
        return getattr(self.real, name)


@pytest.fixture
def selector() -> Any:
    sel = PreciseEpollSelector()
    spy = SpyEpoll(sel._selector)  # type: ignore[attr-defined]
    sel._selector = spy  # type: ignore[attr-defined]
    yield sel, spy
    sel._selector = spy.real  # type: ignore[attr-defined]
    sel.close()


def test_a_fractional_timeout_is_waited_in_full_then_epoll_is_polled_without_waiting(
    selector: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    sel, spy = selector
    waits: list[float] = []
    real_select = select.select

    def spy_select(r: Any, w: Any, x: Any, timeout: float) -> Any:
        waits.append(timeout)
        return real_select(r, w, x, timeout)

    monkeypatch.setattr(precise_loop.select, "select", spy_select)
    assert sel.select(0.00037) == []
    assert waits == [0.00037]  # the stock selector would wait ceil(0.37 ms) = 1 ms
    assert spy.timeouts == [0]


def test_readiness_is_still_reported_with_and_without_a_timeout(selector: Any) -> None:
    sel, _ = selector
    a, b = socket.socketpair()
    with a, b:
        sel.register(a, selectors.EVENT_READ)
        assert sel.select(0.001) == []
        b.send(b"x")
        for timeout in (5.0, None, 0):
            ready = sel.select(timeout)
            assert [key.fileobj for key, _ in ready] == [a]


def test_a_descriptor_past_fd_setsize_falls_back_to_the_plain_wait(
    selector: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    sel, spy = selector
    monkeypatch.setattr(precise_loop, "_FD_SETSIZE", 0)  # as if the epoll fd were above it
    sel.select(0.0005)
    assert spy.timeouts == [0.001]  # epoll's own (millisecond) wait


def test_the_engines_loop_uses_the_precise_selector() -> None:
    loop = new_event_loop()
    try:
        assert isinstance(loop, asyncio.SelectorEventLoop)
        assert isinstance(loop._selector, PreciseEpollSelector)  # type: ignore[attr-defined]
        assert loop.run_until_complete(asyncio.sleep(0.0003, "slept")) == "slept"
    finally:
        loop.close()
