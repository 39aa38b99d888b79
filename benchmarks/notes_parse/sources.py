"""Timing of cutting a `--source` into passages, on text without sentence breaks.

    python benchmarks/notes_parse/sources.py [--repeat 3] [--write]

`notes generate --source` and `notes check --source` cut every source into passages
(`notes/passages.py`); a text without sentence breaks used to be cut by slicing the rest once
per passage, quadratic (issue 36: 1 MB 9.8 s, 2 MB 24 s, 10 MB still running at 300 s). Each
case is a 1, 2 and 10 MB text of one unit repeated, plus an HTML page whose text is one 10 MB
paragraph read for its visible text first. The median CPU time (`time.process_time`: the
machine is shared, wall time swings with its load) of `--repeat` runs is printed with the
ratio to the 1 MB time (linear: about 2 and 10). `--write` puts the table into
docs/reliability.md's "Source passages" section.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
sys.path.insert(0, str(ROOT))

from notes_cli.notes.documents import Document, Page  # noqa: E402
from notes_cli.notes.passages import split_passages  # noqa: E402
from notes_cli.notes.webpage import visible_text  # noqa: E402

DOC = ROOT / "docs" / "reliability.md"
MB = 1_000_000
SIZES = (MB, 2 * MB, 10 * MB)
UNITS = {"letters `a`": "a", "words `word `": "word ", "CJK `字`": "字", "mixed `a字`": "a字"}


def passages_of(text: str) -> int:
    return len(split_passages([Document("big", "text", None, (Page(None, text),))]))


def page_passages(text: str) -> int:
    return passages_of(visible_text("<html><body><p>" + text + "</p></body></html>", "page"))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--write", action="store_true", help="update docs/reliability.md")
    args = parser.parse_args()
    rows = []
    cases = [(name, unit, passages_of) for name, unit in UNITS.items()]
    cases.append(("HTML page, one paragraph of `word `", "word ", page_passages))
    for name, unit, run in cases:
        first = None
        for size in SIZES:
            text = unit * (size // len(unit))
            times = []
            count = 0
            for _ in range(args.repeat):
                start = time.process_time()
                count = run(text)
                times.append(time.process_time() - start)
            median = statistics.median(times)
            first = first or median
            row = {"case": name, "mb": size // MB, "passages": count, "seconds": median,
                   "ratio": median / first}  # fmt: skip
            rows.append(row)
            print(f"{median:7.3f}s ×{median / first:5.1f} {size // MB:>3} MB "
                  f"{count:>6} passages  {name}", flush=True)  # fmt: skip
    if args.write:
        write_doc(rows, args.repeat)
    print(json.dumps({"cases": len(rows), "worst_ratio_10mb": max(r["ratio"] for r in rows)}))
    return 0


def write_doc(rows: list[dict[str, object]], repeat: int) -> None:
    lines = [
        "## Source passages",
        "",
        "`notes generate --source` and `notes check --source` cut each source into passages;",
        "the cut is linear in the text's length whatever its shape. Before the fix (issue 36) a",
        "text without sentence breaks took 9.8 s at 1 MB, 24 s at 2 MB and was still running at",
        '300 s at 10 MB, and an HTML page whose text is one 10 MB paragraph read as "the page',
        'has no text". The cut alone, before (commit 57bef3f, CPU seconds, same machine): 1.28 s',
        "at 1 MB of `a` and 5.06 s at 2 MB (×4: quadratic), the same for `word `; 49 s at 1 MB",
        "of `字` and still running after 9 minutes at 2 MB.",
        "Measured by `python benchmarks/notes_parse/sources.py --write` "
        f"({platform.python_implementation()} {platform.python_version()}, "
        f"{platform.machine()}, CPU seconds, median of {repeat}, shared 2-core machine);",
        "×: time over the same case's 1 MB time (linear: ×2 at 2 MB, ×10 at 10 MB). In the suite,",
        "tests/test_untrusted_text_linear.py checks ten times the text gives ten times the",
        "passages, under a hang guard, and tests/test_notes_hostile.py reads the 10 MB page.",
        "",
        "| case | MB | passages | seconds | × |",
        "|---|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(f"| {r['case']} | {r['mb']} | {r['passages']:,} | {r['seconds']:.3f} | "
                     f"{r['ratio']:.1f} |")  # fmt: skip
    section = "\n".join(lines) + "\n"
    text = DOC.read_text(encoding="utf-8")
    start = text.find("## Source passages")
    if start == -1:
        text = text.rstrip("\n") + "\n\n" + section
    else:
        end = text.find("\n## ", start + 1)
        text = text[:start] + section + (text[end + 1 :] if end != -1 else "")
    DOC.write_text(text, encoding="utf-8")


if __name__ == "__main__":
    raise SystemExit(main())
