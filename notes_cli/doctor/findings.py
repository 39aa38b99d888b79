"""A doctor finding: the unit every check (static or live) produces. The `id` names one entry of
the registry in `notes_cli/doctor/registry.py`; ids are a public contract (DESIGN.md)."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Literal

Severity = Literal["error", "warning", "info"]
FindingClient = Literal["codex", "claude", "env"]


@dataclass(frozen=True)
class Finding:
    id: str
    severity: Severity
    client: FindingClient
    message: str
    fix: str
    file: str | None = None
    line: int | None = None

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        return {k: v for k, v in data.items() if v is not None or k in ("id", "fix")}


@dataclass(frozen=True)
class Probe:
    """One live HTTP probe as reported by `doctor --json`: never carries a secret."""

    client: FindingClient
    name: str
    method: str
    url: str
    status: int | None
    ms: float | None
    ok: bool
    detail: str = ""

    def to_json(self) -> dict[str, Any]:
        return asdict(self)
