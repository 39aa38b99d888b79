"""The mock engine's knowledge base: answers a note kit's prompt from a data file of facts.

The engine's responder calls `answer_messages(messages, seed)` for every request. It reads each
user (or system) message as an instruction followed by material: the material starts at the
first passage header (`[S1 p.3] paper.pdf`) or cited fact line (`- fact [S1 p.3]`) and runs to
the end of that message. Only the instruction decides what to answer: the kit is the one whose
columns the instruction asks for (`Stage | Bottleneck | …`, the last such request wins; without
one, the kit's `recognise` terms, again in the instruction only), the language is the language
of those columns, and a request that follows an earlier answer (a repair) gets the table alone,
without prose. Words in the material never choose the kit: a web page about KV-cache libraries
does not turn a pd-disagg request into a kv-transfer table.

The material is used as material: an item of the knowledge base that a passage holds as written
(notes/claims.py `holds`) is cited with that passage's label; an item naming a rubric concept
that a passage sentence states is replaced by that sentence, cited; any other item stays the
engine's own, uncited. So every citation points at the page or source that really says it.

The formatting varies with `seed` — fenced or not, prose before and after, bold stage names,
`<br>` or semicolons inside cells, full-width pipes, missing outer pipes — so the note parser
meets the shapes real models produce. Every variant contains the same facts and passes the
kit's rubric. Any other prompt gets None (the responder then answers generically).
"""

from __future__ import annotations

import random
import re
from collections.abc import Sequence
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
_MAX_ITEM_WORDS = 40
_INSTRUCTING = ("user", "system", "developer")  # the roles whose words can ask for a table


def answer_for(prompt_text: str, seed: int = 0) -> str | None:
    """The engine's answer to a single user message (see `answer_messages`)."""
    return answer_messages([("user", prompt_text)], seed)


def answer_messages(messages: Sequence[tuple[str, str]], seed: int = 0) -> str | None:
    """The engine's answer to a conversation of (role, text) pairs, or None when its
    instruction (the user, system and developer messages, without their material) asks for no
    known kit. A map step (notes/reading.py) gets the material's relevant sentences as cited
    facts; a note request gets the table with the material cited where it holds the items."""
    from notes_cli.notes.passages import labelled_texts

    instructions: list[str] = []
    material: list[str] = []
    for role, text in messages:
        if role in _INSTRUCTING:
            said, given = split_material(text)
            instructions.append(said)
            material.append(given)
    if not instructions:
        return None
    evidence = labelled_texts("\n".join(material))
    step = _MAP_STEP.search(instructions[-1])
    if step:
        return _map_answer(step.group(1), evidence)
    asked = _asked_for("\n".join(instructions))
    if asked is None:
        return None
    knowledge, lang = asked
    repair = any(role == "assistant" for role, _ in messages)
    return _render(knowledge, lang, random.Random(seed), evidence, table_only=repair)


def split_material(text: str) -> tuple[str, str]:
    """(instruction, material) of one user message: the material starts at the first passage
    header or cited fact line and runs to the end of the message."""
    from notes_cli.notes.passages import citation_marker, citations

    lines = text.splitlines(keepends=True)
    for number, line in enumerate(lines):
        stripped = line.strip()
        header = citation_marker().match(stripped) is not None
        fact = stripped.startswith(("- ", "• ", "* ")) and bool(citations(stripped))
        if header or fact:
            return "".join(lines[:number]), "".join(lines[number:])
    return text, ""


def _asked_for(instruction: str) -> tuple[_Knowledge, str] | None:
    """The kit and language whose columns the instruction asks for last; else the first kit
    whose `recognise` terms the instruction names, in the language its markers say."""
    best: tuple[int, _Knowledge, str] | None = None
    for knowledge in _all_knowledge():
        for lang, header in knowledge.headers.items():
            at = instruction.rfind(" | ".join(header))
            if at >= 0 and (best is None or at > best[0]):
                best = (at, knowledge, lang)
    if best is not None:
        return best[1], best[2]
    for knowledge in _all_knowledge():
        if knowledge.recognises(instruction):
            return knowledge, knowledge.language(instruction)
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


def _from_material(
    item: str, kit_name: str, evidence: list[tuple[Any, str]], used: list[str]
) -> list[str]:
    """`item` cited with the first passage or fact that holds it. Otherwise, for the rubric
    concepts `item` names: the first material sentence stating all of them, or one sentence
    per concept, cited; `item` itself stays, uncited, when a concept is in no sentence."""
    from notes_cli.notes.claims import holds

    if not evidence:
        return [item]
    for ref, text in evidence:
        if holds(item, text, _claim_terms(kit_name)):
            return [f"{item} [{ref.label}]"]
    named = [c for c in _kit_concepts(kit_name) if any(contains_term(item, t) for t in c)]
    every = _sentence_stating(named, evidence, used)
    if every is not None or not named:
        return [every] if every else [item]
    found: list[str] = []
    for concept in named:
        one = _sentence_stating([concept], evidence, used + found)
        if one is None:
            return [*found, item]
        found.append(one)
    return found


def _sentence_stating(
    concepts: list[tuple[str, ...]], evidence: list[tuple[Any, str]], used: list[str]
) -> str | None:
    """The first material sentence (not in `used`) that states every concept, cited."""
    if not concepts:
        return None
    for ref, text in evidence:
        for sentence in _SENTENCE.split(" ".join(text.split())):
            if all(any(contains_term(sentence, t) for t in c) for c in concepts):
                cited = f"{_cell_text(sentence)} [{ref.label}]"
                if cited not in used:
                    return cited
    return None


def _cell_text(sentence: str) -> str:
    """A source sentence as a cell item: no table pipes, at most `_MAX_ITEM_WORDS` words."""
    words = sentence.replace("|", "/").replace("｜", "/").split()
    if len(words) > _MAX_ITEM_WORDS:
        return " ".join(words[:_MAX_ITEM_WORDS]) + " …"
    return " ".join(words)


@lru_cache(maxsize=8)
def _claim_terms(kit_name: str) -> tuple[tuple[str, ...], ...]:
    """The concepts `notes check` judges a claim by (notes/grounding.py `kit_terms`)."""
    from notes_cli.errors import PdnotesError
    from notes_cli.notes.grounding import kit_terms
    from notes_cli.notes.kits import load_kit

    try:
        return kit_terms(load_kit(kit_name))
    except PdnotesError:
        return ()


def _render(
    knowledge: _Knowledge,
    lang: str,
    rng: random.Random,
    evidence: list[tuple[Any, str]] | None = None,
    *,
    table_only: bool = False,
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
    stage = knowledge.columns[0]
    cited = [
        {key: _cell_items(items, knowledge.kit, [] if key == stage else evidence or [])
         for key, items in row[lang].items()}
        for row in rows
    ]  # fmt: skip
    table = _table(knowledge.headers[lang], knowledge.columns, cited, style)
    if style.fenced:
        table = f"```markdown\n{table}\n```"
    parts = [table]
    if table_only:  # a repair asks for the table again, nothing else
        return table + "\n"
    if style.intro:
        parts.insert(0, rng.choice(knowledge.intro[lang]))
    if style.outro:
        parts.append(rng.choice(knowledge.outro[lang]))
    return "\n\n".join(parts) + "\n"


def _cell_items(items: list[str], kit_name: str, evidence: list[tuple[Any, str]]) -> list[str]:
    """A cell's items with the material cited where it holds them (the stage column is the
    row's name, not a claim, and gets no citation)."""
    cell: list[str] = []
    for item in items:
        for written in _from_material(item, kit_name, evidence, cell):
            if written not in cell:
                cell.append(written)
    return cell


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
