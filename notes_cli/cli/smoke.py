"""pdnotes smoke: n consecutive streamed turns the way the chosen client sends them, judged on
the source article's criteria (returned, completed, stable latency)."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Annotated

import typer

from notes_cli.clients import registry

if TYPE_CHECKING:
    from notes_cli.clients.endpoint import AuthStyle, Endpoint

# The plain OpenAI SDK (`--client openai`); every client says it (`Client.protocol`,
# `Client.smoke_key_env`).
_PROTOCOL = {"openai": "chat"}
_DEFAULT_KEY_ENV = {"openai": "OPENAI_API_KEY"}


def _speaks(client: str) -> tuple[str, str | None] | None:
    """(protocol, default key variable) of `client`, None when pdnotes knows no such client."""
    from notes_cli.clients import registry

    plugin = registry.get(client)
    if plugin is not None:
        return plugin.protocol, plugin.smoke_key_env
    if client in _PROTOCOL:
        return _PROTOCOL[client], _DEFAULT_KEY_ENV[client]
    return None


_WIRE_WORDS = {
    "responses": "Responses API",
    "chat": "chat completions",
    "anthropic": "Anthropic Messages",
    "gemini": "generateContent",
}

# The flags of `smoke`.
Client = Annotated[
    str,
    typer.Option(
        "--client",
        help="Whose request to send, in its protocol: "
        + ", ".join(f"{c.name} ({c.title}, {_WIRE_WORDS[c.protocol]})" for c in registry.CLIENTS)
        + " or openai (plain chat completions).",
    ),
]
N = Annotated[int, typer.Option("-n", "--runs", min=1, max=50, help="Consecutive runs.")]
Prompt = Annotated[str | None, typer.Option("--prompt", help="The prompt of every run.")]
Timeout = Annotated[
    float,
    typer.Option(
        "--timeout", min=0.1, help="Seconds each run may take (connect, headers, stream)."
    ),
]
Retries = Annotated[
    int,
    typer.Option(
        "--retries",
        min=0,
        max=10,
        help="Retry a run this many times on 429 / 5xx / network errors (Retry-After honoured).",
    ),
]
MaxTokens = Annotated[
    int | None,
    typer.Option(
        "--max-tokens",
        min=1,
        help="Output budget per run (default: what the client asks, i.e. OpenCode's limit.output "
        "of the model when its config holds one, else 512).",
    ),
]
BaseUrl = Annotated[
    str | None,
    typer.Option("--base-url", help="Call this base URL instead of the client's configured one."),
]
Model = Annotated[str | None, typer.Option("--model", help="Model id (overrides the config).")]
KeyEnv = Annotated[
    str | None,
    typer.Option("--key-env", help="Name of the variable holding the key (with --base-url)."),
]
Minimal = Annotated[
    bool,
    typer.Option(
        "--minimal",
        help="Send pdnotes' small request instead of the client's real request shape.",
    ),
]
AsJson = Annotated[bool, typer.Option("--json", help="Print one JSON document on stdout.")]


def smoke(
    client: Client = registry.names()[0],
    n: N = 3,
    prompt: Prompt = None,
    timeout: Timeout = 30.0,
    retries: Retries = 0,
    max_tokens: MaxTokens = None,
    base_url: BaseUrl = None,
    model: Model = None,
    key_env: KeyEnv = None,
    minimal: Minimal = False,
    as_json: AsJson = False,
) -> None:
    """Send N streamed requests in a row the way Codex, Claude Code, OpenCode or the OpenAI SDK
    does, and
    say whether every one returned, completed, and took a stable time. Shows where the time
    went: network + gateway (connect, time to headers) vs the model (first token, decode rate).

    Exit 0 when the verdict passes, 1 when it fails, 2 on bad flags.
    """
    from notes_cli import render
    from notes_cli.render import smoke as draw
    from notes_cli.smoke import DEFAULT_MAX_TOKENS, DEFAULT_PROMPT, run_smoke

    endpoint = _endpoint(client, base_url, model, key_env)
    if max_tokens is None:
        max_tokens = _client_budget(client, base_url) or DEFAULT_MAX_TOKENS
    if not as_json:
        draw.header(endpoint, n)
    report = run_smoke(
        endpoint,
        n=n,
        prompt=prompt or DEFAULT_PROMPT,
        timeout=timeout,
        retries=retries,
        max_tokens=max_tokens,
        on_run=draw.progress,
        shape=None if minimal else _shape(endpoint),
    )
    if as_json:
        render.emit_json(report.to_json())
    else:
        draw.report(report)
    if not report.verdict.ok:
        raise SystemExit(1)  # typer.Exit's code is dropped under standalone_mode=False


def _client_budget(client: str, base_url: str | None) -> int | None:
    """The output budget the configured client asks each turn for, when its config states one
    (`Client.smoke_budget`: a turn of smoke is then the client's turn)."""
    from notes_cli.clients import registry

    plugin = registry.get(client)
    if plugin is None or base_url is not None:
        return None
    from notes_cli.clients.setups import resolve_setups

    (setup,) = resolve_setups(client)
    return plugin.smoke_budget(setup)


def _shape(endpoint: Endpoint) -> object:
    """The recorded request of the endpoint's client (None for the plain OpenAI SDK)."""
    from notes_cli.doctor.client_shape import installed_shape

    return installed_shape(endpoint)


def _endpoint(
    client: str, base_url: str | None, model: str | None, key_env: str | None
) -> Endpoint:
    """The endpoint to call: explicit flags, else the client's own configuration."""
    import dataclasses

    from notes_cli.clients import registry
    from notes_cli.clients.endpoint import endpoint_from_flags
    from notes_cli.clients.urls import require_configured_url
    from notes_cli.errors import UsageError

    speaks = _speaks(client)
    if speaks is None:
        raise UsageError(
            f"unknown client {client!r}", fix=f"use --client {registry.listing('openai')}"
        )
    protocol, default_key_env = speaks
    source = "--base-url"
    if client == "openai" and base_url is None:
        base_url = os.environ.get("OPENAI_BASE_URL") or "https://api.openai.com/v1"
        source = "OPENAI_BASE_URL"
    if base_url is not None:
        endpoint = endpoint_from_flags(
            base_url,
            protocol=protocol,  # type: ignore[arg-type]
            model=model,
            key_env=key_env,
            default_key_env=default_key_env,
            client=client,
            auth_style=_auth_style(protocol, key_env or default_key_env),
            source=source,
        )
    else:
        endpoint = _configured(client)
        require_configured_url(endpoint.base_url, client=client, source=endpoint.source)
        if model:
            endpoint = dataclasses.replace(endpoint, model=model)
    if not endpoint.model:
        raise UsageError(
            f"no model id for {client}",
            fix="pass --model ID (or set it in the client's config: pdnotes config "
            f"{client if client != 'openai' else registry.names()[0]} --model ID)",
        )
    return endpoint


def _configured(client: str) -> Endpoint:
    from notes_cli.clients import registry
    from notes_cli.clients.setups import resolve_setups

    plugin = registry.get(client)
    assert plugin is not None, client  # the plain OpenAI SDK always has a --base-url
    (setup,) = resolve_setups(client)
    return plugin.smoke_endpoint(setup)  # each stops, as the client would, before sending


def _auth_style(protocol: str, key_env: str | None) -> AuthStyle:
    from notes_cli.clients.endpoint import protocol_auth

    if protocol == "anthropic" and key_env == "ANTHROPIC_API_KEY":
        return "x-api-key"  # the Messages API's own header for a key, a token is a bearer
    return protocol_auth(protocol)
