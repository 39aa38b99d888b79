"""pdnotes demo"""

from __future__ import annotations

from notes_cli.errors import PdnotesError


def demo() -> None:
    """(being built)"""
    raise PdnotesError("pdnotes demo is not built yet")
