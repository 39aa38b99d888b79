"""`notes generate`: ask the model for the kit's table, check it, repair it, export it.

The flow: assemble the kit prompt (plus the user's sources within a token budget) → stream the
answer → extract and score the table → if it is missing, has the wrong columns or misses rubric
concepts, send up to `repairs` follow-up requests quoting exactly what is wrong → export. The
note is written (atomically) only when the model produced a complete table: a refusal, a cut
stream or an answer without a table never leaves a file behind that looks finished.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from string import Template
from typing import TYPE_CHECKING, Any, Literal, Protocol

from notes_cli.clients.endpoint import Endpoint
from notes_cli.errors import PdnotesError
from notes_cli.notes.check import NoteCheck, check_text, with_grounding
from notes_cli.notes.export import ExportFormat, NoteDocument, render, write_note
from notes_cli.notes.grounding import ClaimGrounding
from notes_cli.notes.kits import Kit
from notes_cli.notes.passages import without_citations
from notes_cli.notes.reading import MapObserver, MapResult, ReadingPlan
from notes_cli.notes.rubric import score
from notes_cli.notes.tokens import estimate_tokens

if TYPE_CHECKING:
    from notes_cli.gateway.errors import IdleStreamTimeout

AttemptKind = Literal["initial", "repair"]
DEFAULT_MAX_SOURCE_TOKENS = 6000
DEFAULT_MAX_TOKENS = 4096


class NoteRefused(PdnotesError):
    """The model declined to write the note (exit 1)."""


class NoteIncomplete(PdnotesError):
    """The model never produced a complete table (exit 1); nothing was written."""


class NoteTooSlow(PdnotesError):
    """The model answers, but too slowly to finish within --timeout (exit 1): said early when
    not even the smallest table fits, else at the deadline, with the measured rate."""


@dataclass(frozen=True)
class Prompt:
    text: str
    plan: ReadingPlan
    facts: tuple[str, ...] = ()  # map-reduce: the facts the map steps found
    map_answers: tuple[dict[str, Any], ...] = ()
    dropped_facts: int = 0

    @property
    def max_source_tokens(self) -> int:
        return self.plan.budget

    @property
    def source_names(self) -> tuple[str, ...]:
        return tuple(d.name for d in self.plan.documents)

    @property
    def tokens(self) -> int:
        return estimate_tokens(self.text)


@dataclass(frozen=True)
class Attempt:
    number: int
    kind: AttemptKind
    request: str  # the user message of this turn (the repair text for repairs)
    answer: str
    finish_reason: str | None
    output_tokens: int
    elapsed_ms: float | None
    verdict: str
    problems: tuple[str, ...]
    model: str | None = None
    input_tokens: int | None = None
    detail: str = ""  # what the extraction found, in words


@dataclass
class GenerateResult:
    check: NoteCheck
    attempts: list[Attempt] = field(default_factory=list)
    document: NoteDocument | None = None
    path: Path | None = None
    # cited claims the model did not repair; the note was written without these citations
    uncited: tuple[ClaimGrounding, ...] = ()

    @property
    def passed(self) -> bool:
        return self.check.passed


class Observer(Protocol):
    """What the CLI hears while a note is generated (progress goes to stderr)."""

    def attempt_started(self, number: int, kind: AttemptKind, request: str) -> None: ...

    def chunk(self, text: str, elapsed_ms: float) -> None: ...

    def attempt_finished(self, attempt: Attempt) -> None: ...

    def slow(self, message: str) -> None:
        """The answer's first tokens say its budget cannot finish within --timeout."""
        ...


def build_prompt(
    kit: Kit, lang: str, plan: ReadingPlan | None = None, map_result: MapResult | None = None
) -> Prompt:
    """The kit's prompt in `lang`, followed by the sources' passages (whole or cut) or, after
    map steps, the facts they found. Without a plan, the kit's prompt alone."""
    from notes_cli.notes.reading import plan_reading, reduce_text, sources_text

    if plan is None:
        plan = plan_reading([], 0)

    text = kit.prompt(lang)
    if plan.mode == "map-reduce":
        facts = map_result.facts if map_result else []
        text += reduce_text(plan, facts, lang)
        answers = tuple(map_result.answers) if map_result else ()
        dropped = map_result.dropped_facts if map_result else 0
        return Prompt(text, plan, tuple(facts), answers, dropped)
    return Prompt(text + sources_text(plan, lang).rstrip(), plan)


def read_sources(
    plan: ReadingPlan,
    kit: Kit,
    lang: str,
    endpoint: Endpoint,
    *,
    observer: MapObserver,
    max_tokens: int = DEFAULT_MAX_TOKENS,
    timeout: float = 60.0,
    transport: Any = None,
) -> MapResult | None:
    """The map steps of a map-reduce plan (None for any other plan)."""
    if plan.mode != "map-reduce":
        return None
    from notes_cli.gateway.client import GatewayClient
    from notes_cli.notes.reading import run_map

    # `timeout` bounds each map step's whole answer, as it does the note's (generate_note)
    with GatewayClient(
        endpoint, timeout=timeout, idle_timeout=timeout, total_timeout=timeout, transport=transport
    ) as client:
        return run_map(plan, kit, lang, client, observer=observer, max_tokens=max_tokens)


def repair_request(check: NoteCheck, lang: str) -> str:
    """The follow-up that quotes exactly what is wrong with the last answer."""
    kit = check.kit
    problems = "\n".join(f"- {p}" for p in check.problems(lang))
    columns = " | ".join(c.label(lang) for c in kit.columns)
    rows = ("、" if lang == "zh" else ", ").join(r.label for r in kit.rubric.rows if r.required)
    return (
        _template(f"repair.{_lang(lang)}.md")
        .substitute(problems=problems, columns=columns, rows=rows)
        .strip()
    )


def generate_note(
    kit: Kit,
    lang: str,
    endpoint: Endpoint,
    prompt: Prompt,
    *,
    observer: Observer,
    repairs: int = 2,
    max_tokens: int = DEFAULT_MAX_TOKENS,
    timeout: float = 60.0,
    transport: Any = None,
    grounded: bool = False,
) -> GenerateResult:
    """Run the conversation (first answer plus up to `repairs` repairs) and return the last
    check, judged as `notes check` judges the written note with the same sources (and
    `--grounded`). Gateway failures propagate as GatewayError; a refusal raises NoteRefused."""
    from notes_cli.gateway.client import GatewayClient
    from notes_cli.gateway.errors import IdleStreamTimeout

    messages: list[dict[str, Any]] = [{"role": "user", "content": prompt.text}]
    attempts: list[Attempt] = []
    # `timeout` is a wall clock on each model call (first answer or repair), not only a gap
    # between reads: a gateway that trickles or never ends its stream cannot hold it longer.
    warned: list[str] = []  # the slow-model warning, said once per run
    with GatewayClient(
        endpoint, timeout=timeout, idle_timeout=timeout, total_timeout=timeout, transport=transport
    ) as client:

        def ask() -> NoteCheck:
            number = len(attempts) + 1
            kind: AttemptKind = "initial" if number == 1 else "repair"
            request = messages[-1]["content"]
            observer.attempt_started(number, kind, request)
            watch = PaceWatch(observer, max_tokens, timeout, min_note_tokens(kit, lang), warned)
            try:
                streamed = client.stream(messages, max_tokens=max_tokens, on_chunk=watch.chunk)
            except IdleStreamTimeout as exc:
                raise _at_deadline(exc, max_tokens, timeout) from exc
            check = _with_grounding(
                check_text(streamed.text, kit, finish_reason=streamed.finish_reason),
                prompt,
                grounded,
            )
            attempt = Attempt(
                number, kind, request, streamed.text, streamed.finish_reason,
                streamed.output_tokens, streamed.timings.total_ms, check.verdict,
                tuple(check.problems(lang)), streamed.model, streamed.input_tokens,
                check.extraction.detail,
            )  # fmt: skip
            attempts.append(attempt)
            observer.attempt_finished(attempt)
            return check

        check = ask()
        while check.repairable and len(attempts) <= repairs:
            messages.append({"role": "assistant", "content": attempts[-1].answer})
            messages.append({"role": "user", "content": repair_request(check, lang)})
            check = ask()
    if check.verdict == "refusal":
        raise NoteRefused(
            f"the model declined to write the note: {_first_line(attempts[-1].answer)!r}",
            fix="rephrase the sources or try another model (--model)",
            details={"attempts": attempts_json(attempts, max_tokens)},
        )
    uncited = check.misplaced
    return GenerateResult(_uncited(check, prompt, grounded), attempts, uncited=uncited)


def min_note_tokens(kit: Kit, lang: str) -> int:
    """About the smallest answer that can pass the kit's rubric: a bare table naming every
    required row and its concepts once (labels estimated as `estimate_tokens` does, plus
    `_MARKUP_TOKENS` of pipes and dashes a line). A model that cannot write this much before
    --timeout cannot write the note at all."""
    header = sum(estimate_tokens(c.label(lang)) for c in kit.columns)
    rows = [r for r in kit.rubric.rows if r.required]
    cells = sum(
        estimate_tokens(r.label) + sum(estimate_tokens(c.label) for c in r.concepts) for r in rows
    )
    return header + cells + _MARKUP_TOKENS * (len(rows) + 2)


_MARKUP_TOKENS = 6  # `| … | … | … | … |` and the `|---|` line: a few tokens a table line
_FIRST_LOOK = 16  # output chunks before the rate is judged (then at 32, 64, … to stay cheap)


class PaceWatch:
    """Watches an answer's chunks (`chunk` is the stream's `on_chunk`) and projects, from the
    rate so far, how many tokens can arrive by the deadline: when fewer than `max_tokens`, the
    observer hears it once (a longer answer will be cut); when fewer than `least` (the smallest
    passing table), the answer is given up at once (`NoteTooSlow`) instead of at --timeout."""

    def __init__(
        self, observer: Observer, max_tokens: int, timeout: float, least: int, warned: list[str]
    ) -> None:
        self.observer = observer
        self.max_tokens = max_tokens
        self.deadline_ms = timeout * 1000
        self.timeout = timeout
        self.least = least
        self.warned = warned
        self.first_ms: float | None = None
        self.count = 0
        self.next_look = _FIRST_LOOK

    def chunk(self, text: str, elapsed_ms: float) -> None:
        self.observer.chunk(text, elapsed_ms)
        self.count += 1
        if self.first_ms is None:
            self.first_ms = elapsed_ms
        if self.count < self.next_look:
            return
        self.next_look *= 2
        if elapsed_ms <= self.first_ms:
            return  # one burst: no rate yet
        rate = (self.count - 1) / (elapsed_ms - self.first_ms) * 1000
        can = self.count + int(rate * max(self.deadline_ms - elapsed_ms, 0) / 1000)
        if can >= self.max_tokens:
            return
        needs = (self.first_ms + (self.max_tokens - 1) / rate * 1000) / 1000
        fit = math.ceil(needs / 0.8)
        pace = f"{rate:.1f} tokens/s (first token after {self.first_ms:.0f} ms)"
        if can < self.least:
            raise NoteTooSlow(
                f"the model answers at {pace}: by --timeout {self.timeout:g} s it can write "
                f"about {can} tokens, fewer than the smallest table this kit needs (~{self.least}"
                f" tokens); stopped after {self.count} tokens instead of waiting",
                fix=f"raise --timeout (the {self.max_tokens}-token budget needs about "
                f"{needs:.0f} s at this rate: --timeout {fit}), or use a faster endpoint",
            )
        if not self.warned:
            self.warned.append(pace)
            self.observer.slow(
                f"slow model: {pace}; by --timeout {self.timeout:g} s an answer can have about "
                f"{can} of its {self.max_tokens} tokens, so a longer one will be cut "
                f"(--timeout {fit} fits the whole budget)"
            )


def _at_deadline(exc: IdleStreamTimeout, max_tokens: int, timeout: float) -> PdnotesError:
    """An answer still open at --timeout: slow but working (`NoteTooSlow`, with the rate and
    the flags to change) or the gateway's error with its cause (stalled, never started,
    over the budget) named."""
    from notes_cli.gateway.pace import judge_cut

    partial = exc.partial
    if partial is None or partial.timings.total_ms is None:
        return exc
    pace = judge_cut(partial, max_tokens=max_tokens, elapsed_ms=partial.timings.total_ms)
    if not pace.slow:
        exc.message += f": {pace.describe()}"
        exc.args = (exc.message,)
        return exc
    fit = pace.fitting_timeout()
    return NoteTooSlow(
        f"the model is {pace.describe()}, but --timeout {timeout:g} s ran out before the "
        "answer ended; no note written",
        fix=f"raise --timeout{f' to {fit}' if fit else ''} (fits the whole --max-tokens "
        f"{max_tokens} at this rate), or lower --max-tokens if the note is shorter",
    )


def _with_grounding(check: NoteCheck, prompt: Prompt, grounded: bool) -> NoteCheck:
    """`check` judged against the sources' passages (when there are sources) exactly as
    `notes check --source` judges the written note: a citation whose page does not hold its
    claim becomes a repair request, and so, with `grounded`, does a concept not cited from the
    reading."""
    if not prompt.plan.passages:
        return check
    return with_grounding(check, prompt.plan.passages, prompt.source_names, grounded=grounded)


def _uncited(check: NoteCheck, prompt: Prompt, grounded: bool) -> NoteCheck:
    """The last table with the citations that still do not hold removed: the note never shows
    a claim as cited from a page that does not say it. The claims stay, as the model's own."""
    if not check.misplaced or check.extraction.table is None:
        return check
    import dataclasses

    from notes_cli.notes.claims import uncite

    table = check.extraction.table
    stage = check.kit.columns[0].key
    wrong = {(c.row, c.column, c.claim) for c in check.misplaced}
    rows = []
    for row in table.rows:
        name = " ".join(without_citations(table.stage_cell(row, stage)).split())
        cells = list(row)
        for column in check.kit.columns:
            index = table.column_index.get(column.key)
            if index is not None and index < len(cells):
                mine = {text for at, key, text in wrong if (at, key) == (name, column.key)}
                cells[index] = uncite(cells[index], mine)
        rows.append(tuple(cells))
    fixed = dataclasses.replace(table, rows=tuple(rows))
    extraction = dataclasses.replace(check.extraction, table=fixed)
    again = NoteCheck(check.kit, extraction, score(fixed, check.kit))
    return _with_grounding(again, prompt, grounded)


def finish_note(
    result: GenerateResult,
    *,
    lang: str,
    endpoint: Endpoint,
    prompt: Prompt,
    fmt: ExportFormat,
    path: Path,
    max_tokens: int | None = None,
) -> GenerateResult:
    """Export and write the note when the last answer held a complete table; otherwise raise
    NoteIncomplete, naming the cause and its fix, with every answer and its verdict for
    `--json`, and write nothing. A complete table that still fails the rubric is written (its
    rubric section says FAIL) and the caller exits 1."""
    check = result.check
    if check.verdict not in ("pass", "fail"):
        tries = len(result.attempts)
        after = f" (verdict {check.verdict}, after {tries} answer{'s' if tries != 1 else ''})"
        raise NoteIncomplete(
            f"no note written: {check.extraction.detail}{after}",
            fix=check.fix(max_tokens),
            details={
                "verdict": check.verdict,
                "attempts": attempts_json(result.attempts, max_tokens),
            },
        )
    model = _model_of(result, endpoint)
    result.document = NoteDocument(
        check,
        lang,
        model=model,
        endpoint=endpoint.base_url,
        sources=prompt.source_names,
        repairs=len(result.attempts) - 1,
    )
    result.path = write_note(path, render(result.document, fmt))
    return result


def _model_of(result: GenerateResult, endpoint: Endpoint) -> str | None:
    """The model the gateway says answered, else the one we asked for."""
    return next((a.model for a in reversed(result.attempts) if a.model), endpoint.model)


def choose_endpoint(
    client: str | None,
    *,
    base_url: str | None = None,
    model: str | None = None,
    key_env: str | None = None,
    protocol: str = "chat",
) -> Endpoint:
    """The endpoint to ask: explicit `--base-url` (with `--key-env`), else the configured
    client's endpoint (Codex first, then Claude Code), with `--model` overriding its model."""
    import dataclasses

    from notes_cli.clients.endpoint import endpoint_from_flags
    from notes_cli.clients.urls import require_configured_url
    from notes_cli.errors import UsageError

    if base_url:
        return endpoint_from_flags(
            base_url,
            protocol=protocol,  # type: ignore[arg-type]
            model=model,
            key_env=key_env,
        )
    if client == "openai":
        raise UsageError("--client openai needs --base-url (and usually --model, --key-env)")
    from notes_cli.clients.setups import resolve_endpoints

    found = resolve_endpoints(client or "all")
    if not found:
        raise UsageError(
            f"no configured {client or 'Codex or Claude Code'} endpoint to ask",
            fix="run `pdnotes config codex --preset mock` (the bundled engine) or pass "
            "--base-url URL --model ID [--key-env NAME]",
        )
    endpoint = found[0]
    require_configured_url(endpoint.base_url, client=endpoint.client, source=endpoint.source)
    if model:
        endpoint = dataclasses.replace(endpoint, model=model)
    if not endpoint.model:
        raise UsageError(
            f"{endpoint.source or endpoint.client} names no model", fix="pass --model ID"
        )
    return endpoint


def _template(name: str) -> Template:
    from notes_cli.resources import template_path

    return Template(template_path("notes", name).read_text(encoding="utf-8"))


def _lang(lang: str) -> str:
    return "zh" if lang == "zh" else "en"


def _first_line(text: str) -> str:
    stripped = text.strip()
    return stripped.splitlines()[0][:160] if stripped else ""


def report_json(
    result: GenerateResult, prompt: Prompt, fmt: str, max_tokens: int | None = None
) -> dict[str, Any]:
    """`pdnotes.notes.generate/1`: the written note (`pdnotes.notes/1`), where it went, and every
    request and verdict of the conversation, repair requests quoted in full."""
    from notes_cli.notes.export import note_json

    return {
        "schema": "pdnotes.notes.generate/1",
        "ok": result.passed,
        "path": str(result.path) if result.path else None,
        "format": fmt,
        "prompt": {
            "tokens": prompt.tokens,
            "max_source_tokens": prompt.max_source_tokens,
            "reading": prompt.plan.mode,
            "calls": prompt.plan.calls,
            "sources": [_source_json(prompt, n, d) for n, d in enumerate(prompt.plan.documents, 1)],
            "map": list(prompt.map_answers),
            "facts": len(prompt.facts),
            "dropped_facts": prompt.dropped_facts,
        },
        "attempts": attempts_json(result.attempts, max_tokens),
        "citations": _citations_json(result),
        "note": note_json(result.document) if result.document else None,
    }


def attempts_json(attempts: list[Attempt], max_tokens: int | None = None) -> list[dict[str, Any]]:
    """Every answer of the conversation: its verdict and why, the finish reason, the token
    counts, the repair request that asked for it, and the answer's text itself."""
    return [
        {
            "number": a.number,
            "kind": a.kind,
            "verdict": a.verdict,
            "detail": a.detail,
            "problems": list(a.problems),
            "finish_reason": a.finish_reason,
            "input_tokens": a.input_tokens,
            "output_tokens": a.output_tokens,
            "max_tokens": max_tokens,
            "elapsed_ms": a.elapsed_ms,
            "request": a.request if a.kind == "repair" else None,
            "answer": a.answer,
        }
        for a in attempts
    ]


def _citations_json(result: GenerateResult) -> dict[str, Any] | None:
    """With sources: every cited claim of the written table judged, and the citations removed
    because the model did not repair them."""
    grounding = result.check.grounding
    if grounding is None:
        return None
    removed = [{"row": c.row, "column": c.column, "claim": c.claim, "detail": c.detail}
               for c in result.uncited]  # fmt: skip
    return {**grounding.to_json(), "removed": removed}


def _source_json(prompt: Prompt, number: int, document: Any) -> dict[str, Any]:
    plan = prompt.plan
    passages = [p for p in plan.passages if p.source == number]
    kept = [p for p in plan.kept if p.source == number]
    original = sum(p.tokens for p in passages)
    tokens = original if plan.mode == "map-reduce" else sum(p.tokens for p in kept)
    return {
        "id": f"S{number}",
        "path": document.name,
        "kind": document.kind,
        "title": document.title,
        "pages": document.page_count,
        "passages": len(passages),
        "tokens": tokens,
        "original_tokens": original,
        "cut": plan.mode == "cut" and len(kept) < len(passages),
    }
