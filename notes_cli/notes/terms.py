"""Matching a term against messy model text, in Chinese or English.

Both sides are NFKC-normalised (so full-width `ＴＴＦＴ` and `｜` become ASCII) and lower-cased.
Latin-only terms match as whole words, with spaces, hyphens and underscores interchangeable
(`compute-bound` = `Compute bound`), so a short term such as `tp` never matches inside `output`;
brackets and quotes between a term's words are skipped too (`(TP) interconnect` names
`TP interconnect`). Terms containing CJK characters match as substrings once whitespace,
hyphens, brackets and quotes are removed, since Chinese text has no word boundaries.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable
from functools import lru_cache

_SEPARATORS = re.compile(r"[\s\-_·・]+")
# Between a term's words in the text: separators, brackets and quotes (one character class).
_INSIDE = r"[\s\-_·・()（）\[\]【】「」\"'“”‘’]"
_LOOSE = re.compile(_INSIDE + "+")
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")


@lru_cache(maxsize=16)
def normalize(text: str) -> str:
    """NFKC + lower case: the form every comparison works on. Cached because the rubric
    matches dozens of terms against the same cell text: without it a 1 MB answer spent 2.3 s
    normalising the same text again per term (benchmarks/notes_parse/run.py)."""
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
def _latin_pattern(term: str) -> tuple[str, re.Pattern[str]]:
    """The term's first word (a plain `in` test rules most texts out far faster than the
    regex's scan) and the whole-word pattern."""
    words = [w for w in _SEPARATORS.split(normalize(term).strip()) if w]
    pattern = r"(?<![a-z0-9])" + (_INSIDE + "*").join(map(re.escape, words)) + r"(?![a-z0-9])"
    return (words[0] if words else ""), re.compile(pattern)


@lru_cache(maxsize=16)
def _squash(text: str) -> str:
    return _SEPARATORS.sub("", normalize(text))


@lru_cache(maxsize=16)
def _squash_loose(text: str) -> str:
    return _LOOSE.sub("", normalize(text))


def contains_term(text: str, term: str) -> bool:
    """True if `term` occurs in `text` under the rules in the module docstring."""
    if not term.strip():
        return False
    if has_cjk(term):
        return _squash_loose(term) in _squash_loose(text)
    first_word, pattern = _latin_pattern(term)
    haystack = normalize(text)
    return first_word in haystack and pattern.search(haystack) is not None


def first_match(text: str, terms: Iterable[str]) -> str | None:
    """The first of `terms` found in `text`, or None."""
    for term in terms:
        if contains_term(text, term):
            return term
    return None


def same_label(label: str, terms: Iterable[str]) -> bool:
    """True if a header label *is* one of `terms` (not merely contains it), ignoring case,
    width, spaces, hyphens, bold markers and a trailing colon or parenthetical."""
    core = _squash(_MARKERS.sub("", label))
    core = _without_trailing_parenthetical(core)
    return any(core == _squash(term) for term in terms)


_MARKERS = re.compile(r"[*_`:：]++")
_OPENERS = re.compile(r"[(（\[【]")
_CLOSERS = ")）]】"


def _without_trailing_parenthetical(core: str) -> str:
    """`core` without the part from its first opening bracket to a closing one at its end
    (`阶段(stage)` → `阶段`), or `core` unchanged if nothing would be left. Done with one
    search instead of the regex `[(…].*?[)…]$`, which restarted its scan to the end at every
    opening bracket: 88 s on a header cell of 40 KB of `(` (issue 11)."""
    if not core or core[-1] not in _CLOSERS:
        return core
    opener = _OPENERS.search(core, 0, len(core) - 1)
    return core[: opener.start()] or core if opener else core
