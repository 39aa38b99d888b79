"""pdnotes smoke"""

from __future__ import annotations

from notes_cli.errors import PdnotesError


def smoke() -> None:
    """(being built)"""
    raise PdnotesError("pdnotes smoke is not built yet")
