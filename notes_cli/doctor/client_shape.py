"""The request the real client sends, as doctor's probe sends it, and the smaller variants doctor
retries to find the part a gateway refuses.

The shapes are recordings of the real clients (notes_cli/clients/<client>/shapes/<version>.json,
made by scripts/client_shapes.py): body and headers with ids, secrets and the clients' long texts
replaced by placeholders. The probe sends that body with the model and the prompt put back, fresh
ids, and one deliberate difference: a small output budget (`max_output_tokens` for Codex, which
sends none; `max_tokens` for Claude Code), so a probe stays cheap.
"""

from __future__ import annotations

import copy
import json
import tomllib
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import Any

from notes_cli.clients.endpoint import Endpoint
from notes_cli.doctor.version import parse_version

Version = tuple[int, int, int]
RECORDED_PROMPT = "Reply with the single word ok."
_SET_BY_PDNOTES = {"accept", "content-type", "anthropic-version"}
"""Headers the gateway client sets itself (accept follows the stream flag)."""


@dataclass(frozen=True)
class Shape:
    client: str
    version: str
    headers: dict[str, str]
    body: dict[str, Any]


@dataclass(frozen=True)
class Variant:
    """A shape with some parts left out; `label` names what is left out."""

    label: str
    drop_tool_types: frozenset[str] = frozenset()
    drop_tools: bool = False
    drop_reasoning: bool = False
    drop_system_messages: bool = False
    drop_headers: bool = False
    drop_betas: bool = False  # the `anthropic-beta` header alone
    culprit: str = ""
    fields: tuple[str, ...] = field(default=())


def shape_for(
    protocol: str, version: Version | None = None, *, client: str | None = None
) -> Shape | None:
    """The recorded shape of `client` (default: the one client speaking `protocol`: Codex,
    Claude Code, Gemini CLI), when it speaks `protocol`: the newest not newer than `version` (the
    oldest when older than all; the newest when unknown). Chat clients (Qwen Code, OpenCode)
    are named: several speak chat completions."""
    from notes_cli.clients import registry

    client = client or _only_speaker(protocol)
    plugin = registry.get(client) if client else None
    if client is None or plugin is None or plugin.protocol != protocol:
        return None
    folder = plugin.shapes_dir()
    known = sorted(v for v in (parse_version(p.stem) for p in folder.glob("*.json")) if v)
    if not known:
        return None
    older = [v for v in known if version is None or v <= version]
    chosen = older[-1] if older else known[0]
    return _load(client, ".".join(map(str, chosen)))


def _only_speaker(protocol: str) -> str | None:
    """The one registered client that speaks `protocol` (None when none or several do)."""
    from notes_cli.clients import registry

    speakers = [c.name for c in registry.CLIENTS if c.protocol == protocol]
    return speakers[0] if len(speakers) == 1 else None


def installed_shape(endpoint: Endpoint, *, version: Version | None = None) -> Shape | None:
    """The recorded request of the client behind `endpoint`, at `version` when doctor was told
    one (`--codex-version`), else its installed version: what doctor's probe and smoke send.
    None for a client with no recording (the plain OpenAI SDK: `--client openai`)."""
    from notes_cli.clients import registry

    protocol, client = endpoint.protocol, endpoint.client
    plugin = registry.get(client)
    if plugin is not None:
        return shape_for(protocol, version or plugin.installed_version(), client=client)
    return None


@lru_cache(maxsize=8)
def _load(client: str, version: str) -> Shape:
    from notes_cli.clients import registry

    plugin = registry.get(client)
    assert plugin is not None, client  # shape_for found its shapes
    data = json.loads((plugin.shapes_dir() / f"{version}.json").read_text("utf-8"))
    return Shape(client, data["version"], data["headers"], data["body"])


def without_headers(shape: Shape, names: frozenset[str]) -> Shape:
    """The shape as the client sends it configured to leave out the headers `names`
    (`Resolved.unsent_headers`: Claude Code with CLAUDE_CODE_DISABLE_EXPERIMENTAL_BETAS sends
    no `anthropic-beta`, the fix `request-shape-rejected` names, so doctor checks it)."""
    headers = {k: v for k, v in shape.headers.items() if k not in names}
    return replace(shape, headers=headers)


def tool_types(shape: Shape) -> list[str]:
    """The non-function tool types in the shape, in order (`namespace`, `web_search`, ...)."""
    seen: list[str] = []
    for tool in shape.body.get("tools") or []:
        kind = str(tool.get("type") or "custom")
        if kind not in ("function", "custom") and kind not in seen:
            seen.append(kind)
    return seen


def variants(shape: Shape) -> list[Variant]:
    """Smaller and smaller requests, each leaving out one kind of part, most specific first."""
    kinds = tool_types(shape)
    found = [
        Variant(
            f"without {k} tools", drop_tool_types=frozenset({k}), culprit=f"tools of type `{k}`"
        )
        for k in kinds
    ]
    if len(kinds) > 1:
        found.append(
            Variant(
                "without non-function tools",
                drop_tool_types=frozenset(kinds),
                culprit="tools of type " + ", ".join(f"`{k}`" for k in kinds),
            )
        )
    if shape.body.get("tools"):
        found.append(Variant("without tools", drop_tools=True, culprit="`tools` (any tool)"))
    reasoning = [k for k in _REASONING_FIELDS if k in shape.body]
    if reasoning:
        found.append(
            Variant(
                "without " + "/".join(reasoning),
                drop_reasoning=True,
                culprit=" / ".join(f"`{k}`" for k in reasoning),
                fields=tuple(reasoning),
            )
        )
    if any(m.get("role") == "system" for m in shape.body.get("messages") or []):
        found.append(
            Variant(
                "without system-role messages",
                drop_system_messages=True,
                culprit='messages with `"role": "system"` inside `messages`',
            )
        )
    if "anthropic-beta" in shape.headers:
        found.append(
            Variant(
                "without anthropic-beta", drop_betas=True, culprit="the `anthropic-beta` header"
            )
        )
    found.append(
        Variant(
            "without the client's headers",
            drop_headers=True,
            culprit="the client's headers (" + ", ".join(_named_headers(shape)) + ")",
        )
    )
    return found


_REASONING_FIELDS = ("reasoning", "include", "thinking", "context_management", "output_config")


def _named_headers(shape: Shape) -> list[str]:
    names = [h for h in shape.headers if h not in _SET_BY_PDNOTES and h != "user-agent"]
    return names[:4] + (["…"] if len(names) > 4 else [])


def shaped_request(
    shape: Shape, endpoint: Endpoint, prompt: str, variant: Variant | None = None
) -> tuple[Endpoint, dict[str, Any]]:
    """(endpoint carrying the client's headers, extra body) for `GatewayClient.stream`: the
    recorded body with the model, the prompt and fresh ids put in, minus what `variant` drops."""
    variant = variant or Variant("as recorded")
    body = _fill(copy.deepcopy(shape.body), prompt)
    for key in ("model", "stream", "stream_options", "max_tokens", "max_output_tokens"):
        body.pop(key, None)  # the gateway client sets these (model, stream flag, budget)
    if variant.drop_tool_types or variant.drop_tools:
        tools = [
            t
            for t in body.get("tools") or []
            if not variant.drop_tools
            and str(t.get("type") or "custom") not in variant.drop_tool_types
        ]
        if tools:
            body["tools"] = tools
        else:
            for key in ("tools", "tool_choice", "parallel_tool_calls"):
                body.pop(key, None)
    if variant.drop_reasoning:
        for key in _REASONING_FIELDS:
            body.pop(key, None)
    if variant.drop_system_messages:
        body["messages"] = [m for m in body.get("messages") or [] if m.get("role") != "system"]
    headers = dict(endpoint.headers)
    if not variant.drop_headers:
        for name, value in shape.headers.items():
            if name not in _SET_BY_PDNOTES and not (
                variant.drop_betas and name == "anthropic-beta"
            ):
                headers[name] = _fresh(value)
    return replace(endpoint, headers=headers), body


def _fill(value: Any, prompt: str) -> Any:
    """Fresh ids for `<id>`, the probe's prompt where the recording had its own."""
    if isinstance(value, dict):
        return {k: _fill(v, prompt) for k, v in value.items()}
    if isinstance(value, list):
        return [_fill(v, prompt) for v in value]
    if value == RECORDED_PROMPT:
        return prompt
    return _fresh(value) if isinstance(value, str) else value


def _fresh(value: str) -> str:
    return str(uuid.uuid4()) if value == "<id>" else value


@lru_cache(maxsize=8)
def _tool_settings(client: str) -> dict[str, dict[str, str]]:
    """The client's `tool-settings.toml` beside its shapes (by version, tool type: the line
    that stops it sending that tool), {} when it has none."""
    from notes_cli.clients import registry

    plugin = registry.get(client)
    path = plugin.shapes_dir() / "tool-settings.toml" if plugin else None
    if path is None or not path.is_file():
        return {}
    data = tomllib.loads(path.read_text("utf-8"))
    return {str(k): dict(v) for k, v in data.items()}


def client_setting_for(shape: Shape, tool_type: str) -> str | None:
    """The line of the client's config that makes it stop sending `tool_type`, if there is
    one."""
    return _tool_settings(shape.client).get(shape.version, {}).get(tool_type)


Narrower = Callable[[Variant], bool]
