"""Which proxy a request to a URL goes through, decided exactly as httpx decides it.

Standard library only, so `doctor --offline` can read NO_PROXY without importing an HTTP client;
`notes_cli.gateway` asks it before choosing its lean transport.

pdnotes sends proxied requests with httpx and direct ones with its lean transport, so this choice
must agree with httpx's own (`httpx._utils.get_environment_proxies` + `URLPattern`, 0.28), or a
request would go direct where httpx, and the clients, use the proxy. The rules, per NO_PROXY
entry (comma-separated, from urllib's `getproxies()`, lowercase variables winning):
- `*` turns every proxy off;
- `scheme://host[:port]` is a URL pattern as written;
- an IPv4 or IPv6 address matches that address only (`10.0.0.0/8` is NOT a range: httpx
  compares the address before the slash);
- `localhost` matches localhost;
- any other entry `E` becomes the pattern `*E`: `corp.com` matches corp.com and its subdomains,
  `.corp.com` only the subdomains; a port (`api.corp.com:443`) must then equal the URL's
  explicit port, and a URL on its scheme's default port has none, so
  `NO_PROXY=api.corp.com:443` does not bypass `https://api.corp.com`.
A table test runs every rule against httpx's own selection in the same environment.
"""

from __future__ import annotations

import ipaddress
import re
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import urlsplit

_DEFAULT_PORTS = {"http": 80, "https": 443}


@dataclass(frozen=True)
class _Pattern:
    scheme: str  # "" = any
    host: re.Pattern[str] | None
    port: int | None

    def matches(self, scheme: str, host: str, port: int | None) -> bool:
        if self.scheme and self.scheme != scheme:
            return False
        if self.host is not None and not self.host.match(host):
            return False
        return self.port is None or self.port == port


def select_proxy(url: str, proxies: Mapping[str, str] | None = None) -> str | None:
    """The proxy URL httpx uses for `url` (None: direct). `proxies` is urllib's
    `getproxies()` mapping ({"https": ..., "no": ...}); default: this environment's."""
    info = urllib.request.getproxies() if proxies is None else proxies
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    host = (parts.hostname or "").lower()
    port = parts.port if parts.port != _DEFAULT_PORTS.get(scheme) else None
    patterns = no_proxy_patterns(info.get("no", ""))
    if patterns is None:
        return None  # NO_PROXY=*
    if any(p.matches(scheme, host, port) for p in patterns):
        return None
    proxy = info.get(scheme) or info.get("all")
    if not proxy:
        return None
    return proxy if "://" in proxy else f"http://{proxy}"


def no_proxy_patterns(no_proxy: str) -> list[_Pattern] | None:
    """The patterns NO_PROXY stands for; None when it is `*` (no proxy at all)."""
    patterns: list[_Pattern] = []
    for entry in (e.strip() for e in no_proxy.split(",")):
        if entry == "*":
            return None
        if not entry:
            continue
        if "://" in entry:
            patterns.append(_pattern(entry))
        elif _is_ipv4(entry):
            patterns.append(_pattern(f"all://{entry}"))
        elif _is_ipv6(entry):
            patterns.append(_pattern(f"all://[{entry}]"))
        elif entry.lower() == "localhost":
            patterns.append(_pattern(f"all://{entry}"))
        else:
            patterns.append(_pattern(f"all://*{entry}"))
    return patterns


def port_entries(no_proxy: str) -> list[str]:
    """Entries like `api.corp.com:443` that name a scheme's default port: they never match a
    URL that uses it, so the proxy applies anyway (httpx; reqwest ignores such entries too)."""
    found = []
    for entry in (e.strip() for e in no_proxy.split(",")):
        if "://" in entry or _is_ipv6(entry) or ":" not in entry:
            continue
        _, _, port = entry.rpartition(":")
        if port in ("80", "443"):
            found.append(entry)
    return found


def cidr_entries(no_proxy: str) -> list[str]:
    """Entries like `10.0.0.0/8`: a range for Codex (reqwest), one address for httpx."""
    return [e.strip() for e in no_proxy.split(",") if "/" in e and _is_ipv4(e.strip())]


def _pattern(text: str) -> _Pattern:
    scheme, _, rest = text.partition("://")
    scheme = "" if scheme == "all" else scheme.lower()
    netloc = rest.split("/", 1)[0]
    host, port = _split_port(netloc)
    host = host.lower()
    regex: re.Pattern[str] | None
    if not host or host == "*":
        regex = None
    elif host.startswith("*."):
        regex = re.compile(rf"^.+\.{re.escape(host[2:])}$")
    elif host.startswith("*"):
        regex = re.compile(rf"^(.+\.)?{re.escape(host[1:])}$")
    else:
        regex = re.compile(rf"^{re.escape(host.strip('[]'))}$")
    if port is not None and port == _DEFAULT_PORTS.get(scheme):
        port = None  # httpx normalises a default port away on both sides
    return _Pattern(scheme, regex, port)


def _split_port(netloc: str) -> tuple[str, int | None]:
    if netloc.startswith("["):
        host, _, rest = netloc.partition("]")
        port = rest.lstrip(":")
        return host + "]", int(port) if port.isdigit() else None
    host, sep, port = netloc.rpartition(":")
    if sep and port.isdigit():
        return host, int(port)
    return netloc, None


def _is_ipv4(entry: str) -> bool:
    try:
        ipaddress.IPv4Address(entry.split("/")[0])
    except ValueError:
        return False
    return True


def _is_ipv6(entry: str) -> bool:
    try:
        ipaddress.IPv6Address(entry.split("/")[0])
    except ValueError:
        return False
    return True
