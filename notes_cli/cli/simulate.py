"""pdnotes engine simulate"""

from __future__ import annotations

from notes_cli.errors import PdnotesError


def simulate() -> None:
    """(being built)"""
    raise PdnotesError("pdnotes engine simulate is not built yet")
