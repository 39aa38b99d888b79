"""pdnotes trace show | import | cost"""

from __future__ import annotations

from datetime import date
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from notes_cli.cli.client_options import with_log_folders

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

    from notes_cli.plan.space import ChipOption
    from notes_cli.trace.prices import GatewayPrice, PriceTable

app = typer.Typer(
    help="Agent-session traces (Mooncake-style JSONL with session and turn fields).",
    no_args_is_help=True,
)

TraceFile = Annotated[
    Path,
    typer.Argument(
        help="A trace: JSONL rows with timestamp (ms), input_length, "
        "output_length, hash_ids, optionally session_id and turn."
    ),
]
AsJson = Annotated[bool, typer.Option("--json", help="Print one pdnotes.trace-summary/1 document.")]


Plot = Annotated[
    Path | None,
    typer.Option(
        "--plot", help="Also draw prompt length by turn, a line per session, to FILE.svg/.html."
    ),
]


@app.command("show")
def show(trace: TraceFile, as_json: AsJson = False, plot: Plot = None) -> None:
    """Summarise a trace: sessions, turns per session, prompt growth per turn, prefix reuse
    (share of blocks an earlier request already had) and arrival burstiness."""
    from notes_cli import render
    from notes_cli.trace.format import read_rows
    from notes_cli.trace.summary import summarise

    if plot is None:
        summary = summarise(read_rows(trace))
    else:
        from notes_cli.fileio import require_output_folder
        from notes_cli.trace.plot import SessionLengths, check_plot_path, write_plot

        check_plot_path(plot)
        require_output_folder(plot, "--plot")
        lengths = SessionLengths()
        summary = summarise(lengths.watch(read_rows(trace)))
        write_plot(lengths.sessions, plot, f"prompt length by turn: {trace.name}")
        render.note(f"wrote {plot}")
    if as_json:
        render.emit_json({"trace": str(trace), **summary.to_json()})
        return
    from notes_cli.render.trace import summary_report

    summary_report(trace, summary)


Out = Annotated[Path, typer.Argument(help="The trace to write (a new FILE.jsonl).")]
Clients = Annotated[
    list[str] | None,
    typer.Option(
        "--client",
        help="Whose logs to read: claude, codex (repeatable; default both, skipping one "
        "whose log folder does not exist).",
    ),
]
Since = Annotated[
    str | None, typer.Option("--since", help="Only model calls on or after this UTC date.")
]
Until = Annotated[
    str | None, typer.Option("--until", help="Only model calls on or before this UTC date.")
]


@app.command("import")
@with_log_folders(after="client")
def import_logs(
    out: Out,
    client: Clients = None,
    since: Since = None,
    until: Until = None,
    log_folders: dict[str, Path | None] | None = None,
) -> None:
    """Turn Claude Code's and Codex's own session logs into a trace: token counts, cache reads,
    times and turns per session, never text (reuse as synthetic hash_ids: docs/trace.md)."""
    from notes_cli import render
    from notes_cli.clients import registry
    from notes_cli.errors import UsageError
    from notes_cli.fileio import atomic_write, require_output_folder
    from notes_cli.trace import agent_logs
    from notes_cli.trace.format import render_rows
    from notes_cli.trace.summary import summarise

    require_output_folder(out, "OUT")
    if out.exists():
        raise UsageError(f"{out} already exists; nothing was changed", fix="name a new file")
    readers: dict[str, tuple[Path | None, Callable[[], Path], Callable[[Path], Iterator[Any]]]]
    readers = {}
    for plugin in registry.with_session_logs():
        if plugin.session_logs is not None:
            logs = plugin.session_logs
            given = (log_folders or {}).get(plugin.name)
            readers[plugin.name] = (given, logs.default_folder, logs.calls)
    chosen = client or list(readers)
    unknown = sorted(set(chosen) - set(readers))
    if unknown:
        raise UsageError(f"--client {unknown[0]!r}: choose {' or '.join(readers)}")
    calls: list[agent_logs.Call] = []
    for name in chosen:
        given, default, read = readers[name]
        folder = given or default()
        if given is None and client is None and not folder.is_dir():
            render.note(f"no {name} logs at {folder}; skipped")
            continue
        calls.extend(read(folder))
    rows = agent_logs.to_rows(calls, since=_date(since, "--since"), until=_date(until, "--until"))
    if not rows:
        raise UsageError("no model calls found in the chosen logs and dates; nothing written")
    atomic_write(out, render_rows(rows), mode=0o600)
    summary = summarise(rows)
    render.note(
        f"wrote {out}: {summary.requests:,} model calls in {summary.sessions:,} sessions, "
        f"prefix reuse {summary.prefix_reuse:.1%}"
    )


def _date(text: str | None, flag: str) -> date | None:
    from notes_cli.errors import UsageError

    if text is None:
        return None
    try:
        return date.fromisoformat(text)
    except ValueError:
        raise UsageError(f"{flag} {text!r} is not a date", fix="e.g. 2026-05-31") from None


CostChip = Annotated[
    list[str] | None,
    typer.Option(
        "--chip",
        help="A chip kind to plan on, NAME or NAME:PRICE per chip-hour (repeatable; default "
        "h100-sxm; a price not given comes from the price table).",
    ),
]
Gateway = Annotated[
    list[str] | None,
    typer.Option(
        "--gateway", help="Gateway model of the price table to compare (repeatable; default all)."
    ),
]
Prices = Annotated[
    Path | None,
    typer.Option(
        "--prices", help="Price table FILE.toml to use instead of the bundled one (docs/trace.md)."
    ),
]
PerDay = Annotated[
    float | None,
    typer.Option(
        "--per-day",
        min=1.0,
        max=1e12,
        help="Price this many requests a day (default: the trace's own volume).",
    ),
]
CostJson = Annotated[bool, typer.Option("--json", help="Print one pdnotes.trace-cost/1 document.")]


@app.command("cost")
def cost(
    trace: TraceFile,
    model: Annotated[
        str, typer.Option("--model", help="Model shape to plan the cluster for.")
    ] = "qwen3-8b",
    chip: CostChip = None,
    gateway: Gateway = None,
    prices: Prices = None,
    per_day: PerDay = None,
    slo_ttft_ms: Annotated[
        float, typer.Option("--slo-ttft-ms", min=1.0, max=3.6e6, help="TTFT objective (ms).")
    ] = 2000.0,
    slo_tpot_ms: Annotated[
        float, typer.Option("--slo-tpot-ms", min=0.1, max=3.6e6, help="TPOT objective (ms).")
    ] = 50.0,
    max_chips: Annotated[
        int, typer.Option("--max-chips", min=1, max=64, help="Chips per instance at most.")
    ] = 8,
    jobs: Annotated[
        int | None, typer.Option("--jobs", "-j", min=1, max=256, help="Local processes.")
    ] = None,
    as_json: CostJson = False,
) -> None:
    """Price a trace: its traffic a day at gateway rates (input, cached input, output), the
    cluster `engine plan --trace` picks for it at its chip-hour prices, and the volume at
    which self-hosting breaks even."""
    from notes_cli import render
    from notes_cli.cli.plan import plan_trace
    from notes_cli.errors import UsageError
    from notes_cli.plan.slo import PlanSlo
    from notes_cli.trace import cost as costing
    from notes_cli.trace.format import read_rows
    from notes_cli.trace.prices import load_prices

    table = load_prices(prices)
    chosen = _gateways(table, gateway)
    chips = _priced_chips(chip or ["h100-sxm"], table)
    volume = costing.measure(read_rows(trace))
    if not volume.requests:
        raise UsageError(f"trace {trace} has no requests; nothing to price")
    volume_per_day = per_day if per_day is not None else volume.per_day
    if volume_per_day is None:
        raise UsageError(
            f"trace {trace}: every request arrives at one instant, so it has no daily volume",
            fix="name one with --per-day N (requests a day)",
        )
    report = plan_trace(
        trace,
        model=model,
        chips=chips,
        slo=PlanSlo(slo_ttft_ms, slo_tpot_ms),
        target_rate=min(volume_per_day / costing.DAY_S, 1e6),
        max_chips=max_chips,
        jobs=jobs,
    )
    best = report.best
    if best is None or best.price_per_hour is None:
        from notes_cli.errors import PdnotesError

        raise PdnotesError(
            f"no deployment of {model} on {', '.join(c.name for c in chips)} meets the SLOs "
            "for this trace; nothing to price",
            fix="allow more chips (--max-chips), another --chip, or looser --slo-ttft-ms / "
            "--slo-tpot-ms",
        )
    cluster = costing.Cluster(
        best.result.candidate.label, best.result.capacity, best.price_per_hour
    )
    priced = costing.price(volume, volume_per_day, cluster, chosen)
    if as_json:
        document = priced.to_json()
        document["trace_file"] = str(trace)
        document["prices_file"] = str(table.path)
        document["self_hosted"]["model"] = model
        document["self_hosted"]["chips"] = [
            {"name": c.name, "price_per_hour": c.price, **_chip_source(table, c)} for c in chips
        ]
        render.emit_json(document)
        return
    from notes_cli.render.trace import cost_report

    cost_report(trace, model, priced, per_day is not None)


def _gateways(table: PriceTable, names: list[str] | None) -> list[GatewayPrice]:
    from notes_cli.errors import UsageError

    if not names:
        return list(table.gateway.values())
    missing = [n for n in names if n not in table.gateway]
    if missing:
        raise UsageError(
            f"--gateway {missing[0]!r} is not in the price table {table.path}",
            fix=f"choose from {', '.join(table.gateway)}, or add a row (--prices FILE)",
        )
    return [table.gateway[n] for n in dict.fromkeys(names)]


def _priced_chips(specs: list[str], table: PriceTable) -> tuple[ChipOption, ...]:
    """--chip NAME[:PRICE], each with its price (given, else the table's)."""
    import math

    from notes_cli.errors import UsageError
    from notes_cli.plan.space import ChipOption
    from notes_cli.trace.prices import MAX_PRICE

    out: dict[str, ChipOption] = {}
    for spec in specs:
        name, sep, text = (part.strip() for part in spec.partition(":"))
        if sep:
            try:
                value = float(text)
            except ValueError:
                raise UsageError(f"--chip {spec!r}: the price must be a number") from None
            if not (math.isfinite(value) and 0 < value <= MAX_PRICE):
                raise UsageError(f"--chip {spec!r}: the price must be above 0 and finite")
        elif name in table.chips:
            value = table.chips[name].per_hour
        else:
            raise UsageError(
                f"--chip {name}: the price table {table.path} has no price for it",
                fix=f"give one: --chip {name}:PRICE (US$ per chip-hour), or add [chips.{name}]",
            )
        out[name] = ChipOption(name, value)
    return tuple(out.values())


def _chip_source(table: PriceTable, chip: ChipOption) -> dict[str, str | None]:
    """Where a chip's price came from: the table's row, or the command line."""
    row = table.chips.get(chip.name)
    if row is None or row.per_hour != chip.price:
        return {"source": "--chip", "date": None}
    return {"source": row.source, "date": row.date}
