"""Drawing for `pdnotes engine sketch`: the sketch as plain text (a shell script a user can read
and copy, so no colour or tables), or its JSON."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from notes_cli.plan.launch import LaunchSketch


def sketch(result: LaunchSketch, *, as_json: bool) -> None:
    from notes_cli import render

    if as_json:
        render.emit_json({"schema": "pdnotes.launch-sketch/1", **result.to_json()})
    else:
        render.text(result.text())
