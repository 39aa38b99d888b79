"""The engine's knowledge base answers the pd-disagg prompt, in either language, with a table
that always passes the kit's rubric, however the seed varies its formatting."""

from __future__ import annotations

import pytest

from notes_cli.notes.extract import extract
from notes_cli.notes.kits import load_kit
from notes_cli.notes.knowledge import answer_for
from notes_cli.notes.rubric import score


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_every_seed_passes_the_rubric(lang: str) -> None:
    kit = load_kit("pd-disagg")
    for seed in range(120):
        answer = answer_for(kit.prompt(lang), seed)
        assert answer is not None
        extraction = extract(answer, kit)
        assert extraction.ok, (seed, extraction.detail)
        assert score(extraction.table, kit).passed, seed


@pytest.mark.parametrize(("lang", "header"), [("zh", "阶段"), ("en", "Stage")])
def test_headers_follow_the_prompt_language(lang: str, header: str) -> None:
    kit = load_kit("pd-disagg")
    answer = answer_for(kit.prompt(lang), seed=1)
    assert answer is not None
    table = extract(answer, kit).table
    assert table is not None and table.header[0] == header


def test_seed_varies_formatting_but_is_deterministic() -> None:
    prompt = load_kit("pd-disagg").prompt("en")
    answers = {answer_for(prompt, seed) for seed in range(30)}
    assert len(answers) > 10
    assert answer_for(prompt, 7) == answer_for(prompt, 7)
    joined = "".join(a or "" for a in answers)
    for shape in ("```", "｜", "<br>", "**"):
        assert shape in joined


def test_repair_request_restating_the_columns_is_answered() -> None:
    repair = (
        "Your table is missing: Decode: PagedAttention. Output the complete table again with "
        "the columns Stage | Bottleneck | Optimisation | Component and the rows Prefill, Decode."
    )
    answer = answer_for(repair, seed=2)
    assert answer is not None and "PagedAttention" in answer


@pytest.mark.parametrize(
    "prompt", ["Please repeat this sentence: the gateway works.", "", "What is prefill?"]
)
def test_unrelated_prompts_get_none(prompt: str) -> None:
    assert answer_for(prompt) is None
