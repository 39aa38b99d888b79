"""What each client sends, for the three wire protocols:

- "responses": Codex's Responses API stream (`POST {base}/responses`, Bearer auth),
- "anthropic": Claude Code's Messages stream (`POST {base}/v1/messages?beta=true`,
  `anthropic-version`, x-api-key and/or Bearer),
- "chat": chat completions with `stream_options.include_usage` (the OpenAI SDK's way).

The bodies are the wire layer's (`notes_cli.wire.*.encode_request` from a neutral turn); the
URL, headers and credentials are the client's, so they are here. Reading the answer is
`_reader.py`. Pure functions, no IO: the sync and async drivers share them.
"""

from __future__ import annotations

import json
from typing import Any

from notes_cli import __version__
from notes_cli.clients.endpoint import Endpoint, join_url
from notes_cli.gateway.errors import UnsendableHeader
from notes_cli.secrets import mask_url, unsendable
from notes_cli.wire import Message, Part, Sampling, TextPart, Turn
from notes_cli.wire.codec import CODECS, Codec

ANTHROPIC_VERSION = "2023-06-01"
USER_AGENT = f"pdnotes/{__version__}"

WIRE: dict[str, Codec] = CODECS  # each protocol's codec


def request_url(endpoint: Endpoint) -> str:
    """The URL the client posts a turn to; Claude Code always adds `?beta=true`."""
    if endpoint.protocol == "anthropic":
        params = {**endpoint.query_params, "beta": "true"}
        return join_url(endpoint.base_url, "/v1/messages", params)
    return endpoint.request_url()


def auth_headers(endpoint: Endpoint) -> dict[str, str]:
    """The credential headers in the client's style (never logged)."""
    headers: dict[str, str] = {}
    if not endpoint.key or endpoint.auth_style == "none":
        return headers
    if endpoint.auth_style in ("bearer", "both"):
        headers["authorization"] = f"Bearer {endpoint.key}"
    if endpoint.auth_style in ("x-api-key", "both"):
        headers["x-api-key"] = endpoint.key
    if endpoint.auth_style == "x-goog-api-key":  # Gemini CLI (Google's SDK)
        headers["x-goog-api-key"] = endpoint.key
    return headers


def base_headers(endpoint: Endpoint, *, stream: bool) -> dict[str, str]:
    accept = "text/event-stream" if stream else "application/json"
    headers = {"user-agent": USER_AGENT, "accept": accept}
    if endpoint.protocol == "anthropic":
        headers["anthropic-version"] = ANTHROPIC_VERSION
    # What the user supplied, checked once (pdnotes' own values are ASCII constants): the key
    # (its position in the key, not in "Bearer <key>") and the configured headers.
    key_where = unsendable(endpoint.key) if endpoint.key else None
    if key_where is not None:
        raise _unsendable(endpoint, "authorization", key_where)
    for name, value in endpoint.headers.items():
        where = unsendable(value)
        if where is not None:
            raise _unsendable(endpoint, name, where)
    headers.update(endpoint.headers)
    headers.update(auth_headers(endpoint))
    return headers


def _unsendable(endpoint: Endpoint, name: str, where: str) -> UnsendableHeader:
    """Said without the value (it may be the key)."""
    url = mask_url(endpoint.request_url())
    if name in ("authorization", "x-api-key", "x-goog-api-key"):
        source = f"${endpoint.key_env}" if endpoint.key_env else "the key"
        return UnsendableHeader(
            f"the key from {source} has a character an HTTP header cannot carry ({where}): "
            "no request was sent",
            url=url,
            fix=f"set {source} again to the key alone (a quote, a space or a line end pasted "
            "with it?)",
        )
    return UnsendableHeader(
        f"the {name} header has a character an HTTP header cannot carry ({where}): no "
        "request was sent",
        url=url,
        fix=f"fix the {name} value where it is configured (in {endpoint.source})",
    )


def build_body(
    endpoint: Endpoint,
    messages: list[dict[str, Any]] | str,
    *,
    max_tokens: int,
    stream: bool,
    extra_body: dict[str, Any] | None = None,
) -> bytes:
    """The JSON body of one turn in the endpoint's protocol, encoded by the wire layer from a
    neutral turn (system prompts go to Responses as `developer` messages, as Codex sends them;
    `store: false` too)."""
    chat = [{"role": "user", "content": messages}] if isinstance(messages, str) else messages
    turn = Turn(
        model=endpoint.model or "",
        messages=[_message(m, endpoint.protocol) for m in chat],
        sampling=Sampling(max_tokens=max_tokens),
        stream=stream,
        include_usage=True,
    )
    body: dict[str, Any] = WIRE[endpoint.protocol].encode_request(turn)
    if endpoint.protocol == "responses":
        body["store"] = False
    if extra_body:
        extra = dict(extra_body)
        config = extra.get("generationConfig")
        if endpoint.protocol == "gemini" and isinstance(config, dict):
            # A recorded Gemini CLI body: its sampling kept, pdnotes' output budget added.
            extra["generationConfig"] = {**config, **body.get("generationConfig", {})}
        body.update(extra)
    return json.dumps(body, ensure_ascii=False).encode()


def _message(message: dict[str, Any], protocol: str) -> Message:
    role = message.get("role", "user")
    if role == "system" and protocol == "responses":
        role = "developer"
    content = message.get("content", "")
    if isinstance(content, str):
        parts: list[Part] = [TextPart(content)]
    else:
        parts = [TextPart(str(p["text"])) for p in content if isinstance(p, dict) and "text" in p]
    return Message(role, parts)


def parse_model_ids(payload: Any) -> list[str]:
    """Ids from an OpenAI (`{"data": [{"id"}]}`), Anthropic or Gemini
    (`{"models": [{"name": "models/…"}]}`) model list, or a bare list."""
    items = payload.get("data", payload.get("models", [])) if isinstance(payload, dict) else payload
    ids: list[str] = []
    for item in items if isinstance(items, list) else []:
        if isinstance(item, dict) and isinstance(item.get("id"), str):
            ids.append(item["id"])
        elif isinstance(item, dict) and isinstance(item.get("name"), str):  # Gemini's list
            ids.append(item["name"].removeprefix("models/"))
        elif isinstance(item, str):
            ids.append(item)
    return ids
