"""The two kits beyond pd-disagg (issue 15, part 5): the KV-transfer stack and the hardware-
adaptation layer, each with zh and en prompts, a rubric, and knowledge the bundled engine
answers from — so the kit format is proven on more than one table."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from conftest import CliResult

from notes_cli.notes.check import check_text, read_answer
from notes_cli.notes.kits import list_kits, load_kit
from notes_cli.notes.knowledge import answer_for

NEW_KITS = {
    "kv-transfer": {"zh": "传输粒度", "en": "Granularity"},
    "hw-adapt": {"zh": "Graph 模式", "en": "Graph mode"},
}


def test_every_bundled_kit_has_both_languages_and_required_rows() -> None:
    kits = {k.name: k for k in list_kits() if k.origin == "bundled"}
    assert set(NEW_KITS) | {"pd-disagg"} <= set(kits)
    for name in NEW_KITS:
        kit = kits[name]
        assert kit.languages == ("zh", "en")
        assert sum(r.required for r in kit.rubric.rows) >= 2
        assert all(r.concepts for r in kit.rubric.rows if r.required)


@pytest.mark.parametrize("name", [*NEW_KITS, "pd-disagg"])
@pytest.mark.parametrize("lang", ["zh", "en"])
def test_the_engine_answers_each_kit_in_its_language_and_passes(name: str, lang: str) -> None:
    kit = load_kit(name)
    header = NEW_KITS.get(name, {"zh": "瓶颈", "en": "Bottleneck"})[lang]
    for seed in range(12):
        answer = answer_for(kit.prompt(lang), seed)
        assert answer is not None
        check = check_text(answer, kit)
        assert check.passed, (seed, check.problems())
        assert check.extraction.table is not None
        assert header in check.extraction.table.header


def test_a_kits_answer_does_not_pass_another_kits_rubric() -> None:
    """Each kit's rubric really checks its own facts (no kit is satisfied by any table)."""
    for name in NEW_KITS:
        own = answer_for(load_kit(name).prompt("en"), 1)
        assert own is not None
        for other in {*NEW_KITS, "pd-disagg"} - {name}:
            assert not check_text(own, load_kit(other)).passed


@pytest.mark.parametrize("name", list(NEW_KITS))
def test_generate_writes_each_new_kits_note(
    name: str, engine_server: Any, cli: Callable[..., CliResult], tmp_path: Path
) -> None:
    for lang in ("zh", "en"):
        target = tmp_path / f"{name}-{lang}.md"
        result = cli(
            "notes", "generate", "--kit", name, "--lang", lang, "-o", str(target),
            "--base-url", engine_server.base_url, "--model", "pd-mock-1",
        )  # fmt: skip
        assert result.exit_code == 0, result.stderr
        text, fmt = read_answer(target)
        check = check_text(text, load_kit(name), source_format=fmt)
        assert check.passed
        assert load_kit(name).title_for(lang) in text


def test_a_missing_fact_fails_the_kv_rubric_with_its_name() -> None:
    kit = load_kit("kv-transfer")
    answer = answer_for(kit.prompt("en"), 0)
    assert answer is not None
    without_dynamo = answer.replace("NVIDIA Dynamo", "an NVIDIA framework")
    check = check_text(without_dynamo, kit)
    assert check.verdict == "fail"
    assert check.rubric.missing_concepts == ["NIXL: NVIDIA Dynamo"]
