"""Drawing for `pdnotes config …`: diffs, what was written, the effective setup, undo."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.markup import escape

from notes_cli.render import emit_json, out, warn
from notes_cli.secrets import mask_url

if TYPE_CHECKING:
    from pathlib import Path

    from notes_cli.backups import RolledBack, UndoResult
    from notes_cli.clients.plan import WriteResult
    from notes_cli.clients.presets import Preset
    from notes_cli.clients.resolve import ClientSetup

_METHOD = "POST"


def _title(client: str) -> str:
    from notes_cli.clients import registry

    return registry.titles().get(client, client)


def write_json(result: WriteResult, *, dry_run: bool) -> None:
    emit_json(_write_document(result, dry_run=dry_run))


def _write_document(result: WriteResult, *, dry_run: bool) -> dict[str, object]:
    plan = result.plan
    return {
        "schema": "pdnotes.config-write/1",
        "client": plan.client,
        "file": str(plan.path),
        "also": [
            {
                "file": str(edit.path),
                "changed": edit.changed,
                "written": result.written is not None,
                "diff": plan.diff_of(edit),
            }
            for edit in plan.also
        ],
        "dry_run": dry_run,
        "changed": plan.changed,
        "written": result.written is not None,
        "backup": str(result.backup) if result.backup else None,
        "diff": plan.diff(),
        "request_url": mask_url(plan.request_url),
        "export_line": plan.export_line,
        "notes": list(plan.notes),
        "warnings": list(result.warnings),
    }


def write_human(result: WriteResult, *, dry_run: bool) -> None:
    plan = result.plan
    console = out()
    for note in plan.notes:
        console.print(f"[cyan]•[/] {escape(note)}")
    for warning in result.warnings:
        warn(warning)
    if dry_run:
        diff = plan.diff()
        console.print(escape(diff.rstrip("\n")) if diff else f"no change to {plan.path}")
        files = " and ".join(str(p) for p in (plan.path, *(e.path for e in plan.also)))
        verb = "were" if plan.also else "was"
        console.print(f"[dim]dry run: {escape(files)} {verb} not written[/]")
    elif result.written is None:
        console.print(f"{escape(str(plan.path))} already has this setup; nothing written")
    else:
        console.print(f"[green]wrote[/] {escape(str(plan.path))}")
        for edit in plan.also:
            if edit.changed:
                console.print(f"[green]wrote[/] {escape(str(edit.path))}")
        if result.backup:
            console.print(
                f"  backup: {escape(str(result.backup))}  (undo: pdnotes config undo --client "
                f"{plan.client})"
            )
    title = _title(plan.client)
    console.print(f"{title} will call: {_METHOD} {escape(mask_url(plan.request_url))}")
    if plan.export_line:
        label = "still needed" if "<your API key>" in plan.export_line else "key"
        console.print(f"{label}: {escape(plan.export_line)}")


def show_json(setups: list[ClientSetup]) -> None:
    emit_json({"schema": "pdnotes.config/1", "clients": [_setup_json(s) for s in setups]})


def _setup_json(setup: ClientSetup) -> dict[str, object]:
    endpoint = setup.endpoint
    return {
        "client": setup.client,
        "configured": endpoint is not None,
        "files": [str(p) for p in setup.files],
        "values": [{"name": v.name, "value": v.value, "source": v.source} for v in setup.values],
        "request_url": mask_url(endpoint.request_url()) if endpoint else None,
        "model": endpoint.model if endpoint else None,
        "auth_style": endpoint.auth_style if endpoint else None,
        "key": endpoint.masked_key if endpoint else None,
        "key_env": endpoint.key_env if endpoint else None,
        "problem": setup.problem,
    }


def show_human(setups: list[ClientSetup]) -> None:
    console = out()
    for setup in setups:
        title = _title(setup.client)
        console.print(f"[bold]{title}[/]")
        if setup.endpoint is None and not setup.values:
            console.print(f"  not configured: {escape(setup.problem or '')}")
            console.print(f"  set it up: pdnotes config {setup.client} --preset …")
            continue
        name_width = max(len(v.name) for v in setup.values)
        value_width = max(len(v.value) for v in setup.values)
        for value in setup.values:
            console.print(
                f"  [bold]{escape(value.name.ljust(name_width))}[/]  "
                f"{escape(value.value.ljust(value_width))}  [dim]{escape(value.source)}[/]"
            )
        if setup.endpoint is not None:
            url = mask_url(setup.endpoint.request_url())
            console.print(f"  request URL: {_METHOD} {escape(url)}")
        elif setup.problem:
            console.print(f"  [red]{escape(setup.problem)}[/]")


def undo(result: UndoResult, *, as_json: bool) -> None:
    if as_json:
        emit_json(
            {
                "schema": "pdnotes.config-undo/1",
                "client": result.client,
                "file": str(result.path),
                "action": result.action,
                "also": [{"file": str(path), "action": action} for path, action in result.others],
                "restored_from": str(result.backup.meta_path.with_suffix(".bak")),
                "previous_state_saved_to": str(result.saved_current.meta_path),
            }
        )
        return
    for path, action in ((result.path, result.action), *result.others):
        verb = "restored" if action == "restored" else "removed (it did not exist before)"
        out().print(f"{escape(str(path))} {verb}")
    kept = escape(str(result.saved_current.meta_path.parent))
    out().print(f"[dim]the state it replaced is kept in {kept}[/]")


def rolled_back(result: RolledBack, *, as_json: bool) -> None:
    """`config undo` found a write (or undo) killed between two files and rolled it back."""
    first, *rest = result.paths
    if as_json:
        emit_json(
            {
                "schema": "pdnotes.config-undo/1",
                "client": result.client,
                "file": str(first),
                "action": "rolled-back",
                "also": [{"file": str(path), "action": "rolled-back"} for path in rest],
            }
        )
        return
    out().print(
        f"rolled back the last `pdnotes config {result.client}` step, which was killed between "
        "two files:"
    )
    for path in result.paths:
        out().print(f"{escape(str(path))} put back as it was before that step")
    out().print(
        f"[dim]nothing older was undone; `pdnotes config undo --client {result.client}` again "
        "undoes the write before it[/]"
    )


def nothing_to_undo(client: str, folder: Path, *, as_json: bool) -> None:
    if as_json:
        emit_json(
            {
                "schema": "pdnotes.config-undo/1",
                "client": client,
                "file": None,
                "action": "nothing",
                "backups": str(folder),
            }
        )
        return
    out().print(f"nothing to undo: no {client} backup in {escape(str(folder))}")
    out().print(f"[dim]backups are made by `pdnotes config {client}` before each write[/]")


def presets(items: list[Preset], *, as_json: bool) -> None:
    if as_json:
        emit_json(
            {
                "schema": "pdnotes.presets/1",
                "presets": [
                    {
                        "name": p.key,
                        "title": p.name,
                        "description": p.description,
                        "codex_base_url": p.openai.base_url if p.openai else None,
                        "codex_provider_id": p.openai.provider_id if p.openai else None,
                        "env_key": p.openai.env_key if p.openai else None,
                        "claude_base_url": p.anthropic.base_url if p.anthropic else None,
                        "gemini_base_url": p.gemini.base_url if p.gemini else None,
                        "model": p.model,
                    }
                    for p in items
                ],
            }
        )
        return
    for p in items:
        out().print(f"[bold]{escape(p.key)}[/]  {escape(p.description)}")
