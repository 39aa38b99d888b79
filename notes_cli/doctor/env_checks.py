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
    found += _no_proxy_entries(env)
    return found


def _no_proxy_entries(env: Mapping[str, str]) -> list[Finding]:
    """NO_PROXY entries that do not bypass what they seem to, while a proxy is set."""
    from notes_cli.proxy import cidr_entries, port_entries

    if not any(env.get(n) or env.get(n.lower()) for n in _PROXIES[:3]):
        return []
    no_proxy = env.get("no_proxy") or env.get("NO_PROXY") or ""
    found: list[Finding] = []
    for entry in port_entries(no_proxy):
        host = entry.rpartition(":")[0]
        found.append(
            make(
                "no-proxy-entry-ignored",
                "env",
                f"NO_PROXY entry {entry!r} names the default port, which a URL on that port "
                f"does not carry: requests to {host} still go through the proxy (httpx, Codex)",
                entry=entry,
                suggestion=host,
            )
        )
    for entry in cidr_entries(no_proxy):
        found.append(
            make(
                "no-proxy-entry-ignored",
                "env",
                f"NO_PROXY entry {entry!r} is a range for Codex but one address for httpx "
                "(pdnotes, many Python tools): they disagree on which hosts go direct",
                entry=entry,
                suggestion="the hosts or domains themselves",
            )
        )
    for entry in (e.strip() for e in no_proxy.split(",")):
        if entry.startswith("*") and entry != "*":
            found.append(
                make(
                    "no-proxy-entry-ignored",
                    "env",
                    f"NO_PROXY entry {entry!r}: httpx takes the `*` literally and uses the proxy",
                    entry=entry,
                    suggestion=entry.lstrip("*"),
                )
            )
    return found
