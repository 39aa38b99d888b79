"""Recent Responses turns, so a request can continue one by `previous_response_id`.

Codex sends the whole history every turn (`store: false`), so the store matters to other
Responses clients (the openai SDK's `previous_response_id=`). It is bounded in entries (oldest
forgotten first) and lives only in the bridge's memory: an id the bridge never saw, or forgot,
is a clear 400 rather than a turn silently missing its history.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Generic, TypeVar

T = TypeVar("T")

DEFAULT_CAPACITY = 256


class ResponseStore(Generic[T]):
    """id → the conversation that response ended (its input history plus its output)."""

    def __init__(self, capacity: int = DEFAULT_CAPACITY) -> None:
        self.capacity = capacity
        self._items: OrderedDict[str, T] = OrderedDict()

    def put(self, response_id: str, value: T) -> None:
        self._items[response_id] = value
        self._items.move_to_end(response_id)
        while len(self._items) > self.capacity:
            self._items.popitem(last=False)

    def get(self, response_id: str) -> T | None:
        value = self._items.get(response_id)
        if value is not None:
            self._items.move_to_end(response_id)
        return value

    def __len__(self) -> int:
        return len(self._items)
