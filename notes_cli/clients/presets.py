"""Provider presets: plain TOML files in templates/presets/<name>.toml (adding a provider
touches no Python). Loaded with the standard library's parser: they are ours, read-only."""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from functools import cache
from typing import Literal

from notes_cli.errors import UsageError
from notes_cli.resources import template_path

V1Policy = Literal["forbidden", "required", "any"]


@dataclass(frozen=True)
class OpenAIPreset:
    """The gateway's OpenAI-compatible root (its [openai] table): Codex's provider entry
    (`provider_id`, `env_key`, its window and model catalog), the root the chat clients call."""

    provider_id: str
    base_url: str
    env_key: str | None = None
    context_window: int | None = None  # of the preset's `model`: model_context_window
    model_catalog: bool = False  # write the preset's model into a Codex model catalog too


@dataclass(frozen=True)
class AnthropicPreset:
    """The gateway's Anthropic-compatible root (its [anthropic] table): Claude Code's
    ANTHROPIC_BASE_URL (it appends /v1/messages), the key's variable and, for a keyless
    gateway, the placeholder token."""

    base_url: str
    token_env: str | None = None
    placeholder_token: str | None = None


@dataclass(frozen=True)
class GeminiPreset:
    """A Gemini-API (generateContent) root: Gemini CLI appends /v1beta/models/<model>:…"""

    base_url: str
    placeholder_key: str | None = None


@dataclass(frozen=True)
class Preset:
    """One gateway: what to write for each client and what the doctor knows about it."""

    key: str
    name: str
    description: str = ""
    hosts: tuple[str, ...] = ()
    v1_suffix: V1Policy = "any"
    model: str | None = None
    models: tuple[str, ...] = ()
    openai: OpenAIPreset | None = None
    anthropic: AnthropicPreset | None = None
    gemini: GeminiPreset | None = None
    chat_only: bool = False
    """The endpoint serves chat completions but neither Responses nor Messages: `pdnotes
    config` points the clients at the bridge for it (docs/bridge.md)."""


def preset_names() -> list[str]:
    folder = template_path("presets")
    return sorted(p.stem for p in folder.glob("*.toml"))


@cache
def load_preset(name: str) -> Preset:
    """The preset called `name`; `UsageError` listing the valid names otherwise."""
    path = template_path("presets", f"{name}.toml")
    if not path.is_file():
        raise UsageError(
            f"no preset named {name!r}",
            fix=f"use one of: {', '.join(preset_names())}",
        )
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    openai, anthropic, gemini = data.get("openai"), data.get("anthropic"), data.get("gemini")
    return Preset(
        key=name,
        name=str(data.get("name", name)),
        description=str(data.get("description", "")),
        hosts=tuple(data.get("hosts", ())),
        v1_suffix=data.get("v1_suffix", "any"),
        model=data.get("model"),
        models=tuple(data.get("models", ())),
        openai=OpenAIPreset(**openai) if openai else None,
        anthropic=AnthropicPreset(**anthropic) if anthropic else None,
        gemini=GeminiPreset(**gemini) if gemini else None,
        chat_only=bool(data.get("chat_only", False)),
    )


def chat_only(name: str | None) -> bool:
    """Whether the preset `name` (None: no preset) says its endpoint serves chat completions
    only, so a client speaking the Responses or the Messages API needs the bridge for it."""
    return bool(name) and load_preset(str(name)).chat_only


def all_presets() -> list[Preset]:
    return [load_preset(name) for name in preset_names()]


def preset_for_host(host: str) -> Preset | None:
    """The preset whose `hosts` list `host` (`host` or `host:port`), if any."""
    host = host.lower()
    bare = host.split(":", 1)[0]
    for preset in all_presets():
        if host in preset.hosts or bare in preset.hosts:
            return preset
    return None


LOCAL_PLACEHOLDER = "pdnotes-local-no-key"
"""What a client that refuses to start without a key (Claude Code, Qwen Code) gets for a keyless
server on this machine (a loopback base URL, no key named): not a secret, documented in
docs/connect.md ("Keyless local servers")."""


def placeholder_tokens() -> frozenset[str]:
    """Non-secret tokens pdnotes writes for keyless gateways (the mock engine, the bridge, a
    server on this machine)."""
    anthropic = {p.anthropic.placeholder_token for p in all_presets() if p.anthropic}
    gemini = {p.gemini.placeholder_key for p in all_presets() if p.gemini}
    return frozenset(token for token in anthropic | gemini | {LOCAL_PLACEHOLDER} if token)
