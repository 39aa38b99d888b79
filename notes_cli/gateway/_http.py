"""The one boundary where httpx's exceptions and raw error answers become typed gateway errors,
plus the small helpers around it: secret-free URLs, the sync wall clock, proxies from the env."""

from __future__ import annotations

import contextlib
import email.utils
import json
import re
import socket
import ssl
import threading
import time
import weakref
from collections.abc import Iterator
from typing import Any
from urllib.parse import urljoin

import httpx

from notes_cli.gateway import errors
from notes_cli.gateway._limits import MAX_ERROR_BODY, MAX_HEAD_BYTES, human
from notes_cli.gateway.results import StreamResult
from notes_cli.secrets import mask_url

# A JSON error body cut at MAX_ERROR_BODY: where its message starts (looked for in the first
# bytes), then the string's characters. Linear: the alternatives start with different
# characters, and `*+` gives nothing back.
_JSON_MESSAGE_KEY = re.compile(rb'\A\s*+\{.{0,400}?"(?:message|detail)"\s*+:\s*+"', re.DOTALL)
_JSON_STRING_CHARS = re.compile(rb'(?:[^"\\]|\\.)*+', re.DOTALL)
# Linear (`[^<]` stops at the next tag): `(.*?)</title>` scanned to the end from every
# `<title>` of a body that never closes one.
_TITLE = re.compile(rb"<title[^<>]*+>([^<]*+)</title>", re.IGNORECASE)
_MAX_ERROR_BODY = MAX_ERROR_BODY
# How h11 (httpx) and `_h1` say the response head went over their bound.
HEADERS_TOO_LARGE = ("Receive buffer too long", "response headers larger than")
H11_MAX_HEAD_BYTES = 100 * 1024  # httpcore's h11 limit (MAX_INCOMPLETE_EVENT_SIZE)


def safe_url(url: str) -> str:
    """The URL fit to print (user-info and credential query values masked)."""
    return mask_url(url)


def proxy_for(url: str) -> str | None:
    """The proxy httpx will use for `url` given HTTP(S)_PROXY / ALL_PROXY / NO_PROXY, with any
    password masked; None when the request goes direct (rules: `notes_cli.proxy`)."""
    from notes_cli.proxy import select_proxy

    proxy = select_proxy(url)
    return safe_url(proxy) if proxy else None


class Watchdog:
    """A wall-clock deadline for the blocking httpx calls of one sync client.

    httpx's timeouts are per read: a server that sends one byte a second, or a `: ping` every
    few seconds, or headers that never end, never trips them. While `armed(seconds)` is open, a
    timer shuts down the sockets this client opened once the seconds are up, so the read that
    is blocked in `recv` returns at once and the call fails; `expired` then says why. (The async
    client needs none of this: `asyncio.timeout` cancels its reads.) One call at a time, as a
    sync client makes them."""

    def __init__(self) -> None:
        self._sockets: weakref.WeakSet[socket.socket] = weakref.WeakSet()
        self._lock = threading.Lock()
        self._armed = False
        self.expired = False

    def track(self, stream: Any) -> None:
        get = getattr(stream, "get_extra_info", None)
        sock = get("socket") if get is not None else None
        if isinstance(sock, socket.socket):
            with self._lock:
                self._sockets.add(sock)

    @contextlib.contextmanager
    def armed(self, seconds: float | None) -> Iterator[None]:
        self.expired = False
        if seconds is None:
            yield
            return
        timer = threading.Timer(max(seconds, 0.0), self._expire)
        timer.daemon = True
        with self._lock:
            self._armed = True
        timer.start()
        try:
            yield
        finally:
            with self._lock:
                self._armed = False
            timer.cancel()

    def _expire(self) -> None:
        with self._lock:
            if not self._armed:
                return  # the call ended just before the timer fired
            self.expired = True
            for sock in list(self._sockets):
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)


# --------------------------------------------------------------------------- error answers


def parse_error_body(body: bytes) -> tuple[str | None, str | None, str | None]:
    """(message, type, code) from an OpenAI / Anthropic / FastAPI error JSON, the <title> of an
    HTML page (what proxies and load balancers send), or the first line of plain text."""
    text = body[:_MAX_ERROR_BODY]
    try:
        payload = json.loads(text)
    except (ValueError, RecursionError):  # RecursionError: JSON nested thousands deep
        payload = None
    if isinstance(payload, dict):
        error = payload.get("error", payload)
        if isinstance(error, dict):
            message = error.get("message") or error.get("detail") or payload.get("detail")
            code = error.get("code")
            return (
                _str(message),
                _str(error.get("type")),
                _str(code) if code is not None else None,
            )
        return _str(error), None, None
    key = _JSON_MESSAGE_KEY.match(text) if len(body) >= _MAX_ERROR_BODY else None
    if key:  # JSON cut at the bound (a 400 quoting a huge prompt): the message's start
        chars = _JSON_STRING_CHARS.match(text, key.end())
        message = (chars.group() if chars else b"").decode("utf-8", "replace")
        with contextlib.suppress(ValueError):
            message = json.loads(f'"{message}"')
        return f"{message}… (cut at {human(_MAX_ERROR_BODY)})", None, None
    match = _TITLE.search(text)
    if match:
        title = re.sub(r"\s+", " ", match.group(1).decode("utf-8", "replace")).strip()
        return (f"HTML page: {title}" if title else "HTML page"), "html", None
    first = text.decode("utf-8", "replace").strip().splitlines()
    return (first[0][:200] if first else None), None, None


def retry_after_seconds(value: str | None) -> float | None:
    """`Retry-After` as seconds: a number, or an HTTP date."""
    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def status_error(
    response: httpx.Response, body: bytes, url: str, key_env: str | None, *, has_key: bool = True
) -> errors.HttpStatusError:
    """The typed error for an error answer, with a fix that fits the status."""
    status = response.status_code
    message, etype, code = parse_error_body(body)
    retry_after = retry_after_seconds(response.headers.get("retry-after"))
    location = response.headers.get("location")
    reason = response.reason_phrase or ""
    shown = f"{status} {reason}".strip()
    text = f"{shown} from {url}" + (f": {message}" if message else "")
    error = errors.HttpStatusError(
        text,
        url=url,
        status=status,
        error_message=message,
        error_type=etype,
        error_code=code,
        retry_after=retry_after,
        location=safe_url(location) if location else None,
    )
    error.fix = _status_fix(error, key_env, has_key)
    return error


def redirects_to_itself(url: str, location: str | None) -> bool:
    """A Location that is the URL asked for (relative or absolute, query and a trailing slash
    ignored): a redirect loop, which no client gets out of."""
    from notes_cli.clients.urls import split

    if not location:
        return False
    try:
        asked, target = split(url), split(urljoin(url, location))
    except ValueError:  # urljoin splits both: a Location like `http://[::1` raises
        return False
    if asked is None or target is None:
        return False
    same = (asked.scheme, asked.netloc, asked.path.rstrip("/"))
    return same == (target.scheme, target.netloc, target.path.rstrip("/"))


def _status_fix(error: errors.HttpStatusError, key_env: str | None, has_key: bool) -> str:
    status = error.status
    if 300 <= status < 400 and redirects_to_itself(error.url, error.location):
        return (
            "the server redirects the request to the same URL, a loop no client gets out of: "
            "fix the gateway's or proxy's redirect rule (often http→https or a trailing slash)"
        )
    if 300 <= status < 400:
        return (
            f"the server redirects to {error.location or '(no Location)'}; put that URL in the "
            "config (pdnotes follows no redirects, so your key never goes to another host)"
        )
    if status in (401, 403) and not has_key:
        return "no key was sent: configure one (or pass --key-env NAME to pdnotes smoke)"
    if status in (401, 403):
        where = f"${key_env}" if key_env else "the configured key"
        return f"check that {where} holds a key this gateway accepts (and is not expired)"
    if error.is_model_error:
        return "use a model id the gateway serves: `pdnotes doctor` lists the closest ones"
    if status == 404:
        return (
            "the path does not exist on this gateway: check the base URL's prefix and `/v1` "
            "(`pdnotes doctor` tries the variants and prints the corrected line)"
        )
    if status == 429:
        wait = f" (it asks for {error.retry_after:.0f} s)" if error.retry_after else ""
        return f"rate limited{wait}: wait, lower the request rate, or pass --retries N"
    if status >= 500:
        return "the gateway or its upstream model failed; retry, then check the gateway's status"
    return "the gateway rejected the request body; check the model id and the client settings"


# --------------------------------------------------------------------------- transport errors


def translate(
    exc: httpx.HTTPError,
    *,
    url: str,
    headers_seen: bool,
    timeout: float,
    partial: StreamResult | None = None,
) -> errors.GatewayError:
    """Map an httpx exception to the typed error (the caller raises it `from exc`)."""
    if isinstance(exc, httpx.ConnectTimeout):
        return errors.ConnectTimeout(
            f"no connection to {url} within {timeout:g} s",
            url=url,
            seconds=timeout,
            fix="check the host and port, your network and any proxy; is the gateway running?",
        )
    if isinstance(exc, httpx.PoolTimeout):
        return errors.Busy(
            f"every connection to {url} stayed busy for {timeout:g} s; the request was not sent",
            url=url,
            seconds=timeout,
            fix="the upstream is slow to finish the answers it has (or their clients do not "
            "read them): retry later, or add a fallback upstream",
        )
    if isinstance(exc, httpx.TimeoutException):
        if headers_seen:
            return errors.IdleStreamTimeout(
                f"the stream from {url} went silent for {timeout:g} s",
                url=url,
                seconds=timeout,
                partial=partial,
                fix="the gateway or model stalled mid-answer; retry, or raise --timeout",
            )
        return errors.HeadersTimeout(
            f"connected to {url} but no response headers within {timeout:g} s",
            url=url,
            seconds=timeout,
            fix="the gateway accepted the connection but never answered; a proxy holding "
            "responses, or an overloaded gateway: raise --timeout or check the gateway",
        )
    if isinstance(exc, httpx.ProxyError):
        return errors.Unreachable(
            f"the proxy refused the request to {url}: {exc}",
            url=url,
            fix="check HTTPS_PROXY / HTTP_PROXY, or add the host to NO_PROXY",
        )
    if isinstance(exc, httpx.ConnectError):
        return _connect_error(exc, url)
    if isinstance(exc, httpx.UnsupportedProtocol):
        return errors.ProtocolError(
            f"{url} is not an http:// or https:// URL",
            url=url,
            fix="write the base URL with its scheme, e.g. https://host/v1",
        )
    if not headers_seen and any(marker in str(exc) for marker in HEADERS_TOO_LARGE):
        limit = MAX_HEAD_BYTES if HEADERS_TOO_LARGE[1] in str(exc) else H11_MAX_HEAD_BYTES
        return errors.HeadersTooLarge(
            f"the response headers from {url} are over {human(limit)}",
            url=url,
            fix="no gateway sends headers that large: check that the base URL points at the "
            "gateway, not at something in front of it",
        )
    if isinstance(exc, httpx.DecodingError):
        return errors.ProtocolError(
            f"the answer from {url} cannot be decoded: {exc}",
            url=url,
            fix="the gateway sent a Content-Encoding pdnotes did not ask for (it accepts "
            "gzip and deflate); check the gateway or the proxy in front of it",
        )
    if headers_seen and partial is not None and isinstance(exc, httpx.TransportError):
        return errors.TruncatedStream(
            f"the stream from {url} broke off before its completion event ({exc})",
            url=url,
            partial=partial,
            fix="the connection dropped mid-answer (proxy or load-balancer idle limits); retry",
        )
    return errors.ProtocolError(
        f"{url}: {exc or type(exc).__name__}",
        url=url,
        fix="the server closed the connection without a valid HTTP answer; is this the gateway's "
        "port, and does it speak http (not https) or the other way round?",
    )


def _connect_error(exc: httpx.ConnectError, url: str) -> errors.GatewayError:
    text = str(exc)
    if _is_tls(exc):
        return errors.TLSError(
            f"TLS handshake with {url} failed: {text}",
            url=url,
            fix="check the certificate (SSL_CERT_FILE for a private CA) or whether the port "
            "speaks plain http:// instead",
        )
    lowered = text.lower()
    if any(s in lowered for s in ("name or service", "nodename", "getaddrinfo", "name resolution")):
        return errors.Unreachable(
            f"cannot resolve the host of {url}: {text}",
            url=url,
            fix="check the host name in the base URL, and your DNS / VPN",
        )
    return errors.Unreachable(
        f"cannot connect to {url}: {text or 'connection failed'}",
        url=url,
        fix="is the gateway running on that host and port? check the base URL, firewall and proxy",
    )


def _is_tls(exc: BaseException) -> bool:
    seen: BaseException | None = exc
    for _ in range(6):
        if seen is None:
            return False
        if isinstance(seen, ssl.SSLError) or "SSL" in str(seen) or "CERTIFICATE" in str(seen):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def _str(value: Any) -> str | None:
    if value is None:
        return None
    return value if isinstance(value, str) else json.dumps(value)
