"""Long documents and citations (issue 15, parts 2 and 3): passages, the reading plan (whole,
cut only when asked, map-reduce within --max-calls), the engine's deterministic map answers,
cited cells in every export, and grounding verdicts on hand-checked cases."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from conftest import CliResult
from test_notes_sources import PAGE, make_pdf

from notes_cli.errors import UsageError
from notes_cli.notes.check import check_text
from notes_cli.notes.documents import Document, Page, load_document
from notes_cli.notes.generate import build_prompt
from notes_cli.notes.grounding import ground
from notes_cli.notes.kits import load_kit
from notes_cli.notes.knowledge import answer_for
from notes_cli.notes.passages import Ref, citations, split_passages, without_citations
from notes_cli.notes.reading import map_prompt, plan_reading

FILLER = "This page covers serving background, queues and deployment practice in general. " * 12
PREFILL = "Prefill is compute-bound: dense matrix multiplications make TTFT the target."
DLSLIME = "DLSlime moves the KV cache between prefill and decode nodes over RDMA or HCCS."


def _doc(*pages: str, name: str = "paper.pdf") -> Document:
    return Document(name, "pdf", "Paper", tuple(Page(n, t) for n, t in enumerate(pages, 1)))


def _long_pdf(path: Path, pages: int = 24) -> Path:
    texts = []
    for i in range(pages):
        fact = {0: PREFILL, 6: DLSLIME}.get(i, "")
        texts.append(f"{fact} {FILLER}".strip())
    return make_pdf(path, texts)


# --- passages and citations ----------------------------------------------------------------------


def test_passages_keep_pages_apart_and_within_their_size() -> None:
    doc = _doc("short page one.", FILLER * 10, "page three.")
    passages = split_passages([doc], max_tokens=300)
    assert [p.page for p in passages][:1] == [1] and passages[-1].page == 3
    assert {p.page for p in passages} == {1, 2, 3}
    assert all(p.tokens <= 300 for p in passages)
    assert sum(1 for p in passages if p.page == 2) > 1  # a long page is split further
    assert "".join(p.text for p in passages if p.page == 2).replace("\n", "").replace(" ", "") == (
        (FILLER * 10).replace(" ", "")
    )


def test_citations_are_parsed_in_every_spelling() -> None:
    text = "compute-bound [S1 p.3]; TTFT [S1 p.3; S2] and 【S3 p.12】 and [S1 p.3]"
    assert citations(text) == [Ref(1, 3), Ref(2, None), Ref(3, 12)]
    assert without_citations("RDMA [S1 p.2]\nHCCS 【S2】") == "RDMA\nHCCS"
    assert citations("a [link](x) and [1] and [S]") == []


# --- the reading plan ----------------------------------------------------------------------------


def test_sources_that_fit_go_in_whole() -> None:
    plan = plan_reading([_doc(PREFILL, DLSLIME)], 6000)
    assert plan.mode == "whole" and plan.calls == 1
    prompt = build_prompt(load_kit("pd-disagg"), "en", plan)
    assert "[S1 p.1] paper.pdf" in prompt.text and "[S1 p.2] paper.pdf" in prompt.text


def test_over_the_budget_is_map_reduce_with_every_passage_read() -> None:
    doc = _doc(*(f"{PREFILL} {FILLER}" for _ in range(20)))
    plan = plan_reading([doc], 2000)
    assert plan.mode == "map-reduce"
    read = [p for batch in plan.batches for p in batch]
    assert read == list(plan.passages)  # nothing left out
    assert all(sum(p.tokens for p in b) <= 2000 for b in plan.batches)
    assert plan.calls == len(plan.batches) + 1
    assert plan.estimated_input_tokens(500) > plan.total_tokens


def test_max_calls_refuses_a_plan_before_any_request() -> None:
    doc = _doc(*(FILLER for _ in range(20)))
    with pytest.raises(UsageError, match=r"needs \d+ requests .* over --max-calls 3") as caught:
        plan_reading([doc], 1000, max_calls=3)
    assert caught.value.fix and "--cut" in caught.value.fix


def test_cut_is_explicit_and_names_what_it_left_out() -> None:
    small = Document("notes.md", "markdown", None, (Page(None, DLSLIME),))
    big = _doc(*(FILLER for _ in range(20)))
    plan = plan_reading([small, big], 1000, cut=True)
    assert plan.mode == "cut" and plan.calls == 1
    assert any(p.source == 1 for p in plan.kept)  # the small source stays whole
    assert sum(p.tokens for p in plan.kept) <= 1000
    assert plan.dropped and all(p.source == 2 for p in plan.dropped)


# --- the engine's knowledge base -----------------------------------------------------------------


def test_map_answers_are_deterministic_cited_facts() -> None:
    kit = load_kit("pd-disagg")
    batch = tuple(split_passages([_doc(FILLER, PREFILL, DLSLIME)]))
    prompt = map_prompt(kit, "en", batch, 1, 1)
    answer = answer_for(prompt, seed=1)
    assert answer == answer_for(prompt, seed=7)  # the seed varies tables, not facts
    assert answer is not None
    assert f"- {PREFILL} [S1 p.2]" in answer and "[S1 p.3]" in answer
    assert "serving background" not in answer
    empty = map_prompt(kit, "zh", tuple(split_passages([_doc(FILLER)])), 1, 1)
    assert answer_for(empty) == "- (none)\n"


def test_a_note_from_passages_cites_them_in_its_cells() -> None:
    kit = load_kit("pd-disagg")
    prompt = build_prompt(kit, "en", plan_reading([_doc(FILLER, PREFILL, DLSLIME)], 6000))
    answer = answer_for(prompt.text, seed=3)
    assert answer is not None
    check = check_text(answer, kit)
    assert check.passed
    table = check.extraction.table
    assert table is not None
    cells = [cell for row in table.rows for cell in row]
    assert any("compute-bound" in c.lower() and "[S1 p.2]" in c for c in cells)
    assert any("DLSlime [S1 p.3]" in c for c in cells)
    assert not any("[S1 p.1]" in c for c in cells)  # the filler page states nothing


# --- grounding ----------------------------------------------------------------------------------


def _grounded(answer: str, doc: Document) -> dict[str, tuple[str, str]]:
    kit = load_kit("pd-disagg")
    check = check_text(answer, kit)
    grounding = ground(check, split_passages([doc]), (doc.name,))
    return {c.concept: (c.status, c.detail) for c in grounding.concepts}


def test_grounding_tells_cited_uncited_and_unsupported_apart() -> None:
    doc = _doc(FILLER, PREFILL, DLSLIME)
    kit = load_kit("pd-disagg")
    cited_note = answer_for(build_prompt(kit, "en", plan_reading([doc], 6000)).text, seed=3)
    plain_note = answer_for(kit.prompt("en"), seed=3)
    assert cited_note and plain_note
    cited = _grounded(cited_note, doc)
    assert cited["compute-bound"] == ("cited", "cited S1 p.2, which says it")
    assert cited["DLSlime"][0] == "cited"
    assert cited["PagedAttention"] == ("unsupported", "from the model, not from your reading")
    plain = _grounded(plain_note, doc)  # the same facts, no citations
    assert plain["compute-bound"] == ("uncited", "not cited; S1 p.2 says it")
    assert plain["PagedAttention"][0] == "unsupported"
    wrong = _grounded(cited_note.replace("[S1 p.2]", "[S1 p.1]"), doc)  # cites the filler page
    assert wrong["compute-bound"] == (
        "uncited",
        "cites S1 p.1, which does not say it; S1 p.2 does",
    )


# --- end to end on the bundled engine -----------------------------------------------------------


def _generate(cli: Callable[..., CliResult], engine: Any, *args: str) -> CliResult:
    return cli("notes", "generate", "--base-url", engine.base_url, "--model", "pd-mock-1", *args)


def test_a_long_pdf_is_read_in_map_steps_into_a_cited_note(
    engine_server: Any, cli: Callable[..., CliResult], tmp_path: Path
) -> None:
    pdf = _long_pdf(tmp_path / "long.pdf")
    page = tmp_path / "dlslime.html"
    page.write_text(PAGE, encoding="utf-8")
    out = tmp_path / "note.json"
    args = ("--source", str(pdf), "--source", str(page), "--max-source-tokens", "2000")
    result = _generate(cli, engine_server, *args, "-o", str(out), "--lang", "en", "--json")
    assert result.exit_code == 0, result.stderr
    report = result.json()
    assert report["prompt"]["reading"] == "map-reduce"
    steps = report["prompt"]["map"]
    assert len(steps) == report["prompt"]["calls"] - 1 >= 4
    assert [p for s in steps for p in s["passages"]][:2] == ["S1 p.1", "S1 p.2"]
    said = " ".join(result.stderr.split())
    assert "over --max-source-tokens 2,000" in said
    assert said.index("input tokens") < said.index("map 1/")  # the estimate comes first
    assert f"map {len(steps)}/{len(steps)}" in said
    note = json.loads(out.read_text(encoding="utf-8"))
    cited = {ref for row in note["cells"] for cell in row.values() for ref in cell["sources"]}
    assert {"S1 p.1", "S1 p.7"} <= cited
    assert note["sources"] == [str(pdf), str(page)]
    # the same note as HTML links its citations to the PDF's pages
    html_out = tmp_path / "note.html"
    again = _generate(cli, engine_server, *args, "-o", str(html_out), "--lang", "en")
    assert again.exit_code == 0
    assert f'href="{pdf}#page=1"' in html_out.read_text(encoding="utf-8")


def test_too_many_calls_is_refused_before_the_model_is_asked(
    engine_server: Any, cli: Callable[..., CliResult], tmp_path: Path
) -> None:
    pdf = _long_pdf(tmp_path / "long.pdf")
    out = tmp_path / "note.md"
    result = _generate(
        cli, engine_server, "--source", str(pdf), "--max-source-tokens", "1500",
        "--max-calls", "3", "-o", str(out),
    )  # fmt: skip
    assert result.exit_code == 2
    assert "over --max-calls 3" in result.stderr and not out.exists()


def test_check_grounded_explains_each_concept_and_fails_on_the_models_own(
    engine_server: Any, cli: Callable[..., CliResult], tmp_path: Path
) -> None:
    pdf = _long_pdf(tmp_path / "long.pdf")
    note = tmp_path / "note.md"
    made = _generate(cli, engine_server, "--source", str(pdf), "-o", str(note), "--lang", "en",
                     "--max-source-tokens", "2000")  # fmt: skip
    assert made.exit_code == 0, made.stderr
    plain = cli("notes", "check", str(note), "--source", str(pdf), "--json")
    assert plain.exit_code == 0  # grounding is reported, not required
    grounding = plain.json()["grounding"]
    statuses = {c["concept"]: c["status"] for c in grounding["concepts"]}
    assert statuses["compute-bound"] == "cited" and statuses["DLSlime"] == "cited"
    assert statuses["PagedAttention"] == "unsupported"
    strict = cli("notes", "check", str(note), "--source", str(pdf), "--grounded")
    assert strict.exit_code == 1
    assert "from the model, not from your reading" in strict.stdout
    assert "cited S1 p.1, which says it" in strict.stdout
    assert cli("notes", "check", str(note), "--grounded").exit_code == 2


def test_load_document_of_a_generated_fixture_has_its_pages(tmp_path: Path) -> None:
    assert load_document(str(_long_pdf(tmp_path / "l.pdf", pages=3))).page_count == 3
