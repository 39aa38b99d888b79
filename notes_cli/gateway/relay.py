"""Calling an upstream on behalf of another program (the bridge): send a request body as it is,
hand the answer's bytes to a sink the moment they are read, and fail with the typed errors of
`gateway.errors`.

    upstream = Upstream("http://gpu-box:23333/v1", key=os.environ["UPSTREAM_KEY"])
    await upstream.stream("/chat/completions", body, sink)   # sink.on_body(bytes) per read
    status, body = await upstream.fetch("GET", "/models")

Unlike `GatewayClient` this parses nothing: the caller owns the protocol. It sends through the
transport seam (`_transport`): streams over the lean HTTP/1.1 transport (`_h1`, parsing inside
`data_received`, no task switch per chunk) unless `_transport.pick` declines it (a proxy applies
to the URL), then over the httpx adapter; whole answers over the httpx adapter. An error status
(3xx/4xx/5xx) never reaches the sink: the `StatusSink` keeps its body (up to 64 KiB) for an
`HttpStatusError` carrying the upstream's message. Cancelling the awaiting task closes the
upstream connection, which is how the upstream learns that the client went away.
"""

from __future__ import annotations

from collections.abc import Callable

import httpx

from notes_cli.gateway import _h1, errors
from notes_cli.gateway._http import safe_url, status_error, translate
from notes_cli.gateway._limits import MAX_RELAYED_BODY_BYTES, TooLarge
from notes_cli.gateway._transport import (
    AsyncHttpxTransport,
    AsyncTransport,
    Reader,
    StalledReader,
    StatusSink,
    Stream,
    pick,
)

RelaySink = Stream  # where a 2xx answer goes, called from the transport's read callback
MAX_CONNECTIONS = 512  # requests in flight to one upstream at once
SLOT_WAIT_S = 30.0
"""The longest a request waits for one of the `max_connections` when all are in use (a stalled
upstream, or clients that do not read, hold them for up to the idle timeout): then it fails
with `errors.Busy`, which the bridge answers with a 503 and Retry-After, or sends to a
fallback upstream."""

__all__ = ["Reader", "RelaySink", "Upstream"]


class Upstream:
    """One upstream API root (`base_url`, e.g. `https://host/v1`) and its key (sent as a Bearer
    token; never shown: errors name the URL only). At most `max_connections` requests are in
    flight at once; the next waits up to `slot_timeout` seconds for one to end (`errors.Busy`)."""

    def __init__(
        self,
        base_url: str,
        key: str | None = None,
        *,
        connect_timeout: float = 10.0,
        headers_timeout: float = 300.0,
        idle_timeout: float = 300.0,
        max_connections: int = MAX_CONNECTIONS,
        slot_timeout: float = SLOT_WAIT_S,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self._key = key
        self.connect_timeout = connect_timeout
        self.headers_timeout = headers_timeout
        self.idle_timeout = idle_timeout
        self.slot_timeout = slot_timeout
        verify = httpx.create_ssl_context(trust_env=True)
        self._httpx = AsyncHttpxTransport(transport, verify=verify, max_connections=max_connections)
        self._h1 = None if transport is not None else _h1.Http1Pool(verify, max_connections)

    def url(self, path: str) -> str:
        return self.base_url + path

    def headers(self, *, stream: bool) -> dict[str, str]:
        headers = {"content-type": "application/json"}
        headers["accept"] = "text/event-stream" if stream else "application/json"
        if self._key:
            headers["authorization"] = f"Bearer {self._key}"
        return headers

    async def stream(
        self,
        path: str,
        body: bytes,
        sink: RelaySink,
        *,
        on_status: Callable[[int], None] | None = None,
    ) -> None:
        """POST `body` to `path` and feed the 2xx answer to `sink` as it arrives; return when
        the body ended (or soon after the sink said it had the last event). A sink with an
        `on_reader(reader)` method gets a `Reader` once the request is sent, to pause and
        resume reading the answer. `on_status` is told the status the moment the head is
        read (a failure before it means nothing of the answer reached the sink)."""
        url = self.url(path)
        # (identity: a compressed event stream arrives in lumps; one that comes anyway is decoded)
        headers = {**self.headers(stream=True), "accept-encoding": "identity"}
        answer = StatusSink(sink, on_status=on_status)
        await self._send(pick(self._h1, self._httpx, url), "POST", url, headers, body, answer)

    async def fetch(
        self,
        method: str,
        path: str,
        body: bytes | None = None,
        *,
        on_status: Callable[[int], None] | None = None,
    ) -> tuple[int, bytes]:
        """A whole answer (for `GET /models` and non-streamed turns): (status, body). Error
        statuses raise `HttpStatusError`, transport failures the other typed errors."""
        url = self.url(path)
        answer = StatusSink(limit=MAX_RELAYED_BODY_BYTES, on_status=on_status)
        await self._send(self._httpx, method, url, self.headers(stream=False), body, answer)
        return answer.status, bytes(answer.body)

    async def aclose(self) -> None:
        if self._h1 is not None:
            await self._h1.aclose()
        await self._httpx.aclose()

    async def _send(
        self,
        transport: AsyncTransport,
        method: str,
        url: str,
        headers: dict[str, str],
        body: bytes | None,
        answer: StatusSink,
    ) -> None:
        shown = safe_url(url)
        try:
            await transport.request(
                method,
                url,
                headers,
                body,
                answer,
                connect_timeout=self.connect_timeout,
                headers_timeout=self.headers_timeout,
                idle_timeout=self.idle_timeout,
                slot_timeout=self.slot_timeout,
            )
        except httpx.HTTPError as exc:
            raise self._translate(exc, shown, answer.headers_seen) from exc
        except TooLarge as exc:
            raise errors.ResponseTooLarge(
                f"the answer from {shown} was cut off: {exc} (decoded)",
                url=shown,
                limit=exc.limit,
                fix="no answer the bridge relays whole is that large: the upstream sent an "
                "endless body or a compression bomb; check the upstream",
            ) from None
        if answer.status >= 300:
            raise status_error(answer.response(), answer.error_body(), shown, None)

    def _translate(self, exc: httpx.HTTPError, url: str, seen: bool) -> errors.GatewayError:
        if isinstance(exc, StalledReader):
            return errors.IdleStreamTimeout(
                f"the client stopped reading the stream from {url} for "
                f"{self.idle_timeout:g} s; the upstream request was ended",
                url=url,
                seconds=self.idle_timeout,
                fix="the client stalled; it can ask again",
            )
        if seen and isinstance(exc, httpx.TransportError | httpx.DecodingError):
            if isinstance(exc, httpx.TimeoutException):
                return errors.IdleStreamTimeout(
                    f"the stream from {url} went silent for {self.idle_timeout:g} s",
                    url=url,
                    seconds=self.idle_timeout,
                    fix="the upstream stalled mid-answer; retry, or check the upstream",
                )
            return errors.UpstreamError(
                f"the stream from {url} broke off mid-answer ({exc})",
                url=url,
                fix="the upstream closed the connection early; retry, or check its logs",
            )
        timeout = self.connect_timeout
        if isinstance(exc, httpx.ReadTimeout):
            timeout = self.headers_timeout
        elif isinstance(exc, httpx.PoolTimeout):
            timeout = self.slot_timeout
        return translate(exc, url=url, headers_seen=seen, timeout=timeout)
