"""pdnotes doctor"""

from __future__ import annotations

from notes_cli.errors import PdnotesError


def doctor() -> None:
    """(being built)"""
    raise PdnotesError("pdnotes doctor is not built yet")
