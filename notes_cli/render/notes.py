"""Drawing for `pdnotes notes …`: kit list, check report, generate progress and summary."""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING

from rich.control import Control
from rich.markup import escape
from rich.segment import ControlType
from rich.table import Table

from notes_cli.render import err, out
from notes_cli.secrets import mask_url

if TYPE_CHECKING:
    from notes_cli.notes.check import NoteCheck
    from notes_cli.notes.compare import Comparison
    from notes_cli.notes.documents import Document
    from notes_cli.notes.generate import Attempt, GenerateResult, Prompt
    from notes_cli.notes.grounding import Grounding
    from notes_cli.notes.kits import Kit
    from notes_cli.notes.passages import Passage
    from notes_cli.notes.reading import ReadingPlan
    from notes_cli.notes.rubric import RowResult

_VERDICT_STYLE = {"pass": "bold green", "fail": "bold red"}


def kits(kit_list: list[Kit]) -> None:
    table = Table(title="note kits", title_justify="left")
    for name in ("kit", "origin", "languages", "columns", "title"):
        table.add_column(name)
    for kit in kit_list:
        columns = " / ".join(c.label(kit.default_language) for c in kit.columns)
        table.add_row(
            escape(kit.name),
            kit.origin,
            ", ".join(kit.languages),
            escape(columns),
            escape(kit.title),
        )
    out().print(table)
    user = [k for k in kit_list if k.origin == "user"]
    if not user:
        from notes_cli.notes.kits import user_kits_dir

        err().print(f"[dim]add your own kits under {escape(str(user_kits_dir()))}/<name>/[/]")


def check_report(check: NoteCheck, source: str) -> None:
    """What was found in the answer and which rubric rows and concepts are present or missing."""
    console = out()
    style = _VERDICT_STYLE.get(check.verdict, "bold yellow")
    console.print(f"[{style}]{check.verdict.upper()}[/] {escape(source)} — kit {check.kit.name}")
    console.print(f"  {escape(check.extraction.detail)}")
    if check.extraction.table is not None:
        console.print(
            f"  rubric score {check.rubric.score:.2f} (pass at {check.rubric.pass_score:.2f})"
        )
        for row in check.rubric.rows:
            _row_lines(row)
    if check.grounding is not None:
        _grounding_lines(check.grounding)
    for problem in check.problems():
        console.print(f"  [red]•[/] {escape(problem)}")


_GROUND_MARK = {"cited": "[green]✓[/]", "uncited": "[yellow]~[/]", "unsupported": "[red]✗[/]"}
_CLAIM_MARK = {"misplaced": "[red]✗[/]", "from-model": "[dim]·[/]"}


def _grounding_lines(grounding: Grounding) -> None:
    console = out()
    console.print(
        f"  grounding in {len(grounding.sources)} source(s): "
        f"{grounding.count('cited')} cited and supported, "
        f"{grounding.count('uncited')} supported but uncited, "
        f"{grounding.count('unsupported')} from the model"
    )
    for number, name in enumerate(grounding.sources, start=1):
        console.print(f"    [dim]S{number} = {escape(name)}[/]")
    row = None
    for concept in grounding.concepts:
        if concept.row != row:
            row = concept.row
            console.print(f"    {escape(row)}")
        mark = _GROUND_MARK[concept.status]
        console.print(f"      {mark} {escape(concept.concept)} — {escape(concept.detail)}")
    cited = [c for c in grounding.claims if c.status != "from-model"]
    console.print(
        f"  cited claims: {len(cited) - len(grounding.misplaced)} of {len(cited)} hold on the "
        f"page they cite; {len(grounding.from_model)} uncited item(s) from the model"
        + (f"; {grounding.unjudged:,} more item(s) not judged" if grounding.unjudged else "")
    )
    for claim in grounding.claims:
        if claim.status == "holds":
            continue
        mark = _CLAIM_MARK[claim.status]
        console.print(
            f"    {mark} {escape(claim.row)} / {escape(claim.column)}: “{escape(claim.claim)}” — "
            f"{escape(claim.detail)}"
        )
    _never_cited(grounding)


def _row_lines(row: RowResult) -> None:
    console = out()
    tag = "" if row.required else " [dim](optional)[/]"
    if not row.present:
        mark = "[red]✗[/]" if row.required else "[dim]–[/]"
        console.print(f"  {mark} {escape(row.label)}{tag}: row missing")
        return
    console.print(f"  [green]✓[/] {escape(row.label)}{tag}")
    for concept in row.concepts:
        label = escape(concept.label)
        if concept.found:
            console.print(f"      [green]✓[/] {label} [dim]({escape(concept.matched or '')})[/]")
        else:
            console.print(f"      [red]✗[/] {label}")


# Back to the start of the status line and clear it: a control segment, which is rich's own and
# reaches the terminal as it is (a "\r" in printed text is shown as \x0d, see render.visible).
_REDRAW = Control(ControlType.CARRIAGE_RETURN, (ControlType.ERASE_IN_LINE, 2))


class StreamProgress:
    """One status line on stderr while the answer streams: tokens so far and elapsed time.
    Redrawn at most ten times a second; silent when stderr is not a terminal except for a
    final summary line."""

    def __init__(self, label: str) -> None:
        self.label = label
        self.tokens = 0
        self.started = time.monotonic()
        self._last_draw = 0.0
        self._live = err().is_terminal

    def on_chunk(self, text: str, elapsed_ms: float) -> None:
        self.tokens += 1
        now = time.monotonic()
        if self._live and now - self._last_draw >= 0.1:
            self._last_draw = now
            err().control(_REDRAW)
            err().print(self._status(), end="", markup=False, highlight=False)

    def done(self, outcome: str) -> None:
        if self._live:
            err().control(_REDRAW)
        err().print(f"[dim]{escape(self._status())} — {escape(outcome)}[/]")

    def _status(self) -> str:
        elapsed = time.monotonic() - self.started
        return f"{self.label}: {self.tokens} chunks, {elapsed:.1f}s"


class GenerateProgress:
    """The `notes generate` observer: one line per request, a live token counter while the
    answer streams, and the verdict of every answer (all on stderr)."""

    def __init__(self, model: str | None, url: str) -> None:
        self.model = model or "(default model)"
        self.url = mask_url(url)
        self.stream: StreamProgress | None = None

    def attempt_started(self, number: int, kind: str, request: str) -> None:
        console = err()
        if kind == "initial":
            console.print(f"asking [bold]{escape(self.model)}[/] at {escape(self.url)}")
        else:
            console.print(f"[yellow]repair {number - 1}:[/] asking the model to fix its table:")
            for line in request.splitlines():
                if line.startswith("- "):
                    console.print(f"  {escape(line)}")
        self.stream = StreamProgress(f"  answer {number}")

    def chunk(self, text: str, elapsed_ms: float) -> None:
        if self.stream is not None:
            self.stream.on_chunk(text, elapsed_ms)

    def attempt_finished(self, attempt: Attempt) -> None:
        if self.stream is not None:
            self.stream.done(f"{attempt.output_tokens} tokens, verdict {attempt.verdict}")

    def slow(self, message: str) -> None:
        from notes_cli.render import warn

        if self.stream is not None and self.stream._live:
            err().control(_REDRAW)  # the status line is redrawn at the next chunk
        warn(message)

    def map_started(self, step: int, total: int, labels: list[str], tokens: int) -> None:
        if step == 1:
            err().print(f"reading with [bold]{escape(self.model)}[/] at {escape(self.url)}")
        span = labels[0] if len(labels) == 1 else f"{labels[0]} … {labels[-1]}"
        self.stream = StreamProgress(f"  map {step}/{total} ({span}, ~{tokens:,} tokens)")

    def map_finished(self, step: int, facts: int, output_tokens: int) -> None:
        if self.stream is not None:
            self.stream.done(f"{facts} fact{'' if facts == 1 else 's'}")


def reading_plan(plan: ReadingPlan, kit_prompt_tokens: int) -> None:
    """Before any request: how the sources will be read, the calls and the input tokens."""
    from notes_cli.render import note, warn

    if plan.mode == "none":
        return
    for number, doc in enumerate(plan.documents, start=1):
        pages = f", {doc.page_count} pages" if doc.page_count is not None else ""
        note(f"S{number} = {doc.name}: {doc.kind}{pages}, ~{doc.tokens:,} tokens")
    estimate = plan.estimated_input_tokens(kit_prompt_tokens)
    if plan.mode == "whole":
        note(
            f"sources fit --max-source-tokens {plan.budget:,}: 1 request, "
            f"~{estimate:,} input tokens"
        )
    elif plan.mode == "cut":
        dropped = plan.dropped
        kept_tokens = sum(p.tokens for p in plan.kept)
        warn(
            f"--cut: keeping ~{kept_tokens:,} of ~{plan.total_tokens:,} source tokens "
            f"({len(plan.kept)} of {len(plan.passages)} passages) to fit --max-source-tokens "
            f"{plan.budget:,}; left out: {_labels(dropped)}"
        )
    else:
        note(
            f"sources are ~{plan.total_tokens:,} tokens, over --max-source-tokens "
            f"{plan.budget:,}: reading {len(plan.passages)} passages in {len(plan.batches)} map "
            f"request(s), then the note: {plan.calls} requests (+ repairs), "
            f"~{estimate:,} input tokens"
        )


def _labels(passages: tuple[Passage, ...]) -> str:
    labels = [p.label for p in passages]
    unique = list(dict.fromkeys(labels))
    return ", ".join(unique[:12]) + (f" and {len(unique) - 12} more" if len(unique) > 12 else "")


def facts_dropped(prompt: Prompt) -> None:
    from notes_cli.render import warn

    warn(
        f"{prompt.dropped_facts} of {prompt.dropped_facts + len(prompt.facts)} facts from the map "
        f"steps did not fit --max-source-tokens {prompt.max_source_tokens:,} and were left out"
    )


def generate_summary(result: GenerateResult) -> None:
    console = out()
    check = result.check
    style = _VERDICT_STYLE.get(check.verdict, "bold yellow")
    repairs = len(result.attempts) - 1
    after = f" after {repairs} repair{'s' if repairs != 1 else ''}" if repairs else ""
    console.print(
        f"[{style}]{check.verdict.upper()}[/] rubric score {check.rubric.score:.2f}{after}"
    )
    if result.path is not None:
        console.print(f"wrote {escape(str(result.path))}")
    for problem in check.problems():
        console.print(f"  [red]•[/] {escape(problem)}")
    for claim in result.uncited:
        console.print(
            f"  [yellow]~[/] citation removed: {escape(claim.row)} / {escape(claim.column)} "
            f"“{escape(claim.claim)}” — {escape(claim.detail)}"
        )
    if check.grounding is not None:
        _grounding_verdict(check)
        _never_cited(check.grounding)


def _grounding_verdict(check: NoteCheck) -> None:
    """`notes check --source` of the written note says the same: how the concepts stand, and,
    without --grounded, that --grounded would fail the note."""
    grounding = check.grounding
    if grounding is None:
        return
    console = out()
    console.print(
        f"  grounding in {len(grounding.sources)} source(s): "
        f"{grounding.count('cited')} cited and supported, "
        f"{grounding.count('uncited')} supported but uncited, "
        f"{grounding.count('unsupported')} from the model"
    )
    shy = [c for c in grounding.concepts if c.status != "cited"]
    if not shy or check.grounded:  # with --grounded the problems above name them
        return
    named = ", ".join(f"{c.row} / {c.concept}" for c in shy[:_MAX_NAMED])
    more = ", …" if len(shy) > _MAX_NAMED else ""
    console.print(
        f"  [yellow]~[/] not grounded: {len(shy)} concept(s) ({escape(named)}{more}) — "
        "`notes check --grounded` fails this note; pass --grounded to have the model cite "
        "them, or see each with `notes check NOTE --source …`"
    )


_MAX_NAMED = 3


def _never_cited(grounding: Grounding) -> None:
    for label in grounding.never_cited:
        name = grounding.sources[int(label[1:]) - 1]
        out().print(f"  [yellow]~[/] {label} ({escape(name)}) was given but no cell cites it")


def documents(found: list[Document]) -> None:
    """`notes sources`: what would be read from each source."""
    table = Table(title="sources", title_justify="left")
    for name in ("source", "kind", "title", "pages", "tokens", "left out"):
        table.add_column(name, justify="right" if name in ("pages", "tokens") else "left")
    for doc in found:
        table.add_row(
            escape(doc.name if "://" in doc.name else Path(doc.name).name),
            doc.kind,
            escape(doc.title or "–"),
            str(doc.page_count) if doc.page_count is not None else "–",
            f"~{doc.tokens:,}",
            escape(doc.left_out),
        )
    out().print(table)
    for doc in found:
        if doc.fetched:
            err().print(f"[dim]{escape(doc.name)}: fetched {escape(doc.fetched)}[/]")
        for line in doc.notes:
            err().print(f"[dim]{escape(doc.name)}: {escape(line)}[/]")


_CELL_MARK = {"agree": "[green]=[/]", "differ": "[red]≠[/]", "only-a": "[yellow]A[/]",
              "only-b": "[yellow]B[/]", "empty": "[dim]·[/]", "unmatched": "[dim]?[/]"}  # fmt: skip


def comparison(result: Comparison) -> None:
    """`notes compare`: a verdict line per row, and for each differing cell both texts."""
    console = out()
    console.print(f"A = {escape(result.a_name)}")
    console.print(f"B = {escape(result.b_name)}")
    unmatched = sum(1 for r in result.rows for c in r.cells if c.verdict == "unmatched")
    console.print(
        f"{result.agreeing_cells} cells agree, {result.differing_cells} differ"
        + (f", {unmatched} name no concept to compare" if unmatched else "")
        + " (by the kit's concepts, in either language)"
    )
    for row in result.rows:
        mark = "[green]✓[/]" if row.agrees else "[red]✗[/]"
        marks = " ".join(f"{_CELL_MARK[c.verdict]} {escape(c.label)}" for c in row.cells)
        console.print(f"{mark} {escape(row.label)}: {marks}")
        for cell in row.cells:
            if cell.verdict in ("agree", "empty", "unmatched"):
                continue
            if cell.verdict in ("only-a", "only-b"):
                side = "A" if cell.verdict == "only-a" else "B"
                console.print(f"    {escape(cell.label)}: only {side} has this row")
                continue
            parts = []
            if cell.only_a:
                parts.append("only A: " + ", ".join(cell.only_a))
            if cell.only_b:
                parts.append("only B: " + ", ".join(cell.only_b))
            console.print(
                f"    {escape(cell.label)}: {escape('; '.join(parts) or 'worded differently')}"
            )
            console.print(f"      A: {escape(' / '.join(cell.a.splitlines()))}")
            console.print(f"      B: {escape(' / '.join(cell.b.splitlines()))}")
    agreed = sum(1 for c in result.concepts if c.agrees)
    console.print(f"concepts: {agreed} of {len(result.concepts)} in the same rows of both notes")
    for concept in result.concepts:
        if concept.agrees:
            continue
        rows_a = ", ".join(concept.rows_a) or "nowhere"
        rows_b = ", ".join(concept.rows_b) or "nowhere"
        console.print(f"  [red]≠[/] {escape(concept.label)}: A in {escape(rows_a)}; "
                      f"B in {escape(rows_b)}")  # fmt: skip
