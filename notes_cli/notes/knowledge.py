"""The engine's knowledge base for note-kit prompts (being built by the Notes work)."""

from __future__ import annotations


def answer_for(prompt_text: str, seed: int = 0) -> str | None:
    """The mock engine's answer to a known note-kit prompt, or None for any other prompt."""
    return None
