"""Each client read once for doctor: its layers (what the static checks look at), the files the
summary lists and the endpoint the summary shows and the live probe calls, all from one reading
of the files (`notes_cli.clients.resolve` builds the endpoint from the same layers)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Generic, TypeVar

if TYPE_CHECKING:
    from notes_cli.clients.endpoint import Endpoint
    from notes_cli.doctor.stream_limits import StreamLimits

L = TypeVar("L")


@dataclass(frozen=True)
class Resolved(Generic[L]):
    """One client's setup as doctor sees it. `configured`: whether it gets a summary (and, when
    missing, a `config-missing` finding says so); `endpoint`: None when the client is not set up
    or a file does not parse (that file already has its finding)."""

    client: str
    layers: L
    files: tuple[str, ...]
    endpoint: Endpoint | None
    configured: bool
    limits: StreamLimits | None = None
    """The client's idle timeout and retries, for the live turn (`doctor.stream_limits`)."""
    window: ConfiguredWindow | None = None
    """The context window the client is told the model has, checked against the gateway's
    /models by the live probe (`context-window-too-large`)."""
    version: tuple[int, int, int] | None = None
    """The client's release doctor judged it by, when it said one (picks the probe's recorded
    request shape; None: the installed one's)."""
    unsent_headers: frozenset[str] = frozenset()
    """Headers of its recorded request the client, as configured, does not send (the probe
    leaves them out too)."""


@dataclass(frozen=True)
class ConfiguredWindow:
    tokens: int
    setting: str  # e.g. "CLAUDE_CODE_MAX_CONTEXT_TOKENS (env of ~/.claude/settings.json)"
    tool: str  # the `pdnotes config <tool>` that writes it
