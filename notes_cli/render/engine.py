"""Drawing for `pdnotes engine serve` and `pdnotes engine presets`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from rich.markup import escape
from rich.table import Table

from notes_cli.render import out

if TYPE_CHECKING:
    from notes_cli.engine.core.config import EngineConfig
    from notes_cli.engine.core.profiles import Catalog, NodeGroup
    from notes_cli.engine.http.server import EngineAddress


@dataclass(frozen=True)
class ServeBanner:
    """What `engine serve` prints once it listens: the base URL each client needs and the
    pdnotes commands that point the clients at it."""

    config: EngineConfig
    mode: str
    api_key_env: str | None
    faults: tuple[str, ...]
    protocols: tuple[str, ...] = ("chat", "responses", "anthropic", "gemini")

    def show(self, address: EngineAddress) -> None:
        console = out()
        config = self.config
        console.print(
            f"[bold]pdnotes mock PD engine[/] on {escape(address.root_url)}  "
            f"preset [cyan]{escape(config.preset)}[/], mode {escape(self.mode)}, "
            f"speed x{config.speed:g}, models {escape(', '.join(config.served_models))}"
        )
        served = self.protocols
        console.print(f"  OpenAI SDK / Codex base_url   {escape(address.base_url)}")
        if "anthropic" in served:
            console.print(f"  Claude ANTHROPIC_BASE_URL     {escape(address.anthropic_base_url)}")
        if "gemini" in served:
            console.print(f"  Gemini GOOGLE_GEMINI_BASE_URL {escape(address.gemini_base_url)}")
        if len(served) < 4:
            console.print(
                f"  protocols: {escape(', '.join(served))} only; the other routes answer 404"
            )
        console.print(
            f"  metrics {escape(address.url('/metrics'))}   "
            f"state {escape(address.url('/engine/state'))}"
        )
        responses = f"pdnotes config codex --preset mock --base-url {address.base_url}"
        messages = f"pdnotes config claude --preset mock --base-url {address.anthropic_base_url}"
        if self.api_key_env:
            responses += f" --env-key {self.api_key_env}"
            messages += f" --token-env {self.api_key_env}"
            console.print(f"  auth: requests must carry ${escape(self.api_key_env)}")
        if "responses" in served:
            console.print(f"  point Codex here:        {escape(responses)}")
        if "anthropic" in served:
            console.print(f"  point Claude Code here:  {escape(messages)}")
        if self.faults:
            console.print(f"  [yellow]faults:[/] {escape(', '.join(self.faults))}")
        console.print("  Ctrl-C to stop")
        console.file.flush()  # a pipe (tee, a test harness) should see the URLs at once


def preset_rows(catalog: Catalog) -> list[dict[str, Any]]:
    """One JSON-ready row per deployment preset."""
    rows = []
    for name, d in sorted(catalog.deployments.items()):
        rows.append(
            {
                "name": name,
                "mode": d.mode,
                "model": d.model,
                "prefill": _group(d.prefill),
                "decode": _group(d.decode),
                "colocated": _group(d.colocated),
                "link": d.link,
                "max_batch": d.max_batch,
                "description": d.description,
                "source": d.source,
            }
        )
    return rows


def _group(group: NodeGroup | None) -> dict[str, Any] | None:
    if group is None:
        return None
    return {
        "count": group.count,
        "chip": group.chip,
        "tp": group.tp,
        "pp": group.pp,
        "ep": group.ep,
        "dp": group.dp,
    }


def _nodes(group: dict[str, Any] | None) -> str:
    if group is None:
        return "-"
    tp = f" tp{group['tp']}" if group["tp"] > 1 else ""
    more = "".join(f" {k}{group[k]}" for k in ("dp", "ep", "pp") if group.get(k, 1) > 1)
    return f"{group['count']}x {group['chip']}{tp}{more}"


def presets_table(rows: list[dict[str, Any]]) -> None:
    """The presets as a table; descriptions only when the terminal is wide enough for them."""
    console = out()
    wide = console.width >= 140
    table = Table(title="engine presets", title_justify="left")
    for column in ("preset", "mode", "prefill", "decode", "link", "model"):
        table.add_column(column, no_wrap=True)
    if wide:
        table.add_column("description", ratio=1)
    for row in rows:
        prefill = row["prefill"] or row["colocated"]
        cells = [
            row["name"],
            row["mode"],
            _nodes(prefill),
            _nodes(row["decode"]) if row["decode"] else "(same nodes)",
            row["link"],
            row["model"],
        ]
        table.add_row(*cells, *([row["description"]] if wide else []))
    console.print(table)
    if not wide:
        console.print("[dim]descriptions and sources: pdnotes engine presets --json[/]")


def estimate_table(doc: dict[str, Any]) -> None:
    """`engine estimate`: the step, its throughput and what it is made of."""
    console = out()
    par = doc["parallel"]
    shape = f"tp{par['tp']}" + "".join(f"-{k}{par[k]}" for k in ("dp", "ep", "pp") if par[k] > 1)
    unit = "sequences" if doc["phase"] == "decode" else "prompt tokens"
    console.print(
        f"[bold]{escape(doc['deployment'])}[/]: {doc['phase']} on the {doc['role']} node "
        f"({doc['gpus']} x {escape(doc['chip'])}, {shape}), model {escape(doc['model'])}, "
        f"{doc['batch_per_gpu']:,} {unit} per GPU, context {doc['context_tokens']:,}"
    )
    rates = doc["tokens_per_s"]
    table = Table(title="one step", title_justify="left", show_header=False)
    table.add_column("what", no_wrap=True)
    table.add_column("value", justify="right", no_wrap=True)
    table.add_row("step", f"{doc['step_ms']:,.2f} ms ({doc['bound']}-bound kernels)")
    if doc["tokens_per_step"] != 1:
        table.add_row("tokens per sequence per step", f"{doc['tokens_per_step']:.3f}")
    if par["ep"] > 1:  # the routed experts' balance sets their compute and all-to-all
        settings = doc["settings"]
        balance = "EPLB" if settings["eplb"] else "no EPLB"
        imbalance = settings["expert_imbalance"]
        table.add_row("busiest GPU's expert work", f"{imbalance:g}x the mean ({balance})")
    table.add_row("tokens/s per GPU", f"{rates['per_gpu']:,.0f}")
    table.add_row(f"tokens/s per node ({doc['node_gpus']} GPUs)", f"{rates['per_node']:,.0f}")
    table.add_row("tokens/s per user", f"{rates['per_user']:,.1f}")
    kv = doc["kv"]
    verdict = "fits" if kv["fits"] else "[red]does NOT fit[/]"
    table.add_row(
        "KV cache", f"{verdict}: {kv['need_tokens']:,} of {kv['capacity_tokens']:,} tokens"
    )
    console.print(table)
    parts = doc["breakdown_ms"]
    breakdown = Table(title="the step's parts (ms)", title_justify="left")
    keys = ("compute", "attention", "weights", "kv", "communication", "hidden_by_overlap")
    for column in ("compute", "of it attention", "weights", "KV", "communication", "hidden"):
        breakdown.add_column(column, justify="right")
    breakdown.add_column("overheads", justify="right")
    breakdown.add_row(*(f"{parts[k]:,.2f}" for k in (*keys, "overheads")))
    console.print(breakdown)
    kernels = "max(compute, weights + KV)"
    if doc["phase"] == "decode":  # its attention kernels run after the GEMMs, not under them
        kernels = "max(compute - attention, weights) + max(attention, KV)"
    console.print(
        f"[dim]step = {kernels} + communication - hidden + overheads "
        "(launch, speculative drafts, the engine's CPU); "
        'docs/engine-model.md, "One step, statically"[/]'
    )
