"""The text bench sends: synthetic prompts that defeat prefix caching unless asked not to.

A server with a prefix cache (vLLM's prefix caching, SGLang's radix cache, llama.cpp's slot
cache) prefills only the part of a prompt it has not seen. If every request sent the same text,
the benchmark would measure cache hits, not prefill. So each request's prompt is random words,
drawn from a generator seeded by (seed, salt, point, request index): unique per request and per
sweep point (a point's prompts would otherwise be cached by the point before it). `salt` is
fresh for every run unless the user fixed `--seed`, so a second run against the same server
does not find the first run's prompts in its cache either; a fixed `--seed` sends the same
prompts again, run after run (vLLM's random dataset uses random token ids for the same reason).

Caching is measured on purpose with a shared prefix: `shared_prefix` words common to every
request of a group (request i is in group i mod `prefix_groups`), then the request's own words.
Each sweep point has its own prefixes, so every point measures the same thing: the first
request of a group misses, the rest hit.
Multi-turn conversations (`turns` > 1) resend the growing history, the way chat and agents do:
turn t of a conversation carries every earlier question and answer, then a new question.

A trace's requests (`bench --trace`) carry Mooncake `hash_ids` instead: request i's prompt is
the text of its blocks in order, each block id always the same `block_words` words (drawn from
the run's stream and the id), so two prompts share text exactly where they share block ids and
the server's prefix cache sees the trace's reuse; the last block is cut to the prompt's length.

Lengths are in words of the list below, each one token in the common tokenizers (Llama, Gemma,
Qwen, GPT): "about N tokens", as `--input-len` always was.
"""

from __future__ import annotations

import random
from collections import OrderedDict
from dataclasses import dataclass

from notes_cli.errors import UsageError

# Common short English words, one token each in the usual BPE / SentencePiece vocabularies.
_WORD_LIST = """time year people way day man thing woman life child world school state family
    student
    group country problem hand part place case week company system program question work
    government number night point home water room mother area money story fact month lot right
    study book eye job word business issue side kind head house service friend father power hour
    game line end member law car city name team minute idea kid body back parent face others
    level office door health person art war history party result change morning reason research
    girl guy moment air teacher force education foot boy age policy music market sense nation
    plan college interest death experience effect use class control care field development role
    effort rate heart drug show leader light voice wife police mind price report decision son
    view relationship town road arm difference value building action model season society tax
    director position player record paper space ground form event official matter center couple
    site project activity star table need court oil situation cost industry figure street image
    phone data picture practice piece land product doctor wall patient worker news test movie
    north love support technology step baby computer type attention film tree source organization
    hair window evidence population truth song page material"""
WORDS = tuple(_WORD_LIST.split())


@dataclass(frozen=True)
class PromptSpec:
    """How prompts are made. `shared_prefix` words open every request of a group; the rest of
    each prompt is its own. `turns` > 1: requests are turns of conversations."""

    seed: int = 0
    shared_prefix: int = 0
    prefix_groups: int = 1
    turns: int = 1
    salt: str = ""  # run-unique unless --seed was given (new_salt)
    point: int = 0  # the sweep point, from 0: each point draws its own prompts
    # `bench --trace`: each request's block ids, and the words a block holds
    blocks: tuple[tuple[int, ...], ...] = ()
    block_words: int = 512

    def __post_init__(self) -> None:
        if self.shared_prefix < 0:
            raise UsageError("--shared-prefix must be 0 or more tokens")
        if self.prefix_groups < 1:
            raise UsageError("--prefix-groups must be at least 1")
        if self.turns < 1:
            raise UsageError("--turns must be at least 1")
        if self.block_words < 1:
            raise UsageError("a block holds at least one word")


def new_salt() -> str:
    """A salt no earlier run used: the default, so runs do not share prompts."""
    import secrets

    return secrets.token_hex(8)


def words(rng: random.Random, n: int) -> str:
    return " ".join(rng.choices(WORDS, k=n))


MAX_BLOCK_TEXTS = 4096  # block texts kept for reuse (a block's text is redrawn past this)


class PromptMaker:
    """The user text of request `index` (0-based, in sending order)."""

    def __init__(self, spec: PromptSpec) -> None:
        self.spec = spec
        self._prefixes: dict[int, str] = {}
        self._blocks: OrderedDict[int, list[str]] = OrderedDict()
        self._stream = f"{spec.seed}:{spec.salt}:{spec.point}"

    def text(self, index: int, input_tokens: int) -> str:
        spec = self.spec
        if index < len(spec.blocks) and spec.blocks[index]:
            return self._from_blocks(index, spec.blocks[index], input_tokens)
        rng = random.Random(f"{self._stream}:request:{index}")
        prefix_len = min(spec.shared_prefix, input_tokens)
        own = words(rng, input_tokens - prefix_len)
        if not prefix_len:
            return own
        prefix = self._prefix(index % spec.prefix_groups, prefix_len)
        return f"{prefix} {own}" if own else prefix

    def _prefix(self, group: int, n: int) -> str:
        key = group * 1_000_003 + n
        if key not in self._prefixes:
            rng = random.Random(f"{self._stream}:prefix:{group}")
            self._prefixes[key] = words(rng, n)
        return self._prefixes[key]

    def _from_blocks(self, index: int, ids: tuple[int, ...], input_tokens: int) -> str:
        """Every block but the last whole, the last cut to the length; a prompt longer than
        its blocks ends with words of its own."""
        per = self.spec.block_words
        whole = [word for block in ids[:-1] for word in self._block(block)]
        left = input_tokens - len(whole)
        last = self._block(ids[-1])[: max(1, min(per, left))]
        extra = left - len(last)
        own = words(random.Random(f"{self._stream}:request:{index}"), extra) if extra > 0 else ""
        return " ".join(whole + last + ([own] if own else []))

    def _block(self, block: int) -> list[str]:
        known = self._blocks
        found = known.get(block)
        if found is None:
            rng = random.Random(f"{self._stream}:block:{block}")
            found = known[block] = rng.choices(WORDS, k=self.spec.block_words)
            if len(known) > MAX_BLOCK_TEXTS:
                known.popitem(last=False)
        else:
            known.move_to_end(block)
        return found
