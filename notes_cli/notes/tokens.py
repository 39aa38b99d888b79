"""How many tokens a text is, estimated without a tokenizer (budgets, cuts, reading plans).
Its own module because every part of notes/ measures text, and none should import another
part (sources, pages, documents) for it."""

from __future__ import annotations

import re

# Runs, not characters: a CJK text is one match, not one per character (10 MB sources).
_CJK_RUN = re.compile(r"[\u3000-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uff00-\uffef]+")


def estimate_tokens(text: str) -> int:
    """A tokenizer-free estimate: one token per CJK character, one per four other characters.
    Close enough for budgeting; real tokenizers differ by model."""
    cjk = len(text) - len(_CJK_RUN.sub("", text))
    return cjk + (len(text) - cjk + 3) // 4
