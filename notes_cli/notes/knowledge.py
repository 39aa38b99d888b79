"""The mock engine's knowledge base: answers a note kit's prompt from a data file of facts.

The engine's responder calls `answer_for(prompt, seed)` for every request. For a prompt that a
bundled kit's `knowledge.toml` recognises (the kit prompt in either language, or a repair
request that restates its columns) it returns a complete answer: a table of the article's facts
whose formatting varies with `seed` — fenced or not, prose before and after, bold stage names,
`<br>` or semicolons inside cells, full-width pipes, missing outer pipes — so the note parser
meets the shapes real models produce. Every variant contains the same facts and passes the
kit's rubric. Any other prompt gets None (the responder then answers generically).
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from notes_cli.notes.terms import contains_term


@dataclass(frozen=True)
class _Knowledge:
    kit: str
    recognise: tuple[tuple[str, ...], ...]
    zh_markers: tuple[str, ...]
    columns: tuple[str, ...]
    headers: dict[str, tuple[str, ...]]
    intro: dict[str, tuple[str, ...]]
    outro: dict[str, tuple[str, ...]]
    rows: tuple[dict[str, Any], ...]

    def recognises(self, prompt: str) -> bool:
        return all(any(contains_term(prompt, t) for t in group) for group in self.recognise)

    def language(self, prompt: str) -> str:
        return "zh" if any(m in prompt for m in self.zh_markers) else "en"


@dataclass(frozen=True)
class _Style:
    fenced: bool
    intro: bool
    outro: bool
    bold_stage: bool
    joiner: str
    pipes: str  # "ascii" | "fullwidth" | "no-outer"
    aligned_separator: bool
    optional_rows: int


# The words before the kit ("note kit", "笔记套件") are bounded: unbounded, every "pdnotes map
# step" of a prompt repeating it scanned to the prompt's end (200 KB took 30 s in the engine).
_MAP_STEP = re.compile(
    r"pdnotes map step \d{1,9}+ of \d{1,9}+\s*+[(（][^)）:：]{0,100}+[:：]\s*+([\w.-]++)"
)
_SENTENCE = re.compile(r"(?<=[.!?。！？；;])\s*")
_MAX_FACTS = 60


def answer_for(prompt_text: str, seed: int = 0) -> str | None:
    """The engine's answer to a known note-kit prompt, or None for any other prompt. A map
    step (notes/reading.py) gets the passages' relevant sentences as cited facts; a note prompt
    with passages or facts gets the table with those citations in its cells."""
    from notes_cli.notes.passages import labelled_texts

    step = _MAP_STEP.search(prompt_text)
    if step:
        return _map_answer(step.group(1), labelled_texts(prompt_text))
    for knowledge in _all_knowledge():
        if knowledge.recognises(prompt_text):
            evidence = labelled_texts(prompt_text)
            lang = knowledge.language(prompt_text)
            return _render(knowledge, lang, random.Random(seed), evidence)
    return None


def _map_answer(kit_name: str, passages: list[tuple[Any, str]]) -> str:
    """Every sentence of the passages that names one of the kit's terms, cited by label."""
    terms = _kit_terms(kit_name)
    facts: list[str] = []
    for ref, text in passages:
        for sentence in _SENTENCE.split(" ".join(text.split())):
            if len(facts) >= _MAX_FACTS:
                break
            if sentence and any(contains_term(sentence, t) for t in terms):
                fact = f"- {sentence} [{ref.label}]"
                if fact not in facts:
                    facts.append(fact)
    return "\n".join(facts or ["- (none)"]) + "\n"


@lru_cache(maxsize=8)
def _kit_concepts(kit_name: str) -> tuple[tuple[str, ...], ...]:
    """The synonyms of every concept of the kit's rubric, one tuple per concept."""
    from notes_cli.errors import PdnotesError
    from notes_cli.notes.kits import load_kit

    try:
        kit = load_kit(kit_name)
    except PdnotesError:
        return ()
    return tuple(c.synonyms + (c.label,) for row in kit.rubric.rows for c in row.concepts)


@lru_cache(maxsize=8)
def _kit_terms(kit_name: str) -> tuple[str, ...]:
    """Every term a map step looks for: the concepts and the row names (`decode`, …)."""
    from notes_cli.errors import PdnotesError
    from notes_cli.notes.kits import load_kit

    try:
        rows = [t for row in load_kit(kit_name).rubric.rows for t in row.match]
    except PdnotesError:  # a map prompt naming a kit this engine does not know
        return ()
    concepts = [t for concept in _kit_concepts(kit_name) for t in concept]
    return tuple(dict.fromkeys(concepts + rows))


def _cite(item: str, kit_name: str, evidence: list[tuple[Any, str]]) -> str:
    """`item` with the label of the first passage or fact that states a concept it names."""
    if not evidence:
        return item
    for concept in _kit_concepts(kit_name):
        if not any(contains_term(item, term) for term in concept):
            continue
        for ref, text in evidence:
            if any(contains_term(text, term) for term in concept):
                return f"{item} [{ref.label}]"
    return item


def _render(
    knowledge: _Knowledge,
    lang: str,
    rng: random.Random,
    evidence: list[tuple[Any, str]] | None = None,
) -> str:
    style = _Style(
        fenced=rng.random() < 0.4,
        intro=rng.random() < 0.7,
        outro=rng.random() < 0.5,
        bold_stage=rng.random() < 0.5,
        joiner=rng.choice(["<br>", "<br>", "；" if lang == "zh" else "; ", "<br>• "]),
        pipes=rng.choice(["ascii", "ascii", "fullwidth", "no-outer"]),
        aligned_separator=rng.random() < 0.3,
        optional_rows=rng.randint(0, 2),
    )
    rows = [r for r in knowledge.rows if r["required"]]
    rows += [r for r in knowledge.rows if not r["required"]][: style.optional_rows]
    cited = [
        {key: [_cite(item, knowledge.kit, evidence or []) for item in items]
         for key, items in row[lang].items()}
        for row in rows
    ]  # fmt: skip
    table = _table(knowledge.headers[lang], knowledge.columns, cited, style)
    if style.fenced:
        table = f"```markdown\n{table}\n```"
    parts = [table]
    if style.intro:
        parts.insert(0, rng.choice(knowledge.intro[lang]))
    if style.outro:
        parts.append(rng.choice(knowledge.outro[lang]))
    return "\n\n".join(parts) + "\n"


def _table(
    header: tuple[str, ...], keys: tuple[str, ...], rows: list[dict[str, list[str]]], style: _Style
) -> str:
    separator = [":---" if style.aligned_separator else "---"] * len(header)
    lines = [_line(list(header), style), _line(separator, style)]
    for row in rows:
        cells = [_join(row[key], style.joiner) for key in keys]
        if style.bold_stage:
            cells[0] = f"**{cells[0]}**"
        lines.append(_line(cells, style))
    return "\n".join(lines)


def _join(items: list[str], joiner: str) -> str:
    """Cell items joined; a bulleted joiner also bullets the first item when there are several."""
    bullet = joiner.removeprefix("<br>")
    if bullet and len(items) > 1 and joiner.startswith("<br>"):
        return bullet + joiner.join(items)
    return joiner.join(items)


def _line(cells: list[str], style: _Style) -> str:
    if style.pipes == "no-outer":
        return " | ".join(cells)
    pipe = "｜" if style.pipes == "fullwidth" else "|"
    return f"{pipe} " + f" {pipe} ".join(cells) + f" {pipe}"


@lru_cache(maxsize=1)
def _all_knowledge() -> tuple[_Knowledge, ...]:
    from notes_cli.resources import data_dir

    return tuple(_load(path) for path in sorted(data_dir("prompts").glob("*/knowledge.toml")))


def _load(path: Path) -> _Knowledge:
    import tomllib

    with path.open("rb") as handle:
        data = tomllib.load(handle)
    return _Knowledge(
        kit=data["kit"],
        recognise=tuple(tuple(group) for group in data["recognise"]),
        zh_markers=tuple(data["zh_markers"]),
        columns=tuple(data["columns"]),
        headers={lang: tuple(cells) for lang, cells in data["headers"].items()},
        intro={lang: tuple(p["intro"]) for lang, p in data["prose"].items()},
        outro={lang: tuple(p["outro"]) for lang, p in data["prose"].items()},
        rows=tuple(data["rows"]),
    )
