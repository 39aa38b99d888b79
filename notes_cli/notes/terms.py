"""Matching a term against messy model text, in Chinese or English.

Both sides are NFKC-normalised (so full-width `ＴＴＦＴ` and `｜` become ASCII) and lower-cased.
Latin-only terms match as whole words, with spaces, hyphens and underscores interchangeable
(`compute-bound` = `Compute bound`), so a short term such as `tp` never matches inside `output`.
Terms containing CJK characters match as substrings once whitespace and hyphens are removed,
since Chinese text has no word boundaries.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable
from functools import lru_cache

_SEPARATORS = re.compile(r"[\s\-_·・]+")
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")


def normalize(text: str) -> str:
    """NFKC + lower case: the form every comparison works on."""
    return unicodedata.normalize("NFKC", text).lower()


def has_cjk(text: str) -> bool:
    return bool(_CJK.search(text))


def cjk_ratio(text: str) -> float:
    """Share of CJK characters among the letters of `text` (0.0 for empty text)."""
    letters = [c for c in text if c.isalpha()]
    if not letters:
        return 0.0
    return sum(1 for c in letters if _CJK.match(c)) / len(letters)


@lru_cache(maxsize=4096)
def _latin_pattern(term: str) -> re.Pattern[str]:
    words = [re.escape(w) for w in _SEPARATORS.split(normalize(term).strip()) if w]
    return re.compile(r"(?<![a-z0-9])" + r"[\s\-_]*".join(words) + r"(?![a-z0-9])")


def _squash(text: str) -> str:
    return _SEPARATORS.sub("", normalize(text))


def contains_term(text: str, term: str) -> bool:
    """True if `term` occurs in `text` under the rules in the module docstring."""
    if not term.strip():
        return False
    if has_cjk(term):
        return _squash(term) in _squash(text)
    return _latin_pattern(term).search(normalize(text)) is not None


def first_match(text: str, terms: Iterable[str]) -> str | None:
    """The first of `terms` found in `text`, or None."""
    for term in terms:
        if contains_term(text, term):
            return term
    return None


def same_label(label: str, terms: Iterable[str]) -> bool:
    """True if a header label *is* one of `terms` (not merely contains it), ignoring case,
    width, spaces, hyphens, bold markers and a trailing colon or parenthetical."""
    core = _squash(re.sub(r"[*_`:：]+", "", label))
    core = re.sub(r"[(（\[【].*?[)）\]】]$", "", core) or core
    return any(core == _squash(term) for term in terms)
