"""Extraction plus rubric: the verdict on one answer, and the words that explain it.

Used by `pdnotes notes check` on a saved answer and by `notes generate` after every model turn;
`problems()` is what the repair request quotes back to the model.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Literal

from notes_cli.errors import InputError
from notes_cli.notes.extract import Extraction, SourceFormat, extract
from notes_cli.notes.grounding import ClaimGrounding, Grounding
from notes_cli.notes.kits import Concept, Kit
from notes_cli.notes.passages import Passage
from notes_cli.notes.rubric import RubricResult, score
from notes_cli.notes.tables import check_answer_size
from notes_cli.notes.terms import has_cjk

Verdict = Literal["pass", "fail", "wrong-columns", "no-table", "refusal", "truncated", "at-limit"]


@dataclass(frozen=True)
class NoteCheck:
    kit: Kit
    extraction: Extraction
    rubric: RubricResult
    grounding: Grounding | None = None  # with `--source`: is each concept from the reading?
    grounded: bool = False  # `--grounded`: every concept must be cited to pass

    @property
    def verdict(self) -> Verdict:
        if self.extraction.status != "ok":
            return self.extraction.status
        if self.grounded and self.grounding is not None and not self.grounding.ok:
            return "fail"
        return "pass" if self.rubric.passed else "fail"

    @property
    def passed(self) -> bool:
        return self.verdict == "pass"

    @property
    def misplaced(self) -> tuple[ClaimGrounding, ...]:
        """Cited claims whose page or source does not say them (with `--source`)."""
        return self.grounding.misplaced if self.grounding is not None else ()

    @property
    def repairable(self) -> bool:
        """A refusal is not something a repair request fixes; everything else may be, and so
        is a passing table that cites a page for something the page does not say."""
        return (not self.passed or bool(self.misplaced)) and self.verdict != "refusal"

    def problems(self, lang: str = "en") -> list[str]:
        """One sentence per problem, naming exactly the missing columns, rows and concepts.
        The wording comes from templates/notes/problems.toml."""
        words = _problem_words(lang)
        columns = " | ".join(c.label(lang) for c in self.kit.columns)
        status = self.extraction.status
        found: list[str] = []
        if status in ("no-table", "refusal"):
            key = "no_table_at_limit" if self.extraction.at_limit else "no_table"
            found.append(words[key].format(columns=columns))
        elif status in ("truncated", "at-limit"):
            found.append(words[status.replace("-", "_")].format(columns=columns))
        elif status == "wrong-columns":
            missing = self.extraction.missing_columns
            labels = [c.label(lang) for c in self.kit.columns if c.key in missing]
            header = " | ".join(self.extraction.table.header) if self.extraction.table else ""
            found.append(
                words["wrong_columns"].format(
                    missing=words["separator"].join(labels), header=header, columns=columns
                )
            )
        if status in ("ok", "wrong-columns"):
            found.extend(self._rubric_problems(lang, words))
        for claim in self.misplaced:
            found.append(
                words["misplaced"].format(
                    row=claim.row, column=_column_label(self.kit, claim.column, lang),
                    claim=claim.claim, detail=claim.detail,
                )
            )  # fmt: skip
        if self.grounded and self.grounding is not None:
            if self.grounding.unjudged:
                found.append(words["unjudged"].format(count=self.grounding.unjudged))
            for concept in self.grounding.concepts:
                if concept.status != "cited":
                    found.append(
                        words["not_grounded"].format(
                            row=concept.row, concept=concept.concept, detail=concept.detail
                        )
                    )
        return found

    def fix(self, max_tokens: int | None = None) -> str:
        """What the user can do about an answer that is not a note (the error's `fix:`)."""
        limit = f" (now {max_tokens})" if max_tokens else ""
        status = self.extraction.status
        if status == "no-table" and self.extraction.echoed:
            # A model that continues its prompt instead of answering it never stops by
            # itself: more tokens only make the echo longer.
            return (
                "the model repeated its request instead of answering it, as a base model "
                "does: use an instruction-tuned model (a base model rarely answers with the "
                f"table it is asked for); raising --max-tokens{limit} will not help"
            )
        if status == "no-table" and self.extraction.at_limit:
            return (
                f"the model used all its tokens before starting a table: raise --max-tokens"
                f"{limit}, or use an instruction-tuned model (a base model rarely answers with "
                "the table it is asked for)"
            )
        if status == "truncated":
            return f"the table did not fit: raise --max-tokens{limit}"
        if status == "at-limit":
            return (
                f"raise --max-tokens{limit} so the answer can end on its own; the table looked "
                "whole but stopped at the limit"
            )
        if status == "no-table":
            return "the model answered without a table: allow repairs, or try another --model"
        return "run again, or try another --model"

    def _rubric_problems(self, lang: str, words: dict[str, str]) -> list[str]:
        found = []
        for spec, row in zip(self.kit.rubric.rows, self.rubric.rows, strict=True):
            if not row.required or (row.present and not row.missing_concepts):
                continue
            names = {c.key: _concept_name(c, lang) for c in spec.concepts}
            if not row.present:
                concepts = words["separator"].join(names.values())
                found.append(words["row_missing"].format(row=row.label, concepts=concepts))
            else:
                concepts = words["separator"].join(names[c.key] for c in row.missing_concepts)
                found.append(words["concepts_missing"].format(row=row.label, concepts=concepts))
        return found


@lru_cache(maxsize=4)
def _problem_words(lang: str) -> dict[str, str]:
    import tomllib

    from notes_cli.resources import template_path

    with template_path("notes", "problems.toml").open("rb") as handle:
        table = tomllib.load(handle)
    return dict(table.get(lang, table["en"]))


def _column_label(kit: Kit, key: str, lang: str) -> str:
    return next((c.label(lang) for c in kit.columns if c.key == key), key)


def _concept_name(concept: Concept, lang: str) -> str:
    """The concept's label, plus its first Chinese synonym when writing in Chinese."""
    chinese = next((s for s in concept.synonyms if has_cjk(s)), None) if lang == "zh" else None
    return f"{concept.label}（{chinese}）" if chinese else concept.label


def check_text(
    text: str, kit: Kit, *, source_format: SourceFormat = "text", finish_reason: str | None = None
) -> NoteCheck:
    """Extract the kit's table from `text` and score it. Raises AnswerTooLarge (exit 2) for
    an answer or a cell beyond the parser's bounds."""
    check_answer_size(text)
    extraction = extract(text, kit, source_format=source_format, finish_reason=finish_reason)
    return NoteCheck(kit, extraction, score(extraction.table, kit))


def with_grounding(
    check: NoteCheck,
    passages: Sequence[Passage],
    sources: tuple[str, ...],
    *,
    grounded: bool = False,
) -> NoteCheck:
    """`check` judged against the reading: every cited claim and every concept (notes/grounding.py),
    and, when `grounded`, failed unless all of them are grounded. The one verdict of a note with
    sources: `notes check --source` and `notes generate --source` (on every answer) both use it,
    so the same note and flags get the same verdict from either."""
    import dataclasses

    from notes_cli.notes.grounding import ground

    grounding = ground(check, list(passages), sources)
    return dataclasses.replace(check, grounding=grounding, grounded=grounded)


def read_answer(path: Path) -> tuple[str, SourceFormat]:
    """A saved answer (md, txt, html, json, csv) as text plus the format to parse it with.
    Raises InputError (exit 2) when the file cannot be read or a .json file does not parse."""
    import json

    from notes_cli.fileio import read_document
    from notes_cli.notes.tables import MAX_ANSWER_CHARS

    # UTF-8 takes at most 4 bytes a character: anything bigger is over the answer bound.
    data = read_document(
        path,
        max_bytes=4 * MAX_ANSWER_CHARS,
        what="note or answer",
        missing_fix="check the path; `pdnotes notes generate -o FILE` writes a note, or save "
        "the model's answer to a file (- reads it from stdin for `notes check`)",
    )
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InputError(
            f"cannot read {path}: not UTF-8 (byte {exc.start} cannot be decoded)",
            fix="pass a UTF-8 text file",
        ) from exc
    suffix = path.suffix.lower()
    if suffix == ".json":
        try:
            json.loads(text)
        except RecursionError as exc:
            raise InputError(
                f"{path} nests JSON deeper than Python's parser goes",
                fix="a note's JSON is a list of rows, a few levels deep",
            ) from exc
        except ValueError as exc:
            raise InputError(
                f"{path} is not valid JSON: {exc}",
                fix="save the answer as .md or .txt if it is not meant to be JSON",
            ) from exc
    return text, ("csv" if suffix in (".csv", ".tsv") else "text")
