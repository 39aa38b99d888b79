"""Every relative link in README.md and docs/ resolves: the file exists and, where the link names
an anchor, the target has a heading with that anchor (GitHub's rule: lower case, punctuation
dropped, spaces to hyphens). Nothing in the repository may point outside it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
# [text](target) outside code; images too. Angle-bracket and titled targets are not used here.
_LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")
_FENCE = re.compile(r"^(```|~~~).*?^\1", re.S | re.M)
_INLINE_CODE = re.compile(r"`[^`\n]*`")


def _anchor(heading: str) -> str:
    text = heading.strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def _anchors(page: Path) -> set[str]:
    text = _FENCE.sub("", page.read_text(encoding="utf-8"))
    found: set[str] = set()
    for line in text.splitlines():
        if line.startswith("#"):
            found.add(_anchor(line.lstrip("#")))
    return found


def _links(page: Path) -> list[str]:
    text = _FENCE.sub("", page.read_text(encoding="utf-8"))
    text = _INLINE_CODE.sub("", text)
    return _LINK.findall(text)


def _relative(target: str) -> bool:
    return not re.match(r"^[a-z][a-z0-9+.-]*:", target) and not target.startswith("#")


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_resolves(page: Path) -> None:
    broken = []
    for target in _links(page):
        if target.startswith("#"):
            if target[1:] not in _anchors(page):
                broken.append(target)
            continue
        if not _relative(target):
            continue
        path, _, anchor = target.partition("#")
        resolved = (page.parent / path).resolve()
        if not resolved.is_relative_to(ROOT):
            broken.append(f"{target} (outside the repository)")
        elif not resolved.exists():
            broken.append(target)
        elif anchor and resolved.suffix == ".md" and anchor not in _anchors(resolved):
            broken.append(f"{target} (no such heading)")
    assert not broken, f"{page.relative_to(ROOT)}: broken links {broken}"


def test_nothing_cites_a_file_outside_the_repository() -> None:
    """A user who clones pdnotes has no ../shared: code, data and docs cite public sources."""
    offenders = []
    roots = ("notes_cli", "templates", "prompts", "docs", "tests", "benchmarks", "scripts")
    files = [ROOT / "README.md", *(p for r in roots for p in (ROOT / r).rglob("*") if p.is_file())]
    needles = ("../shared", "/work/shared", "shared/reference", "DESIGN.md", "pd-serving.md")
    for path in files:
        if path.suffix not in {".py", ".md", ".toml", ".json", ".txt", ".sh", ".html", ".csv"}:
            continue
        if path == Path(__file__):
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        offenders += [f"{path.relative_to(ROOT)}: {n}" for n in needles if n in text]
    assert not offenders, "\n".join(offenders)
