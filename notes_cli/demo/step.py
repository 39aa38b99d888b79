"""One step of `pdnotes demo` (`Step`: what was run, whether it did what it should, the data to
show) and the engine preset every step serves from. Its own module so the step modules
(`run`, `bridge_step`) share it without importing each other."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

ENGINE_PRESET = "h800-h20-rdma"


@dataclass
class Step:
    key: str
    title: str
    ok: bool
    commands: list[str]
    data: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "title": self.title,
            "ok": self.ok,
            "commands": self.commands,
            **self.data,
        }
