"""Held-out reading for issue 29: a three-page PDF about a PD serving system the engine's
knowledge base was not written from ("Harbor", invented here), and a web page on the KV-cache
handoff whose words favour the kv-transfer kit (DLSlime, Mooncake, NIXL, granularity).

Every rubric concept of pd-disagg is stated somewhere, in words of its own, on a known page:
tests assert the note cites exactly there. The facts are spread so that a wrong page is
wrong: "eager" appears only on page 3, "subgraph fusion" only on page 1, "PagedAttention"
only on page 2, DLSlime and RDMA only in the web page.
"""

from __future__ import annotations

from pathlib import Path

PAGE_1 = (
    "Harbor splits every request into a prefill job and a decode job. Prefill runs on a pool "
    "of compute-rich accelerators, because reading a 16k-token prompt in one pass is "
    "compute-bound. The prefill pool is sized so that TTFT stays under 800 ms at the 99th "
    "percentile. Before serving, Harbor compiles each prefill model in graph mode with "
    "subgraph fusion, so attention and the MLP run as a few large kernels."
)
PAGE_2 = (
    "Decode instances run on large-memory cards with high-bandwidth HBM3. Each decode step "
    "reads the whole KV cache of every sequence in the batch, so decode is memory-bound and "
    "TPOT depends on bandwidth rather than on arithmetic. Harbor shards the decode model with "
    "tensor parallelism across the four cards of one board. KV blocks live in a PagedAttention "
    "allocator, so sequences of very different lengths share memory without fragmentation."
)
PAGE_3 = (
    "For debugging, Harbor can fall back to eager execution: it calls the vendor's fused "
    "kernels one operator at a time, which is slower but easy to profile. Operators watch the "
    "queue depth of both pools and move cards between them during the night."
)
HANDOFF = (
    "When prefill finishes, the request's KV cache is pushed to the chosen decode instance by "
    "DLSlime. DLSlime uses RDMA between hosts and NVLink between cards of one host, and sends "
    "the cache in page-sized blocks. Mooncake and NIXL solve the same problem: Mooncake pools "
    "the cache in a distributed store, NIXL offers pluggable backends; their transfer "
    "granularity is also a block of pages."
)
_NAV = " | ".join(f"<a href='/doc{i}'>Harbor docs, chapter {i}</a>" for i in range(12))
WEB_PAGE = f"""<!doctype html><html><head><title>Harbor: the KV handoff</title></head><body>
<nav>{_NAV}</nav>
<article><h1>Harbor: the KV handoff</h1><p>{HANDOFF}</p></article>
<footer>Harbor project, 2026. Edit this page. Report an issue.</footer>
</body></html>"""


def write_reading(folder: Path) -> tuple[Path, Path]:
    """The PDF (S1) and the web page (S2), written into `folder`."""
    from test_notes_sources import make_pdf

    pdf = make_pdf(folder / "harbor.pdf", [PAGE_1, PAGE_2, PAGE_3])
    page = folder / "harbor-handoff.html"
    page.write_text(WEB_PAGE, encoding="utf-8")
    return pdf, page
