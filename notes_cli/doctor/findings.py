"""A doctor finding: the unit every check (static or live) produces. The `id` names one entry of
the registry (templates/doctor/findings.toml, loaded by `notes_cli/doctor/registry.py`), and
findings are built only by its `make`; ids are a public contract (docs/architecture.md,
"Contracts")."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Literal

from notes_cli.secrets import mask_url, scrub

Severity = Literal["error", "warning", "info"]
FindingClient = str
"""Whose finding: a client's name (`clients.registry`), or "env" for the environment's."""


@dataclass(frozen=True)
class Finding:
    id: str
    severity: Severity
    client: FindingClient
    message: str
    fix: str
    file: str | None = None
    line: int | None = None

    def __post_init__(self) -> None:
        # Messages quote URLs, headers and gateway answers: whatever a check put in them, no
        # key-shaped value survives into the report (human or JSON).
        object.__setattr__(self, "message", scrub(self.message))
        object.__setattr__(self, "fix", scrub(self.fix))

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

    def __post_init__(self) -> None:
        object.__setattr__(self, "url", mask_url(self.url))
        object.__setattr__(self, "detail", scrub(self.detail))

    def to_json(self) -> dict[str, Any]:
        return asdict(self)
