"""How the user's reading reaches the model: whole, cut (only when asked), or map-reduce.

When the passages fit `--max-source-tokens` they go into the note's prompt as they are. When
they do not, the default is map-reduce: the passages are grouped into map requests that each
fit the budget (each passage → the facts relevant to the kit's columns, cited by label), and
the facts go into the note's prompt (the reduce step). `--cut` instead keeps each source's
first passages within a fair share of the budget and says exactly what was left out. The plan
— passages, calls, estimated input tokens — is known before any request, and `--max-calls`
bounds it: a plan that needs more calls is refused before the first one.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from string import Template
from typing import Any, Literal, Protocol

from notes_cli.errors import UsageError
from notes_cli.notes.documents import Document
from notes_cli.notes.kits import Kit
from notes_cli.notes.passages import Passage, passages_block, split_passages
from notes_cli.notes.tokens import estimate_tokens

ReadingMode = Literal["none", "whole", "cut", "map-reduce"]
DEFAULT_MAX_CALLS = 12
_MAP_OVERHEAD_TOKENS = 250  # the map instructions around the passages


@dataclass(frozen=True)
class ReadingPlan:
    mode: ReadingMode
    documents: tuple[Document, ...]
    passages: tuple[Passage, ...]  # every passage of every source
    kept: tuple[Passage, ...]  # what goes into the note's prompt itself (whole or cut)
    batches: tuple[tuple[Passage, ...], ...]  # map requests (map-reduce only)
    budget: int
    max_output_tokens: int = 0

    @property
    def total_tokens(self) -> int:
        return sum(p.tokens for p in self.passages)

    @property
    def calls(self) -> int:
        """Requests before any repair: the map requests plus the note itself."""
        return len(self.batches) + 1

    @property
    def dropped(self) -> tuple[Passage, ...]:
        if self.mode != "cut":
            return ()
        kept = set(map(id, self.kept))
        return tuple(p for p in self.passages if id(p) not in kept)

    def estimated_input_tokens(self, kit_prompt_tokens: int) -> int:
        """Input tokens over all requests (maps, then the note with its sources or facts)."""
        if self.mode == "map-reduce":
            maps = sum(sum(p.tokens for p in b) + _MAP_OVERHEAD_TOKENS for b in self.batches)
            facts = min(self.budget, self.max_output_tokens * len(self.batches))
            return maps + kit_prompt_tokens + facts
        return kit_prompt_tokens + sum(p.tokens for p in self.kept)


def plan_reading(
    documents: list[Document],
    budget: int,
    *,
    cut: bool = False,
    max_calls: int = DEFAULT_MAX_CALLS,
    max_output_tokens: int = 4096,
) -> ReadingPlan:
    """Decide how the sources reach the model. Raises UsageError when map-reduce would need
    more than `max_calls` requests (before any is made)."""
    if not documents:
        return ReadingPlan("none", (), (), (), (), budget, max_output_tokens)
    passage_tokens = max(50, min(1200, budget - _MAP_OVERHEAD_TOKENS if budget > 600 else budget))
    passages = tuple(split_passages(documents, passage_tokens))
    total = sum(p.tokens for p in passages)
    docs = tuple(documents)
    if total <= budget:
        return ReadingPlan("whole", docs, passages, passages, (), budget, max_output_tokens)
    if cut:
        kept = _fair_cut(passages, len(documents), budget)
        return ReadingPlan("cut", docs, passages, kept, (), budget, max_output_tokens)
    batches = _batches(passages, max(1, budget - _MAP_OVERHEAD_TOKENS))
    plan = ReadingPlan("map-reduce", docs, passages, (), batches, budget, max_output_tokens)
    if plan.calls > max_calls:
        raise UsageError(
            f"the sources are ~{total:,} tokens, over --max-source-tokens {budget:,}: reading "
            f"them needs {plan.calls} requests ({len(batches)} map + 1 note), over "
            f"--max-calls {max_calls}",
            fix=f"pass --max-calls {plan.calls}, raise --max-source-tokens, or --cut to keep "
            "only what fits",
        )
    return plan


def _batches(passages: tuple[Passage, ...], limit: int) -> tuple[tuple[Passage, ...], ...]:
    batches: list[tuple[Passage, ...]] = []
    current: list[Passage] = []
    size = 0
    for passage in passages:
        if current and size + passage.tokens > limit:
            batches.append(tuple(current))
            current, size = [], 0
        current.append(passage)
        size += passage.tokens
    if current:
        batches.append(tuple(current))
    return tuple(batches)


def _fair_cut(passages: tuple[Passage, ...], sources: int, budget: int) -> tuple[Passage, ...]:
    """Each source's first passages within an equal share of the budget; a source that needs
    less than its share leaves the rest to the others."""
    from notes_cli.notes.sources import _fair_shares

    sizes = [sum(p.tokens for p in passages if p.source == n) for n in range(1, sources + 1)]
    shares = _fair_shares(sizes, budget)
    kept: list[Passage] = []
    for number, share in enumerate(shares, start=1):
        used = 0
        for passage in (p for p in passages if p.source == number):
            if used + passage.tokens > share:
                break
            kept.append(passage)
            used += passage.tokens
    return tuple(kept)


# --- prompts -------------------------------------------------------------------------------------


def sources_text(plan: ReadingPlan, lang: str) -> str:
    """What the note's own prompt adds for the sources: the passages (whole or cut)."""
    if not plan.kept:
        return ""
    return _template(f"sources.{_lang(lang)}.md").substitute(sources=passages_block(plan.kept))


def map_prompt(kit: Kit, lang: str, batch: tuple[Passage, ...], step: int, total: int) -> str:
    separator = "、" if lang == "zh" else ", "
    return (
        _template(f"map.{_lang(lang)}.md")
        .substitute(
            step=step,
            total=total,
            kit=kit.name,
            columns=" | ".join(c.label(lang) for c in kit.columns),
            rows=separator.join(r.label for r in kit.rubric.rows if r.required),
            passages=passages_block(batch),
        )
        .strip()
    )


def reduce_text(plan: ReadingPlan, facts: list[str], lang: str) -> str:
    """The facts the map steps found, for the note's prompt."""
    names = ", ".join(f"S{n} = {d.name}" for n, d in enumerate(plan.documents, start=1))
    body = "\n".join(facts) if facts else "- (none)"
    return _template(f"reduce.{_lang(lang)}.md").substitute(facts=body, names=names).rstrip()


def facts_of(answer: str) -> list[str]:
    """The fact lines of a map answer (`- fact [S1 p.3]`), without the empty '(none)'."""
    facts = []
    for line in answer.splitlines():
        stripped = line.strip()
        if not stripped.startswith(("-", "•", "*")):
            continue
        fact = stripped.lstrip("-•* ").strip()
        if fact and fact.strip("()（）").lower() not in ("none", "无"):
            facts.append(f"- {fact}")
    return facts


def fit_facts(facts: list[str], budget: int) -> tuple[list[str], int]:
    """The facts that fit `budget` tokens, in order, and how many were left out."""
    kept: list[str] = []
    used = 0
    for fact in facts:
        tokens = estimate_tokens(fact) + 1
        if used + tokens > budget:
            break
        kept.append(fact)
        used += tokens
    return kept, len(facts) - len(kept)


class MapObserver(Protocol):
    def map_started(self, step: int, total: int, labels: list[str], tokens: int) -> None: ...

    def chunk(self, text: str, elapsed_ms: float) -> None: ...

    def map_finished(self, step: int, facts: int, output_tokens: int) -> None: ...


@dataclass
class MapResult:
    facts: list[str] = field(default_factory=list)
    answers: list[dict[str, Any]] = field(default_factory=list)
    dropped_facts: int = 0


def run_map(
    plan: ReadingPlan,
    kit: Kit,
    lang: str,
    client: Any,
    *,
    observer: MapObserver,
    max_tokens: int,
) -> MapResult:
    """The map steps, one request per batch, streamed with progress. Returns the facts (fit
    to the budget, with how many did not fit)."""
    result = MapResult()
    total = len(plan.batches)
    for step, batch in enumerate(plan.batches, start=1):
        prompt = map_prompt(kit, lang, batch, step, total)
        observer.map_started(step, total, [p.label for p in batch], estimate_tokens(prompt))
        streamed = client.stream(
            [{"role": "user", "content": prompt}], max_tokens=max_tokens, on_chunk=observer.chunk
        )
        facts = facts_of(streamed.text)
        observer.map_finished(step, len(facts), streamed.output_tokens)
        result.facts.extend(facts)
        result.answers.append(
            {
                "step": step,
                "passages": [p.label for p in batch],
                "facts": len(facts),
                "output_tokens": streamed.output_tokens,
                "finish_reason": streamed.finish_reason,
            }
        )
    result.facts, result.dropped_facts = fit_facts(_unique(result.facts), plan.budget)
    return result


def _unique(facts: list[str]) -> list[str]:
    seen: set[str] = set()
    return [f for f in facts if not (f in seen or seen.add(f))]  # type: ignore[func-returns-value]


def _template(name: str) -> Template:
    from notes_cli.resources import template_path

    return Template(template_path("notes", name).read_text(encoding="utf-8"))


def _lang(lang: str) -> str:
    return "zh" if lang == "zh" else "en"
