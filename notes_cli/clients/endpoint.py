"""What a client will call: the meeting point of `clients/` (which reads the config files) and
`gateway/`, `doctor/` and `smoke` (which call the endpoint the way the client does)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from notes_cli.secrets import mask, position_secrets

ClientName = str
"""A client's name (`clients.registry`), or "openai" for the plain OpenAI SDK."""
Protocol = Literal["responses", "chat", "anthropic", "gemini"]
AuthStyle = Literal["bearer", "x-api-key", "x-goog-api-key", "both", "none"]


def protocol_auth(protocol: str) -> AuthStyle:
    """How a key is sent in `protocol` by default: Google's SDK sends `x-goog-api-key` for the
    Gemini API; the others a bearer token."""
    return "x-goog-api-key" if protocol == "gemini" else "bearer"


@dataclass(frozen=True)
class Endpoint:
    """One client's effective connection. `key` is the resolved secret: never print it, use
    `masked_key`. `source` names the file (or flag / env var) the base URL came from."""

    client: ClientName
    base_url: str
    protocol: Protocol
    model: str | None = None
    auth_style: AuthStyle = "bearer"
    key_env: str | None = None
    key: str | None = field(default=None, repr=False)
    source: str | None = None
    query_params: dict[str, str] = field(default_factory=dict)
    headers: dict[str, str] = field(default_factory=dict, repr=False)

    @property
    def masked_key(self) -> str:
        return mask(self.key)

    def sent_secrets(self) -> tuple[str, ...]:
        """What a request to this endpoint carries in credential positions (its key,
        credential headers and query values): to scrub from whatever the gateway says."""
        return position_secrets(self.key, self.headers, self.query_params, url=self.base_url)

    def request_url(self) -> str:
        """The exact URL the client sends its turn to, joined the way that client joins it:
        Codex appends `/responses` as a plain string; Claude Code appends `/v1/messages`
        (a trailing `/` is tolerated); an OpenAI SDK user calls `/chat/completions`."""
        if self.protocol == "gemini":  # Google's SDK: root, API version, model and method
            suffix = f"/v1beta/models/{self.model or '<model>'}:streamGenerateContent"
            return join_url(self.base_url, suffix, {**self.query_params, "alt": "sse"})
        return join_url(self.base_url, _SUFFIX[self.protocol], self.query_params)

    def models_url(self) -> str:
        """Where the model list lives for this protocol."""
        suffix = {"anthropic": "/v1/models", "gemini": "/v1beta/models"}.get(
            self.protocol, "/models"
        )
        return join_url(self.base_url, suffix, self.query_params)


_SUFFIX: dict[str, str] = {
    "responses": "/responses",
    "chat": "/chat/completions",
    "anthropic": "/v1/messages",
}


def join_url(base_url: str, suffix: str, query_params: dict[str, str] | None = None) -> str:
    """`base_url` + `suffix`, as plain strings (what the clients do), then query parameters."""
    from urllib.parse import urlencode

    url = base_url.rstrip("/") + suffix
    if query_params:
        url += ("&" if "?" in url else "?") + urlencode(query_params)
    return url


def endpoint_from_flags(
    base_url: str,
    *,
    protocol: Protocol,
    model: str | None = None,
    key_env: str | None = None,
    default_key_env: str | None = None,
    client: ClientName = "openai",
    auth_style: AuthStyle = "bearer",
    source: str = "--base-url",
) -> Endpoint:
    """An endpoint named on the command line (`--base-url`, `--model`, `--key-env`) instead of
    read from a client's config. An explicit `key_env` that is unset or empty is a usage error;
    `default_key_env` is used quietly when set (no key otherwise)."""
    import os

    from notes_cli.clients.urls import require_url
    from notes_cli.errors import UsageError
    from notes_cli.secrets import check_env_name

    base_url = require_url(base_url, flag=source)
    check_env_name("--key-env", key_env)  # before it is shown in any message
    name = key_env or default_key_env
    key = os.environ.get(name) if name else None
    if key_env and not key:
        raise UsageError(
            f"--key-env {key_env}: ${key_env} is unset or empty",
            fix=f"export {key_env}=<your key>, or drop --key-env for an endpoint without auth",
        )
    return Endpoint(
        client=client,
        base_url=base_url,
        protocol=protocol,
        model=model,
        auth_style=auth_style if key else "none",
        key_env=name if key else None,
        key=key,
        source=source,
    )
