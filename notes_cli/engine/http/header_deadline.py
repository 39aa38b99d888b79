"""A deadline for reading a request's headers, which uvicorn does not have.

uvicorn arms its keep-alive timer only after a response, and any byte received cancels it: a
connection that opens and sends nothing, or sends its headers one byte a minute (slowloris),
is held forever. Here the deadline starts when the connection opens and again at each request's
first byte, is not reset by later bytes, and ends when the headers are complete; if it fires
first, the connection is closed. Requests being answered are never cut.
"""

from __future__ import annotations

import asyncio
from typing import Any


def with_header_deadline(http: str, seconds: float) -> Any:
    """uvicorn's `http` setting: the httptools protocol class with the deadline, or `http`
    unchanged when it is h11 (httptools is a runtime dependency; h11 is only the fallback)."""
    if http != "httptools" or seconds <= 0:
        return http
    from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

    class DeadlineProtocol(HttpToolsProtocol):
        _header_deadline: asyncio.TimerHandle | None = None

        def _arm(self) -> None:
            if self._header_deadline is None:
                self._header_deadline = self.loop.call_later(seconds, self._headers_overdue)

        def _disarm(self) -> None:
            if self._header_deadline is not None:
                self._header_deadline.cancel()
                self._header_deadline = None

        def _headers_overdue(self) -> None:
            self._header_deadline = None
            busy = self.cycle is not None and not self.cycle.response_complete
            if not busy and not self.transport.is_closing():
                self.transport.close()

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            self._arm()

        def connection_lost(self, exc: Exception | None) -> None:
            self._disarm()
            super().connection_lost(exc)

        def on_message_begin(self) -> None:
            super().on_message_begin()
            self._arm()

        def on_headers_complete(self) -> None:
            self._disarm()
            super().on_headers_complete()

    return DeadlineProtocol
