"""Fetch one document by URL (`notes generate --source https://…`), bounded in every way.

A reading source is not a gateway, but it is HTTP, and pdnotes has one place for that. The
bounds: a wall-clock deadline over the whole fetch (connect, redirects, headers and body — a
server that drips a byte a second or never answers ends there), a cap on the decoded body
(a gzip bomb stops at the cap, not at memory), and at most `max_redirects` redirects.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any
from urllib.parse import urljoin, urlsplit

from notes_cli.gateway import errors

DEFAULT_TIMEOUT_S = 20.0
DEFAULT_MAX_BYTES = 20 * 1024 * 1024
DEFAULT_MAX_REDIRECTS = 3


class FetchError(errors.GatewayError):
    """The document could not be fetched within its bounds (names the URL and the bound)."""

    exit_code = 2  # a source the user named cannot be read: an input error

    def __init__(self, message: str, *, url: str, fix: str | None = None) -> None:
        super().__init__(message, fix=fix)
        self.url = url


@dataclass(frozen=True)
class Fetched:
    url: str  # as asked
    final_url: str  # after redirects
    status: int
    content_type: str  # lower-case media type, without parameters
    charset: str | None  # from Content-Type, if given
    body: bytes
    redirects: tuple[str, ...]
    elapsed_s: float


def reusable_transport() -> Any:
    """A transport to pass as `fetch(..., transport=)` when one server is fetched again and
    again (bench's metrics scrapes): it keeps the connection open and its TLS context is built
    once; a fetch without one builds both anew (about 25 ms of CPU). Close it when done."""
    import httpx

    return httpx.HTTPTransport()


class RepeatedGet:
    """GET one URL again and again from an event loop (bench's Prometheus scrapes):
    `body = await getter.get()`, then `await getter.aclose()`. Raises FetchError.

    A plain http:// URL with no proxy goes over the gateway's lean HTTP/1.1 pool on the loop
    itself: no thread, no httpx client, no CA bundle read. Measured on a 2-core VM, bench's
    sampler then costs 24 ms of CPU to set up and 1.3 ms per scrape, against 65 ms and 6.5 ms
    through `fetch` on a thread. Other URLs (https, a proxy) still go that way, over one
    `reusable_transport`. Redirects are not followed."""

    def __init__(self, url: str, *, timeout: float, max_bytes: int) -> None:
        import ssl

        from notes_cli.gateway._h1 import Http1Pool

        self.url, self.timeout, self.max_bytes = url, timeout, max_bytes
        # A context that trusts no CA: this pool only ever takes http:// URLs.
        pool = Http1Pool(ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT), max_connections=1)
        lean = urlsplit(url).scheme == "http" and pool.takes(url)
        self._pool: Any = pool if lean else None
        self._transport: Any = None if lean else reusable_transport()

    async def get(self) -> bytes:
        if self._pool is None:
            import asyncio

            got = await asyncio.to_thread(
                fetch, self.url, timeout=self.timeout, max_bytes=self.max_bytes,
                max_redirects=0, transport=self._transport,
            )  # fmt: skip
            return got.body
        return await self._lean_get()

    async def _lean_get(self) -> bytes:
        import asyncio

        import httpx

        from notes_cli.gateway._http import safe_url
        from notes_cli.gateway._limits import TooLarge
        from notes_cli.gateway._transport import StatusSink

        shown = safe_url(self.url)
        sink = StatusSink(limit=self.max_bytes)
        try:
            async with asyncio.timeout(self.timeout):
                await self._pool.request(
                    "GET", self.url, {"accept": "text/plain, */*"}, None, sink,
                    connect_timeout=self.timeout, headers_timeout=self.timeout,
                    idle_timeout=self.timeout,
                )  # fmt: skip
        except TimeoutError as exc:
            raise FetchError(
                f"{shown} did not answer within {self.timeout:g} s", url=self.url
            ) from exc
        except TooLarge as exc:
            raise FetchError(f"{shown}: {exc}", url=self.url) from exc
        except httpx.HTTPError as exc:
            raise FetchError(
                f"cannot fetch {shown}: {exc or type(exc).__name__}", url=self.url
            ) from exc
        if sink.status != 200:
            raise FetchError(f"{shown} answered HTTP {sink.status}", url=self.url)
        return bytes(sink.body)

    async def aclose(self) -> None:
        if self._pool is not None:
            await self._pool.aclose()
        if self._transport is not None:
            self._transport.close()


def fetch(
    url: str,
    *,
    timeout: float = DEFAULT_TIMEOUT_S,
    max_bytes: int = DEFAULT_MAX_BYTES,
    max_redirects: int = DEFAULT_MAX_REDIRECTS,
    transport: object | None = None,
) -> Fetched:
    """GET `url`, following at most `max_redirects` redirects, all within `timeout` seconds and
    `max_bytes` of decoded body. Raises FetchError (exit 2) for every failure."""
    import httpx

    from notes_cli.clients.urls import url_problem
    from notes_cli.gateway._http import safe_url
    from notes_cli.gateway._transport import require_valid_proxies

    shown = safe_url(url)
    if not url.lower().startswith(("http://", "https://")):
        raise FetchError(f"{shown}: only http:// and https:// URLs are fetched", url=url)
    if (why := url_problem(url)) is not None:
        raise FetchError(f"{shown} is not a usable URL: {why}", url=url, fix="correct the URL")
    start = time.monotonic()
    deadline = start + timeout
    redirects: list[str] = []
    current = url
    require_valid_proxies()
    options: dict[str, object] = {"follow_redirects": False, "trust_env": True}
    if transport is not None:
        options["transport"] = transport
    try:
        with httpx.Client(**options) as client:  # type: ignore[arg-type]
            while True:
                remaining = max(0.05, deadline - time.monotonic())
                request = client.build_request(
                    "GET",
                    current,
                    headers={"Accept": "text/html,application/pdf,text/*;q=0.9,*/*;q=0.5"},
                    timeout=httpx.Timeout(remaining),
                )
                response = client.send(request, stream=True)
                try:
                    if response.is_redirect:
                        target = _joined(current, response.headers.get("location", ""))
                        if len(redirects) >= max_redirects:
                            raise FetchError(
                                f"{shown} redirected more than {max_redirects} times "
                                f"(last to {safe_url(target)})",
                                url=url,
                                fix="pass the final URL of the page",
                            )
                        current = target
                        redirects.append(safe_url(current))
                        if (why := url_problem(current)) is not None:
                            raise FetchError(
                                f"{shown} redirected to {safe_url(current)}, which is not a "
                                f"usable URL: {why}",
                                url=url,
                                fix="save the page and pass the file",
                            )
                        continue
                    if response.status_code >= 400:
                        raise FetchError(
                            f"{shown} answered HTTP {response.status_code}",
                            url=url,
                            fix="check the URL in a browser, or save the page and pass the file",
                        )
                    body = _read_body(response, deadline, max_bytes, shown, url, timeout)
                finally:
                    response.close()
                media, _, params = response.headers.get("content-type", "").partition(";")
                return Fetched(
                    url=url,
                    final_url=str(response.url),
                    status=response.status_code,
                    content_type=media.strip().lower(),
                    charset=_charset(params),
                    body=body,
                    redirects=tuple(redirects),
                    elapsed_s=time.monotonic() - start,
                )
    except FetchError:
        raise
    except httpx.TimeoutException as exc:
        raise FetchError(
            f"{shown} did not finish within {timeout:g} s", url=url, fix="try again later"
        ) from exc
    except httpx.HTTPError as exc:
        raise FetchError(f"cannot fetch {shown}: {exc or type(exc).__name__}", url=url) from exc


def _joined(current: str, location: str) -> str:
    """The redirect target; a Location `urljoin` cannot split is kept as sent (`url_problem`
    then names what is wrong with it)."""
    try:
        return urljoin(current, location)
    except ValueError:
        return location


def _read_body(
    response: object, deadline: float, max_bytes: int, shown: str, url: str, timeout: float
) -> bytes:
    chunks: list[bytes] = []
    size = 0
    # Chunks as they arrive (not re-buffered to a size), so a dripping server meets the
    # deadline check after every read.
    for chunk in response.iter_bytes():  # type: ignore[attr-defined]
        size += len(chunk)
        if size > max_bytes:
            raise FetchError(
                f"{shown} is larger than {max_bytes / 1e6:.0f} MB (decoded); not read further",
                url=url,
                fix="save the part you need and pass the file",
            )
        chunks.append(chunk)
        if time.monotonic() > deadline:
            raise FetchError(f"{shown} did not finish within {timeout:g} s", url=url)
    return b"".join(chunks)


def _charset(params: str) -> str | None:
    for param in params.split(";"):
        name, _, value = param.partition("=")
        if name.strip().lower() == "charset" and value.strip():
            return value.strip().strip('"').lower()
    return None
