"""NO_PROXY matching exactly as httpx does it (host:port entries, leading dots, `*`, IP and
CIDR-looking entries, localhost, scheme patterns, upper/lower case variables): every row is
checked against httpx's own choice in the same environment, so pdnotes never goes direct with
its lean transport where httpx, and the clients, would use the proxy."""

from __future__ import annotations

import httpx
import pytest
from httpx._utils import get_environment_proxies

from notes_cli.gateway import proxy_for
from notes_cli.proxy import cidr_entries, port_entries, select_proxy

PROXY = "http://proxy.corp:3128"

# (NO_PROXY, URL, goes through the proxy?)
TABLE = [
    ("api.corp.com:443", "https://api.corp.com/v1", True),  # the case
    ("api.corp.com:443", "https://api.corp.com:443/v1", True),
    ("api.corp.com:8443", "https://api.corp.com:8443/v1", False),
    ("api.corp.com:8443", "https://api.corp.com/v1", True),
    ("api.corp.com", "https://api.corp.com:8443/v1", False),
    (".corp.com", "https://api.corp.com/v1", False),
    (".corp.com", "https://corp.com/v1", True),  # a leading dot: subdomains only
    ("corp.com", "https://corp.com/v1", False),
    ("corp.com", "https://api.corp.com/v1", False),
    ("corp.com", "https://notcorp.com/v1", True),
    ("*", "https://anything.example/v1", False),
    ("*.corp.com", "https://api.corp.com/v1", True),  # httpx reads it as the host "**.corp.com"
    ("10.0.0.0/8", "http://10.1.2.3:8000/v1", True),  # not a range for httpx
    ("10.1.2.3", "http://10.1.2.3:8000/v1", False),
    ("::1", "http://[::1]:8000/v1", False),
    ("localhost", "http://localhost:8000/v1", False),
    ("127.0.0.1,localhost", "http://127.0.0.1:9/v1", False),
    ("https://api.corp.com", "https://api.corp.com/v1", False),
    ("https://api.corp.com", "http://api.corp.com/v1", True),
    ("API.Corp.com", "https://api.corp.com/v1", False),
    (" api.corp.com , other.org ", "https://other.org/x", False),
    ("", "https://api.corp.com/v1", True),
]


def httpx_choice(url: str) -> str | None:
    """The proxy httpx's own Client picks for `url` in this environment (None: direct)."""
    mounts = get_environment_proxies()
    with httpx.Client(trust_env=True) as client:
        transport = client._transport_for_url(httpx.URL(url))
        if transport is client._transport:
            return None
        for pattern, mounted in client._mounts.items():
            if mounted is transport:
                return mounts[pattern.pattern]
    raise AssertionError("httpx chose a transport it has not mounted")


@pytest.fixture
def proxy_env(monkeypatch):
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY"):
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.lower(), raising=False)

    def set_env(no_proxy_value: str, **extra: str) -> None:
        monkeypatch.setenv("HTTPS_PROXY", PROXY)
        monkeypatch.setenv("HTTP_PROXY", PROXY)
        monkeypatch.setenv("NO_PROXY", no_proxy_value)
        for name, value in extra.items():
            monkeypatch.setenv(name, value)

    return set_env


@pytest.mark.parametrize(("no_proxy", "url", "proxied"), TABLE)
def test_selection_matches_httpx(proxy_env, no_proxy: str, url: str, proxied: bool) -> None:
    proxy_env(no_proxy)

    ours = select_proxy(url)

    assert ours == httpx_choice(url)
    assert (ours is not None) is proxied
    assert (proxy_for(url) is not None) is proxied


def test_lowercase_variables_win_like_urllib_and_httpx(proxy_env) -> None:
    proxy_env("nothing.example", no_proxy="api.corp.com", https_proxy="http://other:8080")
    url = "https://api.corp.com/v1"
    assert select_proxy(url) == httpx_choice(url)
    url = "https://elsewhere.example/v1"
    assert select_proxy(url) == httpx_choice(url) == "http://other:8080"


def test_all_proxy_and_a_proxy_without_scheme(proxy_env, monkeypatch) -> None:
    proxy_env("")
    monkeypatch.delenv("HTTPS_PROXY")
    monkeypatch.setenv("ALL_PROXY", "socks.corp:1080")
    url = "https://api.corp.com/v1"
    assert select_proxy(url) == httpx_choice(url) == "http://socks.corp:1080"


def test_entries_doctor_warns_about() -> None:
    assert port_entries("api.corp.com:443, b.org:8443, c:80, ::1") == ["api.corp.com:443", "c:80"]
    assert cidr_entries("10.0.0.0/8, 10.1.2.3, ::1") == ["10.0.0.0/8"]


@pytest.mark.parametrize(
    ("no_proxy", "flagged"),
    [
        ("api.corp.com:443", True),
        ("10.0.0.0/8", True),
        ("*.corp.com", True),
        ("api.corp.com:8443,.corp.com,localhost", False),
    ],
)
def test_doctor_names_no_proxy_entries_that_do_not_bypass(
    cli, isolated_home, monkeypatch, no_proxy: str, flagged: bool
) -> None:
    monkeypatch.setenv("HTTPS_PROXY", PROXY)
    monkeypatch.setenv("NO_PROXY", no_proxy)
    monkeypatch.delenv("no_proxy", raising=False)

    doc = cli("doctor", "--offline", "--json").json()

    hits = [f for f in doc["findings"] if f["id"] == "no-proxy-entry-ignored"]
    assert bool(hits) is flagged
    if no_proxy == "api.corp.com:443":
        assert "api.corp.com" in hits[0]["fix"] and ":443" not in hits[0]["fix"]
