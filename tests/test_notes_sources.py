"""Reading sources (issue 15, part 1): PDFs, HTML files and URLs, Markdown and text, and every
bad input ending in a clear error, in bounded time, with nothing written.

Fixture documents are made here: PDFs with fpdf2 (a text layer, none, a password), web pages
with navigation and ads served over loopback."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import CliResult
from loopback import LoopbackServer, Received, Reply

from notes_cli.errors import InputError
from notes_cli.gateway.fetch import FetchError, fetch
from notes_cli.notes import documents
from notes_cli.notes.documents import load_document

ARTICLE = (
    "DLSlime moves the KV cache from prefill nodes to decode nodes over RDMA. It supports "
    "NVLink and HCCS for chip-to-chip links and unifies communication across device "
    "architectures. PD disaggregation separates the compute-bound prefill stage from the "
    "memory-bound decode stage, so each runs on hardware suited to it."
)
NAV = " | ".join(f"<a href='/s{i}'>Section {i} of the site menu</a>" for i in range(40))
ADS = "".join(f"<div class='ad'>Buy GPU cloud credits now, offer {i}!</div>" for i in range(20))
PAGE = f"""<!doctype html><html><head><title>DLSlime: RDMA transfer</title>
<script>var tracking = "{"x" * 500}";</script></head><body>
<nav>{NAV}</nav>{ADS}
<article><h1>DLSlime: RDMA transfer</h1><p>{ARTICLE}</p>
{"".join(f"<p>{ARTICLE} Part {i} adds detail on topology and granularity.</p>" for i in range(6))}
<p>Mooncake and NIXL solve the same transfer problem with different topologies.</p></article>
<footer>Copyright 2026 Example Corp. All rights reserved. Privacy policy. Cookies.</footer>
</body></html>"""


def make_pdf(path: Path, pages: list[str], *, password: str | None = None) -> Path:
    from fpdf import FPDF

    pdf = FPDF()
    pdf.set_title("PD disaggregation notes")
    pdf.set_font("helvetica", size=11)
    if password:
        pdf.set_encryption(owner_password="owner", user_password=password)
    for text in pages:
        pdf.add_page()
        if text:
            pdf.multi_cell(0, 6, text)
    pdf.output(str(path))
    return path


# --- PDF -----------------------------------------------------------------------------------------


def test_pdf_pages_keep_their_numbers_and_text(tmp_path: Path) -> None:
    pdf = make_pdf(
        tmp_path / "paper.pdf",
        ["Prefill is compute-bound.", "Decode is memory-bound.", "DLSlime uses RDMA."],
    )
    doc = load_document(str(pdf))
    assert doc.kind == "pdf" and doc.title == "PD disaggregation notes"
    assert doc.page_count == 3
    assert [p.number for p in doc.pages] == [1, 2, 3]
    assert "memory-bound" in doc.pages[1].text and "RDMA" in doc.pages[2].text


def test_a_scanned_pdf_points_at_ocr(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no text layer") as caught:
        load_document(str(make_pdf(tmp_path / "scan.pdf", ["", ""])))
    assert caught.value.fix and "MinerU" in caught.value.fix and "OCR" in caught.value.fix


def test_an_encrypted_pdf_is_refused(tmp_path: Path) -> None:
    pdf = make_pdf(tmp_path / "locked.pdf", ["secret prefill facts"], password="pw")
    with pytest.raises(InputError, match="encrypted PDF"):
        load_document(str(pdf))


def test_a_corrupt_pdf_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "broken.pdf"
    path.write_bytes(b"%PDF-1.4\n" + bytes(range(256)) * 40)
    with pytest.raises(InputError, match="not a readable PDF"):
        load_document(str(path))


@pytest.mark.timeout(20)
def test_a_200_mb_file_is_refused_before_reading(tmp_path: Path) -> None:
    path = tmp_path / "huge.pdf"
    with path.open("wb") as handle:
        handle.truncate(200_000_000)  # sparse: no disk used
    start = time.monotonic()
    with pytest.raises(InputError, match="200.0 MB"):
        load_document(str(path))
    assert time.monotonic() - start < 5


def test_office_files_are_refused_with_a_route(tmp_path: Path) -> None:
    path = tmp_path / "slides.pptx"
    path.write_bytes(b"PK\x03\x04")
    with pytest.raises(InputError, match="not read by pdnotes") as caught:
        load_document(str(path))
    assert caught.value.fix and "PDF" in caught.value.fix


# --- HTML and text -------------------------------------------------------------------------------


def test_html_file_keeps_the_article_and_drops_the_boilerplate(tmp_path: Path) -> None:
    path = tmp_path / "dlslime.html"
    path.write_text(PAGE, encoding="utf-8")
    doc = load_document(str(path))
    assert doc.kind == "html" and doc.title == "DLSlime: RDMA transfer"
    assert "over RDMA" in doc.text and "Mooncake and NIXL" in doc.text
    for boilerplate in ("site menu", "GPU cloud credits", "Copyright", "tracking"):
        assert boilerplate not in doc.text
    assert doc.dropped and "boilerplate" in doc.dropped


def test_markdown_title_is_its_first_heading(tmp_path: Path) -> None:
    path = tmp_path / "notes.md"
    path.write_text("# Decode notes\n\nDecode is memory-bound.\n", encoding="utf-8")
    doc = load_document(str(path))
    assert (doc.kind, doc.title, doc.page_count) == ("markdown", "Decode notes", None)


def test_a_gbk_file_is_read_as_chinese(tmp_path: Path) -> None:
    path = tmp_path / "zh.txt"
    text = "预填充阶段是计算密集型，解码阶段是访存密集型。KV Cache 通过 RDMA 传输。" * 5
    path.write_bytes(text.encode("gbk"))
    assert load_document(str(path)).text == text


# --- URLs ----------------------------------------------------------------------------------------


def _site(request: Received) -> Reply:
    if request.path.startswith("/hop/"):
        n = int(request.path.rsplit("/", 1)[1])
        return Reply(302, {"location": f"/hop/{n + 1}" if n < 5 else "/article"})
    if request.path == "/article":
        return Reply(200, {"content-type": "text/html; charset=utf-8"}, [PAGE.encode()])
    if request.path == "/gbk":
        body = (
            f"<html><body><article><p>{'解码阶段是访存密集型。' * 30}</p></article></body></html>"
        )
        return Reply(200, {"content-type": "text/html; charset=gbk"}, [body.encode("gbk")])
    if request.path == "/paper.pdf":
        return Reply(200, {"content-type": "application/pdf"}, [request_pdf_bytes()])
    if request.path == "/never":
        return Reply(hold_headers=30.0)
    if request.path == "/drip":
        return Reply(200, {"content-type": "text/html"}, [b"<p>"] + [0.1, b"x"] * 300, stream=True)
    if request.path == "/big":
        return Reply(200, {"content-type": "text/plain"}, [b"y" * 65536] * 40, stream=True)
    return Reply(404, {"content-type": "text/html"}, [b"<h1>not found</h1>"])


_PDF_BYTES: list[bytes] = []


def request_pdf_bytes() -> bytes:
    return _PDF_BYTES[0]


@pytest.fixture
def site(tmp_path: Path) -> LoopbackServer:
    pdf = make_pdf(tmp_path / "served.pdf", ["Served page one about prefill.", "Page two."])
    _PDF_BYTES[:] = [pdf.read_bytes()]
    with LoopbackServer(_site) as server:
        yield server  # type: ignore[misc]


def test_a_url_is_fetched_and_its_article_kept(site: LoopbackServer) -> None:
    doc = load_document(site.url + "/article")
    assert "over RDMA" in doc.text and "site menu" not in doc.text
    assert doc.fetched and "/article" in doc.fetched


def test_a_pdf_url_is_read_as_a_pdf(site: LoopbackServer) -> None:
    doc = load_document(site.url + "/paper.pdf")
    assert doc.kind == "pdf" and doc.page_count == 2


def test_the_declared_charset_is_used(site: LoopbackServer) -> None:
    assert "解码阶段是访存密集型" in load_document(site.url + "/gbk").text


def test_three_redirects_are_followed_and_five_are_refused(site: LoopbackServer) -> None:
    got = fetch(site.url + "/hop/3", max_redirects=3)
    assert got.final_url.endswith("/article") and len(got.redirects) == 3
    with pytest.raises(FetchError, match="redirected more than 3 times"):
        fetch(site.url + "/hop/1", max_redirects=3)


@pytest.mark.timeout(30)
@pytest.mark.parametrize("path", ["/never", "/drip"])
def test_a_url_that_never_finishes_ends_at_the_deadline(path: str, site: LoopbackServer) -> None:
    start = time.monotonic()
    with pytest.raises(FetchError, match="did not finish within 1 s"):
        fetch(site.url + path, timeout=1.0)
    assert time.monotonic() - start < 4


def test_a_body_over_the_cap_is_not_read_further(site: LoopbackServer) -> None:
    with pytest.raises(FetchError, match="larger than 1 MB"):
        fetch(site.url + "/big", max_bytes=1_000_000)


def test_an_http_error_is_named(site: LoopbackServer) -> None:
    with pytest.raises(FetchError, match="HTTP 404"):
        fetch(site.url + "/missing")


# --- the commands --------------------------------------------------------------------------------


def test_notes_sources_shows_what_would_be_read(
    tmp_path: Path, site: LoopbackServer, cli: Callable[..., CliResult]
) -> None:
    pdf = make_pdf(tmp_path / "paper.pdf", ["Prefill is compute-bound.", "Decode."])
    result = cli("notes", "sources", str(pdf), site.url + "/article", "--json")
    assert result.exit_code == 0, result.stderr
    first, second = result.json()["sources"]
    assert (first["kind"], first["pages"], first["title"]) == ("pdf", 2, "PD disaggregation notes")
    assert first["tokens"] > 0
    assert second["kind"] == "html" and "boilerplate" in second["dropped"]
    human = cli("notes", "sources", str(pdf))
    assert "paper.pdf" in human.stdout and "PD disaggregation notes" in human.stdout


@pytest.mark.timeout(30)
def test_generate_with_an_unreadable_source_writes_nothing(
    tmp_path: Path, site: LoopbackServer, cli: Callable[..., CliResult]
) -> None:
    out = tmp_path / "note.md"
    for bad in (site.url + "/hop/1", str(make_pdf(tmp_path / "s.pdf", [""]))):
        result = cli(
            "notes", "generate", "--source", bad, "-o", str(out),
            "--base-url", site.url + "/v1", "--model", "m",
        )  # fmt: skip
        assert result.exit_code == 2, result.stderr
        assert "Traceback" not in result.stderr
        assert not out.exists()
    assert not any(r.method == "POST" for r in site.requests)  # the model was never asked


def test_reading_a_source_does_not_slow_the_help() -> None:
    import subprocess
    import sys

    code = (
        "import sys; from notes_cli.cli import main\n"
        "try: main(['--help'])\nexcept SystemExit: pass\n"
        "heavy = [m for m in ('pypdf', 'trafilatura', 'lxml', 'genanki') if m in sys.modules]\n"
        "print('HEAVY:' + ','.join(heavy))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert done.stdout.strip().splitlines()[-1] == "HEAVY:"


def test_url_timeout_is_module_level_for_the_cli() -> None:
    assert documents.URL_TIMEOUT_S <= 30 and documents.MAX_URL_BYTES <= 50_000_000


def test_without_the_reading_extra_the_whole_page_is_kept_and_said(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import sys

    for module in ("trafilatura", "lxml", "lxml.html"):
        monkeypatch.setitem(sys.modules, module, None)  # import fails as if not installed
    path = tmp_path / "page.html"
    path.write_text(PAGE, encoding="utf-8")
    doc = load_document(str(path))
    assert "over RDMA" in doc.text and "site menu" in doc.text  # nothing dropped
    assert doc.dropped is None
    assert any("pdnotes[reading]" in n for n in doc.notes)
    huge = tmp_path / "huge.html"
    huge.write_text("<html><body>" + "<p>x</p>" * 300_000 + "</body></html>", encoding="utf-8")
    with pytest.raises(InputError, match="needs lxml"):
        load_document(str(huge))
