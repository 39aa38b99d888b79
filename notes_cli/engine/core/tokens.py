"""The mock engine's token counting: simple, documented and reversible.

A token is one of:
- a CJK character (Han, Hiragana, Katakana, Hangul, CJK punctuation and full-width forms): each
  character counts one token, as BPE tokenizers roughly do for Chinese;
- a word: a run of letters, digits or underscores (non-CJK);
- any other single non-space character (punctuation, symbols, emoji).
Whitespace is attached to the front of the token that follows it (a trailing run of whitespace
joins the last token), so "".join(tokenize(text)) == text for every text. An English word counts
one token where real tokenizers average ~1.3; prompts of code or prose are therefore slightly
under-counted, which docs/engine-model.md states.
"""

from __future__ import annotations

import functools
import re

_CJK = (
    "\u2e80-\u2fdf\u3000-\u303f\u3040-\u30ff\u3100-\u312f\u3130-\u318f\u31a0-\u31ff"
    "\u3200-\u4dbf\u4e00-\u9fff\ua960-\ua97f\uac00-\ud7af\uf900-\ufaff\ufe30-\ufe4f\uff00-\uffef"
)
_TOKEN = re.compile(rf"\s*(?:[{_CJK}]|[^\W{_CJK}]+|[^\w\s])|\s+$")
_COUNT = re.compile(rf"[{_CJK}]|[^\W{_CJK}]+|[^\w\s]")


def tokenize(text: str) -> list[str]:
    """Split `text` into tokens whose concatenation is exactly `text`."""
    tokens = _TOKEN.findall(text)
    if len(tokens) > 1 and tokens[-1].isspace():
        tail = tokens.pop()
        tokens[-1] += tail
    return tokens


@functools.lru_cache(maxsize=64)
def count_tokens(text: str) -> int:
    """Number of tokens in `text` (see the module docstring for the rule).

    Cached: the HTTP layer and the engine both count every message of a request, and agents
    resend the same long system prompt (tens of KB, milliseconds to scan) with every turn."""
    return len(_COUNT.findall(text))
