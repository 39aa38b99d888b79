"""Term matching (both languages, whole words for Latin terms) and source fitting (HTML to
text, a fair token budget, cuts at a line or sentence break)."""

from __future__ import annotations

from pathlib import Path

import pytest

from notes_cli.errors import InputError
from notes_cli.notes.sources import fit_sources
from notes_cli.notes.terms import contains_term, same_label
from notes_cli.notes.tokens import estimate_tokens
from notes_cli.notes.webpage import html_to_text


@pytest.mark.parametrize(
    ("text", "term", "found"),
    [
        ("Compute bound (dense matmul)", "compute-bound", True),
        ("ＴＴＦＴ 优化", "ttft", True),  # full-width letters
        ("compute_bound", "compute-bound", True),
        ("TP 互联", "tp互联", True),
        ("output tokens", "tp", False),  # a short term never matches inside a word
        ("HTTP proxy", "tp", False),
        ("tensor-parallel (TP)", "tp", True),
        ("KV Cache\n跨节点传输", "kv cache 跨节点", True),
        ("Paged Attention", "pagedattention", False),
        ("Paged Attention", "paged attention", True),
        ("decoding", "decode", False),
    ],
)
def test_contains_term(text: str, term: str, found: bool) -> None:
    assert contains_term(text, term) is found


@pytest.mark.parametrize(
    ("label", "names", "same"),
    [
        ("**阶段**", ["阶段"], True),
        ("Stage:", ["stage"], True),
        ("阶段（Stage）", ["阶段"], True),
        ("Main bottleneck", ["bottleneck"], False),
        ("Optimisation", ["optimization", "optimisation"], True),
    ],
)
def test_same_label(label: str, names: list[str], same: bool) -> None:
    assert same_label(label, names) is same


def test_token_estimate_counts_cjk_per_character() -> None:
    assert estimate_tokens("预填充阶段") == 5
    assert estimate_tokens("a" * 40) == 10


def test_html_source_loses_tags_scripts_and_styles() -> None:
    page = (
        "<html><head><title>t</title><style>p{color:red}</style></head><body>"
        "<h1>DLSlime</h1><script>alert(1)</script><p>RDMA &amp; NVLink</p></body></html>"
    )
    assert html_to_text(page) == "DLSlime\nRDMA & NVLink"


def test_budget_is_shared_fairly_and_small_sources_stay_whole(tmp_path: Path) -> None:
    small = tmp_path / "small.md"
    small.write_text("Decode is memory-bound.", encoding="utf-8")
    big_a = tmp_path / "a.txt"
    big_a.write_text("Prefill is compute-bound.\n" * 200, encoding="utf-8")
    big_b = tmp_path / "b.txt"
    big_b.write_text("预填充阶段是计算密集型。\n" * 200, encoding="utf-8")
    fitted = fit_sources([small, big_a, big_b], max_tokens=400)
    by_name = {Path(s.path).name: s for s in fitted}
    assert not by_name["small.md"].cut
    assert by_name["a.txt"].cut and by_name["b.txt"].cut
    assert sum(s.tokens for s in fitted) <= 400
    assert by_name["a.txt"].tokens > 150 and by_name["b.txt"].tokens > 150
    for name in ("a.txt", "b.txt"):  # cut at a line end, not mid-sentence
        assert by_name[name].text.endswith(("compute-bound.", "计算密集型。"))


def test_unreadable_source_is_an_input_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no such source"):
        fit_sources([tmp_path / "missing.md"], max_tokens=100)
