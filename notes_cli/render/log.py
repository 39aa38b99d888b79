"""Log lines on stderr (the bridge's): the one log handler that writes to the terminal."""

from __future__ import annotations

import logging
from collections.abc import Callable

from notes_cli.render import visible


class _Shown(logging.Formatter):
    """A log line with `scrub` applied (keys masked), its traceback included, and what an
    upstream or a client sent made `visible`."""

    def __init__(self, prefix: str, scrub: Callable[[str], str]) -> None:
        super().__init__(f"{prefix}: %(message)s")
        self._scrub = scrub

    def format(self, record: logging.LogRecord) -> str:
        return visible(self._scrub(super().format(record)))


def stderr_handler(prefix: str, scrub: Callable[[str], str]) -> logging.Handler:
    handler = logging.StreamHandler()
    handler.setFormatter(_Shown(prefix, scrub))
    return handler
