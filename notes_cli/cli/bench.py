"""pdnotes bench"""

from __future__ import annotations

from notes_cli.errors import PdnotesError


def bench() -> None:
    """(being built)"""
    raise PdnotesError("pdnotes bench is not built yet")
