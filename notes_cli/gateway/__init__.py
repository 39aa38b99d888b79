"""The only HTTP client code in pdnotes: call a gateway the way Codex (Responses API), Claude
Code (Anthropic Messages) or the OpenAI SDK (chat completions) does, and time every part.

    from notes_cli.gateway import GatewayClient
    with GatewayClient(endpoint, timeout=10) as client:
        result = client.stream("say pong")     # StreamResult with Timings

Errors are the typed classes of `notes_cli.gateway.errors`. `request_url(endpoint)` is the exact
URL a turn goes to (Claude Code's `?beta=true` included); `proxy_for(url)` the proxy that applies.

Imports wire/, clients.endpoint (what to call) and the bottom layer. Must not import anything
above it: the engine, the bridge, doctor, smoke and bench are its users.
"""

from __future__ import annotations

from notes_cli.gateway._http import proxy_for, redirects_to_itself, safe_url
from notes_cli.gateway._requests import request_url
from notes_cli.gateway.client import AsyncGatewayClient, GatewayClient
from notes_cli.gateway.results import ModelsResult, StreamResult, Timings
from notes_cli.gateway.sse import ServerSentEvent, SSEParser

__all__ = [
    "AsyncGatewayClient",
    "GatewayClient",
    "ModelsResult",
    "SSEParser",
    "ServerSentEvent",
    "StreamResult",
    "Timings",
    "proxy_for",
    "redirects_to_itself",
    "request_url",
    "safe_url",
]
