"""The key Codex will actually send a custom provider: only what `env_key`,
`experimental_bearer_token`, `auth` or `requires_openai_auth` (+ `$CODEX_HOME/auth.json`) give
it; an exported OPENAI_API_KEY is never used for it."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from notes_cli.doctor.findings import Finding
from notes_cli.doctor.registry import make

KEY_SOURCES = ("env_key", "experimental_bearer_token", "auth", "requires_openai_auth")


def provider_credentials(
    provider_id: str,
    table: Mapping[str, Any],
    env: Mapping[str, str],
    home: Path,
    where: dict[str, Any],
) -> list[Finding]:
    """What key Codex sends to custom provider `provider_id` (`where`: its file and line)."""
    section = f"model_providers.{provider_id}"
    if table.get("requires_openai_auth") and not table.get("env_key"):
        auth_json = home / "auth.json"
        if not auth_json.is_file():
            return [
                make(
                    "openai-auth-missing",
                    "codex",
                    f"[{section}] has requires_openai_auth = true but {auth_json} does not "
                    "exist: Codex asks for a login and sends no Authorization header",
                    provider=provider_id,
                    auth_json=str(auth_json),
                    **where,
                )
            ]
        return []
    if any(table.get(k) for k in KEY_SOURCES):
        return []
    if env.get("OPENAI_API_KEY"):
        return [
            make(
                "custom-provider-no-key",
                "codex",
                f"[{section}] has no env_key, so Codex sends no key at all; the exported "
                "OPENAI_API_KEY is only used by the built-in openai provider",
                provider=provider_id,
                **where,
            )
        ]
    return []
