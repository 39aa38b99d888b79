"""The rich Console every pdnotes console is: it makes text `visible` before rich lays it out,
and once more as it is written (see the `notes_cli.render` docstring for why both)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from rich.console import Console
from rich.segment import Segment
from rich.text import Text

from notes_cli.render import visible


class SafeConsole(Console):
    def render_str(self, text: str, **kwargs: Any) -> Text:
        """Every string rich prints, puts in a table cell or a rule passes here, before its
        markup is parsed and its width measured; pdnotes' own markup has no control
        characters, so only what came from outside changes."""
        return super().render_str(visible(text), **kwargs)

    def _render_buffer(self, buffer: Iterable[Segment]) -> str:
        """The last step before the stream: text segments are made visible (a no-op on text
        that came through `render_str`); control segments are rich's own cursor moves, and the
        colour codes are added from each segment's style after this, so both stay."""
        return super()._render_buffer(
            segment if segment.control else Segment(visible(segment.text), segment.style)
            for segment in buffer
        )
