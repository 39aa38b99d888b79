"""The article's common errors as data (templates/demo/mistakes.toml), applied to a scratch copy
of a Codex config."""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path

from notes_cli.resources import template_path


@dataclass(frozen=True)
class Mistake:
    name: str
    article: str
    expect: str
    replace: tuple[str, str] | None = None
    prepend: str = ""

    def apply(self, config_text: str, *, anthropic_base_url: str) -> str:
        """The config text with this mistake made."""
        text = config_text
        if self.replace is not None:
            old, new = self.replace
            if old not in text:
                raise ValueError(f"mistake {self.name!r}: {old!r} is not in the config")
            text = text.replace(old, new, 1)
        return self.prepend.format(anthropic_base_url=anthropic_base_url) + text


def load_mistakes(path: Path | None = None) -> list[Mistake]:
    with (path or template_path("demo", "mistakes.toml")).open("rb") as fh:
        data = tomllib.load(fh)
    return [
        Mistake(
            name=entry["name"],
            article=entry["article"],
            expect=entry["expect"],
            replace=tuple(entry["replace"]) if "replace" in entry else None,
            prepend=entry.get("prepend", ""),
        )
        for entry in data["mistake"]
    ]
