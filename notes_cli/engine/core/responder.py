"""What the mock engine says: deterministic text for a seed, exact echoes when asked to repeat.

Order of precedence for the last user message (the newest one that is not only
`<system-reminder>` blocks, which clients append after the prompt):
1. the knowledge the responder was given, when it answers (the live engine gives the notes
   knowledge base, `notes_cli.notes.knowledge.answer_messages`: a note kit's table when the
   conversation's instruction asks for one; sources in it are only material);
2. an echo when the message asks to repeat or say something ("say pong", "repeat: X",
   "Repeat this sentence: X", "重复：X", or a quoted text after such a verb);
3. otherwise two or three sentences about PD serving from templates/engine/answers.toml, picked
   by a generator seeded with the engine seed and the prompt, in Chinese when the prompt is.
The answer is cut at `max_tokens` (finish reason "length").
"""

from __future__ import annotations

import random
import re
import tomllib
import zlib
from collections.abc import Callable, Sequence
from functools import lru_cache
from typing import Any

from notes_cli.engine.core.api import ChatMessage, FinishReason
from notes_cli.engine.core.tokens import tokenize
from notes_cli.resources import template_path

_QUOTED = re.compile(r"\"([^\"\n]+)\"|“([^”\n]+)”|「([^」\n]+)」|'([^'\n]+)'|`([^`\n]+)`")
_REPEAT_EN = (
    r"repeat(?:\s+(?:this|the|after\s+me|back))?(?:\s+(?:sentence|text|phrase|words?))?"
    r"|echo(?:\s+back)?"
)
_SAY_EN = r"say|(?:reply|respond|answer)\s+with(?:\s+exactly)?|output(?:\s+exactly)?"
_ECHO_EN = re.compile(
    rf"^\s*(?:please\s+)?(?:(?P<repeat>{_REPEAT_EN})|(?P<say>{_SAY_EN}))\s*[:：,]?\s*"
    r"(?P<text>.+)$",
    re.IGNORECASE,
)
_ECHO_ZH = re.compile(
    r"^\s*(?:请)?(?:(?P<repeat>重复|复述|跟我说)|(?P<say>说|回复|回答))(?:一遍)?"
    r"(?:这句话|下面这句话|以下内容)?\s*[:：,，]?\s*(?P<text>.+)$"
)
_SHORT_REPLY_WORDS = 3  # "say pong." answers "pong": a short reply loses its final full stop
_HAS_CJK = re.compile(r"[\u3400-\u9fff]")
_REMINDER_OPEN, _REMINDER_CLOSE = "<system-reminder>", "</system-reminder>"


Knowledge = Callable[[Sequence[tuple[str, str]], int], str | None]
"""(each message's role and text, the seed) → an answer, or None to answer otherwise."""


@lru_cache(maxsize=1)
def _answers() -> dict[str, Any]:
    with template_path("engine", "answers.toml").open("rb") as fh:
        return tomllib.load(fh)


def without_reminders(text: str) -> str:
    """`text` without its `<system-reminder>…</system-reminder>` blocks. Linear, unlike the
    lazy pattern it replaces, which scanned to the end of a prompt from every opening tag
    that is never closed (a client of the engine chooses the prompt)."""
    pieces: list[str] = []
    at = 0
    while (start := text.find(_REMINDER_OPEN, at)) >= 0:
        end = text.find(_REMINDER_CLOSE, start + len(_REMINDER_OPEN))
        if end < 0:
            break  # no later opening tag is closed either
        pieces.append(text[at:start])
        at = end + len(_REMINDER_CLOSE)
    return "".join(pieces) + text[at:] if pieces else text


def echo_request(text: str) -> str | None:
    """The text a message asks to have repeated, or None. Looks at the last line that asks."""
    text = without_reminders(text)
    for line in reversed([ln.rstrip() for ln in text.splitlines() if ln.strip()]):
        # (stripped here, not by `\s*$` after a lazy `.+?`: that was quadratic in a line's
        # inner spaces)
        match = _ECHO_EN.match(line) or _ECHO_ZH.match(line)
        if not match:
            continue
        body = match.group("text")
        quoted = _QUOTED.fullmatch(body.rstrip(".。!！"))
        if quoted:
            return next(g for g in quoted.groups() if g is not None)
        if match.group("say") and len(body.split()) <= _SHORT_REPLY_WORDS:
            return body.rstrip(".。!！")
        return body
    return None


_SMOKE_NONCE = re.compile(r"(?:^|(?<=[>\n]))\([0-9a-f]{6}\) ")  # (after a client's reminders)
"""The nonce `pdnotes smoke` puts before each run's prompt (`smoke.fresh_prompt`), so that a
server's prefix cache serves no run from another's: the mock engine answers the question
behind it, the same every run (for a seed), as it did before the nonce."""


class Responder:
    """Answers for the mock engine; the same seed and messages always give the same tokens."""

    def __init__(self, seed: int = 0, knowledge: Knowledge | None = None) -> None:
        self.seed = seed
        self.knowledge = knowledge

    def warm_up(self) -> None:
        """Load the data files now, so the first request is not slower than the rest."""
        _answers()
        if self.knowledge is not None:
            self.knowledge([("user", "")], self.seed)

    def respond(
        self,
        messages: Sequence[ChatMessage],
        max_tokens: int,
        *,
        answer: str | None = None,
        ignore_eos: bool = False,
    ) -> tuple[list[str], FinishReason]:
        """(tokens, finish reason); "".join(tokens) is the answer text (`answer` when given).
        With `ignore_eos` the responder's answer goes on (the text again, from its start) to
        `max_tokens`; an exact `answer` (a tool call's arguments) is left whole."""
        text = self.answer_text(messages) if answer is None else answer
        tokens = tokenize(text)
        ignore_eos = ignore_eos and answer is None
        if ignore_eos and tokens and len(tokens) < max_tokens:
            again = tokenize(" " + text)
            tokens += again * -(-(max_tokens - len(tokens)) // len(again))
        if max_tokens < len(tokens) or (ignore_eos and tokens):
            return tokens[: max(0, max_tokens)], "length"
        return tokens, "stop"

    def answer_text(self, messages: Sequence[ChatMessage]) -> str:
        prompt = "\n\n".join(m.text for m in messages if m.text)
        users = [m.text for m in reversed(messages) if m.role == "user"]
        # the newest message the user wrote: clients (Kimi Code) append user messages that hold
        # only <system-reminder> blocks after the prompt
        last_user = next(
            (t for t in users if without_reminders(t).strip()), users[0] if users else prompt
        )
        if self.knowledge is not None:
            known = self.knowledge([(m.role, m.text) for m in messages if m.text], self.seed)
            if known is not None:
                return known
        echo = echo_request(last_user)
        if echo is not None:
            return echo
        return self._default_answer(last_user)

    def _default_answer(self, prompt: str) -> str:
        prompt = _SMOKE_NONCE.sub("", prompt, count=1)  # the same question, the same answer
        lang = "zh" if _HAS_CJK.search(without_reminders(prompt)) else "en"
        data = _answers()[lang]
        rng = random.Random(self.seed * 1_000_003 + zlib.crc32(prompt.encode("utf-8")))
        opening = rng.choice(data["opening"])
        picked = rng.sample(data["sentences"], k=2 + rng.randrange(2))
        joiner = "" if lang == "zh" else " "
        return joiner.join([opening, *picked])
