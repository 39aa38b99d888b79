"""Masking: the one way a secret is ever shown."""

from __future__ import annotations

import re

# Looks like a credential rather than an environment-variable name.
_SECRET_SHAPE = re.compile(r"^(sk-|sk_|ak-|pk-|key-|Bearer\s)|^[A-Za-z0-9_\-\.]{32,}$")
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def mask(secret: str | None) -> str:
    """`sk-abcdef1234` -> `sk-…1234`; short or empty values give `…` / `(unset)`."""
    if not secret:
        return "(unset)"
    prefix = ""
    for p in ("sk-ant-", "sk-", "sk_", "ak-", "pk-"):
        if secret.startswith(p):
            prefix = p
            break
    if len(secret) < len(prefix) + 8:
        return prefix + "…"
    return f"{prefix}…{secret[-4:]}"


def looks_like_env_name(value: str) -> bool:
    return bool(_ENV_NAME.match(value)) and not looks_like_secret(value)


def looks_like_secret(value: str) -> bool:
    """True for values shaped like API keys (so a pasted key in `env_key` is caught)."""
    if not value:
        return False
    if value.isupper() and _ENV_NAME.match(value):
        return False  # TAOTOKEN_API_KEY is a name, however long
    return bool(_SECRET_SHAPE.search(value))


def scrub(text: str, *secrets: str | None) -> str:
    """`text` with every occurrence of each secret replaced by its mask (an upstream's error
    message may quote the key it was sent)."""
    for secret in secrets:
        if secret and len(secret) >= 4 and secret in text:
            text = text.replace(secret, mask(secret))
    return text
