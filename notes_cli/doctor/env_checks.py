"""Checks of the process environment that concern no single config file."""

from __future__ import annotations

from collections.abc import Mapping

from notes_cli.doctor.findings import Finding
from notes_cli.doctor.registry import make
from notes_cli.secrets import mask_env_value

_PROXIES = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY")


def check_env(env: Mapping[str, str]) -> list[Finding]:
    found: list[Finding] = []
    if env.get("OPENAI_BASE_URL"):
        found.append(
            make(
                "openai-base-url-ignored",
                "env",
                f"OPENAI_BASE_URL={mask_env_value('OPENAI_BASE_URL', env['OPENAI_BASE_URL'])} "
                "is set, but Codex does not "
                "read it (only its built-in provider reads openai_base_url in "
                "config.toml)",
            )
        )
    for upper in _PROXIES:
        lower = upper.lower()
        if env.get(upper) and env.get(lower) and env[upper] != env[lower]:
            found.append(
                make(
                    "proxy-case-mismatch",
                    "env",
                    f"{upper} and {lower} are both set and differ",
                    upper=upper,
                    lower=lower,
                )
            )
    return found
