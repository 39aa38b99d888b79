"""Drawing for `pdnotes notes …`: kit list, check report, generate progress and summary."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from rich.markup import escape
from rich.table import Table

from notes_cli.render import err, out
from notes_cli.secrets import mask_url

if TYPE_CHECKING:
    from notes_cli.notes.check import NoteCheck
    from notes_cli.notes.generate import Attempt, GenerateResult
    from notes_cli.notes.kits import Kit
    from notes_cli.notes.rubric import RowResult
    from notes_cli.notes.sources import Source

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
    for problem in check.problems():
        console.print(f"  [red]•[/] {escape(problem)}")


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
            err().print(f"\r{self._status()}", end="", markup=False, highlight=False)

    def done(self, outcome: str) -> None:
        if self._live:
            err().print("\r", end="")
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


def sources_fitted(sources: list[Source], budget: int) -> None:
    """Say how much of each source went into the prompt, and warn about every cut."""
    from notes_cli.render import note, warn

    for source in sources:
        if source.cut:
            warn(
                f"source {source.path}: cut from ~{source.original_tokens} to ~{source.tokens} "
                f"tokens to fit --max-source-tokens {budget}"
            )
        else:
            note(f"source {source.path}: ~{source.tokens} tokens")


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
