"""Locate the data shipped with pdnotes (prompts/ and templates/).

In a source checkout they sit at the repository root; in a wheel they are the data-only packages
notes_cli/prompts and notes_cli/templates. Callers never care which.
"""

from __future__ import annotations

from pathlib import Path

_PACKAGE_DIR = Path(__file__).resolve().parent


def data_dir(name: str) -> Path:
    """Return the folder holding shipped data `name` ("prompts" or "templates")."""
    for candidate in (_PACKAGE_DIR / name, _PACKAGE_DIR.parent / name):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError(f"pdnotes data folder {name!r} is missing from the installation")


def template_path(*parts: str) -> Path:
    return data_dir("templates").joinpath(*parts)


def prompts_path(*parts: str) -> Path:
    return data_dir("prompts").joinpath(*parts)
