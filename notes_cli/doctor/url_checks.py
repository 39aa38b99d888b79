"""Checks shared by the clients: the base URL the client will join its path onto, the model id,
and the "a gateway makes inference faster" misconception."""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import urlsplit

from notes_cli.clients import presets, urls
from notes_cli.doctor.findings import Finding, FindingClient
from notes_cli.doctor.registry import make

_PLACEHOLDER = re.compile(r"^(your[_-]?model[_-]?(id|name)?|<[^>]*>|model[_-]?id|xxx+|todo)$", re.I)
_LOCAL_HOSTS = ("127.0.0.1", "localhost", "::1", "0.0.0.0")


def check_base_url(
    client: FindingClient,
    url: str,
    *,
    file: str | None,
    line: int | None,
    query_table: bool = False,
    messages: bool = False,
) -> list[Finding]:
    """Every static problem of `url` as the base URL `client` appends its endpoint path to;
    `query_table`: the client takes query parameters in a `query_params` table (the fix of a
    query string says to move them there); `messages`: an Anthropic root the client appends
    /v1/messages to (Claude Code's), else an OpenAI-compatible one."""
    where: dict[str, Any] = {"file": file, "line": line}
    why = urls.url_problem(url)
    if why is not None and why != urls.NO_SCHEME:  # (no scheme: base-url-no-scheme, below)
        return [
            make(
                "base-url-malformed",
                client,
                f"base URL {urls.shown_url(url)!r} is not a usable URL: {why}",
                config_client=client,
                **where,
            )
        ]
    if not urls.has_scheme(url):
        return [
            make(
                "base-url-no-scheme",
                client,
                f"base URL {url!r} has no http(s):// scheme",
                url=url.split("://")[-1].lstrip("/"),
                **where,
            )
        ]
    suffixes = urls.MESSAGES_ENDPOINT_SUFFIXES if messages else urls.OPENAI_ENDPOINT_SUFFIXES
    preset = presets.preset_for_host(urls.host_of(url))
    strip_v1 = messages or bool(preset and preset.v1_suffix == "forbidden")
    cleaned = urls.clean_base_url(url, suffixes=suffixes, strip_v1=strip_v1)
    parts = urlsplit(url)  # has_scheme above: it parses
    found: list[Finding] = []
    if parts.query:
        hint = (
            f" and put {', '.join(cleaned.query_params)} in query_params"
            if cleaned.query_params and query_table
            else ""
        )
        found.append(
            make(
                "base-url-query",
                client,
                f"base URL {url} carries a query string; the client appends its path after it",
                suggested=cleaned.base_url,
                query_hint=hint,
                **where,
            )
        )
    if parts.fragment:
        found.append(
            make(
                "base-url-fragment",
                client,
                f"base URL {url} has a #fragment",
                suggested=cleaned.base_url,
                **where,
            )
        )
    suffix = urls.endpoint_suffix(url, suffixes)
    if suffix:
        found.append(
            make(
                "base-url-endpoint-suffix",
                client,
                f"base URL {url} already ends in {suffix}; the client adds it again",
                suggested=cleaned.base_url,
                **where,
            )
        )
    elif urls.has_v1_suffix(url) and strip_v1:
        why = (
            "Claude Code appends /v1/messages itself, so this calls /v1/v1/messages"
            if messages
            else f"{preset.name if preset else 'this gateway'} serves its API without /v1 "
            "(a /v1 gives a 404)"
        )
        found.append(
            make(
                "base-url-v1-suffix",
                client,
                f"base URL {url} ends in /v1: {why}",
                suggested=cleaned.base_url,
                **where,
            )
        )
    return found


def check_model(
    client: FindingClient, model: str | None, base_url: str, *, file: str | None, line: int | None
) -> list[Finding]:
    """A placeholder model id, or (for presets that list their models) one not served."""
    if not model:
        return []
    if is_placeholder_model(model):
        return [
            make(
                "model-placeholder",
                client,
                f"model {model!r} is a placeholder",
                file=file,
                line=line,
            )
        ]
    preset = presets.preset_for_host(urls.host_of(base_url)) if urls.has_scheme(base_url) else None
    if not preset or not preset.models or model in preset.models:
        return []
    close = closest_models(model, preset.models)
    suggested = " or ".join(repr(m) for m in close) if close else " / ".join(preset.models)
    return [
        make(
            "model-unknown",
            client,
            f"model {model!r} is not one of the ids {preset.name} serves",
            severity="warning",
            suggested=suggested,
            file=file,
            line=line,
        )
    ]


def closest_models(model: str, served: tuple[str, ...] | list[str]) -> list[str]:
    """Served ids equal to `model` ignoring case, hyphens, underscores, dots and spaces."""

    def norm(value: str) -> str:
        return re.sub(r"[-_.\s]", "", value).lower()

    return [m for m in served if norm(m) == norm(model)]


def check_gateway_note(client: FindingClient, url: str) -> list[Finding]:
    """Remind, once per remote endpoint, that a gateway does not speed inference up."""
    host = urls.hostname_of(url) or ""
    if not urls.has_scheme(url) or host in _LOCAL_HOSTS:
        return []
    return [
        make(
            "gateway-not-accelerator",
            client,
            f"{host} is a gateway: it supplies a key and a base URL, not faster inference",
        )
    ]


def is_placeholder_model(model: str) -> bool:
    """A model id still as a guide wrote it (`YOUR_MODEL_ID`, `<model>`): `model-placeholder`."""
    return bool(_PLACEHOLDER.match(model.strip()))
