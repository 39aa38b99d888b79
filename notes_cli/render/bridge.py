"""Drawing for `pdnotes bridge serve | install | uninstall`."""

from __future__ import annotations

import shlex
from typing import TYPE_CHECKING

from rich.markup import escape

from notes_cli.render import err, out

if TYPE_CHECKING:
    from pathlib import Path

    from notes_cli.bridge.config import BridgeConfig
    from notes_cli.bridge.service import Outcome, ServicePlan


def config_commands(config: BridgeConfig, model: str | None = None) -> tuple[str, str]:
    """The `pdnotes config` commands that point the clients speaking the Responses and the
    Messages API (Codex, Claude Code) at this bridge."""
    from notes_cli.clients import registry
    from notes_cli.clients.plugin import key_flag, speaker

    key = object()  # stands for each client's own key option
    tail: list[object] = ["--bridge", "--base-url", config.upstream]
    if config.upstream_key_env:
        tail += [key, config.upstream_key_env]
    for fallback in config.fallbacks:
        tail += ["--bridge-fallback", fallback.upstream]
    keyed = [f.upstream_key_env or "-" for f in config.fallbacks]  # paired by position
    while keyed and keyed[-1] == "-":
        keyed.pop()
    for name in keyed:
        tail += ["--bridge-fallback-key-env", name]
    if config.port != 8787:
        tail += ["--bridge-port", str(config.port)]
    tail += ["--model", model or config.model or "<model id>"]
    commands = []
    for protocol in ("responses", "anthropic"):
        client = speaker(registry.CLIENTS, protocol)
        words = [key_flag(client) if t is key else str(t) for t in tail]
        commands.append(shlex.join(["pdnotes", "config", client.name, *words]))
    return commands[0], commands[1]


def banner(config: BridgeConfig) -> None:
    """What `bridge serve` prints once it listens (like `engine serve`)."""
    console = out()
    console.print(
        f"[bold]pdnotes bridge[/] on {escape(config.root_url)} → upstream "
        f"{escape(config.upstream)}/chat/completions"
    )
    console.print(f"  Codex base_url               {escape(config.v1_base_url)}")
    console.print(f"  Claude ANTHROPIC_BASE_URL    {escape(config.anthropic_base_url)}")
    console.print(f"  chat clients base_url        {escape(config.v1_base_url)}")
    if config.upstream_key_env:
        console.print(f"  upstream key from ${escape(config.upstream_key_env)}")
    for n, fallback in enumerate(config.fallbacks, 1):
        key = f"key from ${fallback.upstream_key_env}" if fallback.upstream_key_env else "no key"
        console.print(f"  fallback {n}: {escape(fallback.upstream)} ({escape(key)})")
    if config.model_map:
        pairs = ", ".join(f"{k} → {v}" for k, v in config.model_map.items())
        console.print(f"  model map: {escape(pairs)}")
    if config.api_key_env:
        console.print(f"  auth: clients must send ${escape(config.api_key_env)}")
    elif config.host not in ("127.0.0.1", "localhost", "::1"):
        console.print(
            f"  [yellow]warning:[/] listening on {escape(config.host)} with no key: anyone who "
            "can reach this port uses your upstream (add --api-key-env NAME)"
        )
    responses, messages = config_commands(config)
    console.print(f"  point Codex here:        {escape(responses)}")
    console.print(f"  point Claude Code here:  {escape(messages)}")
    console.print("  Ctrl-C to stop")
    console.file.flush()


def install_report(
    plan: ServicePlan,
    record: BridgeConfig,
    outcome: Outcome,
    *,
    dry_run: bool,
    started: bool,
    force: bool,
) -> None:
    from notes_cli.bridge.service import edited_diff

    console = out()
    edited = outcome.state == "edited"
    if dry_run and edited:
        console.print(escape(edited_diff(plan).rstrip("\n")), highlight=False, soft_wrap=True)
        if force:
            console.print(
                f"[yellow]note:[/] {escape(str(plan.path))} has changes pdnotes did not write "
                f"(above): a copy of it would be kept in {escape(str(_backups()))}"
            )
        else:
            console.print(
                f"[yellow]warning:[/] {escape(str(plan.path))} has changes pdnotes did not "
                "write (above): install would refuse to replace it without --force"
            )
    verb = "would write" if dry_run else "wrote"
    console.print(f"[bold]{verb}[/] {escape(str(plan.path))} ({plan.kind}):")
    console.print(escape(plan.text), markup=True, highlight=False, soft_wrap=True)
    if outcome.backup is not None:
        console.print(
            f"[yellow]note:[/] the file it replaced had changes pdnotes did not write; a copy "
            f"is in {escape(str(outcome.backup))}"
        )
    commands = [shlex.join(c) for c in plan.enable]
    if dry_run:
        console.print(f"[bold]would run[/]: {escape('; '.join(commands))}")
    elif started:
        console.print(f"[bold]ran[/]: {escape('; '.join(commands))}")
    else:
        console.print(f"start it with: {escape('; '.join(commands))}")
    console.print(f"serves {escape(record.upstream)} at {escape(record.root_url)}")
    if plan.key_hint:
        console.print(f"[yellow]note:[/] {escape(plan.key_hint)}")


def edited_diff(diff: str) -> None:
    """Before `install` refuses an edited service file: what replacing it would change."""
    err().print(escape(diff.rstrip("\n")), highlight=False, soft_wrap=True)


def uninstall_report(plan: ServicePlan, outcome: Outcome, *, dry_run: bool) -> None:
    console = out()
    if outcome.state == "absent":
        console.print(f"nothing installed at {escape(str(plan.path))}")
        return
    verb = "would remove" if dry_run else "removed"
    commands = "; ".join(shlex.join(c) for c in plan.disable)
    ran = "" if outcome.not_stopped else f" ({escape(commands)})"  # the error says what failed
    console.print(f"[bold]{verb}[/] {escape(str(plan.path))}{ran}")
    if outcome.backup is not None:
        console.print(
            "[yellow]note:[/] it had changes pdnotes did not write (or pdnotes has no record "
            f"of writing it); a copy is in {escape(str(outcome.backup))}"
        )
    elif dry_run and outcome.state == "edited":
        console.print(
            "[yellow]note:[/] it has changes pdnotes did not write (or pdnotes has no record "
            f"of writing it); a copy would be kept in {escape(str(_backups()))}"
        )


def _backups() -> Path:
    from notes_cli import backups
    from notes_cli.bridge.service import BACKUP_CLIENT

    return backups.backups_dir(BACKUP_CLIENT)
