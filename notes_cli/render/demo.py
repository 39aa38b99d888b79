"""Drawing for `pdnotes demo`: a heading per step, the command a user would type, what happened,
and a ✓ / ✗ verdict line. The PD experiment gets a table and a sparkline chart of one decoding
stream's inter-token gaps."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rich.markup import escape
from rich.rule import Rule
from rich.table import Table

from notes_cli.render import out, visible

if TYPE_CHECKING:
    from notes_cli.demo.run import DemoReport
    from notes_cli.demo.step import Step

_BARS = "▁▂▃▄▅▆▇█"
_CHART_WIDTH = 60


def intro(speed: float) -> None:
    out().print(
        "[bold]pdnotes demo[/]: the bundled mock PD engine on loopback, a throw-away "
        "CODEX_HOME / CLAUDE_CONFIG_DIR / PDNOTES_HOME, no key, no network "
        f"(engine speed x{speed:g})."
    )


def step(number: int, item: Step) -> None:
    console = out()
    console.print()
    console.print(Rule(f"[bold]{number}. {escape(item.title)}[/]", align="left"))
    for command in item.commands:
        console.print(f"[dim]$[/] {escape(command)}")
    error = item.data.get("error")
    if error is None:
        _BODIES.get(item.key, lambda _: None)(item.data)
    mark = "[green]✓[/]" if item.ok else "[bold red]✗[/]"
    console.print(f"{mark} {_VERDICT[item.key][0 if item.ok else 1]}")
    if error is not None:
        console.print(escape(failure_sentence(number, item)))


def failure_sentence(number: int, item: Step) -> str:
    """A failed step in one sentence: which step, what it expected, what it saw, the fix."""
    error = item.data.get("error") or {}
    saw = error.get("saw") or "a different outcome (its output is above)"
    where = f" (at {error['where']})" if error.get("where") else ""
    fix = f"; fix: {error['fix']}" if error.get("fix") else ""
    return (
        f"step {number} failed: {item.title}: expected {_VERDICT[item.key][0]}; "
        f"saw {visible(saw)}{where}{fix}"
    )


def summary(report: DemoReport) -> None:
    console = out()
    console.print()
    failed = [(n, s) for n, s in enumerate(report.steps, start=1) if not s.ok]
    if failed:
        console.print(f"[bold red]demo finished with {len(failed)} failed step(s):[/]")
        for number, item in failed:
            console.print("  " + escape(failure_sentence(number, item)))
    else:
        console.print(
            f"[bold green]demo finished: all {len(report.steps)} steps did what they should.[/]"
        )


def _engine(data: dict[str, Any]) -> None:
    out().print(f"  OpenAI SDK / Codex base URL   {data['base_url']}")
    out().print(f"  Claude Code base URL          {data['anthropic_base_url']}")


def _config(data: dict[str, Any]) -> None:
    for item in data["files"]:
        out().print(f"  {item['client']:<7} wrote {escape(item['file'])}")
        out().print(f"          will call POST {escape(item['request_url'])}")


def _doctor(data: dict[str, Any]) -> None:
    doc = data["doctor"]
    for finding in doc["findings"]:
        out().print(f"  {finding['severity']:<8} {finding['id']}: {escape(finding['message'])}")
    for probe in doc["probes"]:
        status = probe["status"] if probe["status"] is not None else "—"
        ms = f"{probe['ms']:.0f} ms" if probe["ms"] is not None else ""
        out().print(
            f"  probe {probe['client']:<6} {probe['method']} {escape(probe['url'])} → {status} {ms}"
        )


def _mistakes(data: dict[str, Any]) -> None:
    for case in data["cases"]:
        finding = case["finding"] or {}
        mark = "[green]✓[/]" if case["caught"] else "[bold red]✗ missed:[/]"
        out().print(f"  {mark} {escape(case['mistake'])} → [bold]{case['expect']}[/]")
        out().print(f"      [dim]article:[/] {escape(case['article'])}")
        if finding:
            out().print(f"      [dim]doctor:[/]  {escape(finding['message'])}")
            out().print(f"      [dim]fix:[/]     {escape(finding['fix'])}")


def _smoke(data: dict[str, Any]) -> None:
    doc = data["smoke"]
    for run in doc["runs"]:
        out().print(
            f"  run {run['index']}: {run['status']}  TTFT {_ms(run['ttft_ms'])}  total "
            f"{_ms(run['total_ms'])}  {run['output_tokens']} tokens  {run['finish_reason']}"
        )
    breakdown = doc["breakdown"]
    timing = breakdown.get("engine") or {}
    if timing:
        out().print(
            "  the engine's own account (simulated hardware ms): "
            + ", ".join(
                f"{k} {v:g}"
                for k, v in timing.items()
                if k.endswith("_ms") and isinstance(v, (int, float))
            )
        )
    out().print(
        "  [dim]the gateway only forwards: network + gateway time is connect and headers; "
        "speed comes from the serving engine (prefill → TTFT, decode → TPOT).[/]"
    )


def _notes(data: dict[str, Any]) -> None:
    table = Table(show_lines=True)
    for column in data["table"]["columns"]:
        # fold: a Chinese cell has no spaces to wrap at, and the default cut it off with "…"
        table.add_column(escape(column), overflow="fold")
    for row in data["table"]["rows"]:
        table.add_row(*(escape(cell) for cell in row))
    out().print(table)
    out().print(f"  rubric: {data['verdict']} after {data['attempts']} answer(s)")
    for path in data["files"]:
        out().print(f"  wrote {escape(path)}")


def _experiment(data: dict[str, Any]) -> None:
    exp = data["experiment"]
    table = Table(
        title=f"{exp['long_prompt_tokens']}-token prompt arrives while "
        f"{exp['decoding_requests']} short requests decode (simulated ms)"
    )
    for name in ("preset", "mode", "short TTFT", "TPOT", "largest gap", "long TTFT", "KV transfer"):
        table.add_column(name, justify="left" if name in ("preset", "mode") else "right")
    for p in exp["presets"]:
        table.add_row(
            p["preset"], p["mode"], _ms(p["short_ttft_ms"]), _ms(p["tpot_ms"]),
            _ms(p["max_gap_ms"]), _ms(p["long_ttft_ms"]), _ms(p["long_transfer_ms"]),
        )  # fmt: skip
    out().print(table)
    top = max(max(p["gaps_ms"], default=0.0) for p in exp["presets"]) or 1.0
    out().print(f"  inter-token gaps of one decoding stream (shared scale, top = {top:.0f} ms):")
    for p in exp["presets"]:
        out().print(
            f"  {p['preset']:<16} {sparkline(p['gaps_ms'], top)}  max {_ms(p['max_gap_ms'])}"
        )
    out().print(f"  {escape(exp['conclusion'])}")


def _next(data: dict[str, Any]) -> None:
    if data["files"]:
        for name, path in data["files"].items():
            out().print(f"  {name:<16} {escape(path)}")
    else:
        out().print("  [dim](the demo's files were removed; keep them with --keep DIR)[/]")


def sparkline(values: list[float], top: float, width: int = _CHART_WIDTH) -> str:
    """`values` squeezed to `width` columns (each the max of its bucket), scaled to `top`."""
    if not values:
        return ""
    size = max(1, -(-len(values) // width))
    buckets = [max(values[i : i + size]) for i in range(0, len(values), size)]
    return "".join(
        _BARS[min(len(_BARS) - 1, int(v / top * (len(_BARS) - 1) + 0.5))] for v in buckets
    )


def _ms(value: float | None) -> str:
    from notes_cli.demo.pd_experiment import ms_text  # the sentence under the table uses it too

    return ms_text(value)


def _bridge(data: dict[str, Any]) -> None:
    console = out()
    console.print(
        f"  the engine as a chat-only gateway: POST {escape(data['upstream'])}/responses -> "
        f"{data['upstream_responses_status']} (what Codex alone would get)"
    )
    console.print(f"  Codex base URL, through the bridge   {escape(data['bridge_codex_base_url'])}")
    verdict = data["smoke"]["verdict"]
    runs = data["smoke"].get("runs", [])
    texts = ", ".join(escape(str(r.get("preview", "")).strip()) for r in runs)
    console.print(f"  smoke through the bridge: {len(runs)} turns answered ({texts})")
    if not verdict["ok"]:
        console.print(f"  [red]{escape(str(verdict))}[/]")


_BODIES = {
    "engine": _engine,
    "config": _config,
    "doctor": _doctor,
    "mistakes": _mistakes,
    "smoke": _smoke,
    "notes": _notes,
    "experiment": _experiment,
    "next": _next,
    "bridge": _bridge,
}

_VERDICT = {
    "bridge": (
        "Codex's Responses API works on the chat-only engine through the bridge",
        "the bridge step failed",
    ),
    "engine": ("engine running on loopback", "engine did not start"),
    "config": (
        "both clients point at the engine (backups kept; no key written)",
        "a config file was not written",
    ),
    "doctor": ("doctor: no errors, every probe answered", "doctor found errors"),
    "mistakes": (
        "every error from the article was caught with its fix",
        "some errors went uncaught",
    ),
    "smoke": ("smoke: every run returned, completed, with stable latency", "smoke verdict failed"),
    "notes": (
        "the note passes the rubric and is written in md, csv, json and html",
        "the note did not pass or was not written",
    ),
    "experiment": (
        "colocated decoding stalls behind the long prefill; disaggregated does not",
        "the experiment did not show the expected PD difference",
    ),
    "next": ("point pdnotes at your real gateway with the commands above", ""),
}
