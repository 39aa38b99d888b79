"""Recognise "unknown model" in the words of other gateways (LiteLLM, vLLM, LMDeploy, OpenRouter,
one-api / new-api), from the data in templates/gateway_errors.toml: each wording is an entry
with its statuses and its source, so a new gateway is a data change, not a code change."""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from functools import lru_cache

from notes_cli.resources import template_path


@dataclass(frozen=True)
class Wording:
    gateway: str
    statuses: frozenset[int]
    contains: tuple[str, ...]
    example: str
    source: str


@lru_cache(maxsize=1)
def wordings() -> tuple[Wording, ...]:
    data = tomllib.loads(template_path("gateway_errors.toml").read_text("utf-8"))
    return tuple(
        Wording(
            gateway=entry["gateway"],
            statuses=frozenset(entry["statuses"]),
            contains=tuple(part.lower() for part in entry["contains"]),
            example=entry["example"],
            source=entry["source"],
        )
        for entry in data["model_unknown"]
    )


def model_unknown_gateway(status: int, message: str | None) -> str | None:
    """The gateway whose "unknown model" wording `message` is, or None."""
    text = (message or "").lower()
    for wording in wordings():
        if status in wording.statuses and all(part in text for part in wording.contains):
            return wording.gateway
    return None
