"""`notes generate --source` and `notes check --source` give the same note the same verdict
(issue 35): one code path judges both, a citation standing alone after its claim
(`… over RDMA; [S2]`, which the bundled engine writes) counts, and a key term is found on its
page with brackets inside (`(TP) interconnect`) or only in the page's other language.

The reading here is bilingual, Chinese and English in the same sentences, as many engineers'
notes and slides are; its facts are worded so that each of those three cases decides a
concept's verdict."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from conftest import CliResult
from test_notes_reading import _long_pdf

from notes_cli.notes.claims import TOLERANCE, Claim, claims_of, content_words, holds, uncite
from notes_cli.notes.grounding import kit_terms
from notes_cli.notes.kits import load_kit
from notes_cli.notes.passages import Ref
from notes_cli.notes.terms import contains_term

SLIDES = (
    "Prefill 预填充阶段是计算密集的：一次读入整个 prompt, so TTFT is the target. "
    "预填充池用高算力芯片，并做子图融合。\n\n"
    "Decode 解码阶段访存密集; TPOT 取决于 HBM 带宽. 解码实例用大显存卡, and the model is "
    "sharded over a fast (TP) interconnect across four cards. KV 块由 PagedAttention 分配器管理。"
)
HANDOFF = (
    "<html><body><p>预填充结束后 the KV cache moves over RDMA; DLSlime 负责跨节点传输, "
    "with NVLink inside a host.</p></body></html>"
)
CONCEPTS = kit_terms(load_kit("pd-disagg"))


@pytest.fixture
def reading(tmp_path: Path) -> list[str]:
    slides = tmp_path / "slides.md"
    slides.write_text(SLIDES, encoding="utf-8")
    handoff = tmp_path / "handoff.html"
    handoff.write_text(HANDOFF, encoding="utf-8")
    return ["--source", str(slides), "--source", str(handoff)]


def _generate(cli: Callable[..., CliResult], engine: Any, *args: str) -> CliResult:
    return cli("notes", "generate", "--base-url", engine.base_url, "--model", "pd-mock-1", *args)


# --- end to end: generate, then check the same file ---------------------------------------------


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_generate_and_check_grounded_agree_on_a_bilingual_reading(
    lang: str, engine_server: Any, cli: Callable[..., CliResult], reading: list[str],
    tmp_path: Path,
) -> None:  # fmt: skip
    note = tmp_path / "note.md"
    made = _generate(cli, engine_server, *reading, "--grounded", "--lang", lang, "-o", str(note))
    checked = cli("notes", "check", str(note), *reading, "--grounded", "--json")
    assert (made.exit_code, checked.exit_code) == (0, 0), made.stdout + checked.stdout
    grounding = checked.json()["grounding"]
    assert {c["concept"]: c["status"] for c in grounding["concepts"]}["TP interconnect"] == "cited"
    claims = {c["claim"]: c for c in grounding["claims"]}
    rdma = next(c for text, c in claims.items() if "KV cache moves over RDMA" in text)
    assert rdma["status"] == "holds" and rdma["cited"] == ["S2"]
    assert "S2" not in grounding["never_cited"]


def test_generate_says_what_check_grounded_will_say_when_the_reading_lacks_a_concept(
    engine_server: Any, cli: Callable[..., CliResult], tmp_path: Path
) -> None:
    pdf = _long_pdf(tmp_path / "long.pdf")  # says nothing of PagedAttention
    note = tmp_path / "note.md"
    source = ("--source", str(pdf), "--max-source-tokens", "2000", "--lang", "en")
    plain = _generate(cli, engine_server, *source, "-o", str(note))
    assert plain.exit_code == 0, plain.stderr
    said = " ".join(plain.stdout.split())
    checked = cli("notes", "check", str(note), "--source", str(pdf), "--grounded", "--json")
    assert checked.exit_code == 1
    grounding = checked.json()["grounding"]
    shy = grounding["uncited"] + grounding["unsupported"]
    assert shy > 0 and f"{grounding['cited']} cited and supported" in said
    assert f"not grounded: {shy} concept(s)" in said
    assert "`notes check --grounded` fails this note" in said
    strict = _generate(cli, engine_server, *source, "--grounded", "-o", str(note))
    assert strict.exit_code == 1
    assert "PagedAttention" in strict.stdout and "from the model" in strict.stdout
    assert cli("notes", "check", str(note), "--source", str(pdf), "--grounded").exit_code == 1
    alone = _generate(cli, engine_server, "--grounded", "-o", str(tmp_path / "x.md"))
    assert alone.exit_code == 2 and "--grounded needs the reading" in alone.stderr


# --- the pieces ---------------------------------------------------------------------------------


def test_a_citation_standing_after_its_claim_belongs_to_it() -> None:
    assert claims_of("The KV cache moves over RDMA; [S2]") == [
        Claim("The KV cache moves over RDMA", (Ref(2, None),))
    ]
    two = claims_of("Prefill is compute-bound [S1 p.1]\nTTFT; [S1 p.2]")
    assert [c.refs for c in two] == [(Ref(1, 1),), (Ref(1, 2),)]
    assert claims_of("[S1]") == []  # a marker with no claim before it names nothing
    removed = uncite("The KV cache moves over RDMA; [S2]\nDLSlime [S2]", {"DLSlime"})
    assert removed == "The KV cache moves over RDMA; [S2]\nDLSlime"
    removed = uncite("The KV cache moves over RDMA; [S2]\nDLSlime [S2]", {
        "The KV cache moves over RDMA"})  # fmt: skip
    assert removed == "The KV cache moves over RDMA\nDLSlime [S2]"


@pytest.mark.parametrize(
    ("text", "term", "found"),
    [
        ("sharded over a fast (TP) interconnect", "TP interconnect", True),
        ("the “compute” bound phase", "compute-bound", True),
        ("张量并行（TP）互联", "tp 互联", True),
        ("the output interconnect", "tp interconnect", False),  # still whole words
        ("TP. Interconnect", "tp interconnect", False),  # a sentence break is not inside a term
    ],
)
def test_a_term_is_found_with_brackets_and_quotes_between_its_words(
    text: str, term: str, found: bool
) -> None:
    assert contains_term(text, term) is found


@pytest.mark.parametrize(
    ("claim", "page", "held"),
    [
        # the page names the concept only in the other language: it holds the term
        ("Decode shards the model with tensor parallelism", "Decode 用张量并行 shards the model",
         True),
        ("解码用张量并行切分模型", "Decode: 解码用 tensor parallelism 切分模型",
         True),
        # a page that names the concept in the claim's own language, differently, does not
        ("Eager mode calls vendor fused kernels", "Graph mode calls vendor fused kernels", False),
        ("Eager mode calls vendor fused kernels",
         "Graph mode 图编译 calls vendor fused kernels", False),
        # a translated term is no licence for a different fact
        ("Decode shards the model with tensor parallelism", "张量并行 is used by training jobs",
         False),
    ],
)  # fmt: skip
def test_a_key_term_the_page_says_only_in_its_other_language_is_on_the_page(
    claim: str, page: str, held: bool
) -> None:
    assert holds(claim, page, CONCEPTS) is held


def test_a_claim_holds_at_exactly_sixty_percent_of_its_words_and_not_below() -> None:
    claim = "Prefill reads long prompts quickly"  # prefill, read, long, prompt, quickly
    assert len(content_words(claim)) == 5 and TOLERANCE == 0.6
    assert holds(claim, "Prefill can read long documents.", CONCEPTS)  # 3 of 5: exactly 60 %
    assert not holds(claim, "Prefill can read documents.", CONCEPTS)  # 2 of 5
