"""Drawing for `pdnotes smoke`: a progress line per run (stderr), then the runs table, where the
time went, and the verdict (stdout)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.box import SIMPLE
from rich.markup import escape
from rich.segment import Segment
from rich.table import Table
from rich.text import Text

from notes_cli.render import err, out, visible

if TYPE_CHECKING:
    from collections.abc import Iterator

    from rich.console import Console, ConsoleOptions, RenderableType

    from notes_cli.clients.endpoint import Endpoint
    from notes_cli.smoke import Breakdown, SmokeReport, SmokeRun


def header(endpoint: Endpoint, n: int) -> None:
    """What is about to be called (stderr), key masked."""
    from notes_cli.gateway import request_url, safe_url

    err().print(
        f"[dim]smoke: {n} x POST {escape(safe_url(request_url(endpoint)))} "
        f"({endpoint.protocol}, model {escape(endpoint.model or '?')}, "
        f"key {escape(endpoint.masked_key)})[/]"
    )


def progress(run: SmokeRun) -> None:
    """One line per finished run (stderr)."""
    mark = "[green]ok[/]" if run.ok else "[yellow]slow[/]" if run.slow else "[red]FAIL[/]"
    took = f"{run.total_ms:.0f} ms" if run.total_ms is not None else "-"
    detail = "" if run.ok else f" {escape(run.problem or '')}"
    if run.slow and run.tokens_per_s is not None:
        detail = f" still streaming at {run.tokens_per_s:.1f} tokens/s"
    err().print(f"[dim]run {run.index}:[/] {mark} {took}{detail}")


def report(result: SmokeReport) -> None:
    console = out()
    console.print(_Trimmed(_runs_table(result.runs)))
    fixes: list[str] = []
    for run in result.runs:
        for line in run.retried:
            console.print(f"[yellow]run {run.index} retried:[/] {escape(line)}")
        # A slow run's own line says what to change; the timeout's generic fix would not.
        fix = str(run.error.get("fix") or "") if run.error and not run.slow else run.fix or ""
        if fix and fix not in fixes:
            fixes.append(fix)
    for fix in fixes:
        console.print(f"[bold]fix:[/] {escape(fix)}")
    if any(not run.error or run.slow for run in result.runs):
        console.print(_breakdown_line(result.breakdown))
    if result.proxy:
        console.print(f"[dim]via proxy {escape(result.proxy)}[/]")
    verdict = result.verdict
    style, word = ("bold green", "PASS") if verdict.ok else ("bold red", "FAIL")
    if verdict.ok and verdict.slow:
        style, word = "bold yellow", "SLOW"  # working, but the end of a run was not seen
    checks = ", ".join(
        f"{name} {'yes' if value else 'NO'}"
        for name, value in (
            ("returned", verdict.returned),
            ("completed", verdict.completed),
            ("stable", verdict.stable),
        )
    )
    if verdict.slow:
        slow = len(verdict.slow_reasons)
        if verdict.completed and slow == len(result.runs):  # no run's end was seen
            checks = checks.replace("completed yes", "completed not seen")
        checks += f", slow {slow} of {len(result.runs)} (still streaming at --timeout)"
    console.print(f"[{style}]{word}[/] {checks}  [dim]({escape(verdict.rule)})[/]")
    for reason in verdict.reasons:
        console.print(f"  [red]•[/] {escape(reason)}")
    for reason in verdict.slow_reasons:
        console.print(f"  [yellow]•[/] {escape(reason)}")


class _Trimmed:
    """`renderable` without the trailing spaces rich pads every table row with."""

    def __init__(self, renderable: RenderableType) -> None:
        self.renderable = renderable

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> Iterator[Segment]:
        for line in console.render_lines(self.renderable, options, pad=False):
            while line and not line[-1].text.rstrip():
                line.pop()
            if line:
                last = line.pop()
                line.append(Segment(last.text.rstrip(), last.style, last.control))
            yield from line
            yield Segment.line()


def _runs_table(runs: list[SmokeRun]) -> Table:
    table = Table(
        title="smoke runs (ms from request start)", title_justify="left", box=SIMPLE, pad_edge=False
    )
    # the server's prompt-cache hits, when it reports them (llama.cpp, vLLM, OpenAI)
    cached = any(run.cached_tokens is not None for run in runs)
    names = ("run", "status", "connect", "headers", "TTFT", "total", "tokens", "tok/s")
    for name in (*names, "cached") if cached else names:
        table.add_column(name, justify="right", no_wrap=True)
    table.add_column("finish", no_wrap=True)
    # The preview gives way when the numbers widen the table (a stream read in one burst has a
    # 7-digit tok/s): rich shrinks a wrappable column first and cuts every no_wrap column alike,
    # which showed "14301…" for a rate. The cell itself never wraps (`_preview_cell`).
    table.add_column("preview", overflow="ellipsis", max_width=20)
    for run in runs:
        tokens = "-" if run.output_tokens is None else str(run.output_tokens)
        if run.tokens_source == "counted":
            tokens += "*"
        hits = ["-" if run.cached_tokens is None else str(run.cached_tokens)] if cached else []
        table.add_row(
            str(run.index),
            str(run.status) if run.status is not None else "-",
            _connect(run),
            _num(run.headers_ms),
            _num(run.ttft_ms),
            _num(run.total_ms),
            tokens,
            f"{run.tokens_per_s:.1f}" if run.tokens_per_s is not None else "-",
            *hits,
            escape(_finish(run)),
            _preview_cell(run.preview),
        )
    return table


def _preview_cell(preview: str) -> Text:
    """One line, cut with an ellipsis at the width left over (never wrapped). Made visible
    here, before rich measures it, so a control character takes its shown width."""
    return Text(visible(preview), no_wrap=True, overflow="ellipsis")


def _breakdown_line(b: Breakdown) -> str:
    """Network + gateway time vs model time, medians over the runs that returned."""
    network = f"connect {_ms(b.connect_ms)}, headers at {_ms(b.gateway_ms)}"
    rate = f"{b.decode_tokens_per_s:.1f} tok/s" if b.decode_tokens_per_s is not None else "-"
    model = f"first token {_ms(b.model_ttft_ms)} after headers, decode {rate}"
    line = f"[bold]where the time goes[/] (median): network + gateway: {network}; model: {model}"
    if b.headers_with_first_token:
        line += (
            "\n  [dim]the first token came with the headers (within 2 ms): if the server holds "
            "its headers until then, the time to headers also holds queueing and prefill[/]"
        )
    if b.engine:
        line += _engine_line(b.engine)
    return line


def _engine_line(engine: dict[str, float]) -> str:
    """The engine's pd_timing is simulated hardware time: said so, and with --speed other
    than 1 (the wall clock runs that much faster) put into wall time too, so a decode of
    498 ms beside a total of 155 ms is not read as the same clock."""
    times = {k: v for k, v in engine.items() if k.endswith("_ms")}
    parts = ", ".join(f"{k.removesuffix('_ms')} {v:g} ms" for k, v in times.items())
    line = f"\n  engine-reported pd_timing, in its simulated hardware time: {escape(parts)}"
    speed = engine.get("speed", 1.0)
    if speed > 0 and speed != 1:
        wall = ", ".join(
            f"{k.removesuffix('_ms')} {v / speed:.1f} ms"
            for k, v in times.items()
            if k in ("ttft_ms", "decode_ms")
        )
        line += (
            f"\n  [dim]the engine runs at --speed {speed:g}: its wall clock takes 1/{speed:g} "
            f"of that time (in wall time: {wall})[/]"
        )
    return line


# Short names for the finish column (the full message follows the table).
_SHORT_KIND = {
    "unreachable": "unreachable",
    "tls": "tls error",
    "connect-timeout": "no connect",
    "headers-timeout": "no headers",
    "idle-stream-timeout": "stalled",
    "total-timeout": "too slow",
    "truncated-stream": "truncated",
    "upstream-error": "upstream",
    "protocol-error": "protocol",
}


def _finish(run: SmokeRun) -> str:
    if run.slow:
        return "slow"
    if run.error:
        return _SHORT_KIND.get(str(run.error.get("kind")), "error")
    return run.finish_reason or "-"


def _connect(run: SmokeRun) -> str:
    """A pooled connection has no connect time: say so rather than show a dash."""
    if run.connect_ms is None and run.headers_ms is not None:
        return "reused"
    return _num(run.connect_ms)


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.0f} ms"


def _num(value: float | None) -> str:
    return "-" if value is None else f"{value:.0f}"
